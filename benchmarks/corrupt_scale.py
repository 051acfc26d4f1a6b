"""`cohbench corrupt --recipe dsd` at scale: in-process vs Ray with 1 and 2 workers, and where the time goes.

Input: the ROCStories sample of the mirror (5,000 stories, `../shared/data/SOURCES.md`), split into sentences with
the project's splitter once, then replicated with fresh ids (`--replicas`, default 4: 20,000 stories, ~100k
sentences) so that the confounder pool has the size of a real run. The pool (BM25 index over the whole input,
train split) is built once, as `cohbench corrupt` does; then the first `--records` stories go through the dsd
recipe's stages three times: in this process (torch limited to 1 thread, like one Ray actor), on a local Ray
instance with 1 worker, and with 2 workers. All three must give the same records (checked).
Time per stage (retrieval = BM25 candidates, encoding = MiniLM token embeddings, scoring = greedy BERTScore
matching) is measured in this process by timing the methods the recipe calls.

    .venv/bin/python benchmarks/corrupt_scale.py [--records 400] [--replicas 4] [--json]   (a few minutes, 2 cores)

Replicas are exact copies under other ids: a query's own sentence in another replica is excluded (same text),
but its story's other sentences compete as candidates, so the accepted-confounder statistics are not those of a
real corpus; the costs per query are.

With `--pool-sizes 100000,1000000[,10000000]` it measures instead, per pool size and retriever (`--retrievers
bm25s,tantivy`): the pool built the way `benchmarks/retrieval_scale.py` builds it (real ROCStories and TimeTravel
sentences, then halves of two mixed, five sentences to a story under fresh ids), the index build, BM25 candidates
per query, and `--records` stories of the pool through dsd in this process and on Ray with 1 and 2 workers
(records/s, scaling efficiency, and each Ray actor's peak memory: resident set and unique set, sampled every
0.5 s; the pool's Arrow arrays lie in the object store's shared memory, counted in RSS but not in USS).

    .venv/bin/python benchmarks/corrupt_scale.py --pool-sizes 100000,1000000 --retrievers bm25s,tantivy --records 200 --json
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROC = ("raw.githubusercontent.com/XiangLi1999/Diffusion-LM/759889d58ef38e2eed41a8c34db8032e072826f4/"
       "datasets/ROCstory/roc_valid.json")
ROC_SHA256 = "04a9ee6abf9f820aedece2aee16a7b6b1547bf050c4146c86c341b65ac964f37"


def stories(replicas: int) -> tuple[list[dict], dict]:
    from cohbench import settings
    from cohbench.schema import OK, empty_record
    from cohbench.corpora.sources import sha256_of
    from cohbench.text import split_sentences

    path = next((m / ROC for m in settings.mirror_dirs() if (m / ROC).is_file()), None)
    if path is None or sha256_of(path) != ROC_SHA256:
        raise SystemExit(f"the ROCStories sample {ROC} is missing from the mirror or differs from its sha256")
    texts = [json.loads(line)[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    start = time.perf_counter()
    split = split_sentences(texts)
    seconds = time.perf_counter() - start
    records = []
    for r in range(replicas):
        for n, sentences in enumerate(split):
            record = empty_record()
            record.update(id=f"roc{r}-{n:05d}", corpus="rocstories", config="dsd", split="train", doc_id=f"roc{r}-{n:05d}",
                          sentences=sentences, sentence_labels=[OK] * len(sentences))
            records.append(record)
    sentences = sum(len(s) for s in split)
    return records, {"stories": len(texts), "sentences": sentences, "split_seconds": round(seconds, 2),
                     "split_sentences_per_s": round(sentences / seconds, 1)}


class StageClock:
    """Wall time of the methods the dsd recipe spends its time in, measured around the real methods."""

    def __init__(self):
        from cohbench.corruptions.bertscore import TokenEmbeddings
        from cohbench.corruptions.dsd import ConfounderPool

        self.seconds = {"retrieval": 0.0, "encoding": 0.0, "scoring": 0.0}
        self.calls = {"queries": 0, "pairs_scored": 0}
        self._patch(ConfounderPool, "candidates", "retrieval", lambda args: self.calls.__setitem__("queries", self.calls["queries"] + len(args[1])))
        self._patch(TokenEmbeddings, "encode", "encoding", None)
        self._patch(TokenEmbeddings, "f1_on_device", "scoring",
                    lambda args: self.calls.__setitem__("pairs_scored", self.calls["pairs_scored"] + sum(map(len, args[2]))))

    def _patch(self, cls, name, stage, count):
        real = getattr(cls, name)
        clock = self

        def timed(*args, **kwargs):
            if count:
                count(args)
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                clock.seconds[stage] += time.perf_counter() - start

        setattr(cls, name, timed)


def retrieval_by_pool_size(records, queries: int) -> list[dict]:
    """BM25 candidates per query and pool memory at growing pool sizes (what sharding divides)."""
    from cohbench.corruptions.dsd import ConfounderPool

    out = []
    for share in (4, 2, 1):
        part = records[: len(records) // share]
        start = time.perf_counter()
        pool = ConfounderPool.from_records(part)
        built = time.perf_counter() - start
        texts = [r["sentences"][0] for r in part[:queries]]
        start = time.perf_counter()
        pool.candidates(texts, [r["doc_id"] for r in part[:queries]])
        seconds = time.perf_counter() - start
        index_bytes = len(pickle.dumps(pool.index))
        out.append({"pool_sentences": len(pool.texts), "index_seconds": round(built, 2),
                    "ms_per_query": round(1000 * seconds / len(texts), 2),
                    "index_bytes_per_sentence": round(index_bytes / len(pool.texts), 1),
                    "texts_ids_docs_bytes_per_sentence": round(len(pickle.dumps((pool.texts, pool.ids, pool.doc_ids))) / len(pool.texts), 1)})
    return out


def run_in_process(batch, params, shared, partition_size):
    from cohbench.corruptions import recipes

    outputs = []
    for start in range(0, len(batch), partition_size):
        made, _ = recipes.run("dsd", batch[start : start + partition_size], params, shared=shared)
        outputs += made
    return outputs


def run_on_ray(batch, params, shared, partition_size, workers):
    from cohbench.corruptions import engines, recipes

    start = time.perf_counter()
    engine = engines.start(recipes.resolve("dsd", params), "ray", "cpu", workers=workers)
    started = time.perf_counter() - start
    results = {}
    todo = [(n, batch[s : s + partition_size]) for n, s in enumerate(range(0, len(batch), partition_size))]
    start = time.perf_counter()
    engine.run(todo, shared, lambda n, made: results.__setitem__(n, made.to_pylist()))  # made: Arrow (`blocks`)
    seconds = time.perf_counter() - start
    engine.close()
    return [o for n in sorted(results) for o in results[n]], seconds, started


class ActorMemory:
    """Peak memory of the Ray actors that run the recipe (processes named ray::MapWorker...), sampled in a thread."""

    def __init__(self, every: float = 0.5):
        import threading

        self.peak_rss, self.peak_uss, self.every = 0, 0, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        import psutil

        while not self._stop.wait(self.every):
            for process in psutil.process_iter(["name", "cmdline"]):
                try:
                    if "MapWorker" not in " ".join(process.info["cmdline"] or []) + (process.info["name"] or ""):
                        continue
                    memory = process.memory_full_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                self.peak_rss, self.peak_uss = max(self.peak_rss, memory.rss), max(self.peak_uss, memory.uss)


def pool_scaling(sizes: list[int], retrievers: list[str], records: int, partition_size: int) -> list[dict]:
    """Per pool size and retriever: index build, candidates per query, dsd in process and on Ray 1/2 workers."""
    import random

    import torch

    from cohbench.corruptions import recipes
    from cohbench.corruptions.dsd import ConfounderPool
    from cohbench.corruptions.registry import sentence_id
    from cohbench.schema import OK, empty_record
    from retrieval_scale import mixed_pool, real_sentences

    real = real_sentences()
    params = recipes.parameters(recipes.RECIPES["dsd"], {})
    torch.set_num_threads(1)
    rows = []
    for size in sizes:
        texts = mixed_pool(real, size - size % 5, 13)
        stories = [f"mix-{n:08d}" for n in range(len(texts) // 5)]
        ids = [sentence_id(story, i) for story in stories for i in range(5)]
        docs = [story for story in stories for _ in range(5)]
        batch = []
        for n in random.Random(7).sample(range(len(stories)), records):
            record = empty_record()
            record.update(id=stories[n], corpus="mixed", config="dsd", split="train", doc_id=stories[n],
                          sentences=texts[5 * n : 5 * n + 5], sentence_labels=[OK] * 5)
            batch.append(record)
        queries = [r["sentences"][2] for r in batch]
        for retriever in retrievers:
            load = os.getloadavg()[0]
            start = time.perf_counter()
            pool = ConfounderPool("train", texts, ids, docs, retriever=retriever, top_k=params["top_k"])
            built = time.perf_counter() - start
            start = time.perf_counter()
            pool.candidates(queries, [r["doc_id"] for r in batch])
            per_query = (time.perf_counter() - start) / len(queries)
            run_params = params | {"retriever": retriever}
            shared = {"train": pool}
            recipes.run("dsd", batch[:2], run_params, shared=shared)  # loads the encoder outside the timing
            start = time.perf_counter()
            local = run_in_process(batch, run_params, shared, partition_size)
            local_seconds = time.perf_counter() - start
            ray = {}
            for workers in (1, 2):
                with ActorMemory() as memory:
                    outputs, seconds, started = run_on_ray(batch, run_params, {"train": pool}, partition_size, workers)
                ray[workers] = {"seconds": seconds, "start_seconds": started, "same_as_in_process": outputs == local,
                                "actor_peak_rss_bytes": memory.peak_rss, "actor_peak_uss_bytes": memory.peak_uss}
            rate = {"in_process": records / local_seconds, "ray_1": records / ray[1]["seconds"], "ray_2": records / ray[2]["seconds"]}
            rows.append({
                "pool_sentences": len(texts), "retriever": retriever, "index_build_seconds": round(built, 2),
                "retrieval_ms_per_query": round(1000 * per_query, 2), "records": records,
                "records_per_s": {k: round(v, 2) for k, v in rate.items()},
                "scaling_efficiency_2_workers": round(rate["ray_2"] / rate["ray_1"] / 2, 3),
                "ray_start_seconds": {w: round(r["start_seconds"], 1) for w, r in ray.items()},
                "identical_outputs": all(r["same_as_in_process"] for r in ray.values()),
                "actor_peak_rss_mib": {w: round(r["actor_peak_rss_bytes"] / 2**20) for w, r in ray.items()},
                "actor_peak_uss_mib": {w: round(r["actor_peak_uss_bytes"] / 2**20) for w, r in ray.items()},
                "pool_arrow_mib": round(sum(c.nbytes for c in (pool.texts, pool.ids, pool.doc_ids)) / 2**20),
                "load_average_1min_before": round(load, 2), "load_average_1min_after": round(os.getloadavg()[0], 2)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            del pool, shared
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=400, help="stories corrupted per engine (default 400)")
    parser.add_argument("--replicas", type=int, default=4, help="copies of the 5,000-story sample in the pool")
    parser.add_argument("--partition-size", type=int, default=50)
    parser.add_argument("--pool-sizes", help="pool sentences per run, e.g. 100000,1000000 (see the docstring)")
    parser.add_argument("--retrievers", default="bm25s,tantivy", help="with --pool-sizes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.pool_sizes:
        rows = pool_scaling([int(n) for n in args.pool_sizes.split(",")], args.retrievers.split(","), args.records,
                            args.partition_size)
        print(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2 if args.json else None))
        return

    import torch

    from cohbench.corruptions import recipes

    records, source = stories(args.replicas)
    params = recipes.parameters(recipes.RECIPES["dsd"], {})
    start = time.perf_counter()
    shared = recipes.RECIPES["dsd"].prepare(records, params)
    pool = shared["train"]
    index_seconds = time.perf_counter() - start
    pool_bytes = len(pickle.dumps(pool))
    batch = records[: args.records]
    by_pool_size = retrieval_by_pool_size(records, 400)

    torch.set_num_threads(1)
    clock = StageClock()
    recipes.run("dsd", records[-2:], params, shared=shared)  # loads the encoder outside the timing
    clock.seconds = dict.fromkeys(clock.seconds, 0.0)
    clock.calls = dict.fromkeys(clock.calls, 0)
    start = time.perf_counter()
    local = run_in_process(batch, params, shared, args.partition_size)
    local_seconds = time.perf_counter() - start
    stages = dict(clock.seconds)
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    ray1, ray1_seconds, ray1_start = run_on_ray(batch, params, shared, args.partition_size, 1)
    shared = recipes.RECIPES["dsd"].prepare(records, params)  # the Ray engine swapped shards for references
    ray2, ray2_seconds, ray2_start = run_on_ray(batch, params, shared, args.partition_size, 2)
    same = local == ray1 == ray2

    rate = {name: args.records / s for name, s in (("in_process", local_seconds), ("ray_1", ray1_seconds), ("ray_2", ray2_seconds))}
    measured = sum(stages.values())
    result = {
        "input": source | {"replicas": args.replicas, "pool_sentences": len(pool.texts)},
        "records": args.records,
        "made": sum(1 for o in local if o),
        "identical_outputs": same,
        "index_build_seconds": round(index_seconds, 2),
        "pool_pickled_bytes": pool_bytes,
        "pool_bytes_per_sentence": round(pool_bytes / len(pool.texts), 1),
        "driver_max_rss_gb": round(rss_gb, 2),
        "seconds": {"in_process": round(local_seconds, 2), "ray_1": round(ray1_seconds, 2), "ray_2": round(ray2_seconds, 2),
                    "ray_start_1": round(ray1_start, 2), "ray_start_2": round(ray2_start, 2)},
        "records_per_s": {k: round(v, 2) for k, v in rate.items()},
        "ray_1_vs_in_process": round(rate["ray_1"] / rate["in_process"], 3),
        "speedup_2_vs_1_workers": round(rate["ray_2"] / rate["ray_1"], 3),
        "scaling_efficiency_2_workers": round(rate["ray_2"] / rate["ray_1"] / 2, 3),
        "stage_seconds_in_process": {k: round(v, 2) for k, v in stages.items()},
        "stage_share_in_process": {k: round(v / local_seconds, 3) for k, v in stages.items()},
        "other_seconds_in_process": round(local_seconds - measured, 2),
        "calls": clock.calls | {"sentences_encoded": len(pool.embeddings)},
        "ms_per_query": {k: round(1000 * v / max(clock.calls["queries"], 1), 2) for k, v in stages.items()},
        "retrieval_by_pool_size": by_pool_size,
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"input: {source['stories']} ROCStories x {args.replicas} = {len(records)} stories, {len(pool.texts)} pool sentences "
          f"(split at {source['split_sentences_per_s']} sentences/s); BM25 index {index_seconds:.1f} s, "
          f"pool {pool_bytes / 2**20:.1f} MiB pickled ({result['pool_bytes_per_sentence']} B/sentence)")
    print(f"{args.records} stories through dsd (K=1), partitions of {args.partition_size}; outputs identical: {same}")
    for name in rate:
        print(f"  {name:<11} {rate[name]:7.2f} records/s  ({result['seconds'][name]:.1f} s)")
    print(f"  Ray start-up: {ray1_start:.1f} s / {ray2_start:.1f} s; Ray 1 worker = {result['ray_1_vs_in_process']:.2f}x in-process; "
          f"2 workers = {result['speedup_2_vs_1_workers']:.2f}x 1 worker (efficiency {result['scaling_efficiency_2_workers']:.2f})")
    print("  in-process time by stage: " + ", ".join(
        f"{k} {v:.1f} s ({result['stage_share_in_process'][k]:.0%}, {result['ms_per_query'][k]} ms/query)" for k, v in stages.items())
        + f", other {result['other_seconds_in_process']:.1f} s")
    for row in by_pool_size:
        print(f"  pool of {row['pool_sentences']} sentences: BM25 {row['ms_per_query']} ms/query, index {row['index_seconds']} s, "
              f"{row['index_bytes_per_sentence']} B/sentence index + {row['texts_ids_docs_bytes_per_sentence']} B/sentence texts/ids")
    print(f"  {clock.calls['queries']} queries, {clock.calls['pairs_scored']} pairs scored; load average {result['load_average_1min']} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
