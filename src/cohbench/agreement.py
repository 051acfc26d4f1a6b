"""Agreement and distribution statistics of the release, counted in SQL (DuckDB over the release views);
Python only turns the counts into Krippendorff's α and percentages.

Krippendorff's α needs only how many coders gave each value in each unit (the coincidence matrix), not who
gave them. That is what makes SNaC's token-level α computable at all: its file merges annotators into spans
with vote counts. The reconstruction (see `catalog/stats/report.md` for the full list of assumptions):
- coders per summary: 3 crowd workers (SNaC §4.2), or the summary's largest vote count where that exceeds 3;
- tokens: maximal runs of characters other than space, tab, newline, carriage return and form feed in each
  segment (the SQL and the reference implementation use exactly this definition); a token belongs to a span
  when their character ranges overlap;
- a token's count for a type = the sum of the votes of the resolved spans of that type covering it, capped at
  the coders (overlapping same-type spans are taken to come from different annotators; capped tokens counted);
- boundary-normalised (SNaC Table 5, parentheses): spans of one type in a segment that overlap are merged to
  their union, which carries the sum of their votes (`overlap_union`: sharing a character, the paper's wording;
  `sentence_union`: touching a common sentence, the reading that comes closest to the published figures);
- sentence / segment level (Table 4): a unit's count for a category = the sum of the votes of that category's
  spans touching it, capped at the coders (`sum`), and, as the other bound, their maximum (`max`): the true
  number of annotators lies between the two, since one annotator may mark several spans in a sentence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

import duckdb
import numpy as np

from . import registry
from .errors import CohbenchError, RegistryError
from .schema import CATEGORIES, ERROR_TYPES
from .release.layout import require_built
from .release.versions import provenance
from .sql import QueryError, _literal, config_views, db, long_view, view_reference, views

LEVELS = ("nominal", "ordinal", "interval", "ratio")
SIMILARITY_BIN = 0.05  # histogram bin width of inserted sentences' similarity
MIN_CODERS = 3  # SNaC §4.2: each summary was annotated by 3 crowd workers
TOKEN_PATTERN = "[^ \t\n\r\f]+"  # the token definition (Python `re`); the SQL counts the same tokens without a regex
WHITESPACE = " \t\n\r\f"


def _token_count_sql(text: str) -> str:
    """SQL counting the TOKEN_PATTERN tokens of a string expression, without a regex: map the other whitespace
    characters to spaces, split on spaces, drop the empty pieces."""
    return f"len(list_filter(string_split(translate({text}, {_literal(WHITESPACE[1:])}, {_literal(' ' * (len(WHITESPACE) - 1))}), ' '), lambda t: t <> ''))"


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


# ---------------------------------------------------------------------------------------------------------
# The final arithmetic


def _delta2(values: np.ndarray, marginals: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's squared difference function δ²(c, k) for the given level of measurement."""
    c, k = np.meshgrid(values, values, indexing="ij")
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            d = ((c - k) / (c + k)) ** 2
        return np.nan_to_num(d)
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
        i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        return (cumulative[hi + 1] - cumulative[lo] - (marginals[i] + marginals[j]) / 2) ** 2
    raise CohbenchError(f"unknown level of measurement {level!r}; use one of {', '.join(LEVELS)}")


def alpha_from_coincidences(values: Iterable[float], matrix: np.ndarray, level: str = "nominal") -> float | None:
    """α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck from a coincidence matrix over sorted `values`.
    None where α is undefined (fewer than two pairable values, or no variation at all)."""
    values = np.asarray(list(values), dtype=float)
    matrix = np.asarray(matrix, dtype=float)
    marginals = matrix.sum(axis=1)
    n = marginals.sum()
    if n <= 1:
        return None
    delta = _delta2(values, marginals, level)
    expected = (np.outer(marginals, marginals) * delta).sum()
    if expected == 0:
        return None
    return float(1 - (n - 1) * (matrix * delta).sum() / expected)


