"""Error spans marked by several annotators and merged into vote counts (SNaC): Krippendorff's α and two-agree %
at token level (SNaC Table 5), sentence and segment level (Table 4), the distribution of error types by source
(Fig. 4), beside the paper's figures (`catalog/published.yaml`). The file holds no annotator ids, so the counts
are reconstructed from the votes: `ASSUMPTIONS` says how (the report prints them)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from .. import published
from ..corpora import registry
from ..schema import CATEGORIES, COHERENCE_ERROR_TYPES, ERROR_TYPES
from ..sql.views import LABEL_NAMES, TYPE_NAMES, long_view, names_list, view_reference
from .alpha import binary_agreement, with_zeros
from .kind import Kind, Plot, declare, fetch, rows
from .spans_sql import BOUNDARIES, coders_sql, token_histogram_sql, unit_histogram_sql, unit_totals_sql
from .tables import diff, fmt, pyplot, rows_table, save, table

ASSUMPTIONS = (
    "SNaC's file merges the 3 crowd workers' marks into spans with vote counts and no annotator ids. Krippendorff's "
    "alpha needs only how many coders gave each value to each unit, so it is computed from vote counts: coders per "
    "summary = 3 (SNaC §4.2), or the summary's largest vote count where that exceeds 3.",
    "Tokens are maximal runs of characters other than space, tab, newline, carriage return and form feed in each "
    "segment; every token of every segment is a unit (one binary coding per error type). A token belongs to a span "
    "when their character ranges overlap, so a span cut inside a word marks the whole word.",
    "A token's count for a type is the sum of the votes of the resolved spans of that type that cover it, capped at "
    "the summary's coders: overlapping spans of one type are taken to come from different annotators. Tokens where "
    "the cap applied are counted (`tokens_capped`). Unresolved spans (no offsets) are left out at token level, spans "
    "without a sentence at sentence level, and spans without a vote count at every level (counts in each section).",
    "Boundary normalisation (Table 5, parentheses), two readings: `overlap_union` merges spans of one type in one "
    "segment that share at least one character (the paper's wording), transitively, into their union carrying the "
    "sum of their votes (capped); `sentence_union` merges spans of one type whose sentence ranges overlap. The "
    "released file has almost no same-type spans sharing characters (upstream merged identical marks into votes), "
    "so `overlap_union` barely moves the figures; `sentence_union` comes close to the published normalised ones. "
    "Which rule the authors used is not stated; `sentence_union` is cohbench's hypothesis, not a reproduction.",
    "Sentence and segment level (Table 4): a unit counts as marked for a category by c annotators. The file cannot "
    "say whether two spans in one sentence came from one annotator or two, so two reconstructions bound the truth: "
    "`sum` (the votes of the category's spans touching the unit, summed and capped; the token-level rule) and "
    "`max` (their largest vote count). Segment level uses every span (its segment is always known).",
    "The paper's Table 4 and 5 crowd figures come from the same 150 summaries and 3 workers; its expert figures come "
    "from 10 expert-annotated summaries that are not in the released file, so they cannot be recomputed.",
)

NAME = "error_spans"
SYSTEM_NAMES = {"book_175b": "BOOK-175B", "book_6b": "BOOK-6B", "tripod": "MOVIE-BART"}


def paper_figure(config: str, table_name: str, level: str, unit: str, normalised: bool = False) -> dict:
    """The crowd figure a paper published for `config` (`catalog/published.yaml`'s `agreement:` rows; the released
    file holds the crowd annotations only, so the expert figures are there for context), or {} where it gives none."""
    return next((f for f in published.agreement(config) if f["table"] == table_name and f["annotators"] == "crowd"
                 and f["level"] == level and f["unit"] == unit and f.get("normalised", False) == normalised), {})


def token_levels(con, config: str, boundaries: Iterable[str] = tuple(BOUNDARIES)) -> dict:
    """Token-level α and two-agree % per error type (SNaC Table 5) for each boundary variant, plus the counts
    behind them: {variant: {"by_type", "tokens", "token_share_by_system"}}."""
    boundaries = list(boundaries)
    totals = defaultdict(int)
    totals_by_system = defaultdict(int)
    marked = {b: {t: defaultdict(lambda: defaultdict(int)) for t in range(len(ERROR_TYPES))} for b in boundaries}
    capped = {b: defaultdict(int) for b in boundaries}
    marked_by_system = {b: defaultdict(lambda: defaultdict(int)) for b in boundaries}
    for kind, variant, system, type_id, coders, c, tokens, n_capped in fetch(con, token_histogram_sql(config, boundaries)):
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


def unit_agreement(con, config: str, level: str) -> dict:
    """Sentence- or segment-level α of the coherence and language categories (SNaC Table 4), both bounds."""
    totals = {coders: units for coders, units in fetch(con, unit_totals_sql(config, level))}
    by_bound = {bound: {cat: defaultdict(lambda: defaultdict(int)) for cat in CATEGORIES} for bound in ("sum", "max")}
    for category, coders, c_sum, c_max, units in fetch(con, unit_histogram_sql(config, level)):
        by_bound["sum"][category][coders][c_sum] += units
        by_bound["max"][category][coders][c_max] += units
    return {
        category: {bound: binary_agreement(with_zeros(by_bound[bound][category], totals)) for bound in ("sum", "max")}
        for category in CATEGORIES
    }


def compute(con, config: str) -> dict:
    """Spans by source and type, coders per summary, spans each level leaves out, what boundary normalisation can
    merge, and α with two-agree % at token, sentence and segment level."""
    view = view_reference(config)
    spans = long_view("spans", config)
    spans_by_type = rows(
        con,
        f"""SELECT system, type, count(*) AS spans, sum(votes)::BIGINT AS votes FROM {spans}
            GROUP BY ALL ORDER BY ALL""",
    )
    coders = rows(con, f"SELECT coders, count(*) AS summaries FROM ({coders_sql(view)}) GROUP BY ALL ORDER BY ALL")
    left_out = rows(
        con,
        # a span without a vote count is left out at every level: no number of annotators is assumed for it
        f"""SELECT count(*) FILTER (WHERE NOT resolved OR start IS NULL OR "end" IS NULL OR votes IS NULL) AS token_level,
                   count(*) FILTER (WHERE first_sentence IS NULL OR last_sentence IS NULL OR votes IS NULL) AS sentence_level,
                   count(*) FILTER (WHERE segment IS NULL OR votes IS NULL) AS segment_level
            FROM {spans}""",
    )[0]
    # what boundary normalisation can merge: pairs of same-type spans in one segment sharing characters / a sentence
    overlaps = rows(
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
        "token_level": token_levels(con, config),
        "sentence_level": unit_agreement(con, config, "sentence"),
        "segment_level": unit_agreement(con, config, "segment"),
    }


def markdown(stats: dict) -> list[str]:
    levels = stats["token_level"]
    token, overlap, sentence = (levels[b]["by_type"] for b in ("as_marked", "overlap_union", "sentence_union"))
    lines = [
        f"### Token level, coherence types (SNaC Table 5; crowd: {levels['as_marked']['tokens']} tokens, "
        f"summaries by coders {stats['summaries_by_coders']})",
        "",
        "Rows marked *overlap union* merge spans of a type that share a character (the paper's wording); *sentence "
        "union* merges spans of a type that touch a common sentence. Both are compared with the paper's normalised "
        "figures (its parentheses).",
        "",
    ]
    rows = []
    for name in COHERENCE_ERROR_TYPES:
        variants = [("", token[name], paper_figure(stats["config"], "Table 5", "token", name))]
        normalised = paper_figure(stats["config"], "Table 5", "token", name, normalised=True)
        if normalised:
            variants += [(", overlap union", overlap[name], normalised), (", sentence union", sentence[name], normalised)]
        for suffix, ours, paper in variants:
            paper_alpha, paper_two = paper.get("alpha"), paper.get("two_agree_pct")
            rows.append(
                [
                    name + suffix,
                    fmt(ours["alpha"]), fmt(paper_alpha), diff(ours["alpha"], paper_alpha),
                    fmt(ours["two_agree_pct"], 1), fmt(paper_two, 0), diff(ours["two_agree_pct"], paper_two, 1),
                    ours["marked_units"], ours["tokens_capped"],
                ]
            )
    lines += table(
        ["type", "α cohbench", "α paper (crowd)", "Δ α", "two-agree % cohbench", "paper", "Δ", "tokens marked", "tokens capped"],
        rows,
    )
    lines += ["", "All seven types (the paper reports the coherence types only):", ""]
    lines += table(
        ["type", "α", "two-agree %", "α overlap union", "two-agree %", "α sentence union", "two-agree %", "tokens marked", "marked by ≥2"],
        [
            [name, fmt(token[name]["alpha"]), fmt(token[name]["two_agree_pct"], 1),
             fmt(overlap[name]["alpha"]), fmt(overlap[name]["two_agree_pct"], 1),
             fmt(sentence[name]["alpha"]), fmt(sentence[name]["two_agree_pct"], 1),
             token[name]["marked_units"], token[name]["units_marked_by_two_or_more"]]
            for name in ERROR_TYPES
        ],
    )
    lines += ["", "### Sentence and segment level (SNaC Table 4, crowd)", ""]
    rows = []
    for category in ("coherence", "language"):
        for level in ("sentence", "segment"):
            ours = stats[f"{level}_level"][category]
            paper = paper_figure(stats["config"], "Table 4", level, category).get("alpha")
            rows.append(
                [category, level, fmt(ours["sum"]["alpha"]), fmt(ours["max"]["alpha"]), fmt(paper),
                 diff(ours["sum"]["alpha"], paper), diff(ours["max"]["alpha"], paper), ours["sum"]["units"], ours["sum"]["marked_units"]]
            )
    lines += table(["category", "level", "α (sum)", "α (max)", "α paper", "Δ (sum)", "Δ (max)", "units", "marked units"], rows)
    lines += ["", "Pairs of same-type spans in one segment that boundary normalisation can merge:", ""]
    lines += rows_table(stats["same_type_span_pairs_by_type"])
    left_out = stats["spans_left_out"]
    lines += ["", f"Spans left out: {left_out['token_level']} at token level (no offsets), {left_out['sentence_level']} at "
              f"sentence level (no sentence), {left_out['segment_level']} at segment level (each with the spans without a "
              "vote count)."]
    return lines


def plot_error_types(stats: dict, path: Path) -> None:
    """Like SNaC Fig. 4: share of spans of each type per source, and share of tokens marked with each type."""
    systems = sorted({row["system"] for row in stats["spans_by_system_and_type"]})
    spans = {(r["system"], r["type"]): r["spans"] for r in stats["spans_by_system_and_type"]}
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / max(len(systems), 1)
    x = range(len(ERROR_TYPES))
    for i, system in enumerate(systems):
        total = sum(spans.get((system, t), 0) for t in ERROR_TYPES) or 1
        left.bar([p + i * width for p in x], [100 * spans.get((system, t), 0) / total for t in ERROR_TYPES], width,
                 label=f"{SYSTEM_NAMES.get(system, system)} ({total} spans)")
        share = stats["token_level"]["as_marked"]["token_share_by_system"].get(system, {})
        right.bar([p + i * width for p in x], [100 * (share.get(t) or 0) for t in ERROR_TYPES], width,
                  label=SYSTEM_NAMES.get(system, system))
    for axis, title, ylabel in (
        (left, "Error spans by type", "% of the source's error spans"),
        (right, "Tokens marked by at least one annotator", "% of the source's tokens"),
    ):
        axis.set_xticks([p + width * (len(systems) - 1) / 2 for p in x], ERROR_TYPES)
        axis.set_xlabel("error type (first four: coherence, last three: language)")
        axis.set_ylabel(ylabel)
        axis.set_title(title)
        axis.legend(title="source")
        axis.grid(axis="y", alpha=0.3)
    fig.suptitle(f"SNaC ({stats['config']}): error types per source")
    save(fig, path)


def plot_agreement(stats: dict, path: Path) -> None:
    """Token-level α and two-agree % per coherence type: cohbench (raw and normalised) beside the paper's crowd."""
    levels = {b: stats["token_level"][b]["by_type"] for b in ("as_marked", "overlap_union", "sentence_union")}
    keys = ("alpha", "two_agree_pct")
    series = [
        ("cohbench, spans as marked", lambda t, i: levels["as_marked"][t][keys[i]]),
        ("cohbench, overlap union", lambda t, i: levels["overlap_union"][t][keys[i]]),
        ("cohbench, sentence union", lambda t, i: levels["sentence_union"][t][keys[i]]),
        ("SNaC paper, crowd", lambda t, i: paper_figure(stats["config"], "Table 5", "token", t).get(keys[i])),
        ("SNaC paper, crowd, normalised", lambda t, i: paper_figure(stats["config"], "Table 5", "token", t, normalised=True).get(keys[i])),
    ]
    fig, axes = pyplot().subplots(1, 2, figsize=(14, 5.2))
    width = 0.16
    x = range(len(COHERENCE_ERROR_TYPES))
    for axis, i, ylabel in ((axes[0], 0, "Krippendorff's α (nominal)"), (axes[1], 1, "two-agree % (of marked tokens)")):
        for j, (label, get) in enumerate(series):
            values = [get(t, i) for t in COHERENCE_ERROR_TYPES]
            bars = axis.bar([p + j * width for p in x], [v if v is not None else 0 for v in values], width, label=label,
                            hatch="//" if "paper" in label else None, alpha=0.85)
            for bar, value in zip(bars, values):
                if value is not None:
                    axis.annotate(f"{value:.2f}" if i == 0 else f"{value:.0f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                  xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7, rotation=90)
        axis.set_xticks([p + 2 * width for p in x], COHERENCE_ERROR_TYPES)
        axis.set_xlabel("coherence error type")
        axis.set_ylabel(ylabel)
        axis.margins(y=0.12)  # room for the value labels above the tallest bar
        axis.grid(axis="y", alpha=0.3)
    axes[0].set_title("Token-level agreement (α)")
    axes[1].set_title("Token-level two-agree %")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"SNaC ({stats['config']}): token-level agreement per error type; paper normalised only for RefE and InconE")
    save(fig, path)


