"""`cohbench sql` on a terminal: a result as DuckDB's own box, and the interactive prompt."""

from __future__ import annotations

import code
import contextlib
import io
import sys

import duckdb

from .. import sql

CELL_CHARS = 1000  # longest value drawn in a terminal table: DuckDB's box takes ~0.1 s per million characters


def table(statement: str, con: duckdb.DuckDBPyConnection, max_rows: int = 40) -> str:
    """A text table for the terminal (DuckDB's own box) of a statement's first `max_rows` rows, saying when there
    are more: the statement runs once, holding no more than `max_rows` + 1 rows. Values longer than CELL_CHARS are cut,
    as text, and the table says so."""
    relation = sql.relation_of(statement, con)
    if relation is None:
        return "(no result)\n"  # a statement such as CHECKPOINT
    with sql.query_errors(con):
        held = sql.shaped(relation, "table").limit(max_rows + 1).materialize()
        ((count, *lengths),) = held.aggregate(", ".join(
            ["count(*)", *(f"coalesce(max(length(CAST({sql.quoted(name)} AS VARCHAR))), 0)" for name in held.columns)])).fetchall()  # fmt: skip
        long = [name for name, length in zip(held.columns, lengths) if length > CELL_CHARS]
        cells = [f"CASE WHEN length(CAST({sql.quoted(name)} AS VARCHAR)) > {CELL_CHARS} THEN left(CAST({sql.quoted(name)} AS VARCHAR), "
                 f"{CELL_CHARS - 1}) || '…' ELSE CAST({sql.quoted(name)} AS VARCHAR) END AS {sql.quoted(name)}"
                 if name in long else sql.quoted(name) for name in held.columns]  # fmt: skip
        box = io.StringIO()
        with contextlib.redirect_stdout(box):  # show() is the public form of the box that takes a row count
            held.limit(max_rows).project(", ".join(cells)).show(max_rows=max_rows)
    notes = [f"(first {max_rows} rows shown)"] if count > max_rows else []
    if long:
        notes.append(f"(values over {CELL_CHARS} characters cut for display in {', '.join(long)}; --output or --format gives them whole)")
    return box.getvalue().rstrip("\n") + "\n" + "".join(note + "\n" for note in notes)


class Shell(code.InteractiveConsole):
    """A small SQL prompt: statements end with `;`; `.views` lists the views; `.quit` or Ctrl-D leaves."""

    def __init__(self, con, max_rows: int = 40):
        super().__init__()
        self.con, self.max_rows = con, max_rows

    def runsource(self, source, filename="<input>", symbol="single"):
        text = source.strip()
        if text in (".quit", ".exit"):
            raise SystemExit
        if text == ".views":
            print("\n".join(sql.views(self.con)))
            return False
        if text and not text.endswith(";"):
            return True  # wait for the rest of the statement
        if text:
            try:
                with sql.interruptible(self.con):
                    print(table(text, self.con, self.max_rows), end="")
            except sql.QueryError as error:
                print(f"error: {error}")
            except KeyboardInterrupt:
                print("interrupted")
        return False


def shell(con: duckdb.DuckDBPyConnection, max_rows: int = 40) -> None:
    """Interactive SQL prompt over the release views: cohbench's own, since the sandbox (sealed copies, locked
    configuration) is made in this process; the DuckDB CLI would open the files themselves."""
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    banner = f"cohbench SQL (DuckDB {duckdb.__version__}); views: {', '.join(sql.views(con))}\nend statements with ';', .views lists views, .quit leaves"
    sys.ps1, sys.ps2 = "sql> ", "...> "
    try:
        Shell(con, max_rows).interact(banner=banner, exitmsg="")
    except SystemExit:
        pass
