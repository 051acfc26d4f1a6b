"""The Ray engine of `cohbench corrupt` (extra `cohbench[scale]`): the recipe's own stages, spread with Ray Data.

- What every batch shares (confounder pools with their BM25 index, bigrams) is built once by the driver and put in
  the object store once; actors read it from there (numpy arrays without copying). A pool built with shards keeps
  each shard as its own object, fetched one at a time, so a worker never holds the whole index.
- The partitions' records are cut into blocks of equal size, whole waves of them (`balanced_blocks`); `map_batches`
  runs them through the pools of actors `placement` chooses: `plan` (BM25
  candidates) and `make` (BERTScore encoding and the choice). With GPUs in the cluster (and `--device` auto or
  cuda) a recipe's device stages run on GPU actors, each taking `GPU_SHARE` of a GPU, or less where `--workers` asks
  for more (MiniLM and a round's batches are small, so several actors share one, each within its share of the
  memory); without, plan and make run
  together in one pool of CPU actors (splitting them would only add a hop). A cluster without the GPUs the actors
  need is refused in one line, before anything is written. (The GPU path has not been run on a GPU cluster yet.)
- Blocks travel as Arrow both ways (`blocks`): the source records a column of structs in the schema, the results
  each source's made records, built in the actor; the driver writes each partition when all its sources are in.
  Only plans crossing from a CPU pool to a GPU pool (a retriever that scores on the CPU) go pickled.
- Texts given unsplit are split into sentences by a pool of actors with the project's splitter, before the pools
  are built (a pool needs every sentence of its split).
Every random choice depends on (seed, record id) only, so the output equals the in-process engine's.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
from dataclasses import dataclass

from . import blocks, recipes
from ..encoder import AUTO, CPU, Device
from ..errors import CorruptionError


class RayShard:
    """A BM25 shard held in the object store: fetched for each batch of queries, then let go."""

    def __init__(self, ref):
        self.ref = ref

    def scored_top(self, queries, k, device=AUTO):
        import ray

        return ray.get(self.ref).scored_top(queries, k, device)


def _share(shared):
    """Put `shared` in the object store; a sharded in-memory (bm25s) pool's shards go in as separate objects (a
    tantivy shard is the name of its folder on disk, which each worker opens memory-mapped once)."""
    import ray

    from .retrieval import Bm25Shard

    if isinstance(shared, dict):
        for pool in shared.values():
            if getattr(pool, "shards", None):
                pool.shards = [RayShard(ray.put(shard)) if isinstance(shard, Bm25Shard) else shard for shard in pool.shards]
    return ray.put(shared)


GPU_SHARE = 0.25  # of one GPU per device actor by default: four actors share a GPU
# The least share of a GPU a device actor may take when --workers asks for more actors than GPU_SHARE places (their
# host work is what limits a GPU run: benchmarks/gpu_model.py). It is a fraction, sized for the data-centre GPUs
# this runs on: 1/16 of an 80 GB H100 is 5 GB (8.8 GB of an H200), room for the float64 encoder, its batches (sized
# from the share) and a pool's device BM25 index, beside a CUDA context that the share does not count. On a smaller
# GPU, ask for fewer actors.
MIN_GPU_SHARE = 1 / 16


@dataclass(frozen=True)
class Pool:
    """A pool of Ray actors every block passes through: which of the recipe's stages its actors run, on which
    device, how many actors, and what each asks of the cluster (one CPU, and `gpus` of a GPU on a GPU pool)."""

    plan: bool
    make: bool
    device: Device  # CPU, or Device("cuda")
    actors: int
    gpus: float = 0.0

    def resources(self) -> dict:
        """`map_batches`' resource arguments for one actor."""
        return {"num_cpus": 1, "num_gpus": self.gpus} if self.gpus else {"num_cpus": 1}


