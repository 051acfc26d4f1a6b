"""`cohbench corrupt --recipe dsd` on the CPU (all cores) and on the GPU, on the same stories, in one run.

Stories: five sentences each, taken in order from the pool `catalog/SCALE.md` builds (`retrieval_scale.mixed_pool`:
the real ROCStories and TimeTravel sentences, then halves of two joined), given already split (a `sentences`
column), at each size of `--stories` (default 5,000, 50,000 and 500,000). Each size runs `corrupt` twice in fresh
processes through the job's own code: `--device cpu` with CUDA hidden (torch on every core), then `--device cuda`.
For each run it prints records/s, seconds per stage (start-up: imports and loading the encoder; encode: MiniLM
token embeddings, kept on the device; retrieve: the BM25 index and candidates, scored on the run's device
(`corruptions.bm25_top`); match: BERTScore's batched matching; write: partitions
and the output; other: the rest), the GPU's utilisation (nvidia-smi every 0.5 s: mean and max over the run) and
memory peak (torch's peak allocation, and nvidia-smi's peak use by every process), then the GPU/CPU ratio of
records/s and whether the two runs' Parquet files are byte-identical. With `--ray-workers N` it also runs the job
on Ray on this machine with N GPU actors (`--engine ray --workers N --device cuda`; Ray must be installed): the
driver's stages timed (start-up with starting Ray, indexing the pools, writing), the actors' start-up and work in
`other`; its records/s against the CPU run's and its bytes against the CPU run's (or the GPU run's, where the CPU
side did not run). A Ray run that fails is reported in one line, after the other runs' figures. `--partition-size` applies to every run (on Ray it bounds
the blocks, which come in whole waves of N: `ray_engine.balanced_blocks`). On a machine without a
usable GPU it runs the CPU side and says that the GPU side was skipped.

A device machine lends a few minutes at a time, so two bounds keep a call within it, each said in the output where it
acts: sizes above `--cpu-max-stories` run on the GPU only (no ratio, no byte comparison), and a run still going after
`--run-timeout` seconds is stopped and printed as a lower bound on its time.

    .venv/bin/python benchmarks/gpu_generation.py [--stories 5000,50000,500000] [--cpu-max-stories N]
                                                  [--run-timeout S] [--partition-size N] [--ray-workers N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

STAGES = ("startup", "encode", "retrieve", "match", "write")
NO_GPU = "skipped: torch sees no usable GPU on this machine"


def write_stories(path: Path, count: int) -> int:
    """`count` five-sentence stories from SCALE.md's pool, as JSONL with pre-split sentences; the sentences written."""
    sys.path.insert(0, str(Path(__file__).parent))
    from retrieval_scale import mixed_pool, real_sentences

    pool = mixed_pool(real_sentences(), 5 * count, seed=0)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps({"id": f"story-{n:07d}", "sentences": pool[5 * n : 5 * n + 5]}) + "\n")
    return len(pool)


def child(given: str, out: str, run_spec: str, spawned: float) -> None:
    """One run of the job in this process as `run_spec` (JSON: device, engine, workers, partition_size) asks, its
    stages timed around the real methods; prints one JSON line. On Ray only the driver's stages are timed: start-up
    (with starting Ray), retrieve (indexing the pools; the candidates are found in the actors) and write; the actors'
    own start-up (loading the encoder) and their work fall in `other`."""
    spec = json.loads(run_spec)
    device = spec["device"]
    seconds = dict.fromkeys(STAGES, 0.0)

    def timed(owner, name: str, stage: str) -> None:
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - started

        setattr(owner, name, wrapper)

    from cohbench import encoder
    from cohbench.corruptions import dsd, engines
    from cohbench.user_corruption import job
    from cohbench.user_corruption.request import CorruptRequest
    from cohbench.corruptions.bertscore import TokenEmbeddings

    timed(TokenEmbeddings, "encode", "encode")
    timed(TokenEmbeddings, "_matched", "match")
    timed(dsd, "pool_index", "retrieve")
    timed(dsd.ConfounderPool, "candidates", "retrieve")
    timed(job, "_write_partition", "write")
    timed(job, "write_config", "write")
    timed(engines, "start", "startup")
    if spec["engine"] == "local":  # on Ray each actor loads its own
        encoder.load(encoder.Device.requested(device).usable_here())  # loading the model is start-up, not encoding
    ready = time.time()
    seconds["startup"] = ready - spawned
    summary = job.corrupt(Path(given), Path(out), CorruptRequest(
        recipe="dsd", device=device, drop_test_overlap=False, progress=False, engine=spec["engine"],
        workers=spec["workers"], partition_size=spec["partition_size"]))
    total = time.time() - spawned
    peak = None
    if device == "cuda" and spec["engine"] == "local":  # the actors' peaks are theirs
        import torch

        peak = torch.cuda.max_memory_allocated()
    seconds["other"] = total - sum(seconds.values())
    if spec["engine"] == "ray":  # the encoder and the matching run in the actors, out of these timers' sight
        seconds = {k: v for k, v in seconds.items() if k not in ("encode", "match")}
    print(json.dumps({"seconds": {k: round(v, 2) for k, v in seconds.items()}, "total_seconds": round(total, 2),
                      "records": summary["built_records"], "records_per_s": round(summary["built_records"] / total, 1),
                      "torch_peak_bytes": peak}))


