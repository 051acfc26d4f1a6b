"""BM25 top-k retrieval against the pool size, per retriever: index build time, time per query, index memory.

The pool (the same for every retriever at a size): the sentences of the ROCStories sample (5,000 stories, split with
the project's splitter) and of the TimeTravel files (premise, initial sentence, counterfactual, original and edited
endings: `../shared/data/SOURCES.md`), the real sentences, then *mixed* up to the size: each further sentence is the first
half of the words of one real sentence and the second half of another's, both drawn by a seeded generator. The
vocabulary and sentence lengths follow the corpora while the pool holds few exact copies (a replicated pool would
put every query's sentence there hundreds of times, which no real corpus does and which distorts ties and pruning).
Queries: `--queries` real sentences drawn by the same generator, each asking for the top `--k` (the dsd recipe asks
for top_k + the widest document + 1 = 106 by default).

Each (retriever, size) runs in its own process, which reads the pool from an Arrow file: build time includes
tokenising; memory is the growth of that process's resident set (RSS) across the build, plus, for tantivy, the
index's bytes on disk (memory-mapped: pages shared between every process of a machine, not copied per process).
Per-query time is the mean over the queries after 5 warm-up queries, on one thread.

    .venv/bin/python benchmarks/retrieval_scale.py --pool-sizes 100000,1000000,10000000 --queries 200 --json
        [--retrievers bm25s,tantivy] [--k 106] [--seed 13]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


@functools.cache  # splitting takes ~11 s on 2 cores, and gpu_model.py writes its stories from it for every job it runs
def real_sentences() -> tuple[str, ...]:
    """The sentences of the ROCStories sample and of the TimeTravel files (premise, initial, counterfactual, the
    original ending split with the project's splitter, the edited endings' sentences), in file order; made once a
    process."""
    from cohbench.corpora import rocstories, timetravel
    from cohbench.corpora.fetch import fetch
    from cohbench.text import split_sentences

    roc = fetch(rocstories.CORPUS, progress=False)
    texts = [json.loads(line)[0] for line in Path(roc["rocstories_sample"]).read_text(encoding="utf-8").splitlines() if line.strip()]
    out, endings = [], []
    for path in fetch(timetravel.CORPUS, progress=False).values():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                out += [item["premise"], item["initial"], item["counterfactual"]]
                out += [s for ending in item.get("edited_endings", []) for s in ending]
                ending = item["original_ending"]  # one text in the dev file, a list of sentences in the test file
                if isinstance(ending, str):
                    endings.append(ending)
                else:
                    out += ending
    out += [s for sentences in split_sentences(texts + endings) for s in sentences]
    return tuple(s.strip() for s in out if s.strip())


def mixed_pool(real: Sequence[str], size: int, seed: int) -> list[str]:
    """`size` sentences: the real ones first, then halves of two real sentences joined (seeded)."""
    rng = random.Random(seed)
    words = [s.split() for s in real]
    pool = list(real[:size])
    while len(pool) < size:
        a, b = words[rng.randrange(len(words))], words[rng.randrange(len(words))]
        pool.append(" ".join(a[: len(a) // 2] + b[len(b) // 2 :]))
    return pool


def share_of_tantivy_top(pool: list[str], queries: list[str], found: list[list[int]], k: int, first: int | None = None) -> float:
    """Mean share of tantivy's top `k` (or of its first `first`) that another retriever's lists `found` hold."""
    from cohbench.corruptions.retrieval import pool_index

    tantivy, _ = pool_index(pool, "tantivy")
    cut = slice(first)
    return round(statistics.fmean(len(set(f[cut]) & set(e[cut])) / len(e[cut]) for f, e in zip(found, tantivy.top(queries, k)) if e), 4)


def print_result(result: dict, as_json: bool) -> None:
    """The whole result as JSON, or (the rows were printed as they came) only the growth."""
    print(json.dumps(result, indent=2) if as_json else json.dumps(result["growth_of_ms_per_query"]))


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(pool_file: str, retriever: str, queries: list[str], k: int) -> dict:
    """One retriever over one pool, in this (fresh) process."""
    import pyarrow as pa

    from cohbench.corruptions.retrieval import pool_index

    with pa.memory_map(pool_file) as source:
        texts = pa.ipc.open_file(source).read_all().column("text").to_pylist()
    before = rss_bytes()
    start = time.perf_counter()
    index, _ = pool_index(texts, retriever)
    build = time.perf_counter() - start
    grown = rss_bytes() - before
    index.top(queries[:5], k)
    times = []
    for query in queries:
        start = time.perf_counter()
        index.top([query], k)
        times.append(time.perf_counter() - start)
    out = {"retriever": retriever, "pool_sentences": len(texts), "build_seconds": round(build, 2),
           "ms_per_query": round(1000 * statistics.fmean(times), 3),
           "ms_per_query_median": round(1000 * statistics.median(times), 3),
           "ms_per_query_p95": round(1000 * sorted(times)[int(0.95 * (len(times) - 1))], 3),
           "rss_growth_bytes": grown, "rss_bytes_after_queries": rss_bytes()}
    if retriever == "tantivy":
        out["index_bytes_on_disk"] = folder_bytes(index.path)
    return out


def main() -> None:
    # per-query times are on one thread (its measuring processes inherit this); set here, not on import, so that the
    # benchmarks that import the pool (gpu_generation's CPU side, gpu_model) keep torch on every core
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool-sizes", default="100000,1000000,10000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--retrievers", default="bm25s,tantivy")
    parser.add_argument("--k", type=int, default=106)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure", nargs=3, metavar=("POOL", "RETRIEVER", "QUERIES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        pool_file, retriever, queries = args.measure
        print(json.dumps(measure(pool_file, retriever, json.loads(Path(queries).read_text()), args.k)))
        return

    import pyarrow as pa

    start = time.perf_counter()
    real = real_sentences()
    real_seconds = time.perf_counter() - start
    queries = random.Random(args.seed + 1).sample(real, args.queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="retrieval-scale-") as work:
        query_file = Path(work) / "queries.json"
        query_file.write_text(json.dumps(queries))
        for size in map(int, args.pool_sizes.split(",")):
            start = time.perf_counter()
            pool = mixed_pool(real, size, args.seed)
            pool_file = str(Path(work) / f"pool-{size}.arrow")
            with pa.OSFile(pool_file, "wb") as sink, pa.ipc.new_file(sink, pa.schema([("text", pa.string())])) as writer:
                writer.write_table(pa.table({"text": pa.array(pool, pa.string())}))
            made = time.perf_counter() - start
            del pool
            for retriever in args.retrievers.split(","):
                load = os.getloadavg()[0]
                done = subprocess.run([sys.executable, __file__, "--k", str(args.k), "--measure", pool_file, retriever, str(query_file)],
                                      capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"{retriever} at {size}: {done.stderr.strip().splitlines()[-1]}")
                row = json.loads(done.stdout) | {"pool_seconds": round(made, 1), "load_average_1min_before": round(load, 2),
                                                  "load_average_1min_after": round(os.getloadavg()[0], 2)}
                rows.append(row)
                if not args.json:
                    print(f"{retriever:>8} {size:>10,}: build {row['build_seconds']:8.1f} s, {row['ms_per_query']:8.2f} ms/query "
                          f"(median {row['ms_per_query_median']}), RSS +{row['rss_growth_bytes'] / 2**20:,.0f} MiB"
                          + (f", index {row['index_bytes_on_disk'] / 2**20:,.0f} MiB on disk" if "index_bytes_on_disk" in row else "")
                          + f"; load {load:.1f}", flush=True)
    result = {"pool": {"real_sentences": len(real), "made_in_seconds": round(real_seconds, 1), "how": "mixed halves (see docstring)",
                       "seed": args.seed},
              "queries": args.queries, "k": args.k, "cpus": os.cpu_count(), "rows": rows}
    for retriever in args.retrievers.split(","):
        mine = sorted((r for r in rows if r["retriever"] == retriever), key=lambda r: r["pool_sentences"])
        if len(mine) > 1:
            result.setdefault("growth_of_ms_per_query", {})[retriever] = {
                f"{mine[0]['pool_sentences']}->{r['pool_sentences']}": round(r["ms_per_query"] / mine[0]["ms_per_query"], 2) for r in mine[1:]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(json.dumps(result.get("growth_of_ms_per_query", {})))


if __name__ == "__main__":
    main()
