"""A performance model of `cohbench corrupt --recipe dsd` on a GPU, predicted from a profile of the same job on the CPU.

The job runs in this process with `--device cpu` under `torch.profiler` on stories from `catalog/SCALE.md`'s pool
(pre-split, as `gpu_generation.py` gives them), at two sizes. From each profile it counts:
- FLOPs (the profiler's count for matrix products; one per output element for the other ops);
- bytes each op moves (its inputs' elements plus an output the size of its first input, 8 bytes each: the encoder
  computes in float64 and indexes in int64);
- kernel launches (one per computing leaf op; views and allocations launch none);
- host syncs (`_local_scalar_dense` behind `.item()`, `nonzero` and `masked_select` behind boolean indexing, which
  must read a result before going on, and every copy back to the host, `encoder.to_host`, named for the profiler:
  on the CPU a no-op, on a GPU a wait);
- the host time outside torch: in the recipe's stages (`ACTOR_WORK`, below), their wall time minus their top-level
  ops' time (Python, tokenising); around them (reading, the shared pools, writing: the driver, which runs no torch
  op), the wall time of the same job run without the profiler, before any profiled run: the profiler slows that
  work too (~0.1 ms a story here, most of it writing the config), and so does having run (a plain run just after a
  profiled one took 0.46 s around the stages at 500 stories here, against 0.28 s in a process the profiler had not
  run in).

BM25 is scored as a GPU run scores it, by `bm25_top.DeviceBm25`'s torch ops (here on the CPU; the same candidates,
bit for bit), not by bm25s's numpy, which a GPU run does not call: its work is then device work, not host time.
On the CPU side that costs the prediction little (those ops take ~1.5x bm25s's time here, and BM25 is a few percent
of the CPU run), and it makes the predicted speedup that much higher.

Each term is fitted as c + a*N over the sizes (a fixed cost and a cost per story: on the H100, 10x the stories
took 8.3x the time without start-up, so the pool's quadratic part is small at these sizes), and a run of N stories is
predicted as

    host outside torch / HOST_SPEED + launches * LAUNCH_S + syncs * SYNC_S + sum over ops of max(flops / FP64, bytes / HBM)

on each GPU (the device term taken as not overlapped with the host: a bound), and as

    host outside torch / HOST_SPEED + torch op time * CORES_HERE / 16

on the same machine's 16 cores (perfect scaling of torch's ops: an optimistic CPU, so the predicted speedup is a
floor). It prints each prediction, the speedup and the term that dominates. Start-up (imports, the model) is left
out of both. The constants and their sources are in GPUS and the module constants below; `catalog/SCALE.md` sets the
predictions beside what an H100 measured.

The host work outside torch is Python on one core, and a GPU leaves a machine's other cores idle. So it also
predicts the same job on Ray on that one machine (`--engine ray`), where each block's recipe stages
(`blocks.run`: BM25 candidates, encoding, the choice, and their output turned into Arrow) run in actors and the rest
(reading, the shared pools, writing, the fingerprint) in the driver. The profile marks the stages' time (`ACTOR_WORK`), and a run of A actors
on one GPU is predicted as

    driver host + the busiest actor's (stages' host + launches * LAUNCH_S + syncs * SYNC_S) + device compute

The engine cuts the stories into whole waves of A blocks of equal size, none larger than a partition
(`--partition-size`, the job's default unless given), and a free actor takes the next block, so the busiest actor
works through about 1/A of the stories (`busiest_blocks`, from `ray_engine.balanced_blocks`). Each of its blocks
costs what the profiles' line gives at the block's size, its fixed part included (the profiled runs are one
partition, one block's worth, each; in process, 2,000 stories in 4 partitions of 500 took ~3 s a partition more
than in one: catalog/SCALE.md). The actors' device work is summed (one GPU runs it in turn), and the driver's
writing is taken as not overlapping the actors' work, so the driver's share is an upper bound. The machine's 16
cores are set against it as 16 one-thread actors: driver host + the busiest one's (stages' host + stages' torch
time * CORES_HERE) (torch's ops here took as long on one thread as on two together: the core-seconds carry over;
perfect scaling otherwise, an optimistic CPU). A is the default placement (four actors to a GPU,
`ray_engine.GPU_SHARE`) and one actor per core the driver leaves (`--workers 15`: 1/15 of the GPU each). Not
counted, on either side: Ray's pickling of records to the actors, its moving of what they made back to the
driver (Arrow, `blocks`), and the GPU switching between the actors' contexts (no MPS): what a GPU machine has to
measure.

It also profiles dsd's confounder choice alone (`round_syncs`) at two numbers of queries and prints the host syncs
per matching round: the hot path waits for the device once per round, however many queries the round holds.

Each size is run `--repeats` times without the profiler, then profiled as often, after one plain run that is not
kept (what a job does once per process, such as its lazy imports, would otherwise fall on the first size only), and
every term is fitted through all the runs (least
squares: with two sizes, the line through their means). Beside each speedup it prints the lowest and highest that
each repeat's pair of runs gives when fitted alone: how far one run of each size could have moved it. The host term is a small difference of large times (the
stages' wall minus torch's ops): through single runs of 500 and 1,000 stories its cost a story came out at 0.39,
0.70 and 0.92 ms on three tries here.

    .venv/bin/python benchmarks/gpu_model.py [--profile 500,2000] [--repeats 3] [--predict 5000,50000,500000]
        [--host-speed 1.0] [--round-queries 100,1000] [--partition-size N] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
import weakref
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# Per GPU: FP64 tensor-core peak (NVIDIA's H100 SXM and H200 datasheets: 67 TFLOP/s each) and memory bandwidth as
# measured here (.library/device/KINDS.md: a device-to-device copy, bytes read and written: 3.0 and 4.3 TB/s).
GPUS = {"H100": {"fp64_flops": 67e12, "hbm_bytes_per_s": 3.0e12}, "H200": {"fp64_flops": 67e12, "hbm_bytes_per_s": 4.3e12}}
LAUNCH_S = 5e-6  # host cost of one eager op on CUDA (ATen dispatch + cudaLaunchKernel): PyTorch's usual 3-6 us
SYNC_S = 20e-6  # one host<-device round trip with the queue drained (a stream synchronise and a small copy back)
BYTES = 8
NO_KERNEL = {"aten::view", "aten::reshape", "aten::_unsafe_view", "aten::as_strided", "aten::slice", "aten::select",
             "aten::expand", "aten::transpose", "aten::t", "aten::permute", "aten::unsqueeze", "aten::squeeze",
             "aten::detach", "aten::alias", "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::resize_",
             "aten::lift_fresh", "aten::result_type", "aten::unbind", "aten::split", "aten::narrow", "aten::chunk",
             "aten::set_", "aten::is_nonzero", "aten::numpy_T", "aten::from_file"}  # fmt: skip
ROUND_POOL_STORIES = 2000  # the pool `round_syncs` matches against: 10,000 sentences
GPU_MACHINE_CORES = 16  # the cores of the machine the GPU comes with, and of the CPU run it is compared with
ACTOR_WORK = "cohbench.recipe_stages"  # the profiler's range around `blocks.run`: what a Ray actor runs per block


def round_syncs(queries: int) -> dict:
    """Host syncs per matching round of dsd's confounder choice (`ConfounderPool.choose`: encode the round's new
    sentences, match each query's next candidates, decide on tau) for `queries` queries, each the first sentence of
    a story of a pool of `ROUND_POOL_STORIES`, profiled on the CPU: what a GPU would wait for, round by round."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    from cohbench.corruptions.dsd import MATCHING_ROUND, ConfounderPool
    from cohbench.encoder import CPU, DEVICE_READS, TO_HOST
    from retrieval_scale import mixed_pool, real_sentences

    sentences = mixed_pool(real_sentences(), 5 * ROUND_POOL_STORIES, seed=0)
    docs = [f"story-{n // 5}" for n in range(len(sentences))]
    pool = ConfounderPool("train", sentences, [f"{d}-{n % 5}" for n, d in enumerate(docs)], docs)
    asked = [sentences[5 * n] for n in range(queries)]
    candidates = pool.candidates(asked, [docs[5 * n] for n in range(queries)], CPU)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        pool.choose(asked, candidates, tau=0.5, device=CPU)
    names = [event.name for event in prof.events()]
    rounds, syncs = names.count(MATCHING_ROUND), sum(name == TO_HOST or name in DEVICE_READS for name in names)
    return {"queries": queries, "rounds": rounds, "syncs": syncs, "syncs_per_round": round(syncs / max(rounds, 1), 2)}


