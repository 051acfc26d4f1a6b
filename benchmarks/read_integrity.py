"""The cost of checking what a command reads (each data file against its stats, each stats file against the
manifest, once per file per process): each read path timed with the check (the first read in a process) and without
it (the same read again, the files already checked in this process, so only their size and mtime are looked at),
in the same process, and the ratio. Also the check alone over the whole release (goal: well under a second for the
~13 MB release).

    .venv/bin/python benchmarks/read_integrity.py [--release DIR] [--repeats 5] [--json]

Works on any release folder (a tiny one: `tests/release_fixture.write_every_protocol`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import cohbench
from cohbench import settings, sql
from cohbench.release import files, layout


def timed(read, repeats: int) -> dict:
    """Median seconds of `read` with the check (the process's record of checked files cleared first) and without."""
    checked, unchecked = [], []
    for _ in range(repeats):
        files._VERIFIED.clear()  # as in a new process: every file is hashed again
        start = time.perf_counter()
        read()
        checked.append(time.perf_counter() - start)
        start = time.perf_counter()
        read()  # every file already checked: the read alone
        unchecked.append(time.perf_counter() - start)
    with_check, without = statistics.median(checked), statistics.median(unchecked)
    return {"with_check_s": round(with_check, 4), "without_check_s": round(without, 4),
            "added_s": round(with_check - without, 4), "ratio": round(with_check / without, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, help="release folder (default: the one cohbench uses)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release, built = layout.require_release(args.release)
    size = sum(p.stat().st_size for p in release.rglob("*") if p.is_file())

    def check_everything():
        for config, stats in layout.built_configs(release).items():
            layout.data_files(release, config, stats)

    reads = {
        "check alone (stats and every data file)": check_everything,
        "cohbench.load, every config": lambda: [cohbench.load(config, release=release) for config in built],
        "read_config, every config (evaluate, validate, train)": lambda: [layout.read_config(release, config) for config in built],
        "sql / db() over records (sql, agreement, report)": lambda: sql.db(release).execute("SELECT count(*) FROM records").fetchall(),
    }
    results = {name: timed(read, args.repeats) for name, read in reads.items()}
    out = {"release": str(release), "bytes": size, "configs": len(built), "repeats": args.repeats, "reads": results}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{release}: {len(built)} config(s), {size / 1e6:.1f} MB; median of {args.repeats}")
    for name, r in results.items():
        print(f"  {name:<55} with check {r['with_check_s']:.3f}s  without {r['without_check_s']:.3f}s  "
              f"added {r['added_s']:+.3f}s  ratio {r['ratio']:.2f}")


if __name__ == "__main__":
    main()
