"""The bias matrix of Steen & Markert (2022, §6.1): where a measure's agreement with humans depends on which
systems are compared; as a table and as a heatmap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import settings


def bias_matrix(gold: np.ndarray, pred: np.ndarray) -> dict:
    """§6.1: systems ordered by mean human score (over the scored summaries), best first; cell (i, j), i != j, is
    (2 |H ∩ P| - |H|) / |H| over the documents where system i's summary is rated higher than system j's (H)
    and the measure also scores i's higher (P). Above the diagonal (i better on average) this is tau+ of
    (s_i, s_j); below it tau- of (s_j, s_i). Undefined (no such document) and diagonal cells are NaN."""
    gold, pred = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    valid = ~np.isnan(gold) & ~np.isnan(pred)
    counts = valid.sum(axis=0)  # a system with no scored summary (--allow-missing) has no mean: NaN, without a warning
    means = np.where(counts > 0, np.where(valid, gold, 0.0).sum(axis=0) / np.maximum(counts, 1), np.nan)
    order = np.argsort(-means, kind="stable")
    g, p, v = gold[:, order], pred[:, order], valid[:, order]
    pairs_valid = v[:, :, None] & v[:, None, :]
    human = (g[:, :, None] > g[:, None, :]) & pairs_valid
    agreed = human & (p[:, :, None] > p[:, None, :])
    pairs, correct = human.sum(0), agreed.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(pairs > 0, (2 * correct - pairs) / np.where(pairs > 0, pairs, 1), np.nan)
    np.fill_diagonal(tau, np.nan)
    return {"order": order, "mean_human": means[order], "tau": tau, "pairs": pairs}


def bias_table(result: dict) -> list[dict]:
    """The bias matrix as rows: one per ordered pair of systems (row system wins over column system)."""
    bias = result["bias_matrix"]
    rows = []
    for i, row_system in enumerate(bias["systems"]):
        for j, column_system in enumerate(bias["systems"]):
            if i != j:
                rows.append(
                    {
                        "row_system": row_system,
                        "column_system": column_system,
                        "kind": "tau_plus" if i < j else "tau_minus",
                        "tau": bias["tau"][i][j],
                        "pairs": bias["pairs"][i][j],
                    }
                )
    return rows


def write_bias_table(result: dict, path: Path, release: Path | None = None) -> None:
    import pandas as pd

    from ..atomic import atomic_path

    path = settings.user_output(path, release)
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".json":
            tmp.write_text(json.dumps(bias_table(result), indent=2) + "\n", encoding="utf-8")
        else:
            pd.DataFrame(bias_table(result)).to_csv(tmp, index=False)


SMALL_N = 5  # bias-matrix cells over fewer document pairs are marked in the plot


def plot_bias_matrix(result: dict, path: Path) -> None:
    """A heatmap of the bias matrix with each cell's tau and pair count; systems best (mean human score) first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt

    from ..atomic import atomic_path

    bias = result["bias_matrix"]
    tau = np.array([[np.nan if x is None else x for x in row] for row in bias["tau"]])
    n = len(tau)
    labels = [f"{label}  {mean:.2f}" for label, mean in zip(bias["labels"], bias["mean_human"])]
    fig, ax = plt.subplots(figsize=(0.62 * n + 4, 0.55 * n + 2.5))
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(tau), cmap=cmap, vmin=-1, vmax=1)
    for i in range(n):
        for j in range(n):
            if i != j:
                text = "n/a" if np.isnan(tau[i, j]) else f"{tau[i, j]:+.2f}"
                color = "white" if abs(np.nan_to_num(tau[i, j])) > 0.55 else "black"  # readable on dark cells
                few = bias["pairs"][i][j] < SMALL_N and not np.isnan(tau[i, j])
                if few:  # a τ over 2-3 pairs is ±1 by arithmetic, not evidence: hatch the cell
                    ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#777777", linewidth=0))
                ax.text(j, i - 0.14, text, ha="center", va="center", fontsize=7, color=color)
                ax.text(j, i + 0.26, f"n={bias['pairs'][i][j]}", ha="center", va="center", fontsize=5.5, color=color,
                        fontweight="bold" if few else "normal")
    ax.set_xticks(range(n), bias["labels"], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.set_xlabel("column system (systems ordered by mean expert coherence, best first)")
    ax.set_ylabel("row system, with its mean expert coherence (1-5)")
    ax.set_title(
        f"Bias matrix of {result['measure']} on SummEval\n"
        "cell = τ over documents where the row system's summary is rated more coherent than the column system's\n"
        "above diagonal: τ+ (consistent pairs)   below diagonal: τ− (inverted pairs)   n = document pairs\n"
        f"hatched: fewer than {SMALL_N} pairs, too few for τ to mean much",
        fontsize=8,
    )
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="τ: 1 = measure always agrees, −1 = always disagrees")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=150, format="png")
    plt.close(fig)
