"""How much faster a config's content fingerprint is with its floats put in canonical form by numpy
(`release.fingerprint._canonical_values`) than with Python's walk over every value (`canonical`), and whether the two
give the same fingerprint.

Every build and every `corrupt` run fingerprints what it wrote, in one process (on Ray, the driver), so this is time
no worker can take over. The release's own configs are read as every command reads them (`make release` or `dvc
pull` first); the two ways alternate `--repeats` times on each config in this process, and the ratio of their medians is
printed with the time a record and whether the fingerprints are equal.

    .venv/bin/python benchmarks/fingerprint_speed.py [--configs rocstories_dsd,synthetic_coherence] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def measure(config: str, repeats: int) -> dict:
    from cohbench.release import fingerprint as module
    from cohbench.release.layout import read_config

    tables = read_config(None, config).tables  # checked against its stats' sha256; names the fix if not built
    in_arrow = module._canonical_values

    def python_walk(column):
        return module.canonical(column.to_pylist())

    times, prints = {"numpy": [], "python_walk": []}, {}
    for _ in range(repeats):
        for way, canonical_values in (("numpy", in_arrow), ("python_walk", python_walk)):
            module._canonical_values = canonical_values
            try:
                started = time.perf_counter()
                prints[way] = module.fingerprint(tables)["fingerprint"]
                times[way].append(time.perf_counter() - started)
            finally:
                module._canonical_values = in_arrow
    records = sum(table.num_rows for table in tables.values())
    medians = {way: statistics.median(seconds) for way, seconds in times.items()}
    return {"config": config, "records": records, "same_fingerprint": prints["numpy"] == prints["python_walk"],
            "us_per_record": {way: round(s / records * 1e6, 1) for way, s in medians.items()},
            "ratio": round(medians["python_walk"] / medians["numpy"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="rocstories_dsd,synthetic_coherence,fairytale_dsd,summeval")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit("fingerprint_speed: --repeats must be at least 1")
    from cohbench.errors import CohbenchError

    try:
        rows = [measure(config, args.repeats) for config in args.configs.split(",")]
    except CohbenchError as error:  # the release not built, or a config not in it: the one line that names the fix
        raise SystemExit(f"fingerprint_speed: {error}") from None
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        us = row["us_per_record"]
        print(f"{row['config']}: {row['records']:,} records, {us['python_walk']} -> {us['numpy']} us a record, "
              f"{row['ratio']}x; the same fingerprint: {row['same_fingerprint']}")


if __name__ == "__main__":
    sys.exit(main())
