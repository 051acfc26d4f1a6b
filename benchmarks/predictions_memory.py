"""Peak memory of `cohbench evaluate` on a large predictions file: a release of R sentence-level records and a
JSONL file of about --megabytes MB (each line carries per-sentence scores and the summary text, as model outputs
often do). Prints the file size, the peak RSS of a fresh process that evaluates it, and that of the same process
evaluating a minimal file (the release and imports alone), so the difference is what reading the file costs.

    .venv/bin/python benchmarks/predictions_memory.py [--megabytes 200] [--records 20000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURE = """
import resource, sys
from cohbench.evaluation import evaluate
evaluate("bench_dsd", sys.argv[1], threshold=0.5)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def write_release(root: Path, records: int, sentences: int) -> None:
    import datasets

    from cohbench.release.layout import split_stats
    from cohbench.schema import FEATURES, empty_record
    from cohbench.corpora.sources import sha256_of

    datasets.disable_progress_bars()
    files, per_split = {}, {}
    for split, ids in {"validation": range(0, records // 10), "test": range(records // 10, records)}.items():
        rows = []
        for i in ids:
            row = empty_record()
            labels = [int(j == i % sentences) for j in range(sentences)]
            row.update(id=f"r{i}", doc_id=f"d{i}", corpus="timetravel", config="bench_dsd", split=split, label=1,
                       sentences=[f"Sentence {j} of story {i}." for j in range(sentences)], sentence_labels=labels)
            rows.append(row)
        path = root / "data" / "bench_dsd" / f"{split}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        ds = datasets.Dataset.from_list(rows, features=FEATURES)
        ds.to_parquet(str(path))
        files[split] = {"path": f"data/bench_dsd/{split}.parquet", "rows": len(rows), "bytes": path.stat().st_size, "sha256": sha256_of(path)}
        per_split[split] = split_stats(ds)
    stats = {"config": "bench_dsd", "corpus": "timetravel", "version": "0", "licence": "benchmark", "research_only": False,
             "upstream_records": records, "built_records": records, "dropped": {}, "errata": [], "inputs": [],
             "files": files, "splits": per_split, "notes": {}}  # fmt: skip
    (root / "stats").mkdir(parents=True, exist_ok=True)
    (root / "stats" / "bench_dsd.json").write_text(json.dumps(stats))


def write_predictions(path: Path, records: int, sentences: int, megabytes: float) -> None:
    rng = random.Random(0)
    pad = max(0, int(megabytes * 1e6 / records) - 30 * sentences)
    with open(path, "w") as out:
        for i in range(records):
            text = "".join(rng.choice("abcdefghij ") for _ in range(pad)) if pad else ""
            out.write(json.dumps({"id": f"r{i}", "score": [rng.random() for _ in range(sentences)], "text": text}) + "\n")


def peak_rss(predictions: Path, release: Path) -> int:
    env = os.environ | {"COHBENCH_RELEASE": str(release)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(predictions)], env=env, check=True, capture_output=True, text=True)
    return int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=200)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cohbench-bench-") as tmp:
        root = Path(tmp)
        write_release(root / "release", args.records, args.sentences)
        big, small = root / "big.jsonl", root / "small.jsonl"
        write_predictions(big, args.records, args.sentences, args.megabytes)
        write_predictions(small, args.records, args.sentences, 0)
        result = {
            "file_megabytes": round(big.stat().st_size / 1e6, 1),
            "peak_rss_megabytes": round(peak_rss(big, root / "release") / 1e6, 1),
            "peak_rss_minimal_file_megabytes": round(peak_rss(small, root / "release") / 1e6, 1),
            "records": args.records,
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['file_megabytes']} MB predictions file: peak RSS {result['peak_rss_megabytes']} MB "
              f"(minimal file: {result['peak_rss_minimal_file_megabytes']} MB; {args.records} records)")


if __name__ == "__main__":
    main()
