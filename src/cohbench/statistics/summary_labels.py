"""A label per summary with the sentence labels behind it (StorySumm's faithfulness labels): label distributions by
split, model and difficulty, and the sentence labels by split and model."""

from __future__ import annotations

from pathlib import Path

from ..sql import long_view
from .generic import label_distributions
from .kind import Kind, Plot, declare, rows
from .tables import pyplot, rows_table, save


def compute(con, config: str) -> dict:
    """Summary labels by split, model and difficulty; sentence labels by split and model."""
    sentence_labels = rows(
        con,
        f"""SELECT split, system, count(*) AS sentences, count(*) FILTER (WHERE label = 1) AS error,
                   count(*) FILTER (WHERE label = 0) AS ok, count(*) FILTER (WHERE label = -1) AS no_label
            FROM {long_view("sentences", config)} GROUP BY ALL ORDER BY ALL""",
    )
    return {
        "config": config,
        "labels_by_split": label_distributions(con, config, "split"),
        "labels_by_split_and_model": label_distributions(con, config, "split, system"),
        "labels_by_difficulty": label_distributions(con, config, "split, coalesce(difficulty, 'none') AS difficulty"),
        "sentence_labels_by_split_and_model": sentence_labels,
    }


def markdown(stats: dict) -> list[str]:
    lines = []
    for key, title in (
        ("labels_by_split", "Summary labels by split (1 = unfaithful)"),
        ("labels_by_split_and_model", "Summary labels by split and model"),
        ("labels_by_difficulty", "Summary labels by split and difficulty"),
        ("sentence_labels_by_split_and_model", "Sentence labels by split and model"),
    ):
        lines += [f"### {title}", ""] + rows_table(stats[key]) + [""]
    return lines


def plot_labels(stats: dict, path: Path) -> None:
    from matplotlib.ticker import MaxNLocator

    rows = stats["labels_by_split_and_model"]
    labels = [f"{r['split']}\n{r['system']}" for r in rows]
    fig, axis = pyplot().subplots(figsize=(max(6, 1.3 * len(rows)), 4.2))
    axis.bar(labels, [r["error"] for r in rows], label="unfaithful (1 = has an error)", color="tab:red")
    axis.bar(labels, [r["ok"] for r in rows], bottom=[r["error"] for r in rows], label="faithful", color="tab:green")
    axis.set_ylabel("summaries")
    axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("split and model")
    axis.set_title(f"StorySumm ({stats['config']}): summary labels by split and model")
    axis.legend()
    axis.grid(axis="y", alpha=0.3)
    save(fig, path)


KIND = declare(Kind("summary_labels", compute, markdown, (Plot("labels", plot_labels),)))
