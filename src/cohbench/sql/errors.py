"""DuckDB's errors as one line: `query_errors` is the one place a failed query becomes a `QueryError`."""

from __future__ import annotations

import contextlib
import re

import duckdb

from ..errors import QueryError
from .views import views


@contextlib.contextmanager
def query_errors(con: duckdb.DuckDBPyConnection, also: tuple[type[BaseException], ...] = ()):
    """DuckDB's errors inside the block (and those of the types `also`, such as pyarrow's for a failure while a
    result streams) as one-line `QueryError`s; an interrupt passes as it is."""
    try:
        yield
    except duckdb.InterruptException:
        raise
    except (duckdb.Error, *also) as error:
        raise QueryError(one_line(error, con)) from None


def one_line(error: duckdb.Error, con: duckdb.DuckDBPyConnection) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = lines[0] if lines else type(error).__name__
    hint = next((line for line in lines[1:] if line.startswith("Did you mean")), None)
    if hint and "pg_" not in hint and "duckdb_" not in hint:  # DuckDB suggests its own catalog tables otherwise
        message += " " + hint
    if isinstance(error, duckdb.CatalogException) and "Table with name" in message:  # then every view was made (`db`)
        message += f" (views: {', '.join(views(con))})"
    if isinstance(error, duckdb.OutOfMemoryException):
        message += " (the limit is --memory-limit or COHBENCH_SQL_MEMORY)"
    near = re.search(r'syntax error at or near "(\w+)"', message)
    if near and near[1].lower() in _reserved_columns(con):
        message += f' ({near[1]} is a reserved word in SQL: quote the column name, "{near[1]}")'
    return message


def _reserved_columns(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Column names of the views that SQL reserves (`references`, `end`), which a query must quote."""
    return {name for (name,) in con.execute(
        "SELECT DISTINCT c.column_name FROM duckdb_columns() c JOIN duckdb_keywords() k ON lower(c.column_name) = k.keyword_name "
        "WHERE k.keyword_category = 'reserved'").fetchall()}  # fmt: skip
