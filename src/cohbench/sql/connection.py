"""The connection a query runs on: a view per built config, the long views over them, and only what a statement
reads, in the sandbox (`sandbox`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import duckdb

from ..errors import ReleaseError
from ..release.layout import annotation_of, require_release
from .errors import one_line
from .sandbox import lock, memory_limit, sealed_sources
from .views import LONG_VIEW_SQL, LONG_VIEWS, literal, quoted, views

def _tables_named(con: duckdb.DuckDBPyConnection, statement: str | None) -> set[str] | None:
    """The tables a SELECT statement names, from DuckDB's parser (`json_serialize_sql`, which parses and never runs a
    statement; `duckdb.get_table_names` runs some: EXPORT DATABASE writes a folder). None for anything but a SELECT."""
    if statement is None:
        return None
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [statement]).fetchone()[0])
    except duckdb.Error:
        return None
    if tree.get("error"):
        return None
    names, todo = set(), [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                names.add(node.get("table_name"))
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return names

# Long views whose rows come only from records holding that list, counted per split in stats/<config>.json.
_COUNTED_IN_STATS = ("spans", "ratings")


def _needed(built: dict[str, dict], names: set[str] | None) -> list[str]:
    """The configs a statement naming `names` reads, so that a query loads only those: the config views it names, and
    for `spans` or `ratings` the configs whose stats count any (the README's span count needs SNaC and the synthetic
    spans, not the news ratings). Every config when it names another view, or is not a plain SELECT (None)."""
    if not names:
        return list(built)
    wanted = set()
    for name in names:
        if name in built:
            wanted.add(name)
        elif name in _COUNTED_IN_STATS:
            wanted |= {config for config, stats in built.items() if any(s.get(name) for s in stats["splits"].values())}
        else:
            return list(built)
    wanted = wanted or {next(iter(built))}  # the views need one config's columns even where no config has rows
    return [config for config in built if config in wanted]


def configs_read(release: Path | None, statement: str) -> tuple[list[str], dict[str, dict]]:
    """The built configs `statement` reads (`_needed`: every one for a query of another view) and the release's stats."""
    release, built = require_release(release)
    con = duckdb.connect()
    try:
        return _needed(built, _tables_named(con, statement)), built
    finally:
        con.close()


def _config_views(con: duckdb.DuckDBPyConnection, sources: dict[str, str], built: dict[str, dict], in_this_schema: bool = False) -> None:
    """A view per config over its sealed Parquet `sources`, with its `annotation`; `in_this_schema` reads it in this
    cohbench's schema (`_columns_in_this_schema`)."""
    wanted = _schema_types(con) if in_this_schema else None
    for config, source in sources.items():
        annotation = literal(annotation_of(built[config]))
        try:
            columns = _columns_in_this_schema(con, source, wanted) if wanted else "*"
            con.execute(f"CREATE OR REPLACE VIEW {quoted(config)} AS SELECT {columns}, {annotation} AS annotation FROM {source}")
        except duckdb.Error as error:
            raise ReleaseError(f"{config}'s Parquet files cannot be read ({one_line(error, con)}); run `cohbench verify`") from None


def _long_views(con: duckdb.DuckDBPyConnection, configs: list[str], long_views: list[str], records: bool) -> None:
    if records:  # each view made costs DuckDB a bind (~2 ms)
        union = " UNION ALL ".join(f"SELECT * FROM {quoted(config)}" for config in configs)
        con.execute(f"CREATE OR REPLACE VIEW records AS {union}")
    for name in long_views:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {LONG_VIEW_SQL[name].replace('__SOURCE__', 'records')}")


def _schema_types(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """This cohbench's fields with their DuckDB types, in the schema's order. Asked only where the views cannot bind:
    the schema needs `datasets` (3 s to import)."""
    from ..schema import ARROW_SCHEMA

    wanted = con.from_arrow(ARROW_SCHEMA.empty_table())
    return list(zip(wanted.columns, map(str, wanted.types)))


def _columns_in_this_schema(con: duckdb.DuckDBPyConnection, source: str, wanted: list[tuple[str, str]]) -> str:
    """The select list that reads `source` (a config built with another schema) in this cohbench's (`wanted`): a field
    it lacks is null, a struct lacking subfields gets them as nulls (DuckDB casts structs by name), a field since
    dropped is not read."""
    found = con.sql(f"SELECT * FROM {source} LIMIT 0")
    have = dict(zip(found.columns, map(str, found.types)))
    return ", ".join(quoted(name) if have.get(name) == kind else
                     f"CAST({quoted(name) if name in have else 'NULL'} AS {kind}) AS {quoted(name)}"
                     for name, kind in wanted)


DECLARED = "declared by a statistics kind"  # the comment on a declared view, which tells it from a config's


def db(release: Path | None = None, *, memory: int | str | None = None, statement: str | None = None,
       declared: Callable[[], Mapping[str, str]] | None = None) -> duckdb.DuckDBPyConnection:
    """A sandboxed in-memory DuckDB connection with a view per built config and the long views over them; with
    `statement`, only what that statement reads (when it names only views made here: those, and the configs' views
    they read).
    `declared` gives the views the statistics kinds declare (`statistics.declared_views`: name -> SQL over the views
    here), asked for only where the statement may read one, since the kinds take long to import."""
    release, built = require_release(release)
    con = duckdb.connect()
    try:
        names = _tables_named(con, statement)
        configs = _needed(built, names)
        other = names is None or names - {*built, *LONG_VIEWS}  # the statement may read a declared view
        extra = declared() if declared and other else {}
        named_only = bool(names) and not other  # else every view: a statement naming none (SELECT 1) gets them too
        long_views = [name for name in LONG_VIEW_SQL if not named_only or name in names]
        clash = sorted(set(configs) & {*LONG_VIEWS, *extra})
        if clash:
            raise ReleaseError(f"config {clash[0]!r} has the name of a SQL view; rename the config")
        con.execute("SET enable_progress_bar = false")  # long statistics queries would draw bars over the output
        con.execute("SET TimeZone = 'UTC'")  # times with a zone are shown alike on every machine
        sources = sealed_sources(con, release, {config: built[config] for config in configs})
        _config_views(con, sources, built)
        records = bool(long_views) or "records" in names
        try:
            _long_views(con, configs, long_views, records)
        except duckdb.BinderException:  # a config built with another schema: an older release, or a derive of one
            _config_views(con, sources, built, in_this_schema=True)
            _long_views(con, configs, long_views, records)
        for name, body in extra.items():
            con.execute(f"CREATE VIEW {quoted(name)} AS {body}")
            con.execute(f"COMMENT ON VIEW {quoted(name)} IS {literal(DECLARED)}")
        lock(con, memory_limit(memory))
    except BaseException:
        con.close()
        raise
    return con


def config_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The per-config views of a connection made by `db` (every view that is neither a long view nor declared)."""
    declared = {name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE comment = ?", [DECLARED]).fetchall()}
    return [name for name in views(con) if name not in LONG_VIEWS and name not in declared]
