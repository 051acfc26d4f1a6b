"""Any other config, which needs only the schema: the label distribution by split and, for configs a corruption
generator made, the similarity of each inserted sentence to the one it replaced."""

from __future__ import annotations

from pathlib import Path

from .. import settings
from ..sql import long_view, view_reference
from .kind import GENERIC, Kind, Plot, declare, rows
from .tables import pyplot, rows_table, save

SIMILARITY_BIN = 0.05  # histogram bin width of inserted sentences' similarity


def label_distributions(con, config: str, by: str) -> list[dict]:
    """Record labels (error, ok, no label) grouped by the columns `by` lists."""
    view = view_reference(config)
    return rows(
        con,
        f"""SELECT {by}, count(*) AS records, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1) AS no_label
            FROM {view} GROUP BY ALL ORDER BY ALL""",
    )


def compute(con, config: str) -> dict:
    """Labels by split, sentence labels by split, and for corruptions the inserted sentences' similarity."""
    similarity = rows(
        con,
        f"""SELECT generator, count(similarity) AS insertions, avg(similarity) AS mean,
                   quantile_cont(similarity, [0.05, 0.25, 0.5, 0.75, 0.95]) AS quantiles_5_25_50_75_95
            FROM {long_view("corruptions", config)} WHERE similarity IS NOT NULL GROUP BY ALL ORDER BY ALL""",
    )
    histogram = rows(
        con,
        f"""SELECT split, generator, floor(similarity / {SIMILARITY_BIN}) * {SIMILARITY_BIN} AS bin_start, count(*) AS insertions
            FROM {long_view("corruptions", config)} WHERE similarity IS NOT NULL GROUP BY ALL ORDER BY ALL""",
    )
    sentence_labels = rows(
        con,
        f"""SELECT split, count(*) AS sentences, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1 OR label IS NULL) AS no_label,
                   count(*) FILTER (WHERE gap_after_label = 1) AS gaps_missing
            FROM {long_view("sentences", config)} GROUP BY ALL ORDER BY ALL""",
    )
    return {
        "config": config,
        "labels_by_split": label_distributions(con, config, "split"),
        "sentence_labels_by_split": sentence_labels,
        "corruption_similarity": similarity,
        "corruption_similarity_histogram": histogram,
    }


def markdown(stats: dict) -> list[str]:
    lines = ["### Labels by split", ""] + rows_table(stats["labels_by_split"])
    lines += ["", "### Sentence labels by split (gaps_missing: gaps after a sentence labelled missing)", ""]
    lines += rows_table(stats["sentence_labels_by_split"])
    if stats["corruption_similarity"]:
        lines += ["", "### Similarity of inserted sentences to the ones they replaced", ""] + rows_table(stats["corruption_similarity"])
    return lines


def plot_corruption_similarity(stats: dict, path: Path) -> None:
    """Histograms of the similarity of each inserted sentence to the one it replaced (rescaled BERTScore F1), one panel
    per split and a bar colour per generator, with the acceptance threshold τ the build used drawn across them."""
    from ..schema import split_sort_key

    rows = stats["corruption_similarity_histogram"]
    splits = sorted({r["split"] for r in rows}, key=split_sort_key)
    generators = sorted({r["generator"] for r in rows})
    tau = (settings.params().get("incoherence") or {}).get("tau")
    fig, axes = pyplot().subplots(1, len(splits), figsize=(4.2 * len(splits) + 1, 4.2), sharex=True, squeeze=False)
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
    save(fig, path)


KIND = declare(Kind(GENERIC, compute, markdown, (Plot("similarity", plot_corruption_similarity, needs="corruption_similarity_histogram"),)))