def run_job(stories: int, partition_size: int, around_stages) -> float:
    """Wall seconds of one `corrupt --device cpu` run of `stories` stories, start-up excluded (the encoder is loaded
    first; the stories are written before the clock starts), with each block's work (`blocks.run`: the recipe's
    stages and their output turned into Arrow, what a Ray actor runs per block) made inside the context manager
    `around_stages()`."""
    from cohbench import encoder
    from cohbench.corruptions import blocks
    from cohbench.user_corruption import job
    from cohbench.user_corruption.request import CorruptRequest
    from gpu_generation import write_stories

    encoder.load(encoder.CPU)
    run_block = blocks.run

    def wrapped_run_block(*args, **kwargs):
        with around_stages():
            return run_block(*args, **kwargs)

    blocks.run = wrapped_run_block
    try:
        with tempfile.TemporaryDirectory(prefix="cohbench-gpu-model-") as folder:
            given = Path(folder) / "stories.jsonl"
            write_stories(given, stories)
            request = CorruptRequest(recipe="dsd", device="cpu", drop_test_overlap=False, progress=False,
                                         partition_size=partition_size)
            started = time.perf_counter()
            job.corrupt(given, Path(folder) / "out", request)
            return time.perf_counter() - started
    finally:
        blocks.run = run_block


