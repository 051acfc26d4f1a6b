"""What running a user's `module:function` scorer in its own process (`leaderboards.user_scorer`) costs, against calling it
in this process on deep copies of the same scorer views (the cheaper alternative its own process was chosen over), in the
same run: the process's start and import, and the JSON round trip of every batch.

    .venv/bin/python benchmarks/user_scorer_process.py [--records 20000] [--sentences 5] [--json]

Records are made up (the timing depends on their size, not their words); the scorer is a cheap function of the text,
so the times are the scorer process's own.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from cohbench.leaderboards.user_scorer import ScorerProcess
from cohbench.leaderboards.scorers import BATCH

SCORER = """
def score(records):
    return [[len(s) / 100 for s in r["sentences"]] for r in records]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--sentences", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    views = [{"config": "timetravel_dsd", "sentences": [f"Record {i} says sentence {k} of its story, about twelve words long."
                                                         for k in range(args.sentences)]} for i in range(args.records)]
    batches = [views[at : at + BATCH] for at in range(0, len(views), BATCH)]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "bench_scorer.py").write_text(SCORER)
        os.chdir(folder)
        sys.path.insert(0, folder)
        import bench_scorer

        started = time.perf_counter()
        in_process = [s for batch in batches for s in bench_scorer.score(copy.deepcopy(batch))]
        copied = time.perf_counter() - started

        started = time.perf_counter()
        process = ScorerProcess("bench_scorer:score")
        process.start()
        ready = time.perf_counter() - started
        separate = [s for batch in batches for s in process.score(batch)]
        process.close()
        total = time.perf_counter() - started
    assert separate == in_process
    result = {"records": args.records, "sentences": args.sentences, "batches": len(batches),
              "in_process_deep_copies_s": round(copied, 3), "own_process_start_s": round(ready, 3),
              "own_process_total_s": round(total, 3), "ratio": round(total / copied, 2)}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.records} records x {args.sentences} sentences in {len(batches)} batches: in this process on deep "
              f"copies {copied:.3f} s; in its own process {total:.3f} s (start and import {ready:.3f} s), {total / copied:.1f}x")


if __name__ == "__main__":
    main()
