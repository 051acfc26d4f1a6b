"""The statistics report: every agreement and distribution statistic of the release as JSON, a Markdown report
that sets cohbench's figures beside the papers' published ones (difference shown), and PNG plots.

It is written to `catalog/stats/` (not inside the release folder): the report is documentation that reviewers
read in the repository next to the cards and `SQL.md`, and a change in a figure then shows up in the diff.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from . import jsonout, settings  # noqa: E402
from .agreement import SIMILARITY_BIN, kind_of, release_statistics  # noqa: E402
from .atomic import atomic_dir  # noqa: E402
from .errors import CohbenchError  # noqa: E402
from .schema import COHERENCE_ERROR_TYPES, ERROR_TYPES  # noqa: E402
from .sql import db  # noqa: E402

# Published figures (SNaC = Goyal, Li & Durrett 2022). The SNaC file holds the crowd annotations only, so the
# crowd columns are the ones to compare with; the expert columns are listed for context.
SNAC_TABLE5 = {  # token level, coherence types: (alpha, two-agree %), normalised in the second pair where given
    "crowd": {"CharE": (0.69, 67), "SceneE": (0.30, 35), "RefE": (0.10, 11), "InconE": (0.13, 14)},
    "crowd_normalised": {"RefE": (0.22, 23), "InconE": (0.21, 23)},
    "expert": {"CharE": (0.91, 86), "SceneE": (0.57, 62), "RefE": (0.25, 27), "InconE": (0.18, 20)},
    "expert_normalised": {"RefE": (0.39, 39), "InconE": (0.29, 37)},
}
SNAC_TABLE4 = {  # Krippendorff's alpha, (category, level) -> value
    "crowd": {("coherence", "sentence"): 0.59, ("coherence", "segment"): 0.69, ("language", "sentence"): 0.22, ("language", "segment"): 0.28},
    "expert": {("coherence", "sentence"): 0.77, ("coherence", "segment"): 0.90, ("language", "sentence"): 0.33, ("language", "segment"): 0.45},
}
# SNaC Table 1: summary-level coherence alpha on news (SummEval's setting); the expert figure is after the first
# of SummEval's annotation rounds, while the released expert ratings are the final ones.
SNAC_TABLE1_NEWS = {"expert": 0.41, "crowd": 0.48}

SYSTEM_NAMES = {"book_175b": "BOOK-175B", "book_6b": "BOOK-6B", "tripod": "MOVIE-BART"}

ASSUMPTIONS = [
    "SNaC's file merges the 3 crowd workers' marks into spans with vote counts and no annotator ids. Krippendorff's "
    "alpha needs only how many coders gave each value to each unit, so it is computed from vote counts: coders per "
    "summary = 3 (SNaC §4.2), or the summary's largest vote count where that exceeds 3.",
    "Tokens are maximal runs of characters other than space, tab, newline, carriage return and form feed in each "
    "segment; every token of every segment is a unit (one binary coding per error type). A token belongs to a span "
    "when their character ranges overlap, so a span cut inside a word marks the whole word.",
    "A token's count for a type is the sum of the votes of the resolved spans of that type that cover it, capped at "
    "the summary's coders: overlapping spans of one type are taken to come from different annotators. Tokens where "
    "the cap applied are counted (`tokens_capped`). Unresolved spans (no offsets) are left out at token level, spans "
    "without a sentence at sentence level (counts in each section).",
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
    "SummEval: alpha over the summaries that carry per-annotator ratings (expert_1..3 and crowd_1..5 by list "
    "position, a convention); each summary x dimension is a unit, ratings 1-5 are the values; expert means are not used.",
]


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}"


def _diff(ours, paper, digits: int = 2) -> str:
    if ours is None or paper is None:
        return "–"
    return f"{ours - paper:+.{digits}f}"


def _table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"] + [
        "| " + " | ".join(str(cell) for cell in row) + " |" for row in rows
    ]


def _rows_table(rows: list[dict]) -> list[str]:
    if not rows:
        return ["(no rows)"]
    def cell(value):
        if isinstance(value, float):
            return _fmt(value, 3)
        if isinstance(value, list):
            return " / ".join(cell(v) for v in value)
        return value

    header = list(rows[0])
    return _table(header, [[cell(r[h]) for h in header] for r in rows])


def snac_markdown(stats: dict) -> list[str]:
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
        variants = [("", token[name], SNAC_TABLE5["crowd"].get(name))]
        if name in SNAC_TABLE5["crowd_normalised"]:
            variants.append((", overlap union", overlap[name], SNAC_TABLE5["crowd_normalised"][name]))
            variants.append((", sentence union", sentence[name], SNAC_TABLE5["crowd_normalised"][name]))
        for suffix, ours, paper in variants:
            paper_alpha, paper_two = paper if paper else (None, None)
            rows.append(
                [
                    name + suffix,
                    _fmt(ours["alpha"]), _fmt(paper_alpha), _diff(ours["alpha"], paper_alpha),
                    _fmt(ours["two_agree_pct"], 1), _fmt(paper_two, 0), _diff(ours["two_agree_pct"], paper_two, 1),
                    ours["marked_units"], ours["tokens_capped"],
                ]
            )
    lines += _table(
        ["type", "α cohbench", "α paper (crowd)", "Δ α", "two-agree % cohbench", "paper", "Δ", "tokens marked", "tokens capped"],
        rows,
    )
    lines += ["", "All seven types (the paper reports the coherence types only):", ""]
    lines += _table(
        ["type", "α", "two-agree %", "α overlap union", "two-agree %", "α sentence union", "two-agree %", "tokens marked", "marked by ≥2"],
        [
            [name, _fmt(token[name]["alpha"]), _fmt(token[name]["two_agree_pct"], 1),
             _fmt(overlap[name]["alpha"]), _fmt(overlap[name]["two_agree_pct"], 1),
             _fmt(sentence[name]["alpha"]), _fmt(sentence[name]["two_agree_pct"], 1),
             token[name]["marked_units"], token[name]["units_marked_by_two_or_more"]]
            for name in ERROR_TYPES
        ],
    )
    lines += ["", "### Sentence and segment level (SNaC Table 4, crowd)", ""]
    rows = []
    for category in ("coherence", "language"):
        for level in ("sentence", "segment"):
            ours = stats[f"{level}_level"][category]
            paper = SNAC_TABLE4["crowd"][(category, level)]
            rows.append(
                [category, level, _fmt(ours["sum"]["alpha"]), _fmt(ours["max"]["alpha"]), _fmt(paper),
                 _diff(ours["sum"]["alpha"], paper), _diff(ours["max"]["alpha"], paper), ours["sum"]["units"], ours["sum"]["marked_units"]]
            )
    lines += _table(["category", "level", "α (sum)", "α (max)", "α paper", "Δ (sum)", "Δ (max)", "units", "marked units"], rows)
    lines += ["", "Pairs of same-type spans in one segment that boundary normalisation can merge:", ""]
    lines += _rows_table(stats["same_type_span_pairs_by_type"])
    left_out = stats["spans_left_out"]
    lines += ["", f"Spans left out: {left_out['token_level']} at token level (no offsets), {left_out['sentence_level']} at "
              f"sentence level (no sentence), {left_out['segment_level']} at segment level."]
    return lines


def summeval_markdown(stats: dict) -> list[str]:
    lines = ["### Krippendorff's α per dimension and annotator type (summaries with per-annotator ratings)", ""]
    rows = []
    for dimension, by_type in sorted(stats["alpha"].items()):
        for annotator_type, a in sorted(by_type.items()):
            rows.append([dimension, annotator_type, _fmt(a["ordinal"], 3), _fmt(a["interval"], 3), a["records"], a["annotators"], a["ratings"]])
    lines += _table(["dimension", "annotator type", "α ordinal", "α interval", "summaries", "annotators", "ratings"], rows)
    coherence = stats["alpha"].get("coherence", {})
    if coherence:
        lines += ["", "Published reference (SNaC Table 1, summary-level coherence on news, Krippendorff's α; level not stated):", ""]
        ref_rows = []
        for annotator_type, paper in SNAC_TABLE1_NEWS.items():
            ours = coherence.get(annotator_type, {})
            ref_rows.append([annotator_type, _fmt(paper), _fmt(ours.get("interval")), _diff(ours.get("interval"), paper),
                             _fmt(ours.get("ordinal")), _diff(ours.get("ordinal"), paper)])
        lines += _table(["annotators", "α published", "α interval", "Δ", "α ordinal", "Δ"], ref_rows)
        lines += ["", "The published expert figure is from SummEval's first annotation round; the released expert ratings "
                  "are from after the second round, so a gap is expected there."]
    return lines


def storysumm_markdown(stats: dict) -> list[str]:
    lines = []
    for key, title in (
        ("labels_by_split", "Summary labels by split (1 = unfaithful)"),
        ("labels_by_split_and_model", "Summary labels by split and model"),
        ("labels_by_difficulty", "Summary labels by split and difficulty"),
        ("sentence_labels_by_split_and_model", "Sentence labels by split and model"),
    ):
        lines += [f"### {title}", ""] + _rows_table(stats[key]) + [""]
    return lines


def generic_markdown(stats: dict) -> list[str]:
    lines = ["### Labels by split", ""] + _rows_table(stats["labels_by_split"])
    lines += ["", "### Sentence labels by split (gaps_missing: gaps after a sentence labelled missing)", ""]
    lines += _rows_table(stats["sentence_labels_by_split"])
    if stats["corruption_similarity"]:
        lines += ["", "### Similarity of inserted sentences to the ones they replaced", ""] + _rows_table(stats["corruption_similarity"])
    return lines


# by the kind of statistics a config declares (`ConfigSpec.statistics`, `agreement.kind_of`)
_MARKDOWN = {"error_spans": snac_markdown, "expert_ratings": summeval_markdown, "summary_labels": storysumm_markdown,
             "generic": generic_markdown}


def config_markdown(stats: dict) -> list[str]:
    return _MARKDOWN[kind_of(stats["config"])](stats)


# ---------------------------------------------------------------------------------------------------------
# Plots


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def plot_snac_error_types(stats: dict, path: Path) -> None:
    """Like SNaC Fig. 4: share of spans of each type per source, and share of tokens marked with each type."""
    systems = sorted({row["system"] for row in stats["spans_by_system_and_type"]})
    spans = {(r["system"], r["type"]): r["spans"] for r in stats["spans_by_system_and_type"]}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
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
    _save(fig, path)


def plot_snac_agreement(stats: dict, path: Path) -> None:
    """Token-level α and two-agree % per coherence type: cohbench (raw and normalised) beside the paper's crowd."""
    levels = {b: stats["token_level"][b]["by_type"] for b in ("as_marked", "overlap_union", "sentence_union")}
    keys = ("alpha", "two_agree_pct")
    series = [
        ("cohbench, spans as marked", lambda t, i: levels["as_marked"][t][keys[i]]),
        ("cohbench, overlap union", lambda t, i: levels["overlap_union"][t][keys[i]]),
        ("cohbench, sentence union", lambda t, i: levels["sentence_union"][t][keys[i]]),
        ("SNaC paper, crowd", lambda t, i: SNAC_TABLE5["crowd"][t][i]),
        ("SNaC paper, crowd, normalised", lambda t, i: SNAC_TABLE5["crowd_normalised"].get(t, (None, None))[i]),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2))
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
    _save(fig, path)


