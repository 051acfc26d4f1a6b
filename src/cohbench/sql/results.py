"""A query's result as it leaves the sandbox: a pyarrow table, Python rows, or csv (`csv_text`), json and parquet
streamed batch by batch (`--output` is written by cohbench from the stream, not by DuckDB)."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import duckdb

from .. import jsonout, settings
from ..atomic import atomic_path
from ..errors import QueryError
from . import csv_text
from .errors import query_errors
from .connection import db
from .sandbox import interruptible
from .views import quoted


FORMATS = ("csv", "json", "parquet")
BATCH_ROWS = 10_000


def _statement(sql: str) -> str:
    statement = sql.strip().rstrip(";").strip()
    if not statement:
        raise QueryError("the query is empty; give one SQL statement, e.g. SELECT count(*) FROM records")
    return statement


def relation_of(sql: str, con: duckdb.DuckDBPyConnection):
    """The relation of one SQL statement, computed as it is read; None for a statement that returns no rows."""
    statement = _statement(sql)
    with query_errors(con):
        count = len(con.extract_statements(statement))  # parsed, not run
        if count > 1:  # DuckDB would run every one and return only the last one's rows
            raise QueryError(f"give one SQL statement; this query has {count} (separated by ';')")
        return con.sql(statement)

# The DuckDB types whose values a format would change, carried as DuckDB's text instead. Arrow hands over an unsigned
# 128-bit integer as -1, a time's zone dropped and bits as bytes (json and parquet go through Arrow, and CSV is
# written as pyarrow's writer wrote it, `csv_text`); pyarrow's Parquet writer has no form for an interval or a union
# and keeps an integer beyond 128 bits as opaque bytes; pyarrow's CSV writer and Python's JSON have none for an
# interval, bytes, an integer beyond 128 bits or an infinite date, and Python none for dates beyond the year 9999
# (dates and times are therefore all text there).
_LOST_IN_ARROW = frozenset({"bit", "uhugeint", "time with time zone"})
_TEXT_IN = {
    "table": frozenset(),
    "parquet": _LOST_IN_ARROW | {"interval", "union", "bignum"},
    "csv": _LOST_IN_ARROW | {"interval", "blob", "bignum", "date", "time", "time_ns", "timestamp", "timestamp_s",
                             "timestamp_ms", "timestamp_ns", "timestamp with time zone"},
}  # fmt: skip
_TEXT_IN["json"] = _TEXT_IN["csv"]


def _as_text(kind, text: frozenset) -> str | None:
    """`kind` as a SQL type with each type in `text` made VARCHAR, inside lists, structs, maps and unions too; None
    where nothing changes."""
    if kind.id in text:
        return "VARCHAR"
    if kind.id not in ("list", "array", "struct", "map", "union"):
        return None
    if kind.id in ("list", "array"):
        child = _as_text(kind.children[0][1], text)
        return None if child is None else f"{child}[]" if kind.id == "list" else f"{child}[{kind.children[1][1]}]"
    fields = [(name, child, _as_text(child, text)) for name, child in kind.children if kind.id != "union" or name]
    if all(new is None for _, _, new in fields):
        return None
    if kind.id == "map":
        return f"MAP({', '.join(str(new or child) for _, child, new in fields)})"
    return f"{kind.id.upper()}({', '.join(f'{quoted(name)} {new or child}' for name, child, new in fields)})"


def _distinct(names: list[str]) -> list[str]:
    """The names with each repeat numbered (`a`, `a_1`, `a_1_1`), compared without case, as DuckDB compares them."""
    taken, out = set(), []
    for name in names:
        new, n = name, 0
        while new.lower() in taken:
            n += 1
            new = f"{name}_{n}"
        taken.add(new.lower())
        out.append(new)
    return out


def shaped(relation, fmt: str):
    """The relation as `fmt` writes it: distinct column names (a note on stderr names the renamed ones) and the
    types of `_TEXT_IN[fmt]` as DuckDB's text."""
    names = _distinct(relation.columns)
    renamed = [f"{new} ({old})" for old, new in zip(relation.columns, names) if new != old]
    if renamed:
        print(f"cohbench: note: the result repeats column names; written as {', '.join(renamed)}", file=sys.stderr)
    casts = [_as_text(kind, _TEXT_IN[fmt]) for kind in relation.types]
    if not renamed and not any(casts):
        return relation
    return relation.project(", ".join(f"{f'CAST(#{i} AS {cast})' if cast else f'#{i}'} AS {quoted(name)}"
                                      for i, (name, cast) in enumerate(zip(names, casts), 1)))  # fmt: skip


def _batches(relation, con: duckdb.DuckDBPyConnection, rows: int = BATCH_ROWS):
    """The relation's rows as Arrow record batches, computed as they are read. A failure while the stream runs (an
    interrupt, memory) reaches pyarrow as its own error: it becomes a one-line `QueryError` too."""
    import pyarrow as pa

    with query_errors(con, also=(pa.ArrowException, OSError)):
        yield from _read_all(relation.to_arrow_reader(rows))


def _read_all(reader):
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return