def coincidences_from_pairs(pairs: Iterable[tuple[int, float, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Coincidence matrix from pair counts (m, c, k, S): S = Σ over units with m pairable values of
    n_uc (n_uk − [c = k]); each unit's pairs weigh 1 / (m − 1)."""
    pairs = list(pairs)
    values = np.array(sorted({p[1] for p in pairs} | {p[2] for p in pairs}), dtype=float)
    index = {v: i for i, v in enumerate(values)}
    matrix = np.zeros((len(values), len(values)))
    for m, c, k, count in sorted(pairs):  # a fixed order: the same counts always give the same float sums
        matrix[index[c], index[k]] += count / (m - 1)
    return values, matrix


def binary_pairs(histogram: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Pair counts of binary units from a histogram (m coders, c of whom marked the unit, how many units)."""
    totals = defaultdict(int)
    for m, c, units in histogram:
        if m < 2 or units == 0:
            continue
        totals[m, 1, 1] += units * c * (c - 1)
        totals[m, 1, 0] += units * c * (m - c)
        totals[m, 0, 1] += units * c * (m - c)
        totals[m, 0, 0] += units * (m - c) * (m - c - 1)
    return [(m, c, k, s) for (m, c, k), s in sorted(totals.items()) if s]


def binary_agreement(histogram: list[tuple[int, int, int]]) -> dict:
    """α (nominal) and two-agree % of binary units from their (m, c, units) histogram, zeros included."""
    marked = sum(units for m, c, units in histogram if c >= 1)
    two = sum(units for m, c, units in histogram if c >= 2)
    pairs = binary_pairs(histogram)
    alpha = alpha_from_coincidences(*coincidences_from_pairs(pairs), "nominal") if pairs else None
    return {
        "alpha": alpha,
        "two_agree_pct": 100 * two / marked if marked else None,
        "units": sum(units for _, _, units in histogram),
        "marked_units": marked,
        "units_marked_by_two_or_more": two,
    }


# ---------------------------------------------------------------------------------------------------------
# Counting in SQL


def _fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    try:
        return con.execute(sql).fetchall()
    except duckdb.Error as error:
        raise QueryError(f"{str(error).splitlines()[0]} (in an agreement query)") from None


def pair_counts_sql(units_sql: str) -> str:
    """Pair counts (stratum, m, c, k, S) from a relation (stratum, unit, value, n): n coders gave `value` to `unit`."""
    return f"""
        WITH v AS ({units_sql}),
        m AS (SELECT stratum, unit, sum(n) AS m FROM v GROUP BY stratum, unit HAVING sum(n) >= 2)
        SELECT a.stratum, m.m, a.value AS c, b.value AS k,
               sum(a.n * (b.n - CASE WHEN a.value = b.value THEN 1 ELSE 0 END))::BIGINT AS s
        FROM v a JOIN v b ON a.stratum = b.stratum AND a.unit = b.unit
                 JOIN m ON m.stratum = a.stratum AND m.unit = a.unit
        GROUP BY ALL ORDER BY ALL"""


def alpha_by_stratum(con: duckdb.DuckDBPyConnection, units_sql: str, levels: Iterable[str]) -> dict:
    """Krippendorff's α per level and stratum of a (stratum, unit, value, n) relation: {level: {stratum: α}}.
    The counting runs once in DuckDB; the levels differ only in the final arithmetic."""
    pairs = defaultdict(list)
    for stratum, m, c, k, s in _fetch(con, pair_counts_sql(units_sql)):
        pairs[stratum].append((m, c, k, s))
    matrices = {stratum: coincidences_from_pairs(p) for stratum, p in pairs.items()}
    return {level: {stratum: alpha_from_coincidences(*matrix, level) for stratum, matrix in matrices.items()} for level in levels}


def _coders_sql(view: str) -> str:
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
                     WHERE s.resolved AND s.start IS NOT NULL AND s."end" IS NOT NULL"""
    base = 'SELECT record_id, segment, type_id, start, "end", votes FROM span_marks'
    marks = "\n        UNION ALL\n".join(
        f"SELECT {_literal(b)} AS variant, * FROM ({_islands_sql('SELECT * FROM span_marks', *BOUNDARIES[b]) if BOUNDARIES[b] else base})"
        for b in boundaries
    )
    # Each span covers a run of token indices [first, end): tokens ending after its start and starting before its
    # end, counted on prefixes of the segment (a start inside a token includes that token). A sweep over the runs'
    # boundaries then gives, for every stretch of tokens, the summed votes covering it: no row per token needed.
    cuts_token = f"CASE WHEN m.start > 0 AND length(trim(substr(s.text, m.start, 2), {_literal(WHITESPACE)})) = 2 THEN 1 ELSE 0 END"
    return f"""
        WITH coders AS MATERIALIZED ({_coders_sql(view)}),
        span_marks AS MATERIALIZED ({span_marks}),
        marks AS ({marks}),
        segment AS MATERIALIZED (  -- one row per segment, so that each span row carries its own text only
            SELECT record_id, segment, text, {_plain_text_sql('text')} AS plain
            FROM (SELECT r.id AS record_id, u.i - 1 AS segment, u.text FROM {view} r, UNNEST(r.segments) WITH ORDINALITY AS u(text, i))
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
                      FROM {spans} WHERE first_sentence IS NOT NULL AND last_sentence IS NOT NULL"""
    elif level == "segment":
        touching = "SELECT record_id, category, votes, segment AS unit FROM {spans} WHERE segment IS NOT NULL"
    else:
        raise CohbenchError(f"unknown unit level {level!r}; use sentence or segment")
    return f"""
        WITH coders AS ({_coders_sql(view_reference(config))}),
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
        WITH coders AS ({_coders_sql(view)})
        SELECT c.coders, sum(len(r.{column}))::BIGINT AS units
        FROM {view} r JOIN coders c ON c.record_id = r.id GROUP BY ALL ORDER BY ALL"""


def with_zeros(marked: dict[int, dict[int, int]], totals: dict[int, int]) -> list[tuple[int, int, int]]:
    """Histogram (m, c, units) including the units nobody marked: all units of m-coder summaries minus the marked."""
    rows = []
    for m, total in sorted(totals.items()):
        by_c = marked.get(m, {})
        rows.append((m, 0, total - sum(by_c.values())))
        rows += [(m, c, n) for c, n in sorted(by_c.items())]
    return rows


# ---------------------------------------------------------------------------------------------------------
# Statistics per kind of annotation; a config names its kind in the registry (`ConfigSpec.statistics`).
# A second function for one kind is an error.

_STATISTICS: dict[str, Callable] = {}


def statistics_for(kind: str):
    def register(func):
        if kind in _STATISTICS:
            raise RegistryError(f"agreement statistics of kind {kind!r} are registered twice")
        _STATISTICS[kind] = func
        return func

    return register


def kind_of(config: str) -> str:
    """The analysis a config declares (`ConfigSpec.statistics`); a config the registry does not know (a release
    built by other code) gets the generic one, which needs only the schema."""
    return registry.spec(config).statistics if registry.is_config(config) else "generic"


def snac_token_levels(con, config: str, boundaries: Iterable[str] = tuple(BOUNDARIES)) -> dict:
    """Token-level α and two-agree % per error type (SNaC Table 5) for each boundary variant, plus the counts
    behind them: {variant: {"by_type", "tokens", "token_share_by_system"}}."""
    boundaries = list(boundaries)
    totals = defaultdict(int)
    totals_by_system = defaultdict(int)
    marked = {b: {t: defaultdict(lambda: defaultdict(int)) for t in range(len(ERROR_TYPES))} for b in boundaries}
    capped = {b: defaultdict(int) for b in boundaries}
    marked_by_system = {b: defaultdict(lambda: defaultdict(int)) for b in boundaries}
    for kind, variant, system, type_id, coders, c, tokens, n_capped in _fetch(con, token_histogram_sql(config, boundaries)):
        if kind == "total":
            totals[coders] += tokens
            totals_by_system[system] += tokens
            continue
        marked[variant][type_id][coders][c] += tokens
        capped[variant][type_id] += n_capped
        marked_by_system[variant][system][ERROR_TYPES[type_id]] += tokens
    out = {}
    for variant in boundaries:
        by_type = {}
        for type_id, name in enumerate(ERROR_TYPES):
            by_type[name] = binary_agreement(with_zeros(marked[variant][type_id], totals)) | {"tokens_capped": capped[variant][type_id]}
        share = {
            system: {name: marked_by_system[variant][system][name] / total if total else None for name in ERROR_TYPES}
            for system, total in sorted(totals_by_system.items())
        }
        out[variant] = {"by_type": by_type, "tokens": sum(totals.values()), "token_share_by_system": share}
    return out


def snac_token_agreement(con, config: str, boundaries: str = "as_marked") -> dict:
    """`snac_token_levels` for one boundary variant."""
    return snac_token_levels(con, config, [boundaries])[boundaries]


def snac_unit_agreement(con, config: str, level: str) -> dict:
    """Sentence- or segment-level α of the coherence and language categories (SNaC Table 4), both bounds."""
    totals = {coders: units for coders, units in _fetch(con, unit_totals_sql(config, level))}
    by_bound = {bound: {cat: defaultdict(lambda: defaultdict(int)) for cat in CATEGORIES} for bound in ("sum", "max")}
    for category, coders, c_sum, c_max, units in _fetch(con, unit_histogram_sql(config, level)):
        by_bound["sum"][category][coders][c_sum] += units
        by_bound["max"][category][coders][c_max] += units
    return {
        category: {bound: binary_agreement(with_zeros(by_bound[bound][category], totals)) for bound in ("sum", "max")}
        for category in CATEGORIES
    }


def _rows(con, sql: str) -> list[dict]:
    try:
        relation = con.sql(sql)
        return [dict(zip(relation.columns, row)) for row in relation.fetchall()]
    except duckdb.Error as error:
        raise QueryError(f"{str(error).splitlines()[0]} (in a statistics query)") from None


@statistics_for("error_spans")
def snac_statistics(con, config: str) -> dict:
    view = view_reference(config)
    spans = long_view("spans", config)
    spans_by_type = _rows(
        con,
        f"""SELECT system, type, count(*) AS spans, sum(votes)::BIGINT AS votes FROM {spans}
            GROUP BY ALL ORDER BY ALL""",
    )
    coders = _rows(con, f"SELECT coders, count(*) AS summaries FROM ({_coders_sql(view)}) GROUP BY ALL ORDER BY ALL")
    left_out = _rows(
        con,
        f"""SELECT count(*) FILTER (WHERE NOT resolved OR start IS NULL OR "end" IS NULL) AS token_level,
                   count(*) FILTER (WHERE first_sentence IS NULL OR last_sentence IS NULL) AS sentence_level,
                   count(*) FILTER (WHERE segment IS NULL) AS segment_level
            FROM {spans}""",
    )[0]
    # what boundary normalisation can merge: pairs of same-type spans in one segment sharing characters / a sentence
    overlaps = _rows(
        con,
        f"""SELECT a.type, count(*) FILTER (WHERE a.start < b."end" AND b.start < a."end") AS sharing_characters,
                   count(*) FILTER (WHERE a.first_sentence <= b.last_sentence AND b.first_sentence <= a.last_sentence) AS sharing_a_sentence
            FROM {spans} a JOIN {spans} b ON a.record_id = b.record_id AND a.segment = b.segment
                                     AND a.type_id = b.type_id AND a.span_index < b.span_index
            WHERE a.resolved AND b.resolved
            GROUP BY ALL ORDER BY ALL""",
    )
    return {
        "config": config,
        "summaries_by_coders": {row["coders"]: row["summaries"] for row in coders},
        "spans_left_out": left_out,
        "spans_by_system_and_type": spans_by_type,
        "same_type_span_pairs_by_type": overlaps,
        "token_level": snac_token_levels(con, config),
        "sentence_level": snac_unit_agreement(con, config, "sentence"),
        "segment_level": snac_unit_agreement(con, config, "segment"),
    }


@statistics_for("expert_ratings")
def summeval_statistics(con, config: str) -> dict:
    ratings = long_view("ratings", config)
    per_annotator = f"""FROM {ratings} WHERE annotator_type IN ('expert', 'crowd') AND score IS NOT NULL"""
    units = f"""SELECT dimension || '/' || annotator_type AS stratum, record_id AS unit, score::DOUBLE AS value,
                       count(*) AS n {per_annotator} GROUP BY ALL"""
    alphas = alpha_by_stratum(con, units, ("ordinal", "interval"))
    counts = _rows(
        con,
        f"""SELECT dimension, annotator_type, count(DISTINCT record_id) AS records, count(DISTINCT annotator) AS annotators,
                   count(*) AS ratings {per_annotator} GROUP BY ALL ORDER BY ALL""",
    )
    distribution = _rows(
        con,
        f"""SELECT dimension, annotator_type, score, count(*) AS ratings FROM {ratings}
            GROUP BY ALL ORDER BY ALL""",
    )
    alpha = defaultdict(dict)
    for row in counts:
        key = f"{row['dimension']}/{row['annotator_type']}"
        alpha[row["dimension"]][row["annotator_type"]] = {
            "ordinal": alphas["ordinal"].get(key),
            "interval": alphas["interval"].get(key),
            "records": row["records"],
            "annotators": row["annotators"],
            "ratings": row["ratings"],
        }
    return {"config": config, "alpha": dict(alpha), "rating_distribution": distribution}


def _label_distributions(con, config: str, by: str) -> list[dict]:
    view = view_reference(config)
    return _rows(
        con,
        f"""SELECT {by}, count(*) AS records, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1) AS no_label
            FROM {view} GROUP BY ALL ORDER BY ALL""",
    )


@statistics_for("summary_labels")
def storysumm_statistics(con, config: str) -> dict:
    sentence_labels = _rows(
        con,
        f"""SELECT split, system, count(*) AS sentences, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1) AS no_label
            FROM {long_view("sentences", config)} GROUP BY ALL ORDER BY ALL""",
    )
    return {
        "config": config,
        "labels_by_split": _label_distributions(con, config, "split"),
        "labels_by_split_and_model": _label_distributions(con, config, "split, system"),
        "labels_by_difficulty": _label_distributions(con, config, "split, coalesce(difficulty, 'none') AS difficulty"),
        "sentence_labels_by_split_and_model": sentence_labels,
    }


@statistics_for("generic")
def generic_statistics(con, config: str) -> dict:
    """Any other config: label distribution by split and, for corruptions, the inserted sentences' similarity."""
    similarity = _rows(
        con,
        f"""SELECT generator, count(similarity) AS insertions, avg(similarity) AS mean,
                   quantile_cont(similarity, [0.05, 0.25, 0.5, 0.75, 0.95]) AS quantiles_5_25_50_75_95
            FROM {long_view("corruptions", config)} WHERE similarity IS NOT NULL GROUP BY ALL ORDER BY ALL""",
    )
    histogram = _rows(
        con,
        f"""SELECT split, generator, floor(similarity / {SIMILARITY_BIN}) * {SIMILARITY_BIN} AS bin_start, count(*) AS insertions
            FROM {long_view("corruptions", config)} WHERE similarity IS NOT NULL GROUP BY ALL ORDER BY ALL""",
    )
    sentence_labels = _rows(
        con,
        f"""SELECT split, count(*) AS sentences, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1 OR label IS NULL) AS no_label,
                   count(*) FILTER (WHERE gap_after_label = 1) AS gaps_missing
            FROM {long_view("sentences", config)} GROUP BY ALL ORDER BY ALL""",
    )
    return {
        "config": config,
        "labels_by_split": _label_distributions(con, config, "split"),
        "sentence_labels_by_split": sentence_labels,
        "corruption_similarity": similarity,
        "corruption_similarity_histogram": histogram,
    }


def corpus_of_view(con, config: str) -> str:
    rows = _fetch(con, f"SELECT DISTINCT corpus FROM {view_reference(config)}")
    if len(rows) != 1:
        raise CohbenchError(f"config {config!r} holds records of {len(rows)} corpora; expected one")
    return rows[0][0]


def statistics(config: str, con: duckdb.DuckDBPyConnection | None = None, release: Path | None = None) -> dict:
    """Every statistic of one built config of the release (what `cohbench agreement CONFIG` prints), with the data
    they were computed on (`data`: release and config version, fingerprint)."""
    con = con or db(release)
    if config not in views(con):
        registry.spec(config)  # an unknown name: the closest registered one
        raise CohbenchError(f"config {config!r} is not built in the release; run `cohbench build {config}`")
    folder, stats = require_built(config, release)
    data = provenance(folder, {config: stats})
    corpus = corpus_of_view(con, config)
    return {"corpus": corpus, "data": {"release": data["release"], **data["configs"][config]}} | _STATISTICS[kind_of(config)](con, config)


def release_statistics(con: duckdb.DuckDBPyConnection | None = None, release: Path | None = None) -> dict:
    """`statistics` for every config built in the release."""
    con = con or db(release)
    return {config: statistics(config, con, release) for config in config_views(con)}
