"""Latency of one `cohbench sql` call against plain DuckDB over the same Parquet files, in the same run: each is a
fresh Python process answering one small query (the cost a user pays per command). Two queries, each also run by a
plain DuckDB process (`import duckdb; print(duckdb.sql(q).fetchall())`) over exactly the files cohbench's connection
reads for it (`sql.configs_read`), doing the same work: a one-row count of one config, and spans by type (the README's
count, `FROM spans`, which reads every config whose stats count spans: plain DuckDB UNNESTs those configs' files and
decodes the type names as the view does, grouped by corpus where cohbench groups by annotation). cohbench answers as
a terminal table (the default) and as CSV. Prints the median of each and its ratio to plain DuckDB answering the same
query (goal: at most 1.5x).

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/sql_latency.py [--runs 9] [--json]

Needs snac built in the release folder (the span query reads it); the count uses the first config built.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from cohbench import settings
from cohbench.release.layout import built_configs
from cohbench.sql import configs_read
from cohbench.sql.views import TYPE_NAMES


# Each process imports from bytecode cached by the untimed first run, as a user's Python does: with
# PYTHONDONTWRITEBYTECODE set (some sandboxes set it), every run compiled cohbench's modules and DuckDB's Python layer
# from source again (44 modules, 0.08 s of a 0.4 s query), which is no cost a user pays.
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=ENVIRONMENT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release = settings.release_dir()
    configs = built_configs(release)
    if "snac" not in configs:
        sys.exit(f"snac is not built in {release}; build it first (cohbench build snac)")
    config = next(iter(configs))

    def files(statement: str) -> str:
        """The Parquet files of the configs cohbench's connection reads for `statement`, as plain DuckDB reads them."""
        read, _ = configs_read(release, statement)
        return "read_parquet([" + ", ".join(f"'{release / f['path']}'" for name in read for f in configs[name]["files"].values()) + "])"

    plain = [sys.executable, "-c", "import sys, duckdb; print(duckdb.sql(sys.argv[1]).fetchall())"]
    cohbench_sql = [sys.executable, "-m", "cohbench.cli", "sql"]
    count = f'SELECT count(*) FROM "{config}"'
    spans = "SELECT annotation, type, count(*) FROM spans GROUP BY ALL ORDER BY ALL"
    commands = {
        "plain count": [*plain, f"SELECT count(*) FROM {files(count)}"],
        "cohbench count": [*cohbench_sql, count],
        "cohbench count csv": [*cohbench_sql, count, "--format", "csv"],
        "plain spans": [*plain, f"SELECT corpus, {TYPE_NAMES}[s.type + 1] AS type, count(*) FROM {files(spans)}, UNNEST(spans) AS u(s) "
                                "GROUP BY ALL ORDER BY ALL"],
        "cohbench spans": [*cohbench_sql, spans],
        "cohbench spans csv": [*cohbench_sql, spans, "--format", "csv"],
    }
    for command in commands.values():  # warm the file and bytecode caches once, untimed
        timed(command)
    seconds = {name: [] for name in commands}
    for _ in range(args.runs):  # interleaved, so that load on the machine hits all alike
        for name, command in commands.items():
            seconds[name].append(timed(command))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    reference = {name: "plain count" if "count" in name else "plain spans" for name in commands if name.startswith("cohbench")}
    ratio = {name: median[name] / median[plain_name] for name, plain_name in reference.items()}
    result = {"config": config, "runs": args.runs, "median_seconds": median, "ratio_to_plain_duckdb": ratio}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, value in median.items():
        print(f"{name:<20} {value:.3f} s per call (median of {args.runs})"
              + (f", {ratio[name]:.2f}x {reference[name]}" if name in ratio else ""))
    print(f"(count: one row of {config}; spans: the README's count over every config that holds spans; plain DuckDB "
          "over the same files as cohbench; cohbench as a terminal table, and as CSV)")


if __name__ == "__main__":
    main()
