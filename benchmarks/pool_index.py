"""How much faster `retrieval.bm25s_index` indexes a confounder pool than bm25s's own `BM25().index`, and whether
every (sentence, term) score is the same, bit for bit.

Every `corrupt` run with a bm25s pool indexes it in the driver before any worker starts, so this is time a Ray run
cannot spread over its actors. Pools of SCALE.md's sentences (`retrieval_scale.mixed_pool`), tokenised once; the two
builders alternate `--repeats` times at each size in this process, and the ratio of their medians is printed with
whether the two indexes hold the same scores.

    .venv/bin/python benchmarks/pool_index.py [--sizes 1000,40000,200000] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def columns(index) -> dict[str, tuple[bytes, bytes]]:
    """term -> (its documents, their float32 scores), as bytes, from a bm25s index's CSC matrix (bm25s numbers
    terms in a set's order, so the two indexes are compared term by term)."""
    scores = index.scores
    return {term: (scores["indices"][scores["indptr"][c] : scores["indptr"][c + 1]].tobytes(),
                   scores["data"][scores["indptr"][c] : scores["indptr"][c + 1]].tobytes())
            for term, c in index.vocab_dict.items() if c + 1 < len(scores["indptr"])}


def measure(size: int, repeats: int) -> dict:
    from cohbench.corruptions.retrieval import _bm25s, bm25s_index
    from cohbench.text import words
    from retrieval_scale import mixed_pool, real_sentences

    tokens = [words(text) for text in mixed_pool(real_sentences(), size, seed=0)]

    def bm25s_own():
        index = _bm25s().BM25()
        index.index(tokens, show_progress=False)
        return index

    seconds = {"bm25s": [], "arrays": []}
    for _ in range(repeats):
        for name, build in (("bm25s", bm25s_own), ("arrays", lambda: bm25s_index(tokens))):
            started = time.perf_counter()
            built = build()
            seconds[name].append(time.perf_counter() - started)
            if name == "bm25s":
                own = built
    same = columns(own) == columns(built)
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    return {"sentences": size, "bm25s_s": round(medians["bm25s"], 4), "arrays_s": round(medians["arrays"], 4),
            "ratio": round(medians["bm25s"] / medians["arrays"], 2), "same_scores": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,40000,200000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit("pool_index: --repeats must be at least 1")
    rows = [measure(int(size), args.repeats) for size in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['sentences']:,} sentences: bm25s {row['bm25s_s']} s, arrays {row['arrays_s']} s: {row['ratio']}x; "
              f"the same scores: {'yes' if row['same_scores'] else 'NO'}")


if __name__ == "__main__":
    main()