def placement(resolved: recipes.Resolved, device: Device, cpus: float, gpus: float, workers: int | None,
              where: str) -> tuple[Pool, ...]:
    """The pools a run of `resolved` goes through on the Ray cluster at `where` offering `cpus` and `gpus`.

    With GPUs (`device` auto or cuda) a recipe's device stages run on GPU actors of `GPU_SHARE` each: make (the
    encoder, BERTScore's matching) and plan (BM25) with a retriever that scores on the device; a plan on the CPU
    (tantivy, rank_bm25) has a pool of CPU actors of its own. Otherwise plan and make run in one pool of CPU actors.
    `workers` is the number of actors of each pool; by default a GPU pool has as many as its GPUs hold, and a CPU
    pool the CPUs the GPU actors leave (each actor takes one CPU). More GPU actors than that share the GPUs evenly
    (`gpu_share`). `--device cuda` on a cluster without GPUs, and actors needing more GPUs or CPUs than the cluster
    has, are refused in one line naming what is missing."""
    if device.gpu_required and gpus < GPU_SHARE:
        has = f"{gpus:g} GPU, less than one actor's {GPU_SHARE:g}" if gpus else "no GPU"
        raise CorruptionError(f"--device cuda: the Ray cluster at {where} has {has} (it offers CPU {cpus:g}); add GPU "
                           "nodes, or use --device cpu or auto")
    return _within_cpus(_pools(resolved, device, cpus, gpus, workers, where), cpus, workers, where)


def _pools(resolved: recipes.Resolved, device: Device, cpus: float, gpus: float, workers: int | None,
           where: str) -> tuple[Pool, ...]:
    from .retrieval import SCORED_ON_DEVICE

    recipe = resolved.recipe
    if device == CPU or gpus < GPU_SHARE or not recipe.on_device:
        return (Pool(plan=True, make=True, device=CPU, actors=workers or max(1, int(cpus))),)
    plan_on_gpu = resolved.params.get("retriever") in SCORED_ON_DEVICE
    cpu_pool = bool(recipe.plan) and not plan_on_gpu
    on_gpu = workers or max(1, min(_actors_at(GPU_SHARE, gpus), int(cpus) - cpu_pool))
    share = gpu_share(on_gpu, gpus)
    if share < MIN_GPU_SHARE:
        raise CorruptionError(f"--workers {on_gpu}: {on_gpu} GPU actors on the Ray cluster at {where} ({gpus:g} GPU) "
                           f"would get less than {MIN_GPU_SHARE:g} of a GPU each; use --workers {most_gpu_actors(gpus)} "
                           "or fewer, add GPU nodes, or use --device cpu")
    gpu_pool = Pool(plan=plan_on_gpu, make=True, device=Device("cuda"), actors=on_gpu, gpus=share)
    if not cpu_pool:
        return (gpu_pool,)
    return Pool(plan=True, make=False, device=CPU, actors=workers or max(1, int(cpus) - on_gpu)), gpu_pool


