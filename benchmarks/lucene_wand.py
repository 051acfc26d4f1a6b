"""Lucene's block-max WAND against the pool size: the dynamic pruning the tantivy binding never runs, measured.

Lucene 8 (Debian's liblucene8-java, with the machine's Java 17) answers a top-k query through a collector that
counts the first 1,000 hits and then lets block-max WAND skip every block of postings that cannot reach the k-th
score. `LuceneTopK.java` (beside this file) indexes the pool as one segment with BM25 (k1 = 1.2, b = 0.75:
tantivy's) on cohbench's tokens, and times each query twice in one JVM: pruned, and made exhaustive (a collector
that counts every hit, so nothing is skipped), after three warm-up rounds; it checks that both give the same
documents and bit-equal scores. The pool and the queries are `retrieval_scale.py`'s (the same mixed pool at every
size); at 1M sentences and below, the share of tantivy's top k that Lucene finds is reported too (both score BM25
with the same idf, k1, b and one-byte document lengths, in float32 summed in their own orders).

    apt-get install liblucene8-java        # Debian 12; Java 17 (default-jdk) compiles and runs it
    COHBENCH_MIRROR=../shared/data/mirror .venv/bin/python benchmarks/lucene_wand.py \\
        [--pool-sizes 100000,1000000,10000000] [--queries 200] [--k 106] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import retrieval_scale  # noqa: E402  (the pool and the queries of the other retrieval benchmarks)

JARS = Path("/usr/share/java")
HEAP = "-Xmx8g"


def lucene_classpath() -> str:
    jars = [next(iter(sorted(JARS.glob(f"lucene-{name}-8.*.jar"))), None) for name in ("core", "analyzers-common")]
    if None in jars or not shutil.which("javac"):
        raise SystemExit("this benchmark needs Lucene 8 and a JDK: apt-get install liblucene8-java default-jdk")
    return ":".join(map(str, jars))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool-sizes", default="100000,1000000,10000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=106)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    classpath = lucene_classpath()

    from cohbench.corruptions.retrieval import tokenize

    real = retrieval_scale.real_sentences()
    queries = random.Random(args.seed + 1).sample(real, args.queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lucene-wand-") as work:
        work = Path(work)
        subprocess.run(["javac", "-cp", classpath, "-d", str(work), str(Path(__file__).with_name("LuceneTopK.java"))], check=True)
        (work / "queries.txt").write_text("".join(" ".join(tokenize(q)) + "\n" for q in queries), encoding="utf-8")
        for size in map(int, args.pool_sizes.split(",")):
            pool = retrieval_scale.mixed_pool(real, size, args.seed)
            (work / "pool.txt").write_text("".join(" ".join(tokenize(s)) + "\n" for s in pool), encoding="utf-8")
            load = os.getloadavg()[0]
            done = subprocess.run(["java", HEAP, "-cp", f"{work}:{classpath}", "LuceneTopK", str(work / "pool.txt"),
                                   str(work / "queries.txt"), str(args.k), str(work / f"index-{size}"), str(work / "top.txt")],
                                  capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"Lucene at {size:,}: {done.stderr.strip().splitlines()[-1]}")
            row = json.loads(done.stdout) | {"load_average_1min_before": round(load, 2),
                                              "index_bytes_on_disk": retrieval_scale.folder_bytes(work / f"index-{size}")}
            if size <= 1_000_000:
                found = [list(map(int, line.split())) for line in (work / "top.txt").read_text().splitlines()]
                row["share_of_tantivy_top_k"] = retrieval_scale.share_of_tantivy_top(pool, queries, found, args.k)
            shutil.rmtree(work / f"index-{size}")
            del pool
            rows.append(row)
            if not args.json:
                print(json.dumps(row), flush=True)
    growth = {f"{rows[0]['pool_sentences']}->{r['pool_sentences']}": {
        "pruned": round(r["ms_per_query"] / rows[0]["ms_per_query"], 2),
        "exhaustive": round(r["exhaustive_ms_per_query"] / rows[0]["exhaustive_ms_per_query"], 2)} for r in rows[1:]}
    retrieval_scale.print_result({"queries": args.queries, "k": args.k, "rows": rows, "growth_of_ms_per_query": growth}, args.json)


if __name__ == "__main__":
    main()
