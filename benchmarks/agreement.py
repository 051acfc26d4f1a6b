"""SNaC token-level agreement: the SQL path (DuckDB over Parquet views) against a straightforward pandas
implementation of the same reconstruction, on SNaC replicated N times (default 100), in the same run. Both must
give identical numbers; prints the time of each and the ratio (goal: SQL at least 5x faster). Also times every
statistic of the whole release once its views exist (goal: well under a second).

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/agreement.py [--replicas 100] [--json]

Needs the `snac` config built in the release folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cohbench import settings, sql
from cohbench.statistics import release_statistics
from cohbench.statistics.alpha import binary_agreement, with_zeros
from cohbench.statistics.error_spans import token_levels
from cohbench.statistics.spans_sql import MIN_CODERS, TOKEN_PATTERN
from cohbench.release.layout import built_configs
from cohbench.schema import ERROR_TYPES


def replicate(release: Path, replicas: int, target: Path) -> Path:
    """A release folder holding only `snac`, every record copied `replicas` times under new ids."""
    files = built_configs(release)["snac"]["files"]
    table = pa.concat_tables([pq.read_table(release / f["path"]) for f in files.values()])
    copies = [table.set_column(table.schema.get_field_index("id"), "id", pc.binary_join_element_wise(table["id"], pa.scalar(f"#{k}"), ""))
              for k in range(replicas)]
    path = target / "data" / "snac" / "all.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.concat_tables(copies), path)
    (target / "stats").mkdir()
    (target / "stats" / "snac.json").write_text(json.dumps({"config": "snac", "corpus": "snac", "files": {"all": {"path": "data/snac/all.parquet"}}}))
    return target


def pandas_token_agreement(parquet: Path) -> dict:
    """The same reconstruction, written the obvious way: explode the spans, tokenise every segment with `re`,
    merge tokens with the spans of their segment, keep overlaps, sum votes per token and type, cap, count."""
    records = pd.read_parquet(parquet, columns=["id", "segments", "spans"])
    spans = records[["id", "spans"]].explode("spans").dropna(subset=["spans"])
    spans = pd.concat([spans[["id"]].reset_index(drop=True), pd.json_normalize(spans["spans"].tolist())], axis=1)
    coders = spans.groupby("id")["votes"].max().clip(lower=MIN_CODERS).reindex(records["id"]).fillna(MIN_CODERS).astype(int)
    marks = spans[spans["resolved"] & spans["start"].notna() & spans["end"].notna()]
    pattern = re.compile(TOKEN_PATTERN)
    token_rows, totals = [], defaultdict(int)
    marked_segments = set(zip(marks["id"], marks["segment"]))
    for record_id, segments in zip(records["id"], records["segments"]):
        for index, text in enumerate(segments):
            tokens = list(pattern.finditer(text))
            totals[coders[record_id]] += len(tokens)
            if (record_id, index) in marked_segments:
                token_rows += [(record_id, index, k, t.start(), t.end()) for k, t in enumerate(tokens)]
    tokens = pd.DataFrame(token_rows, columns=["id", "segment", "k", "token_start", "token_end"])
    pairs = tokens.merge(marks[["id", "segment", "type", "start", "end", "votes"]], on=["id", "segment"])
    pairs = pairs[(pairs["start"] < pairs["token_end"]) & (pairs["token_start"] < pairs["end"])]
    per_token = pairs.groupby(["id", "segment", "k", "type"], as_index=False)["votes"].sum()
    per_token["coders"] = coders.loc[per_token["id"]].to_numpy()
    per_token["c"] = per_token[["votes", "coders"]].min(axis=1)
    histogram = per_token.groupby(["type", "coders", "c"]).size()
    capped = (per_token["votes"] > per_token["coders"]).groupby(per_token["type"]).sum()
    out = {}
    for type_id, name in enumerate(ERROR_TYPES):
        marked = defaultdict(dict)
        if type_id in histogram.index.get_level_values(0):
            for (m, c), n in histogram.loc[type_id].items():
                marked[int(m)][int(c)] = int(n)
        out[name] = binary_agreement(with_zeros(marked, dict(totals))) | {"tokens_capped": int(capped.get(type_id, 0))}
    return out


def timed(func, *args):
    start = time.perf_counter()
    result = func(*args)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: DuckDB's, one per core); 1 compares like with like")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release = settings.release_dir()
    if "snac" not in built_configs(release):
        sys.exit(f"benchmark: the snac config is not built in {release}; run `cohbench build snac` first")

    con, db_seconds = timed(sql.db, release)
    _, release_seconds = timed(release_statistics, con)
    with tempfile.TemporaryDirectory(prefix="cohbench-bench-") as tmp:
        replicated = replicate(release, args.replicas, Path(tmp))
        con = sql.db(replicated)
        if args.threads:
            con.execute(f"SET threads = {args.threads}")
        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        rows = con.execute("SELECT count(*) FROM spans").fetchone()[0]
        sql_result, sql_seconds = timed(lambda: token_levels(con, "snac", ["as_marked"])["as_marked"]["by_type"])
        pandas_result, pandas_seconds = timed(pandas_token_agreement, replicated / "data" / "snac" / "all.parquet")
    identical = sql_result == pandas_result
    report = {
        "release": str(release),
        "views_seconds": round(db_seconds, 3),
        "release_statistics_seconds": round(release_seconds, 3),
        "replicas": args.replicas,
        "replicated_spans": rows,
        "duckdb_threads": threads,
        "sql_seconds": round(sql_seconds, 2),
        "pandas_seconds": round(pandas_seconds, 2),
        "ratio_pandas_over_sql": round(pandas_seconds / sql_seconds, 1),
        "identical": identical,
        "alpha_by_type": {name: r["alpha"] for name, r in sql_result.items()},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"views over the release: {db_seconds:.3f} s; every statistic of the release ({', '.join(built_configs(release))}): {release_seconds:.3f} s")
        print(f"SNaC x{args.replicas} ({rows} spans), token-level agreement of 7 types:")
        print(f"  SQL (DuckDB, {threads} threads) {sql_seconds:8.2f} s")
        print(f"  pandas                  {pandas_seconds:8.2f} s")
        print(f"  ratio                   {pandas_seconds / sql_seconds:8.1f}x (goal >= 5x)")
        print(f"  identical numbers: {identical}")
    if not identical:
        sys.exit("benchmark: the SQL and pandas paths disagree")


if __name__ == "__main__":
    main()
