"""Ratings on a scale by several annotators of known type (SummEval's experts and crowd workers): Krippendorff's α
per dimension and annotator type, at the ordinal and interval levels, and the rating distributions, beside the
published summary-level figure (`catalog/published.yaml`)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .. import published
from ..sql import long_view
from .alpha import alpha_by_stratum
from .kind import Kind, Plot, declare, rows
from .tables import diff, fmt, pyplot, save, table

ASSUMPTIONS = (
    "SummEval: alpha over the summaries that carry per-annotator ratings (expert_1..3 and crowd_1..5 by list "
    "position, a convention); each summary x dimension is a unit, ratings 1-5 are the values; expert means are not used.",
)


def compute(con, config: str) -> dict:
    """α per dimension and annotator type (ordinal and interval) with what it was computed from, and the rating
    distribution."""
    ratings = long_view("ratings", config)
    per_annotator = f"""FROM {ratings} WHERE annotator_type IN ('expert', 'crowd') AND score IS NOT NULL"""
    units = f"""SELECT dimension || '/' || annotator_type AS stratum, record_id AS unit, score::DOUBLE AS value,
                       count(*) AS n {per_annotator} GROUP BY ALL"""
    alphas = alpha_by_stratum(con, units, ("ordinal", "interval"))
    counts = rows(
        con,
        f"""SELECT dimension, annotator_type, count(DISTINCT record_id) AS records, count(DISTINCT annotator) AS annotators,
                   count(*) AS ratings {per_annotator} GROUP BY ALL ORDER BY ALL""",
    )
    distribution = rows(
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


def markdown(stats: dict) -> list[str]:
    lines = ["### Krippendorff's α per dimension and annotator type (summaries with per-annotator ratings)", ""]
    rows = []
    for dimension, by_type in sorted(stats["alpha"].items()):
        for annotator_type, a in sorted(by_type.items()):
            rows.append([dimension, annotator_type, fmt(a["ordinal"], 3), fmt(a["interval"], 3), a["records"], a["annotators"], a["ratings"]])
    lines += table(["dimension", "annotator type", "α ordinal", "α interval", "summaries", "annotators", "ratings"], rows)
    coherence = stats["alpha"].get("coherence", {})
    if coherence:
        lines += ["", "Published reference (SNaC Table 1, summary-level coherence on news, Krippendorff's α; level not stated):", ""]
        ref_rows = []
        for figure in (f for f in published.agreement(stats["config"]) if (f["level"], f["unit"]) == ("summary", "coherence")):
            annotator_type, paper = figure["annotators"], figure["alpha"]
            ours = coherence.get(annotator_type, {})
            ref_rows.append([annotator_type, fmt(paper), fmt(ours.get("interval")), diff(ours.get("interval"), paper),
                             fmt(ours.get("ordinal")), diff(ours.get("ordinal"), paper)])
        lines += table(["annotators", "α published", "α interval", "Δ", "α ordinal", "Δ"], ref_rows)
        lines += ["", "The published expert figure is from SummEval's first annotation round; the released expert ratings "
                  "are from after the second round, so a gap is expected there."]
    return lines


def plot_ratings(stats: dict, path: Path) -> None:
    """Rating distribution (share of ratings per score) per dimension, experts beside crowd workers, on the
    summaries with per-annotator ratings (expert means, a different population of means, are left out)."""
    rows = [r for r in stats["rating_distribution"] if r["annotator_type"] in ("expert", "crowd")]
    dimensions = sorted({r["dimension"] for r in rows})
    types = [t for t in ("expert", "crowd") if any(r["annotator_type"] == t for r in rows)]
    summaries = max((a["records"] for d in stats["alpha"].values() for a in d.values()), default=0)
    fig, axes = pyplot().subplots(1, len(dimensions), figsize=(4 * len(dimensions), 4.2), sharey=True, squeeze=False)
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
    save(fig, path)


KIND = declare(Kind("expert_ratings", compute, markdown, (Plot("ratings", plot_ratings),), ASSUMPTIONS))
