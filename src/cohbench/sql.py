"""SQL over the release: a DuckDB connection with views over the release's Parquet files (nothing is copied).

Views (documented with example queries in `catalog/SQL.md`):
- one per built config, named like the config (`"name"` quoting where it has a hyphen), one row per record;
- `records`: every built config together (they share one schema);
- `spans`, `sentences`, `ratings`, `corruptions`: the nested lists unnested into long tables, ClassLabel ints
  decoded to names where a name is what people filter on (span type and category);
- `snac_training`: SNaC's detector view, one row per sentence with the preceding summary text as context.
"""

from __future__ import annotations

import code
import json
import sys
from pathlib import Path

import duckdb
import pyarrow as pa

from . import settings
from .atomic import atomic_path
from .errors import CohbenchError, ReleaseError
from .release import built_configs
from .schema import CATEGORIES, ERROR_TYPES

LONG_VIEWS = ("records", "spans", "sentences", "ratings", "corruptions", "snac_training")
FORMATS = ("csv", "json", "parquet")


class QueryError(CohbenchError):
    """A SQL query failed (syntax, unknown view or column, type error)."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _names(values) -> str:
    return "[" + ", ".join(_literal(v) for v in values) + "]"


def _parquet(paths: list[Path]) -> str:
    return f"read_parquet([{', '.join(_literal(str(p)) for p in paths)}])"


TYPE_NAMES = _names(ERROR_TYPES)
CATEGORY_NAMES = _names(CATEGORIES)

# Each long view reads `records` (its `__SOURCE__`), so it covers whichever configs are built and is empty where
# none applies; `long_view` gives the same rows for one config, reading only that config's files.
_LONG_VIEW_SQL = {
    "spans": f"""
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.doc_id, r.system, r.system_name,
               u.i - 1 AS span_index, s.segment, s.start, s."end", s.first_sentence, s.last_sentence,
               r.sentences[s.first_sentence + 1] AS sentence, s.text,
               s.type AS type_id, {TYPE_NAMES}[s.type + 1] AS type,
               {CATEGORY_NAMES}[s.category + 1] AS category,
               s.votes, s.annotator, s.antecedents, s.resolved, s.resolution
        FROM __SOURCE__ r, UNNEST(r.spans) WITH ORDINALITY AS u(s, i)""",
    "sentences": """
        SELECT config, corpus, record_id, split, doc_id, system, system_name, sentence_index, text, segment,
               sentence_labels[sentence_index + 1] AS label,
               sentence_labels_min2votes[sentence_index + 1] AS label_min2votes,
               segment_labels[segment + 1] AS segment_label,
               segment_labels_min2votes[segment + 1] AS segment_label_min2votes,
               gap_labels[sentence_index + 1] AS gap_after_label,
               record_label
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.doc_id, r.system, r.system_name,
                   u.i - 1 AS sentence_index, u.text, r.sentence_segments[u.i] AS segment,
                   r.sentence_labels, r.sentence_labels_min2votes, r.segment_labels, r.segment_labels_min2votes,
                   r.gap_labels, r.label AS record_label
            FROM __SOURCE__ r, UNNEST(r.sentences) WITH ORDINALITY AS u(text, i)
        )""",
    "ratings": """
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.doc_id, r.system, r.system_name,
               r.system_extractive, g.annotator, g.annotator_type, g.dimension, g.score
        FROM __SOURCE__ r, UNNEST(r.ratings) AS u(g)""",
    "corruptions": """
        SELECT config, corpus, record_id, split, doc_id, label, generator, seed, source_id,
               position_index, c.positions[position_index + 1] AS position,
               c.inserted_ids[position_index + 1] AS inserted_id,
               c.similarities[position_index + 1] AS similarity,
               c.ranks[position_index + 1] AS rank
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.doc_id, r.label, r.corruption AS c,
                   r.corruption.generator, r.corruption.seed, r.corruption.source_id,
                   -- a corruption that altered no position still gets one row, so every record is seen
                   UNNEST(CASE WHEN coalesce(len(r.corruption.positions), 0) = 0 THEN [NULL::BIGINT]
                               ELSE range(len(r.corruption.positions)) END) AS position_index
            FROM __SOURCE__ r
            WHERE r.corruption IS NOT NULL
        )""",
    # The same examples as `cohbench.builders.snac.sentence_examples` (the paper's §5 unit): context = the summary's
    # preceding sentences joined by spaces; error_types = coherence types of the spans touching the sentence.
    "snac_training": f"""
        SELECT r.config, r.id || '/' || (u.i - 1) AS id, r.id AS record_id, r.split, r.doc_id, r.system,
               u.i - 1 AS sentence_index, r.sentence_segments[u.i] AS segment,
               array_to_string(list_slice(r.sentences, 1, u.i - 1), ' ') AS context,
               u.sentence, r.sentence_labels[u.i] AS label, r.sentence_labels_min2votes[u.i] AS label_min2votes,
               coalesce(t.error_types, []) AS error_types
        FROM records r, UNNEST(r.sentences) WITH ORDINALITY AS u(sentence, i)
        LEFT JOIN (
            SELECT record_id, sentence_index,
                   list_transform(list_sort(list_distinct(list(type_id))), lambda t: {TYPE_NAMES}[t + 1]) AS error_types
            FROM (
                SELECT record_id, type_id, UNNEST(range(first_sentence, last_sentence + 1)) AS sentence_index
                FROM spans
                WHERE corpus = 'snac' AND category = 'coherence' AND first_sentence IS NOT NULL AND last_sentence IS NOT NULL
            )
            GROUP BY record_id, sentence_index
        ) t ON t.record_id = r.id AND t.sentence_index = u.i - 1
        WHERE r.corpus = 'snac'""",
}


def config_files(release: Path | None = None) -> dict[str, list[Path]]:
    """Parquet files of every built config, from the stats the build wrote (the release's own record)."""
    release = release or settings.release_dir()
    files = {}
    for config, stats in built_configs(release).items():
        paths = [release / f["path"] for f in stats["files"].values()]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            raise ReleaseError(f"{missing[0]} is missing although {config} is recorded as built; run `cohbench build {config}`")
        files[config] = paths
    return files


def db(release: Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per built config and the long views over them."""
    release = release or settings.release_dir()
    files = config_files(release)
    if not files:
        raise ReleaseError(f"no config is built in {release}; run `cohbench build CONFIG` first")
    clash = sorted(set(files) & set(LONG_VIEWS))
    if clash:
        raise ReleaseError(f"config {clash[0]!r} has the name of a SQL view; rename the config")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # long statistics queries would draw bars over the output
    for config, paths in files.items():
        con.execute(f"CREATE VIEW {_ident(config)} AS SELECT * FROM {_parquet(paths)}")
    con.execute(f"CREATE VIEW records AS SELECT * FROM {_parquet([p for paths in files.values() for p in paths])}")
    for name, body in _LONG_VIEW_SQL.items():
        con.execute(f"CREATE VIEW {name} AS {body.replace('__SOURCE__', 'records')}")
    return con


def long_view(name: str, config: str) -> str:
    """A long view (spans, sentences, ratings, corruptions) of one config, as a parenthesised relation to select
    from: the same rows as `SELECT * FROM <name> WHERE config = ...`, without reading the other configs' files."""
    if name not in ("spans", "sentences", "ratings", "corruptions"):
        raise QueryError(f"no per-config form of view {name!r}")
    return f"({_LONG_VIEW_SQL[name].replace('__SOURCE__', view_reference(config))})"


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]


def config_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The per-config views of a connection made by `db` (every view that is not a long view)."""
    return [name for name in views(con) if name not in LONG_VIEWS]


def _one_line(error: duckdb.Error, con: duckdb.DuckDBPyConnection) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = lines[0] if lines else type(error).__name__
    hint = next((line for line in lines[1:] if line.startswith("Did you mean")), None)
    if hint and "pg_" not in hint and "duckdb_" not in hint:  # DuckDB suggests its own catalog tables otherwise
        message += " " + hint
    if isinstance(error, duckdb.CatalogException):
        message += f" (views: {', '.join(views(con))})"
    return message


def query(sql: str, con: duckdb.DuckDBPyConnection | None = None):
    """Run one SQL statement; returns a pyarrow Table. Errors become one-line `QueryError`s."""
    con = con or db()
    try:
        relation = con.sql(sql)
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.Error as error:
        raise QueryError(_one_line(error, con)) from None


def export(sql: str, output: Path, fmt: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Write a query's result to `output` as csv, json (an array of objects) or parquet; returns the row count."""
    if fmt not in FORMATS:
        raise QueryError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    con = con or db()
    options = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet"}[fmt]
    statement = sql.strip().rstrip(";")
    with atomic_path(Path(output)) as tmp:
        try:
            con.execute(f"COPY ({statement}) TO {_literal(str(tmp))} ({options})")
            rows = con.execute(f"SELECT count(*) FROM ({statement})").fetchone()[0]
        except duckdb.Error as error:
            raise QueryError(_one_line(error, con)) from None
    return rows


def render(table, max_rows: int = 40) -> str:
    """A text table for the terminal (DuckDB's own box rendering)."""
    return str(duckdb.from_arrow(table).limit(max_rows)) + (
        f"({table.num_rows} rows, first {max_rows} shown)\n" if table.num_rows > max_rows else ""
    )


def to_json(table) -> str:
    return json.dumps(table.to_pylist(), indent=2, ensure_ascii=False, default=str)


class _Shell(code.InteractiveConsole):
    """A small SQL prompt: statements end with `;`; `.views` lists the views; `.quit` or Ctrl-D leaves."""

    def __init__(self, con):
        super().__init__()
        self.con = con

    def runsource(self, source, filename="<input>", symbol="single"):
        text = source.strip()
        if text in (".quit", ".exit"):
            raise SystemExit
        if text == ".views":
            print("\n".join(views(self.con)))
            return False
        if text and not text.endswith(";"):
            return True  # wait for the rest of the statement
        if text:
            try:
                print(render(query(text, self.con)), end="")
            except QueryError as error:
                print(f"error: {error}")
        return False


def shell(con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Interactive SQL prompt over the release views (there is no DuckDB CLI in the environment)."""
    con = con or db()
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    banner = f"cohbench SQL (DuckDB {duckdb.__version__}); views: {', '.join(views(con))}\nend statements with ';', .views lists views, .quit leaves"
    sys.ps1, sys.ps2 = "sql> ", "...> "
    try:
        _Shell(con).interact(banner=banner, exitmsg="")
    except SystemExit:
        pass


def view_reference(name: str) -> str:
    """A config's view in generated SQL: always quoted, so that hyphens and SQL keywords in config names are safe."""
    return _ident(name)
