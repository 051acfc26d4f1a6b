"""Latency of one `cohbench sql` call against plain DuckDB, in the same run: each is a fresh Python process that
answers a small query over the release's Parquet (the cost a user pays per command): a one-row count of one config,
and the README's span count over the long view `spans`. Prints the median of each, and the ratio to plain DuckDB's
one-row count (goal: cohbench well under a second, close to plain DuckDB).

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/sql_latency.py [--runs 7] [--json]

Needs one config built in the release folder (the first one built is queried).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from cohbench import settings
from cohbench.release.layout import built_configs


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release = settings.release_dir()
    configs = built_configs(release)
    if not configs:
        sys.exit(f"no config is built in {release}; build one first (cohbench build storysumm)")
    config, stats = next(iter(configs.items()))
    paths = ", ".join(f"'{release / f['path']}'" for f in stats["files"].values())
    cohbench_sql = [sys.executable, "-m", "cohbench.cli", "sql", "--format", "csv"]
    commands = {
        "cohbench sql": [*cohbench_sql, f'SELECT count(*) FROM "{config}"'],
        "cohbench spans": [*cohbench_sql, "SELECT annotation, type, count(*) FROM spans GROUP BY ALL ORDER BY ALL"],
        "plain duckdb": [sys.executable, "-c", "import sys, duckdb; print(duckdb.sql(sys.argv[1]).fetchall())",
                         f"SELECT count(*) FROM read_parquet([{paths}])"],
    }
    for command in commands.values():  # warm the file cache once, untimed
        timed(command)
    seconds = {name: [] for name in commands}
    for _ in range(args.runs):  # interleaved, so that load on the machine hits both alike
        for name, command in commands.items():
            seconds[name].append(timed(command))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = {name: median[name] / median["plain duckdb"] for name in ("cohbench sql", "cohbench spans")}
    result = {"config": config, "runs": args.runs, "median_seconds": median, "ratio_to_plain_duckdb": ratio}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in median.items():
            print(f"{name:<14} {value:.3f} s per call (median of {args.runs})" + (f", {ratio[name]:.2f}x plain duckdb" if name in ratio else ""))
        print(f"(one-row query on {config}; spans: the README's count over every config that holds spans)")


if __name__ == "__main__":
    main()