def training_view() -> str:
    """The `snac_training` view: the sentence-level detector's examples (SNaC §5), one row per sentence of the corpora
    whose configs are of this kind, with the summary's preceding sentences joined by spaces as context and the
    coherence types of the spans touching the sentence; the same examples as `schema.sentence_examples`."""
    corpora = names_list(sorted({registry.corpus_of(config).name for config in registry.configs_where(statistics=NAME)}))
    return f"""
        SELECT r.config, r.id || '/' || (r.i - 1) AS id, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system,
               r.i - 1 AS sentence_index, r.sentence_segments[r.i] AS segment,
               array_to_string(list_slice(r.sentences, 1, r.i - 1), ' ') AS context,
               r.sentence, r.sentence_labels[r.i] AS label, {LABEL_NAMES}[r.sentence_labels[r.i] + 1] AS label_name,
               r.sentence_labels_min2votes[r.i] AS label_min2votes,
               coalesce(t.error_types, []) AS error_types
        FROM (  -- unnested beside generate_subscripts, as `sql.views` does: faster than UNNEST ... WITH ORDINALITY
            SELECT *, UNNEST(sentences) AS sentence, generate_subscripts(sentences, 1) AS i
            FROM records WHERE list_contains({corpora}, corpus)
        ) r
        LEFT JOIN (
            SELECT record_id, sentence_index,
                   list_transform(list_sort(list_distinct(list(type_id))), lambda t: {TYPE_NAMES}[t + 1]) AS error_types
            FROM (
                SELECT record_id, type_id, UNNEST(range(first_sentence, last_sentence + 1)) AS sentence_index
                FROM spans
                WHERE list_contains({corpora}, corpus) AND category = 'coherence' AND first_sentence IS NOT NULL AND last_sentence IS NOT NULL
            )
            GROUP BY record_id, sentence_index
        ) t ON t.record_id = r.id AND t.sentence_index = r.i - 1"""


KIND = declare(Kind(NAME, compute, markdown, (Plot("error_types", plot_error_types), Plot("agreement", plot_agreement)), ASSUMPTIONS,
                    views={"snac_training": training_view}))