def plot_summeval_ratings(stats: dict, path: Path) -> None:
    """Rating distribution (share of ratings per score) per dimension, experts beside crowd workers, on the
    summaries with per-annotator ratings (expert means, a different population of means, are left out)."""
    rows = [r for r in stats["rating_distribution"] if r["annotator_type"] in ("expert", "crowd")]
    dimensions = sorted({r["dimension"] for r in rows})
    types = [t for t in ("expert", "crowd") if any(r["annotator_type"] == t for r in rows)]
    summaries = max((a["records"] for d in stats["alpha"].values() for a in d.values()), default=0)
    fig, axes = plt.subplots(1, len(dimensions), figsize=(4 * len(dimensions), 4.2), sharey=True, squeeze=False)
    width = 0.8 / max(len(types), 1)
    for axis, dimension in zip(axes[0], dimensions):
        scores = sorted({r["score"] for r in rows if r["dimension"] == dimension})
        for j, annotator_type in enumerate(types):
            counts = {r["score"]: r["ratings"] for r in rows if r["dimension"] == dimension and r["annotator_type"] == annotator_type}
            total = sum(counts.values()) or 1
            axis.bar([s + (j - (len(types) - 1) / 2) * width for s in scores], [100 * counts.get(s, 0) / total for s in scores],
                     width, label=f"{annotator_type} ({total} ratings)")
        axis.set_title(dimension)
        axis.set_xlabel("rating (1 = worst, 5 = best)")
        axis.set_xticks(scores)
        axis.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("% of the annotator type's ratings")
    axes[0][0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"SummEval ({stats['config']}): rating distributions per dimension, {summaries} summaries rated by 3 experts and 5 crowd workers")
    _save(fig, path)