class GpuSampler:
    """nvidia-smi every 0.5 s in the background: utilisation (%) and memory used (MiB) of the first GPU."""

    def __init__(self):
        self.samples: list[tuple[float, float]] = []
        self.process = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-lms", "500", "-i", "0"],
            stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                utilisation, memory = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((utilisation, memory))

    def stop(self) -> dict:
        self.process.terminate()
        self.process.wait()
        if not self.samples:
            return {"gpu_utilisation_mean": None, "gpu_utilisation_max": None, "gpu_memory_peak_mib": None}
        return {"gpu_utilisation_mean": round(sum(u for u, _ in self.samples) / len(self.samples), 1),
                "gpu_utilisation_max": max(u for u, _ in self.samples),
                "gpu_memory_peak_mib": max(m for _, m in self.samples)}


def run(given: Path, out: Path, device: str, timeout: float | None, partition_size: int, engine: str = "local",
        workers: int | None = None) -> dict | str:
    """One run's figures, or a line saying it was stopped after `timeout` seconds."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    spec = {"device": device, "engine": engine, "workers": workers, "partition_size": partition_size}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU side must not touch the GPU
    sampler = GpuSampler() if device == "cuda" and shutil.which("nvidia-smi") else None
    spawned = time.time()
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(given), str(out), json.dumps(spec), repr(spawned)],
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"stopped after {timeout:g} s (--run-timeout): it takes longer than that"
    finally:
        gpu = sampler.stop() if sampler else {}
    if done.returncode != 0:
        if engine == "ray":  # never run on GPU actors before: its failure must not lose the other runs' figures
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return f"failed (exit {done.returncode}): {last[:500]}"
        raise SystemExit(f"the {device} run ({engine}) failed:\n{done.stderr[-3000:]}")
    return {"device": device, "engine": engine, "workers": workers, **json.loads(done.stdout.strip().splitlines()[-1]), **gpu}


def parquet_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.glob("data/*/*.parquet"))}


def gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", default="5000,50000,500000")
    parser.add_argument("--cpu-max-stories", type=int, default=None, help="larger sizes run on the GPU only")
    parser.add_argument("--run-timeout", type=float, default=None, help="seconds after which a run is stopped")
    parser.add_argument("--partition-size", type=int, default=None, help="corrupt's, in every run (default: the job's)")
    parser.add_argument("--ray-workers", type=int, default=None,
                        help="also run on Ray on this machine with this many GPU actors (--engine ray --workers N)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        given, out, device, spawned = args.child
        return child(given, out, device, float(spawned))

    from cohbench.user_corruption.request import CorruptRequest

    partition_size = CorruptRequest.partition_size if args.partition_size is None else args.partition_size
    if partition_size < 1 or (args.ray_workers is not None and args.ray_workers < 1):
        raise SystemExit("gpu_generation: --partition-size and --ray-workers must be at least 1")
    name = gpu_name()
    results = []
    for count in (int(x) for x in args.stories.split(",")):
        with tempfile.TemporaryDirectory(prefix="cohbench-gpu-generation-") as folder:
            given = Path(folder) / "stories.jsonl"
            sentences = write_stories(given, count)
            row = {"stories": count, "sentences": sentences, "cpu_cores": os.cpu_count(), "gpu": name,
                   "partition_size": partition_size, "load_1min_before": round(os.getloadavg()[0], 2)}
            if args.cpu_max_stories is not None and count > args.cpu_max_stories:
                row["cpu"] = f"skipped: more stories than --cpu-max-stories {args.cpu_max_stories:,}"
            else:
                row["cpu"] = run(given, Path(folder) / "cpu", "cpu", args.run_timeout, partition_size)
            if name:
                row["gpu_run"] = run(given, Path(folder) / "cuda", "cuda", args.run_timeout, partition_size)
                if not isinstance(row["cpu"], str) and not isinstance(row["gpu_run"], str):
                    row["gpu_over_cpu_records_per_s"] = round(row["gpu_run"]["records_per_s"] / row["cpu"]["records_per_s"], 2)
                    row["bytes_equal"] = parquet_bytes(Path(folder) / "cpu") == parquet_bytes(Path(folder) / "cuda")
            else:
                row["gpu_run"] = NO_GPU
            if args.ray_workers:
                # without Ray, the engine's own refusal comes back as the run's one line
                row["ray_run"] = (run(given, Path(folder) / "ray", "cuda", args.run_timeout, partition_size, "ray",
                                      args.ray_workers) if name else NO_GPU)
                against = next((side for side in ("cpu", "gpu_run") if isinstance(row[side], dict)), None)
                if isinstance(row["ray_run"], dict) and against:
                    folders = {"cpu": "cpu", "gpu_run": "cuda"}
                    row["ray_bytes_compared_with"] = row[against]["device"]
                    row["ray_bytes_equal"] = parquet_bytes(Path(folder) / "ray") == parquet_bytes(Path(folder) / folders[against])
                    if against == "cpu":
                        row["ray_over_cpu_records_per_s"] = round(row["ray_run"]["records_per_s"] / row["cpu"]["records_per_s"], 2)
            results.append(row)
            if not args.json:
                print_row(row)
    if args.json:
        print(json.dumps(results, indent=2))


def print_row(row: dict) -> None:
    print(f"{row['stories']:,} stories ({row['sentences']:,} sentences), {row['cpu_cores']} CPU cores, "
          f"GPU: {row['gpu'] or 'none'}, load before {row['load_1min_before']}")
    for side in ("cpu", "gpu_run", "ray_run"):
        result = row.get(side)
        if result is None:
            continue
        if isinstance(result, str):
            print(f"  {({'cpu': 'CPU', 'gpu_run': 'GPU', 'ray_run': 'Ray'})[side]} side {result}")
            continue
        stages = ", ".join(f"{k} {v:.1f}" for k, v in result["seconds"].items())
        gpu = ""
        if result["device"] == "cuda":
            peak = "" if result["torch_peak_bytes"] is None else f"torch {result['torch_peak_bytes'] / 2**30:.2f} GiB, "
            gpu = (f"; GPU utilisation mean {result.get('gpu_utilisation_mean')}% (max {result.get('gpu_utilisation_max')}%), "
                   f"memory peak: {peak}nvidia-smi {result.get('gpu_memory_peak_mib')} MiB")
        where = f"{result['device']} on Ray, {result['workers']} actors" if result["engine"] == "ray" else result["device"]
        print(f"  {where}: {result['records']:,} records in {result['total_seconds']:.1f} s = "
              f"{result['records_per_s']:,.1f} records/s; seconds: {stages}{gpu}")
    if "bytes_equal" in row:
        print(f"  GPU/CPU records/s: {row['gpu_over_cpu_records_per_s']}x; Parquet bytes equal: {row['bytes_equal']}")
    if "ray_bytes_equal" in row:
        ratio = f"Ray/CPU records/s: {row['ray_over_cpu_records_per_s']}x; " if "ray_over_cpu_records_per_s" in row else ""
        print(f"  {ratio}Parquet bytes equal to the {row['ray_bytes_compared_with']} run's: {row['ray_bytes_equal']}")


if __name__ == "__main__":
    main()
