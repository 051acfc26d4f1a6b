"""`cohbench diff` on a whole release against a pandas merge of the same pair, in the same run.

The pair is the release and a copy of it with two known changes written through the release's own writer: one
record's `label` flipped in one config and one row removed from another. The script checks that the diff reports
exactly those two changes (and that a copy without changes is reported equal), then times `release.diff.diff` against
a plain pandas diff of the same pair (per config: an outer merge on `id`, then each field compared as canonical JSON
with floats rounded to the declared precision, which is what the DuckDB diff compares). Prints medians and the ratio.

    .venv/bin/python benchmarks/release_diff.py [--release DIR] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cohbench import settings
from cohbench.release.diff import diff
from cohbench.release.fingerprint import canonical
from cohbench.release.layout import built_configs, read_config, write_config

FLIPPED, TRIMMED = "timetravel_dsd", "storysumm"  # a generated config and a human-labelled one


def _rewrite(release: Path, config: str, split: str, table: pa.Table) -> None:
    data = read_config(release, config)
    described = {k: v for k, v in data.stats.items() if k not in ("config", "splits", "files", "records_altered")}
    tables = {**data.tables, split: table}
    write_config(release, config, {s: datasets.Dataset(t) for s, t in tables.items()}, described)


def changed_copy(release: Path, target: Path) -> dict:
    """Copy the release's data and stats to `target`, flip one label in FLIPPED's test split and remove one row of
    TRIMMED's test split; returns what was changed."""
    for part in ("data", "stats"):
        shutil.copytree(release / part, target / part)
    test = read_config(target, FLIPPED).tables["test"]
    labels = test.column("label").to_pylist()
    labels[0] = 1 - labels[0]
    index = test.schema.get_field_index("label")
    _rewrite(target, FLIPPED, "test", test.set_column(index, "label", pa.array(labels, type=test.schema.field("label").type)))
    summaries = read_config(target, TRIMMED).tables["test"]
    removed = summaries.column("id")[0].as_py()
    _rewrite(target, TRIMMED, "test", summaries.filter(pc.not_equal(summaries["id"], removed)))
    return {"flipped": (FLIPPED, test.column("id")[0].as_py(), f"label {1 - labels[0]} -> {labels[0]}"), "removed": (TRIMMED, removed)}


def pandas_diff(old: Path, new: Path) -> dict:
    """The same comparison with pandas: per config, rows added/removed/changed and the changed fields."""
    out = {}
    old_built, new_built = built_configs(old), built_configs(new)
    for name in sorted(set(old_built) & set(new_built)):
        frames = [pd.concat([t.to_pandas() for t in read_config(folder, name).tables.values()]) for folder in (old, new)]
        for frame in frames:
            for column in frame.columns:
                if column != "id":
                    frame[column] = [json.dumps(canonical(v.tolist() if hasattr(v, "tolist") else v), sort_keys=True, default=str)
                                     for v in frame[column]]
        merged = frames[0].merge(frames[1], on="id", how="outer", suffixes=("_old", "_new"), indicator=True)
        both = merged[merged["_merge"] == "both"]
        fields = {c: int((both[f"{c}_old"] != both[f"{c}_new"]).sum()) for c in frames[1].columns if c != "id" and c in frames[0].columns}
        changed = both[[f"{c}_old" for c in fields]].to_numpy() != both[[f"{c}_new" for c in fields]].to_numpy()
        out[name] = {"added": int((merged["_merge"] == "right_only").sum()), "removed": int((merged["_merge"] == "left_only").sum()),
                     "changed": int(changed.any(axis=1).sum()), "changed_fields": {c: n for c, n in fields.items() if n}}
    return out


def timed(function, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release = (args.release or settings.release_dir()).resolve()
    with tempfile.TemporaryDirectory(prefix="cohbench-diff-bench-") as scratch:
        same, changed = Path(scratch) / "same", Path(scratch) / "changed"
        for part in ("data", "stats"):
            shutil.copytree(release / part, same / part)
        made = changed_copy(release, changed)
        assert diff(release, same)["equal"], "a byte copy of the release was reported different"
        duck_seconds, result = timed(lambda: diff(release, changed), args.runs)
        pandas_seconds, by_pandas = timed(lambda: pandas_diff(release, changed), args.runs)
    differing = {name: {k: c[k] for k in ("added", "removed", "changed", "changed_fields", "label_transitions")}
                 for name, c in result["configs"].items() if c["status"] != "equal"}
    agree = all(by_pandas[n][k] == c[k] for n, c in differing.items() for k in ("added", "removed", "changed", "changed_fields"))
    rows = sum(c["rows"]["new"] for c in result["configs"].values() if "rows" in c)
    report = {"release": str(release), "configs": len(result["configs"]), "rows": rows, "made": made, "reported": differing,
              "pandas_agrees": agree, "runs": args.runs, "duckdb_diff_s": round(duck_seconds, 3),
              "pandas_merge_s": round(pandas_seconds, 3), "ratio_pandas_over_duckdb": round(pandas_seconds / duck_seconds, 2)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"release {release}: {report['configs']} configs, {rows:,} rows; changed copy: {made}")
    for name, c in differing.items():
        print(f"  reported {name}: {c}")
    print(f"pandas finds the same counts: {agree}")
    print(f"cohbench diff (DuckDB) {duck_seconds:.2f} s, pandas merge {pandas_seconds:.2f} s (median of {args.runs}): "
          f"pandas/duckdb = {report['ratio_pandas_over_duckdb']}")


if __name__ == "__main__":
    main()
