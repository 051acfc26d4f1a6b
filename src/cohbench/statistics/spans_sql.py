"""The SQL that counts SNaC-style error spans (the `error_spans` kind): tokens, sentences and segments marked by
how many coders, from spans merged into vote counts (the reconstruction's assumptions: `error_spans.ASSUMPTIONS`).
Every query reads one config's view and its long `spans` form; the counts come back as small histograms."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import CohbenchError
from ..sql import literal, long_view, view_reference

MIN_CODERS = 3  # SNaC §4.2: each summary was annotated by 3 crowd workers
TOKEN_PATTERN = "[^ \t\n\r\f]+"  # the token definition (Python `re`); the SQL counts the same tokens without a regex
WHITESPACE = " \t\n\r\f"


def _token_count_sql(text: str) -> str:
    """SQL counting the TOKEN_PATTERN tokens of a string expression, without a regex: map the other whitespace
    characters to spaces, split on spaces, drop the empty pieces."""
    return f"len(list_filter(string_split(translate({text}, {literal(WHITESPACE[1:])}, {literal(' ' * (len(WHITESPACE) - 1))}), ' '), lambda t: t <> ''))"


def _plain_text_sql(text: str) -> str:
    """True where a text has single spaces between tokens, none at either end and no other whitespace (every SNaC
    segment): there, counting tokens needs no lists (`_prefix_token_count_sql`)."""
    others = " AND ".join(f"NOT contains({text}, chr({ord(c)}))" for c in WHITESPACE[1:])
    return f"(NOT contains({text}, '  ') AND {others} AND NOT starts_with({text}, ' ') AND NOT ends_with({text}, ' '))"


def _prefix_token_count_sql(text: str, length: str, plain: str) -> str:
    """Tokens (TOKEN_PATTERN) in the first `length` characters of `text`: in plain text (`plain`, see
    `_plain_text_sql`) the spaces in the prefix, plus one if the prefix ends inside or at the end of a token;
    otherwise counted by `_token_count_sql`. Both agree with the token definition (tested)."""
    prefix = f"left({text}, {length})"
    spaces = f"(length({prefix}) - length(replace({prefix}, ' ', '')))"
    ends_in_token = f"CASE WHEN {length} > 0 AND NOT ends_with({prefix}, ' ') THEN 1 ELSE 0 END"
    return f"CASE WHEN {plain} THEN {spaces} + {ends_in_token} ELSE {_token_count_sql(prefix)} END"


def coders_sql(view: str) -> str:
    return f"""SELECT id AS record_id, system,
                      greatest({MIN_CODERS}, coalesce(list_max(list_transform(spans, lambda s: s.votes)), 0)) AS coders
               FROM {view}"""


# How span boundaries are taken at token level: as marked, or merged to unions (SNaC Table 5, parentheses).
# overlap_union merges spans that share a character (the paper's wording); sentence_union merges spans of one
# type whose sentence ranges overlap (cohbench's reading that comes closest to the paper's published figures).
BOUNDARIES = {"as_marked": None, "overlap_union": ("start", '"end"'), "sentence_union": ("first_sentence", "last_sentence + 1")}


def _islands_sql(marks_sql: str, lo: str, hi: str) -> str:
    """Spans of one type in one segment whose [lo, hi) ranges overlap, merged transitively to the union of their
    characters, carrying the sum of their votes."""
    return f"""
        SELECT record_id, segment, type_id, min(start) AS start, max("end") AS "end", sum(votes) AS votes
        FROM (
            SELECT *, sum(opens) OVER (PARTITION BY record_id, segment, type_id ORDER BY lo, hi, start, "end"
                                       ROWS UNBOUNDED PRECEDING) AS island
            FROM (
                SELECT *, CASE WHEN lo < max(hi) OVER (PARTITION BY record_id, segment, type_id ORDER BY lo, hi, start, "end"
                                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                               THEN 0 ELSE 1 END AS opens
                FROM (SELECT *, {lo} AS lo, {hi} AS hi FROM ({marks_sql}))
            )
        )
        GROUP BY record_id, segment, type_id, island"""


def token_histogram_sql(config: str, boundaries: Iterable[str] = ("as_marked",)) -> str:
    """Rows ('marked', variant, system, type_id, coders, c, tokens, capped): how many tokens of a system's summaries
    with that many coders were marked with a type by c of them, spans taken by a `BOUNDARIES` variant (c >= 1;
    capped = tokens whose summed votes exceeded the coders); and rows ('total', NULL, system, NULL, coders, NULL,
    tokens, 0): every token, marked or not. All variants in one query, so that they share its scans."""
    boundaries = list(boundaries)
    unknown = [b for b in boundaries if b not in BOUNDARIES]
    if unknown or not boundaries:
        raise CohbenchError(f"unknown span boundaries {unknown[0] if unknown else None!r}; use one of {', '.join(BOUNDARIES)}")
    view = view_reference(config)
    span_marks = f"""SELECT r.id AS record_id, s.segment, s.type AS type_id, s.start, s."end", s.votes, s.first_sentence, s.last_sentence
                     FROM {view} r, UNNEST(r.spans) AS u(s)
                     WHERE s.resolved AND s.start IS NOT NULL AND s."end" IS NOT NULL AND s.votes IS NOT NULL"""
    base = 'SELECT record_id, segment, type_id, start, "end", votes FROM span_marks'
    marks = "\n        UNION ALL\n".join(
        f"SELECT {literal(b)} AS variant, * FROM ({_islands_sql('SELECT * FROM span_marks', *BOUNDARIES[b]) if BOUNDARIES[b] else base})"
        for b in boundaries
    )
    # Each span covers a run of token indices [first, end): tokens ending after its start and starting before its
    # end, counted on prefixes of the segment (a start inside a token includes that token). A sweep over the runs'
    # boundaries then gives, for every stretch of tokens, the summed votes covering it: no row per token needed.
    cuts_token = f"CASE WHEN m.start > 0 AND length(trim(substr(s.text, m.start, 2), {literal(WHITESPACE)})) = 2 THEN 1 ELSE 0 END"
    return f"""
        WITH coders AS MATERIALIZED ({coders_sql(view)}),
        span_marks AS MATERIALIZED ({span_marks}),
        marks AS ({marks}),
        segment AS MATERIALIZED (  -- one row per segment, so that each span row carries its own text only
            SELECT record_id, segment, text, {_plain_text_sql('text')} AS plain
            FROM (SELECT id AS record_id, generate_subscripts(segments, 1) - 1 AS segment, UNNEST(segments) AS text FROM {view})
        ),
        located AS MATERIALIZED (  -- materialised: the counts are computed once, not again inside later joins
            SELECT m.variant, m.record_id, m.segment, m.type_id, m.votes,
                   {_prefix_token_count_sql('s.text', 'm.start', 's.plain')} - {cuts_token} AS first_token,
                   {_prefix_token_count_sql('s.text', 'm."end"', 's.plain')} AS end_token
            FROM marks m JOIN segment s ON s.record_id = m.record_id AND s.segment = m.segment
        ),
        steps AS (
            SELECT variant, record_id, segment, type_id, pos, sum(delta) AS delta
            FROM (SELECT variant, record_id, segment, type_id, UNNEST([first_token, end_token]) AS pos, UNNEST([votes, -votes]) AS delta
                  FROM located WHERE end_token > first_token)
            GROUP BY ALL
        ),
        runs AS (
            SELECT variant, record_id, type_id,
                   sum(delta) OVER (PARTITION BY variant, record_id, segment, type_id ORDER BY pos ROWS UNBOUNDED PRECEDING) AS votes,
                   lead(pos) OVER (PARTITION BY variant, record_id, segment, type_id ORDER BY pos) - pos AS tokens
            FROM steps
        )
        SELECT 'marked' AS kind, r.variant, c.system, r.type_id, c.coders, least(r.votes, c.coders)::BIGINT AS c,
               sum(r.tokens)::BIGINT AS tokens, coalesce(sum(r.tokens) FILTER (WHERE r.votes > c.coders), 0)::BIGINT AS capped
        FROM runs r JOIN coders c ON c.record_id = r.record_id
        WHERE r.votes > 0 AND r.tokens > 0
        GROUP BY ALL
        UNION ALL
        SELECT 'total', NULL, c.system, NULL, c.coders, NULL, sum({_prefix_token_count_sql('s.text', 'length(s.text)', 's.plain')})::BIGINT, 0
        FROM segment s JOIN coders c ON c.record_id = s.record_id
        GROUP BY ALL
        ORDER BY ALL"""


def unit_histogram_sql(config: str, level: str) -> str:
    """Rows (category, coders, c_sum, c_max, units) for sentences or segments: c_sum = summed votes of the
    category's spans touching the unit (capped at coders), c_max = their largest vote count."""
    if level == "sentence":
        touching = """SELECT record_id, category, votes, UNNEST(range(first_sentence, last_sentence + 1)) AS unit
                      FROM {spans} WHERE first_sentence IS NOT NULL AND last_sentence IS NOT NULL AND votes IS NOT NULL"""
    elif level == "segment":
        touching = "SELECT record_id, category, votes, segment AS unit FROM {spans} WHERE segment IS NOT NULL AND votes IS NOT NULL"
    else:
        raise CohbenchError(f"unknown unit level {level!r}; use sentence or segment")
    return f"""
        WITH coders AS ({coders_sql(view_reference(config))}),
        touching AS ({touching.format(spans=long_view("spans", config))}),
        unit AS (SELECT record_id, category, unit, sum(votes) AS votes_sum, max(votes) AS votes_max
                 FROM touching GROUP BY ALL)
        SELECT u.category, c.coders, least(u.votes_sum, c.coders) AS c_sum, least(u.votes_max, c.coders) AS c_max,
               count(*) AS units
        FROM unit u JOIN coders c USING (record_id)
        GROUP BY ALL ORDER BY ALL"""


def unit_totals_sql(config: str, level: str) -> str:
    column = {"sentence": "sentences", "segment": "segments"}[level]
    view = view_reference(config)
    return f"""
        WITH coders AS ({coders_sql(view)})
        SELECT c.coders, sum(len(r.{column}))::BIGINT AS units
        FROM {view} r JOIN coders c ON c.record_id = r.id GROUP BY ALL ORDER BY ALL"""