def gpu_share(actors: int, gpus: float) -> float:
    """The share of a GPU each of `actors` device actors takes on `gpus` GPUs: GPU_SHARE where the GPUs hold them
    at that share, else room for ceil(actors / whole GPUs) on each (an actor never spans two GPUs; 15 on 2 GPUs: 8
    and 7), cut to Ray's precision of 1e-4 so that a GPU's actors add up to no more than one GPU."""
    if actors <= _actors_at(GPU_SHARE, gpus):
        return GPU_SHARE
    whole = _actors_at(1, gpus)
    return math.floor(1e4 / -(-actors // whole) if whole else 1e4 * gpus / actors) / 1e4


def most_gpu_actors(gpus: float) -> int:
    """The most device actors `gpus` GPUs take, each sharing them (`gpu_share`) at no less than MIN_GPU_SHARE."""
    return next((a for a in range(_actors_at(MIN_GPU_SHARE, gpus), 0, -1) if gpu_share(a, gpus) >= MIN_GPU_SHARE), 0)


def _actors_at(share: float, gpus: float) -> int:
    """How many actors of `share` of a GPU `gpus` GPUs hold in all (1e-9: 0.75 / 0.25 is not quite 3 in floats)."""
    return int(gpus / share + 1e-9)


def _within_cpus(pools: tuple[Pool, ...], cpus: float, workers: int | None, where: str) -> tuple[Pool, ...]:
    """`pools`, or a one-line refusal where their actors (one CPU each) need more CPUs than the cluster has: Ray
    would leave the actors beyond its CPUs waiting, and a stage without an actor stalls the run."""
    needed = sum(pool.actors for pool in pools)
    if needed <= cpus:
        return pools
    stages = " and ".join(("BM25 candidates" if not pool.make else "GPU stages" if pool.gpus else "every stage")
                          for pool in pools)
    fits = int(cpus) // len(pools)
    fix = f"use --workers {fits} or fewer, or add nodes" if fits else "add nodes with more CPUs"
    raise CorruptionError(f"{f'--workers {workers}: ' if workers else ''}{needed} Ray actors of one CPU each ({stages}) "
                       f"need {needed} CPUs, and the Ray cluster at {where} has {cpus:g}; {fix}")


def balanced_blocks(records: int, actors: int, most: int) -> list[int]:
    """The sizes of the blocks a run's `records` are cut into for a pool of `actors` actors. Ray hands the next block
    to whichever actor is free, so blocks go in waves, and a last wave of fewer blocks than actors leaves the others
    idle (25 partitions of 2,000 on 15 actors: one actor works through 8% of the records, not 1/15). So: whole
    waves, a multiple of `actors` blocks (one a record where there are fewer records than actors), none larger than
    `most` (a partition's size: what an actor holds at once), sizes differing by at most one, larger first. A
    block's records may come from two partitions: the driver writes a partition when all its records are back."""
    if records < 1:
        return []
    waves = -(-records // (actors * most))
    count = min(records, waves * actors)
    size, larger = divmod(records, count)
    return [size + 1] * larger + [size] * (count - larger)


class _Stage:
    """A recipe's plan and/or make over one block, in one actor of a `Pool`: records in (`blocks.records_array`), the
    plans out (pickled) to the next pool, or what make made (`blocks.made_array`). Every actor computes with one
    thread; an actor on a GPU keeps within its share of the GPU's memory."""

    def __init__(self, resolved: recipes.Resolved, shared_box: list, pool: Pool):
        import ray
        import torch

        torch.set_num_threads(1)
        if pool.gpus:
            torch.cuda.set_per_process_memory_fraction(pool.gpus)
        self.resolved, self.recipe, self.params = resolved, resolved.recipe, resolved.params
        self.do_plan, self.do_make, self.device = pool.plan, pool.make, pool.device
        self.shared = ray.get(shared_box[0])

    def __call__(self, table):
        import pyarrow as pa

        records = blocks.records_of(table.column("record"))
        if "plan" in table.column_names:
            plans = [pickle.loads(b) for b in table.column("plan").to_pylist()]
        elif self.recipe.plan and self.do_plan:
            plans = self.recipe.plan(records, self.shared, self.params, self.device)
        else:
            plans = [None] * len(records)
        if not self.do_make:
            return table.append_column("plan", pa.array([pickle.dumps(p) for p in plans], pa.binary()))
        outputs = self.recipe.make(records, plans, self.shared, self.params, self.device)
        return pa.table({"partition": table.column("partition"), "index": table.column("index"),
                         "made": blocks.made_array(outputs)})


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, with one line, on an address nothing listens at (`ray.init` retries for minutes)."""
    import socket

    if address == "auto":
        return
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        raise CorruptionError(f"--address {address!r} is not HOST:PORT (or ray://HOST:PORT, or auto)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as error:
        raise CorruptionError(f"cannot reach a Ray cluster at {address} ({error.strerror or error}); check --address "
                           "(host:port of the head node) or leave it out to start a local instance") from None


class _Splitter:
    """The project's sentence splitter (spaCy senter) over one block of texts."""

    def __call__(self, table):
        import pyarrow as pa

        from ..text import split_sentences

        sentences = split_sentences(table.column("text").to_pylist())
        return pa.table({"index": table.column("index"), "sentences": pa.array(sentences, pa.list_(pa.string()))})


def _in_order(pieces, partition: int):
    """What partition `partition`'s sources made (`blocks`), in the sources' order, from the pieces of it that came
    back (tables of index and made, in whatever order Ray returned them); every source exactly once, or a one-line
    error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = pa.concat_tables(pieces)
    order = pc.sort_indices(rows.column("index"))
    if rows.column("index").take(order).to_pylist() != list(range(rows.num_rows)):
        raise CorruptionError(f"the Ray run returned partition {partition}'s sources other than once each; run again "
                              "with --resume")
    return rows.column("made").take(order)


class RayEngine:
    def __init__(self, resolved: recipes.Resolved, address: str | None, workers: int | None, device: Device = AUTO):
        try:
            import ray
        except ImportError:
            raise CorruptionError("--engine ray needs Ray: pip install 'cohbench[scale]'") from None
        self.started = False
        if address:
            check_reachable(address)
        if not ray.is_initialized():
            os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
            try:
                if address:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
                else:
                    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
            except Exception as error:  # ConnectionError, TimeoutError, RuntimeError, ValueError, depending on how it fails
                detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise CorruptionError(f"cannot reach a Ray cluster at {address or 'a new local instance'} ({detail}); "
                                   "check --address (host:port of the head node) or leave it out to start one here") from None
            self.started = True
        resources = ray.cluster_resources()
        cpus = resources.get("CPU", 1)
        self.resolved, self.workers = resolved, workers or max(1, int(cpus))
        try:
            self.pools = placement(resolved, device, cpus, resources.get("GPU", 0), workers,
                                   address or "a new local instance")
        except CorruptionError:
            self.close()
            raise
        import ray.data  # configures Ray Data's loggers: quieten them after that

        logging.getLogger("ray.data").setLevel(logging.ERROR)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False

    def split_sentences(self, texts: list[str], block: int = 2000) -> list[list[str]]:
        """`cohbench.text.split_sentences` spread over the workers (whole waves of blocks of at most `block` texts:
        `balanced_blocks`); results in the texts' order."""
        import pyarrow as pa
        import ray

        tables, start = [], 0
        for size in balanced_blocks(len(texts), self.workers, block):
            tables.append(pa.table({"index": pa.array(range(start, start + size), pa.int64()),
                                    "text": pa.array(texts[start : start + size], pa.string())}))
            start += size
        ds = ray.data.from_arrow(tables).map_batches(
            _Splitter, compute=ray.data.ActorPoolStrategy(size=self.workers), num_cpus=1, batch_size=None,
            batch_format="pyarrow")
        out: list[list[str] | None] = [None] * len(texts)
        for table in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            for i, sentences in zip(table.column("index").to_pylist(), table.column("sentences").to_pylist()):
                out[i] = sentences
        return out

    def start_up(self) -> None:
        """Nothing to load in the driver: each actor loads what its stages need."""

    def run(self, todo, shared, finished) -> None:
        """Run the resolved recipe over partitions `todo` [(number, records)] through the engine's pools;
        `finished(number, made)` per partition (`blocks`: a chunked array, one row a source, in order)."""
        import pyarrow as pa
        import ray

        box = [_share(shared)]  # in a list, so Ray hands the reference to the actors instead of resolving it
        rows = [(n, i) for n, batch in todo for i in range(len(batch))]
        records = [record for _, batch in todo for record in batch]
        making = next(pool for pool in self.pools if pool.make)
        tables, start = [], 0
        for size in balanced_blocks(len(rows), making.actors, max(len(batch) for _, batch in todo)):
            numbers, indices = zip(*rows[start : start + size])
            tables.append(pa.table({"partition": pa.array(numbers, pa.int64()), "index": pa.array(indices, pa.int64()),
                                    "record": blocks.records_array(records[start : start + size])}))
            start += size
        ds = ray.data.from_arrow(tables)
        for pool in self.pools:
            ds = ds.map_batches(_Stage, fn_constructor_args=(self.resolved, box, pool),
                                compute=ray.data.ActorPoolStrategy(size=pool.actors), batch_size=None,
                                batch_format="pyarrow", zero_copy_batch=True, **pool.resources())
        sizes = {n: len(batch) for n, batch in todo}
        pending = {n: [] for n in sizes}  # per partition: the rows of it that came back, as tables, in any order
        for table in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            partitions = table.column("partition").to_pylist()
            start = 0
            while start < len(partitions):  # a block's rows: one run of each partition it spans
                n, end = partitions[start], start + 1
                while end < len(partitions) and partitions[end] == n:
                    end += 1
                pending[n].append(table.slice(start, end - start))
                sizes[n] -= end - start
                start = end
                if sizes[n] == 0:
                    finished(n, _in_order(pending.pop(n), n))
        if pending:
            raise CorruptionError(f"the Ray run returned no result for partitions {sorted(pending)[:5]}; run again with --resume")

    def close(self) -> None:
        import ray

        if self.started:
            ray.shutdown()
