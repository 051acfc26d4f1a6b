"""The whole leaderboard: every built-in reference scorer (oracles left out) and the baseline on every config of the
release, each config by its protocol, with 1,000 bootstrap resamples per headline and per paired difference, from a
warm embedding store (the vectors the train stage read, `.cache/embeddings`). Goal: under a minute on the
project's 2-core CPU machine.

Timed against a reference run in the same process: the same leaderboard with one resample, so the ratio is what the
bootstraps add on top of reading the release and scoring every reference. Results go to a temporary folder.

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/leaderboard.py [--samples 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from cohbench.leaderboards.board import leaderboard


def timed(samples: int, output: Path) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds of this process (the machine is shared: wall time alone mixes in other work), result."""
    started, cpu = time.perf_counter(), time.process_time()
    result = leaderboard(samples=samples, output=output)
    return time.perf_counter() - started, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        reference_seconds, reference_cpu, _ = timed(1, Path(folder) / "reference")  # also warms the embedding cache's file read
        seconds, cpu, result = timed(args.samples, Path(folder) / "full")
    figures = sum(len(e["scores"]) + len(e["references"]) for e in result["configs"].values())
    out = {
        "configs": len(result["configs"]), "scorers": len(result["scorers"]), "headlines": figures,
        "samples": args.samples, "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
        "reference_run_seconds": round(reference_seconds, 1), "reference_run_cpu_seconds": round(reference_cpu, 1),
        "load_average": round(os.getloadavg()[0], 1),
        "ratio_to_reference_run": round(seconds / reference_seconds, 2), "goal_seconds": 60,
    }  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"leaderboard of {out['scorers']} scorers over {out['configs']} configs ({figures} headlines, "
              f"{args.samples} resamples each, paired differences included): {seconds:.1f} s wall, {cpu:.1f} s CPU "
              f"(goal < 60 s); the same with 1 resample: {reference_seconds:.1f} s wall, {reference_cpu:.1f} s CPU; ratio "
              f"{out['ratio_to_reference_run']:.2f} (load average {out['load_average']})")


if __name__ == "__main__":
    main()