def driver_seconds(stories: int, partition_size: int) -> float:
    """The wall time of one `corrupt --device cpu` run of `stories` stories outside the recipe's stages (reading,
    the shared pools, writing: what a Ray driver does), without the profiler, start-up excluded."""
    in_stages = [0.0]

    @contextlib.contextmanager
    def timed():
        started = time.perf_counter()
        try:
            yield
        finally:
            in_stages[0] += time.perf_counter() - started

    return run_job(stories, partition_size, timed) - in_stages[0]


def profile(stories: int, driver_wall: float, partition_size: int) -> dict:
    """Counts of one `corrupt --device cpu` run of `stories` stories under the profiler, start-up excluded;
    `driver_wall` is `driver_seconds` of a plain run of the same size."""
    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    from cohbench import encoder
    from cohbench.corruptions import bm25_top

    # a device index per bm25s index, for as long as that index lives (a freed one's id may be taken by a new one)
    cpu_top, on_device = bm25_top.cpu_top, weakref.WeakKeyDictionary()

    def scored_as_on_a_gpu(index, queries, k, budget=None):
        if index not in on_device:
            on_device[index] = bm25_top.DeviceBm25(index.scores, encoder.CPU)
        return on_device[index].scored_top(queries, k)

    encoder.load(encoder.CPU)  # start-up, outside the profile (a no-op after the plain runs)
    bm25_top.cpu_top = scored_as_on_a_gpu
    try:
        with torch_profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
            # the job's wall, not the profiler's parsing of its events on exit
            wall = run_job(stories, partition_size, lambda: torch.profiler.record_function(ACTOR_WORK))
    finally:
        bm25_top.cpu_top = cpu_top
    counts = {"flops": 0.0, "bytes": 0.0, "launches": 0, "syncs": 0, "torch_s": 0.0, "actor_wall_s": 0.0,
              "actor_torch_s": 0.0, "actor_launches": 0, "actor_syncs": 0}

    def tally(key: str, value: float, in_actor: bool) -> None:
        counts[key] += value
        if in_actor:
            counts["actor_" + key] += value

    for event in prof.events():
        if event.name == ACTOR_WORK:
            counts["actor_wall_s"] += event.cpu_time_total / 1e6
            continue
        aten = event.name.startswith("aten::")
        top = aten and (event.cpu_parent is None or not event.cpu_parent.name.startswith("aten::"))
        kernel = (aten and event.name not in NO_KERNEL
                  and not any(child.name.startswith("aten::") for child in event.cpu_children))
        sync = event.name in encoder.DEVICE_READS if kernel else not aten and event.name == encoder.TO_HOST
        if not (top or kernel or sync):
            continue
        in_actor = _within(event, ACTOR_WORK)  # a walk up the parents: only for the events counted
        if top:
            tally("torch_s", event.cpu_time_total / 1e6, in_actor)
        if sync:
            tally("syncs", 1, in_actor)
        if kernel:
            tally("launches", 1, in_actor)
            elements = [math.prod(shape) for shape in event.input_shapes if shape]
            counts["flops"] += event.flops or (elements[0] if elements else 0)
            counts["bytes"] += BYTES * (sum(elements) + (elements[0] if elements else 0))
    counts["actor_host_s"] = max(0.0, counts["actor_wall_s"] - counts["actor_torch_s"])
    # less torch's ops outside the stages (none in this job: the encoder is loaded before it)
    counts["driver_host_s"] = max(0.0, driver_wall - (counts["torch_s"] - counts["actor_torch_s"]))
    counts["outside_torch_s"] = counts["actor_host_s"] + counts["driver_host_s"]
    return {"stories": stories, "wall_s": round(wall, 2), **counts}