def plot_storysumm_labels(stats: dict, path: Path) -> None:
    rows = stats["labels_by_split_and_model"]
    labels = [f"{r['split']}\n{r['system']}" for r in rows]
    fig, axis = plt.subplots(figsize=(max(6, 1.3 * len(rows)), 4.2))
    axis.bar(labels, [r["error"] for r in rows], label="unfaithful (1 = has an error)", color="tab:red")
    axis.bar(labels, [r["ok"] for r in rows], bottom=[r["error"] for r in rows], label="faithful", color="tab:green")
    axis.set_ylabel("summaries")
    axis.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axis.set_xlabel("split and model")
    axis.set_title(f"StorySumm ({stats['config']}): summary labels by split and model")
    axis.legend()
    axis.grid(axis="y", alpha=0.3)
    _save(fig, path)


def plot_corruption_similarity(stats: dict, path: Path) -> None:
    """Histograms of the similarity of each inserted sentence to the one it replaced (rescaled BERTScore F1), one panel
    per split and a bar colour per generator, with the acceptance threshold τ the build used drawn across them."""
    from .schema import split_sort_key

    rows = stats["corruption_similarity_histogram"]
    splits = sorted({r["split"] for r in rows}, key=split_sort_key)
    generators = sorted({r["generator"] for r in rows})
    tau = (settings.params().get("incoherence") or {}).get("tau")
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits) + 1, 4.2), sharex=True, squeeze=False)
    width = SIMILARITY_BIN / max(len(generators), 1)
    for axis, split in zip(axes[0], splits):
        for j, generator in enumerate(generators):
            mine = [r for r in rows if r["generator"] == generator and r["split"] == split]
            axis.bar([r["bin_start"] + j * width for r in mine], [r["insertions"] for r in mine], width, align="edge",
                     label=f"{generator} ({sum(r['insertions'] for r in mine)})", edgecolor="white")
        if tau is not None:
            axis.axvline(tau, color="black", linestyle="--", linewidth=1, label=f"τ = {tau} (accepted below)")
        axis.set_title(f"{split}")
        axis.set_xlabel("rescaled BERTScore F1 (MiniLM)")
        axis.grid(axis="y", alpha=0.3)
        axis.legend(fontsize=7)
    axes[0][0].set_ylabel("inserted sentences")
    fig.suptitle(f"{stats['config']}: similarity of each inserted (confounder) sentence to the one it replaced, by split "
                 f"(bins of {SIMILARITY_BIN})", fontsize=10)
    _save(fig, path)


