"""The SQL of the release's views: names quoted as SQL needs them, the ClassLabel names a view decodes ints to, and
the long views that unnest the records' nested lists (documented with example queries in `catalog/SQL.md`)."""

from __future__ import annotations

import duckdb

from ..errors import QueryError
from ..release.layout import PLAIN_NAME
from ..schema import BINARY_LABELS, CATEGORIES, ERROR_TYPES, GAP_LABELS


LONG_VIEWS = ("records", "spans", "sentences", "ratings", "corruptions")


def config_name_refusal(name: str) -> str | None:
    """Why `name` cannot name a config a user adds (`corrupt --config`, `derive`), or None: it becomes data/<name>/,
    stats/<name>.json and a view of `cohbench sql`, so it is a plain name (no path can escape the folder) that is
    neither a view every release defines nor a word SQL reserves."""
    if not PLAIN_NAME.fullmatch(name):
        return "is not a config name: use lowercase letters, digits and _, starting with a letter, at most 64"
    if name in LONG_VIEWS:
        return f"is the name of a view every release defines ({', '.join(LONG_VIEWS)}); choose another name"
    if duckdb.execute("SELECT 1 FROM duckdb_keywords() WHERE keyword_category = 'reserved' AND keyword_name = ?",
                      [name]).fetchall():
        return "is a word SQL reserves, which `cohbench sql` could not name as a view; choose another name"
    return None


def literal(text: str) -> str:
    """A SQL string literal of `text` (quotes doubled): how generated SQL names a value."""
    return "'" + text.replace("'", "''") + "'"


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def view_reference(name: str) -> str:
    """A config's view in generated SQL: always quoted, so that hyphens and SQL keywords in config names are safe."""
    return quoted(name)


def names_list(values) -> str:
    return "[" + ", ".join(literal(v) for v in values) + "]"


TYPE_NAMES = names_list(ERROR_TYPES)
CATEGORY_NAMES = names_list(CATEGORIES)
LABEL_NAMES = names_list(BINARY_LABELS)  # indexed by label + 1: -1 (no label) gives NULL
GAP_NAMES = names_list(GAP_LABELS)

# Each long view reads `records` (its `__SOURCE__`), so it covers whichever configs are built and is empty where
# none applies; `long_view` gives the same rows for one config, reading only that config's rows. A list is unnested in
# the select list beside `generate_subscripts` for its index: DuckDB 2.0 plans `UNNEST(...) WITH ORDINALITY` in FROM
# as a join over a window of every record, 8x slower (0.08 s of the README's span count, against 0.01 s).
LONG_VIEW_SQL = {
    "spans": f"""
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
               r.span_number - 1 AS span_index, s.segment, s.start, s."end", s.first_sentence, s.last_sentence,
               r.sentences[s.first_sentence + 1] AS sentence, s.text,
               s.type AS type_id, {TYPE_NAMES}[s.type + 1] AS type,
               {CATEGORY_NAMES}[s.category + 1] AS category,
               s.votes, s.annotator, s.antecedents, s.resolved, s.resolution
        FROM (SELECT *, UNNEST(spans) AS s, generate_subscripts(spans, 1) AS span_number FROM __SOURCE__) r""",
    "sentences": f"""
        SELECT config, corpus, record_id, split, annotation, doc_id, system, system_name, sentence_index, text, segment,
               sentence_labels[sentence_index + 1] AS label,
               {LABEL_NAMES}[sentence_labels[sentence_index + 1] + 1] AS label_name,
               sentence_labels_min2votes[sentence_index + 1] AS label_min2votes,
               segment_labels[segment + 1] AS segment_label,
               segment_labels_min2votes[segment + 1] AS segment_label_min2votes,
               gap_labels[sentence_index + 1] AS gap_after_label,
               {GAP_NAMES}[gap_labels[sentence_index + 1] + 1] AS gap_after_label_name,
               record_label
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
                   r.sentence_number - 1 AS sentence_index, r.sentence_text AS text,
                   r.sentence_segments[r.sentence_number] AS segment,
                   r.sentence_labels, r.sentence_labels_min2votes, r.segment_labels, r.segment_labels_min2votes,
                   r.gap_labels, r.label AS record_label
            FROM (SELECT *, UNNEST(sentences) AS sentence_text, generate_subscripts(sentences, 1) AS sentence_number
                  FROM __SOURCE__) r
        )""",
    "ratings": f"""
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
               r.system_extractive, g.annotator, g.annotator_type, g.dimension, g.score
        FROM __SOURCE__ r, UNNEST(r.ratings) AS u(g)""",
    "corruptions": f"""
        SELECT config, corpus, record_id, split, annotation, doc_id, label,
               {LABEL_NAMES}[label + 1] AS label_name, generator, seed, source_id,
               position_index, c.positions[position_index + 1] AS position,
               c.inserted_ids[position_index + 1] AS inserted_id,
               c.similarities[position_index + 1] AS similarity,
               c.ranks[position_index + 1] AS rank,
               c.replaced[position_index + 1] AS replaced
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.label, r.corruption AS c,
                   r.corruption.generator, r.corruption.seed, r.corruption.source_id,
                   -- a corruption that altered no position still gets one row, so every record is seen
                   UNNEST(CASE WHEN coalesce(len(r.corruption.positions), 0) = 0 THEN [NULL::BIGINT]
                               ELSE range(len(r.corruption.positions)) END) AS position_index
            FROM __SOURCE__ r
            WHERE r.corruption IS NOT NULL
        )""",
}


def long_view(name: str, config: str) -> str:
    """A long view (spans, sentences, ratings, corruptions) of one config, as a parenthesised relation to select
    from: the same rows as `SELECT * FROM <name> WHERE config = ...`, without reading the other configs' rows."""
    if name not in ("spans", "sentences", "ratings", "corruptions"):
        raise QueryError(f"no per-config form of view {name!r}")
    return f"({LONG_VIEW_SQL[name].replace('__SOURCE__', view_reference(config))})"


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]