def _within(event, name: str) -> bool:
    """Whether profiler `event` ran inside a range named `name`."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.cpu_parent
    return False


def fitted(profiles: list[dict], key: str, stories: int) -> float:
    """`key` at `stories`, as c + a*N fitted by least squares through the profiles (a fixed cost and a cost per story,
    neither below 0)."""
    sizes, values = [p["stories"] for p in profiles], [p[key] for p in profiles]
    mean_n, mean_y = sum(sizes) / len(sizes), sum(values) / len(values)
    spread = sum((n - mean_n) ** 2 for n in sizes)
    a = max(0.0, sum((n - mean_n) * (y - mean_y) for n, y in zip(sizes, values)) / spread)
    return max(0.0, mean_y - a * mean_n) + a * stories


def busiest_blocks(stories: int, partition_size: int, actors: int) -> list[int]:
    """The sizes of the blocks the busiest of `actors` actors works through: the Ray engine cuts the stories (one
    record each) into whole waves of blocks (`ray_engine.balanced_blocks`, larger first), and a free actor takes the
    next one, so the first actor takes the first block of each wave."""
    from cohbench.corruptions.ray_engine import balanced_blocks

    return balanced_blocks(stories, actors, partition_size)[::actors]


def predict(profiles: list[dict], stories: int, host_speed: float, partition_size: int) -> dict:
    count = {key: fitted(profiles, key, stories) for key in profiles[0] if key not in ("stories", "wall_s")}
    host, cores_here = count["outside_torch_s"] / host_speed, os.cpu_count() or 1
    out = {"stories": stories, "cpu_16_cores_s": round(host + count["torch_s"] * cores_here / GPU_MACHINE_CORES, 1)}
    actor_host, driver_host = count["actor_host_s"] / host_speed, count["driver_host_s"] / host_speed

    def busiest(key: str, actors: int) -> float:
        # each of the busiest actor's blocks costs what the profiles' line gives at its size (its fixed part included)
        return sum(fitted(profiles, key, size) for size in busiest_blocks(stories, partition_size, actors))

    cpu_actors = round(driver_host + (busiest("actor_host_s", GPU_MACHINE_CORES) / host_speed
                                      + busiest("actor_torch_s", GPU_MACHINE_CORES) * cores_here), 1)
    out["ray_one_machine"] = {"partitions": math.ceil(stories / partition_size), "cpu_16_actors_s": cpu_actors,
                              "driver_host_s": round(driver_host, 2),
                              "actors_host_s": round(actor_host, 2)}
    for gpu, spec in GPUS.items():
        device = max(count["flops"] / spec["fp64_flops"], count["bytes"] / spec["hbm_bytes_per_s"])
        terms = {"host outside torch": host, "kernel launches": count["launches"] * LAUNCH_S,
                 "host syncs": count["syncs"] * SYNC_S, "device compute": device}
        total = sum(terms.values())
        out[gpu] = {"predicted_s": round(total, 2), "speedup_over_16_cores": round(out["cpu_16_cores_s"] / total, 2),
                    "dominant": max(terms, key=terms.get), "terms_s": {k: round(v, 3) for k, v in terms.items()}}
        for actors in ray_actor_counts():
            terms = {"driver host": driver_host, "actors' host work": busiest("actor_host_s", actors) / host_speed,
                     "actors' launches and syncs": busiest("actor_launches", actors) * LAUNCH_S + busiest("actor_syncs", actors) * SYNC_S,
                     "device compute": device}
            total = sum(terms.values())
            share = sum(busiest_blocks(stories, partition_size, actors)) / stories
            out["ray_one_machine"][f"{gpu}_{actors}_actors"] = {
                "predicted_s": round(total, 2), "busiest_actor_share": round(share, 4), "speedup_over_16_cpu_actors": round(cpu_actors / total, 2),
                "dominant": max(terms, key=terms.get), "terms_s": {k: round(v, 3) for k, v in terms.items()}}
    return out


def add_spread(row: dict, per_repeat: list[dict]) -> None:
    """Put beside each speedup of `row` (a prediction fitted through every run) the lowest and highest of the same
    speedup in `per_repeat` (predictions each fitted through one repeat's runs)."""
    for gpu in GPUS:
        row[gpu]["per_repeat_speedups"] = [f(p[gpu]["speedup_over_16_cores"] for p in per_repeat) for f in (min, max)]
        for actors in ray_actor_counts():
            key = f"{gpu}_{actors}_actors"
            row["ray_one_machine"][key]["per_repeat_speedups"] = [
                f(p["ray_one_machine"][key]["speedup_over_16_cpu_actors"] for p in per_repeat) for f in (min, max)]


def ray_actor_counts() -> tuple[int, int]:
    """GPU actors on one GPU: as `ray_engine` places them by default (one per `GPU_SHARE`), and one per core the
    driver leaves (`--workers`)."""
    from cohbench.corruptions.ray_engine import GPU_SHARE

    return round(1 / GPU_SHARE), GPU_MACHINE_CORES - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="500,2000", help="the two sizes profiled on this CPU")
    parser.add_argument("--predict", default="5000,50000,500000")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size, every one fitted")
    parser.add_argument("--host-speed", type=float, default=1.0,
                        help="the GPU machine's single-core speed over this machine's (Python does not parallelise)")
    parser.add_argument("--round-queries", default="100,1000",
                        help="the two numbers of queries whose confounder choice is profiled for syncs per round")
    parser.add_argument("--partition-size", type=int, default=None,
                        help="corrupt's --partition-size, in the runs profiled and the runs predicted (default: the job's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(x) for x in args.profile.split(",")]
    if len(sizes) != 2 or sizes[0] >= sizes[1]:
        raise SystemExit("gpu_model: --profile takes two sizes, the smaller first")
    if args.repeats < 1:
        raise SystemExit("gpu_model: --repeats must be at least 1")
    from cohbench.user_corruption.request import CorruptRequest

    partition_size = CorruptRequest.partition_size if args.partition_size is None else args.partition_size
    if partition_size < 1:
        raise SystemExit("gpu_model: --partition-size must be at least 1")
    # the driver runs no torch op, but the profiler slows its work, and so does having run (a run just after a
    # profiled one: ~0.2 s more at 500 stories here): its time is taken from runs without the profiler, made
    # before any profiled run, after one not kept (the job's first run in a process pays its lazy imports)
    runs = [n for n in sizes for _ in range(args.repeats)]
    driver_seconds(sizes[0], partition_size)
    drivers = [driver_seconds(n, partition_size) for n in runs]
    profile(sizes[0], drivers[0], partition_size)  # not kept either: the profiler's own first use
    profiles = [profile(n, driver, partition_size) for n, driver in zip(runs, drivers)]
    predictions = [predict(profiles, int(n), args.host_speed, partition_size) for n in args.predict.split(",")]
    for row in predictions:  # the spread a single run would give: each repeat's two sizes fitted on their own
        add_spread(row, [predict([profiles[i], profiles[i + args.repeats]], row["stories"], args.host_speed, partition_size)
                         for i in range(args.repeats)])
    rounds = [round_syncs(int(n)) for n in args.round_queries.split(",")]
    result = {"profiled_on": f"{os.cpu_count()} CPU cores", "repeats": args.repeats, "partition_size": partition_size,
              "profiles": profiles, "predicted": predictions,
              "round_syncs": rounds,
              "constants": {"gpus": GPUS, "launch_s": LAUNCH_S, "sync_s": SYNC_S, "host_speed": args.host_speed}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    def spread(g: dict) -> str:
        low, high = g["per_repeat_speedups"]
        return f"{low}-{high}x fitted through each repeat alone"

    for p in profiles:
        print(f"profiled {p['stories']:,} stories on {os.cpu_count()} cores: {p['wall_s']} s; torch ops {p['torch_s']:.1f} s, "
              f"outside torch {p['outside_torch_s']:.2f} s (in the recipe's stages {p['actor_host_s']:.2f} s, around them "
              f"{p['driver_host_s']:.2f} s, timed without the profiler), {p['launches']:,} launches, {p['syncs']:,} syncs, "
              f"{p['flops'] / 1e9:.1f} GFLOP, {p['bytes'] / 1e9:.1f} GB moved")
    for r in rounds:
        print(f"confounder choice for {r['queries']:,} queries: {r['rounds']} matching rounds, {r['syncs']} host syncs, "
              f"{r['syncs_per_round']} per round")
    for row in predictions:
        print(f"{row['stories']:,} stories (predicted): 16 CPU cores {row['cpu_16_cores_s']} s")
        for gpu in GPUS:
            g = row[gpu]
            terms = ", ".join(f"{k} {v:.2f}" for k, v in g["terms_s"].items())
            print(f"  {gpu}: {g['predicted_s']} s, {g['speedup_over_16_cores']}x the 16 cores ({spread(g)}); dominated by "
                  f"{g['dominant']} ({terms})")
        ray = row["ray_one_machine"]
        print(f"  on Ray, one machine, {ray['partitions']:,} partitions of {partition_size:,}: 16 one-thread CPU actors "
              f"{ray['cpu_16_actors_s']} s (driver's host work {ray['driver_host_s']} s, the actors' {ray['actors_host_s']} s)")
        for gpu in GPUS:
            for actors in ray_actor_counts():
                g = ray[f"{gpu}_{actors}_actors"]
                terms = ", ".join(f"{k} {v:.2f}" for k, v in g["terms_s"].items())
                print(f"    {gpu}, {actors} actors (the busiest takes {g['busiest_actor_share']:.1%}): {g['predicted_s']} s, "
                      f"{g['speedup_over_16_cpu_actors']}x the 16 CPU actors ({spread(g)}); dominated by {g['dominant']} ({terms})")


if __name__ == "__main__":
    main()