def _generic_plots(stats: dict):
    return (("similarity", plot_corruption_similarity),) if stats.get("corruption_similarity_histogram") else ()


_PLOTS = {
    "error_spans": (("error_types", plot_snac_error_types), ("agreement", plot_snac_agreement)),
    "expert_ratings": (("ratings", plot_summeval_ratings),),
    "summary_labels": (("labels", plot_storysumm_labels),),
}


def report_markdown(statistics: dict, plots: dict[str, list[str]]) -> str:
    lines = [
        "# cohbench statistics report",
        "",
        "Written by `cohbench report` (DVC stage `report`) from the release's Parquet files through the SQL views "
        "(`catalog/SQL.md`); every figure is also in `statistics.json`. Where a paper published a figure, it stands "
        "beside cohbench's with the difference (cohbench − paper). Do not edit by hand.",
        "",
        "## Assumptions",
        "",
    ]
    lines += [f"- {a}" for a in ASSUMPTIONS]
    for config, stats in statistics.items():
        lines += ["", f"## `{config}` ({stats.get('corpus', 'other')})", ""]
        lines += [f"![{name}]({name})" for name in plots.get(config, [])]
        if plots.get(config):
            lines.append("")
        lines += config_markdown(stats)
    return "\n".join(lines) + "\n"


def _report_folder(output: Path) -> Path:
    target = settings.user_output(output)
    if target.exists() and not target.is_dir():
        raise CohbenchError(f"{output} is a file; the report is written to a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / "statistics.json").is_file():
        raise CohbenchError(f"{output} holds other files and no earlier report; write the report to a new or empty folder")
    return target


def report(output: Path | None = None, release: Path | None = None) -> dict:
    """Compute every statistic of the release and write statistics.json, report.md and the plots to `output`
    (default `catalog/stats/`), all or nothing, replacing the folder. Returns the statistics.

    A folder a user names must lie outside the release and be new, empty or an earlier report: the report
    replaces the whole folder, and that must never be someone's other files."""
    output = _report_folder(Path(output)) if output else settings.catalog_dir() / "stats"
    statistics = release_statistics(db(release), release)
    plots = {}
    with atomic_dir(output) as tmp:
        for config, stats in statistics.items():
            for name, plot in _PLOTS.get(kind_of(config)) or _generic_plots(stats):
                filename = f"{config}_{name}.png"
                plot(stats, tmp / filename)
                plots.setdefault(config, []).append(filename)
        (tmp / "statistics.json").write_text(jsonout.document(statistics), encoding="utf-8")
        (tmp / "report.md").write_text(report_markdown(statistics, plots), encoding="utf-8")
    return statistics