def query(sql: str, con: duckdb.DuckDBPyConnection | None = None):
    """Run one SQL statement; returns a pyarrow Table. Errors become one-line `QueryError`s."""
    import pyarrow as pa

    con = con or db()
    relation = relation_of(sql, con)
    with query_errors(con):
        return relation.to_arrow_table() if relation is not None else pa.table({})


def rows(sql: str, con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple]]:
    """Column names and rows of one statement, as Python values the way DuckDB gives them (a HUGEINT stays an int):
    for the statistics' own queries. Errors become one-line `QueryError`s."""
    relation = relation_of(sql, con)
    with query_errors(con):
        return relation.columns, relation.fetchall()


def write(sql: str, output: Path, fmt: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Write a query's result to `output` as csv, json (an array of objects) or parquet; returns the row count.
    `output` may not lie inside the release. The sandbox cannot write, so every format is written by cohbench from
    the result's batches, as csv and json are on stdout."""
    if fmt not in FORMATS:
        raise QueryError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    output = settings.user_output(output)
    con = con or db()
    relation = relation_of(sql, con)
    if relation is None:
        raise QueryError("the statement returns no rows to write; give a SELECT")
    relation = shaped(relation, fmt)
    if fmt == "csv":
        batches = csv_text.batches(relation, con)  # refuses what CSV cannot hold before the file is made
        with atomic_path(output) as tmp, open(tmp, "wb") as sink, interruptible(con):
            return csv_text.write(batches, sink)
    if fmt == "json":
        with atomic_path(output) as tmp, open(tmp, "wb") as sink, interruptible(con):
            return _write_json(_batches(relation, con), sink)
    with atomic_path(output) as tmp, interruptible(con):
        return _write_parquet(relation, con, tmp)


def stream_to(sql: str, sink, fmt: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Write a query's result to a binary stream (stdout) as csv or json, batch by batch; returns the row count."""
    con = con or db()
    relation = relation_of(sql, con)
    if relation is None:
        raise QueryError("the statement returns no rows to write; give a SELECT")
    relation = shaped(relation, fmt)
    if fmt == "csv":
        return csv_text.write(csv_text.batches(relation, con), sink)
    return _write_json(_batches(relation, con), sink)


# A Parquet row group gathers whole batches up to this many rows (about DuckDB's own 122,880) or bytes (wide rows)
ROW_GROUP_ROWS, ROW_GROUP_BYTES = 12 * BATCH_ROWS, 64 << 20


def _write_parquet(relation, con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """The relation's batches to a Parquet file by pyarrow's writer; returns the row count. The result is read on
    this thread like csv and json, so Ctrl-C interrupts `con` alone (a second connection's COPY reading this one's
    stream sometimes hung on the interrupt); a row group is compressed and written on another thread while the next
    one is read."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 0
    with query_errors(con, also=(pa.ArrowException, OSError)):
        reader = relation.to_arrow_reader(BATCH_ROWS)
        with pq.ParquetWriter(path, reader.schema) as writer, ThreadPoolExecutor(1) as writing:
            written = None
            for group in _row_groups(_read_all(reader)):
                if written is not None:
                    written.result()  # one group in writing at a time: memory stays two groups at most
                table = pa.Table.from_batches(group, reader.schema)
                written = writing.submit(writer.write_table, table)  # one row group
                rows += table.num_rows
            if written is not None:
                written.result()
    return rows


def _row_groups(batches):
    """Runs of consecutive batches, each closed once it holds `ROW_GROUP_ROWS` rows or `ROW_GROUP_BYTES` bytes."""
    group, group_rows, group_bytes = [], 0, 0
    for batch in batches:
        group.append(batch)
        group_rows, group_bytes = group_rows + batch.num_rows, group_bytes + batch.nbytes
        if group_rows >= ROW_GROUP_ROWS or group_bytes >= ROW_GROUP_BYTES:
            yield group
            group, group_rows, group_bytes = [], 0, 0
    if group:
        yield group


def _holds_decimals(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_decimal(kind) or any(_holds_decimals(kind.field(i).type) for i in range(kind.num_fields))


def _decimals_as_numbers(value):
    """`value` with its Decimals as JSON numbers (DuckDB's sum() is a HUGEINT or DECIMAL, which reach Python as
    Decimal and `jsonout` would write as strings): whole ones as ints, exactly; the others as floats."""
    if isinstance(value, Decimal):
        return int(value) if value.as_tuple().exponent >= 0 else float(value)
    if isinstance(value, dict):
        return {key: _decimals_as_numbers(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decimals_as_numbers(v) for v in value]
    return value


def _write_json(batches, sink) -> int:
    """Record batches to a binary stream as json: an array of objects with NaN and infinities as null."""
    rows = 0
    sink.write(b"[")
    for batch in batches:
        decimals = any(_holds_decimals(field.type) for field in batch.schema)
        for row in batch.to_pylist():
            row = _decimals_as_numbers(row) if decimals else row
            sink.write(((",\n  " if rows else "\n  ") + jsonout.dumps(row)).encode("utf-8"))
            rows += 1
    sink.write(b"\n]\n" if rows else b"]\n")
    sink.flush()
    return rows
