"""What a new user waits for: `cohbench corrupt` on a few hundred stories, timed as a command (start-up included).

Writes the sentences of `--stories` five-sentence ROCStories stories of the built release (one record of each, rocstories_msd train)
as plain texts (JSONL `id`, `text`: each run splits them into sentences itself), runs `cohbench corrupt --recipe
msd` and `--recipe dsd` on them `--runs` times each in fresh processes, and encodes the same sentences with one plain
batched call of the encoder (`cohbench.encoder.encode`: all-MiniLM-L6-v2 in float64, batch 256, the arithmetic dsd's
confounder search runs) in this process as the reference for dsd: dsd also retrieves and scores candidates, so its
time over the plain encode says how far it is from being bound by the encoder. Medians of the runs; run it on a quiet machine.

    .venv/bin/python benchmarks/small_corrupt.py [--stories 200] [--runs 3] [--json]    # COHBENCH_RELEASE: the release
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def stories(count: int) -> list[dict]:
    from cohbench import settings
    from cohbench.release.layout import read_config

    by_story = {}
    for row in read_config(settings.release_dir(), "rocstories_msd").splits["train"]:  # in the release's id order
        by_story.setdefault(row["doc_id"], row["sentences"])  # a story has several msd records: one of each
        if len(by_story) == count:
            break
    return [{"id": f"story-{n:04d}", "text": " ".join(sentences)} for n, sentences in enumerate(by_story.values())]


def timed_command(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cohbench = str(Path(sys.executable).with_name("cohbench"))
    chosen = stories(args.stories)
    result = {"stories": len(chosen), "runs": args.runs, "load_1min_before": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="cohbench-small-") as folder:
        given = Path(folder) / "stories.jsonl"
        given.write_text("".join(json.dumps(s) + "\n" for s in chosen), encoding="utf-8")
        for recipe in ("msd", "dsd"):
            times = [timed_command([cohbench, "corrupt", str(given), "--recipe", recipe, "--out", f"{folder}/{recipe}-{run}"])
                     for run in range(args.runs)]
            result[f"{recipe}_seconds"] = round(statistics.median(times), 2)
            result[f"{recipe}_runs"] = [round(t, 2) for t in times]
        from cohbench.encoder import encode
        from cohbench.text import split_sentences

        sentences = sorted({s for story in split_sentences([s["text"] for s in chosen]) for s in story})
        list(encode(sentences[:8]))  # first-call set-up outside the timing
        started = time.perf_counter()
        list(encode(sentences))
        result["plain_encode_seconds"] = round(time.perf_counter() - started, 2)
        result["sentences"] = len(sentences)
    result["dsd_over_plain_encode"] = round(result["dsd_seconds"] / result["plain_encode_seconds"], 1)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['stories']} stories ({result['sentences']} sentences), median of {args.runs} runs, load "
          f"{result['load_1min_before']}: msd {result['msd_seconds']} s, dsd {result['dsd_seconds']} s; plain MiniLM "
          f"encode {result['plain_encode_seconds']} s (dsd / encode = {result['dsd_over_plain_encode']}x)")


if __name__ == "__main__":
    main()
