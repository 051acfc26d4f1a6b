"""Block-max pruning from PyPI (`bmp`, Mallia et al., SIGIR 2024): does it make BM25 top-k grow slower than the pool?

bmp searches an index of documents given as integer impacts (one byte per term and document; a block of `--bsize`
documents keeps each term's maximum) and skips blocks whose bound cannot reach the running k-th score. It has no
BM25 of its own, so each sentence's terms get their BM25 weight (tantivy's: the idf ln(1 + (N - df + 0.5) / (df +
0.5)), k1 = 1.2, b = 0.75, on `tokenize`'s tokens) quantised linearly to 1-255 over the pool's largest weight; a
query's weights are its token counts. Scores are therefore quantised BM25 (a different retriever from tantivy's
float32 one, with many ties), and the table reports how many of tantivy's top k it finds. The pool and the queries
are `retrieval_scale.py`'s (the same mixed pool for every size). One process, one thread; bmp is not a cohbench
dependency:

    pip install bmp==0.2.8
    COHBENCH_MIRROR=../shared/data/mirror .venv/bin/python benchmarks/block_max_pruning.py \\
        [--pool-sizes 100000,1000000] [--bsize 32] [--queries 200] [--k 106] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as retrieval_scale measures
sys.path.insert(0, str(Path(__file__).parent))
import retrieval_scale  # noqa: E402  (the pool and the queries of the other retrieval benchmarks)

K1, B = 1.2, 0.75


def build_bmp(texts: list[str], path: str, bsize: int) -> None:
    """A bmp index of `texts` with quantised BM25 impacts; document names are pool indices."""
    import bmp

    from cohbench.corruptions.retrieval import tokenize

    counts = [Counter(tokenize(text)) for text in texts]
    lengths = [sum(c.values()) for c in counts]
    average = sum(lengths) / len(texts)
    df = Counter(term for c in counts for term in c)
    idf = {term: math.log(1 + (len(texts) - n + 0.5) / (n + 0.5)) for term, n in df.items()}
    norms = [K1 * (1 - B + B * length / average) for length in lengths]
    weights = [{term: idf[term] * tf * (K1 + 1) / (tf + norm) for term, tf in c.items()} for c, norm in zip(counts, norms)]
    scale = 255 / max(max(w.values(), default=0.0) for w in weights)
    indexer = bmp.Indexer(path, bsize, False)
    for n, w in enumerate(weights):
        indexer.add_document(str(n), {term: max(1, round(value * scale)) for term, value in w.items()})
    indexer.finish()


def measure(pool: list[str], queries: list[str], k: int, bsize: int) -> dict:
    import bmp

    from cohbench.corruptions.retrieval import tokenize

    with tempfile.TemporaryDirectory(prefix="bmp-") as work:
        path = os.path.join(work, "pool.bmp")
        start = time.perf_counter()
        build_bmp(pool, path, bsize)
        built = time.perf_counter() - start
        searcher = bmp.Searcher(path)
        found, times = [], []
        for query in queries:
            terms = dict(Counter(tokenize(query)))
            start = time.perf_counter()
            names, _ = searcher.search(terms, k, 1.0, 1.0)  # alpha = beta = 1: no approximation beyond the quantisation
            times.append(time.perf_counter() - start)
            found.append([int(name) for name in names])
        index_bytes = os.path.getsize(path)
    return {"pool_sentences": len(pool), "bsize": bsize, "build_seconds": round(built, 1),
            "ms_per_query_median": round(1000 * statistics.median(times), 3), "ms_per_query": round(1000 * statistics.fmean(times), 3),
            "index_bytes": index_bytes, "queries_with_fewer_than_k": sum(len(f) < k for f in found),
            "share_of_tantivy_top_k": retrieval_scale.share_of_tantivy_top(pool, queries, found, k),
            "share_of_tantivy_top_10": retrieval_scale.share_of_tantivy_top(pool, queries, found, k, first=10)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool-sizes", default="100000,1000000")
    parser.add_argument("--bsize", type=int, default=32)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=106)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        import bmp  # noqa: F401
    except ImportError:
        raise SystemExit("this benchmark needs the bmp package: pip install bmp==0.2.8") from None

    real = retrieval_scale.real_sentences()
    queries = random.Random(args.seed + 1).sample(real, args.queries)
    rows = []
    for size in map(int, args.pool_sizes.split(",")):
        row = measure(retrieval_scale.mixed_pool(real, size, args.seed), queries, args.k, args.bsize)
        row["load_average_1min"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        if not args.json:
            print(json.dumps(row), flush=True)
    growth = {f"{rows[0]['pool_sentences']}->{r['pool_sentences']}": round(r["ms_per_query"] / rows[0]["ms_per_query"], 2) for r in rows[1:]}
    retrieval_scale.print_result({"queries": args.queries, "k": args.k, "rows": rows, "growth_of_ms_per_query": growth}, args.json)


if __name__ == "__main__":
    main()
