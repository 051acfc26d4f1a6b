"""What a Ray actor pays in memory for a confounder pool it reads from the object store, at growing pool sizes.

The pool is built as the dsd recipe builds it (`ConfounderPool`: sentences, ids and documents as Arrow arrays, the
index of `--retriever`), from the mixed pool of `benchmarks/retrieval_scale.py` (five sentences to a story, fresh
ids), and put in a local Ray instance's object store once. One actor then reports its own memory (resident set,
RSS, and unique set, USS: what no other process shares) before fetching the pool, after fetching it, and after
retrieving candidates for `--queries` sentences (which touches the index and the columns). The actor holds no
encoder: what the recipe's model adds is measured by `corrupt_scale.py --pool-sizes`.

    .venv/bin/python benchmarks/pool_sharing.py --pool-sizes 1000000,10000000 [--retriever tantivy] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import time


def memory() -> dict:
    import psutil

    info = psutil.Process().memory_full_info()
    return {"rss_mib": round(info.rss / 2**20), "uss_mib": round(info.uss / 2**20)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool-sizes", default="1000000,10000000")
    parser.add_argument("--retriever", default="tantivy")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import ray

    from cohbench.corruptions.dsd import ConfounderPool
    from cohbench.corruptions.registry import sentence_id
    from retrieval_scale import mixed_pool, real_sentences

    @ray.remote(num_cpus=1)
    class Reader:
        def read(self, box, queries, docs):
            before = memory()
            start = time.perf_counter()
            shared = ray.get(box[0])
            fetched, fetch_seconds = memory(), time.perf_counter() - start
            start = time.perf_counter()
            shared["train"].candidates(queries, docs)
            return {"before": before, "after_fetch": fetched, "after_queries": memory(),
                    "fetch_seconds": round(fetch_seconds, 2), "ms_per_query": round(1000 * (time.perf_counter() - start) / len(queries), 2)}

    real = real_sentences()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    rows = []
    for size in map(int, args.pool_sizes.split(",")):
        texts = mixed_pool(real, size - size % 5, 13)
        stories = [f"mix-{n:08d}" for n in range(len(texts) // 5)]
        start = time.perf_counter()
        pool = ConfounderPool("train", texts, [sentence_id(s, i) for s in stories for i in range(5)],
                              [s for s in stories for _ in range(5)], retriever=args.retriever)
        built = time.perf_counter() - start
        queries = texts[2 : 5 * args.queries : 5]
        docs = stories[: len(queries)]
        del texts, stories
        box = [ray.put({"train": pool})]
        reader = Reader.remote()
        row = ray.get(reader.read.remote(box, queries, docs))
        row |= {"pool_sentences": len(pool), "retriever": args.retriever, "build_seconds": round(built, 1),
                "pool_arrow_mib": round(sum(c.nbytes for c in (pool.texts, pool.ids, pool.doc_ids)) / 2**20),
                "load_average_1min": round(os.getloadavg()[0], 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
        ray.kill(reader)
        del box, pool
    ray.shutdown()
    if args.json:
        print(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
