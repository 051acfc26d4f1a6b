"""The meta-evaluation protocol (SummEval, Steen & Markert 2022): a measure's scores against the mean expert
coherence, as the five tau of `kendall` with BOOT-BOTH CIs and the bias matrix of `bias`.

Scores say their direction by their name, the same on every entrance (`cohbench evaluate summeval`, `cohbench
metaeval summeval --scores`, Python): `coherence` is higher = more coherent, as Steen & Markert and every SummEval
study give a measure; `score` (or `error`) is the schema's polarity, higher = less coherent (more likely an error).
Anything else is refused, never guessed. The reader brings both into the error polarity; they are turned around
once, here, into the coherence polarity the paper's tau is defined in, so a good measure has a positive tau.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from .. import settings
from .bias import bias_matrix, plot_bias_matrix
from .bootstrap import DEFAULT_SAMPLES, INTERVAL, check_settings
from .kendall import METRICS, RESAMPLED, number_or_none, correlations
from .rating_grid import DIMENSION, EXPERTS, HumanScores, human_scores, load_human, rated_config, score_grid
from .references import reference_scores
from .reader import PredictionsError



def coherence(scores: np.ndarray) -> np.ndarray:
    """A grid of scores in the error polarity as coherence (higher = more coherent), the polarity tau is read in."""
    return -scores


def evaluate(
    scores=None,
    *,
    measure: str | None = None,
    human: HumanScores | None = None,
    records: Iterable[Mapping] | None = None,
    allow_missing: bool = False,
    bootstrap: int = DEFAULT_SAMPLES,
    seed: int = 0,
    plot: Path | None = None,
    config: str | None = None,
    release: Path | None = None,
) -> dict:
    """Score a coherence measure against SummEval's mean expert coherence: the five measures with 95% CIs and
    the bias matrix. Give `scores` (a CSV/JSONL path or rows with one column of scores, `coherence` or `score` /
    `error`; or a mapping id -> score in the schema's polarity, higher = less coherent, as every prediction), or a
    reference `measure` (a rating reference of `references`). The ratings come
    from `human`, else `records`, else the config with the metaeval protocol built in `release` (default: the release
    in use)."""
    if (scores is None) == (measure is None):
        raise PredictionsError("give either scores to evaluate or the name of a reference measure, not both or neither")
    check_settings(bootstrap, seed)
    if plot:
        plot = settings.user_output(plot, release)  # refused before any work
    source = "given ratings" if human is not None or records is not None else config or rated_config()
    data = None
    if human is None and records is None:
        human, data = load_human(release, config=source)
    human = human or human_scores(records)
    better = _better_score(config)
    read = None if measure else score_grid(scores, human, allow_missing=allow_missing, better=better)
    pred = reference_scores(measure, human, seed) if measure else coherence(read.grid)
    gold = human.expert_sum  # tau is scale-free; integer sums keep tied system means exactly tied
    result = correlations(gold, pred, samples=bootstrap, seed=seed)
    bias = bias_matrix(gold, pred)
    labels = [f"{name} ({system})" for name, system in zip(human.system_names, human.systems)]
    scored = int((~np.isnan(pred) & human.present).sum())
    out = {
        "ratings_from": source,
        "measure": measure or (str(scores) if isinstance(scores, (str, Path)) else "scores"),
        "gold": f"mean of {EXPERTS} expert {DIMENSION} ratings",
        "polarity": _polarity(read.column, better) if read else "a reference measure, higher = more coherent",
        "summaries": int(human.present.sum()),
        "documents": len(human.docs),
        "systems": len(human.systems),
        "scored": scored,
        "missing": int(human.present.sum()) - scored,
        "metrics": {metric: result[metric] for metric in METRICS},
        "per_system_tau_intra": dict(zip(human.systems, result["per_system_tau_intra"])),
        "bootstrap": {"samples": bootstrap, "seed": seed, "resampled": RESAMPLED, "interval": INTERVAL},
        "bias_matrix": {
            "systems": [human.systems[i] for i in bias["order"]],
            "labels": [labels[i] for i in bias["order"]],
            "mean_human": [float(x) / EXPERTS for x in bias["mean_human"]],
            "tau": [[number_or_none(x) for x in row] for row in bias["tau"]],
            "pairs": bias["pairs"].astype(int).tolist(),
        },
    }
    if data:
        out["data"] = data
    if plot:
        plot_bias_matrix(out, Path(plot))
        out["plot"] = str(plot)
    return out


def _better_score(config: str | None) -> tuple[str, str] | None:
    """The rated config's declared score in its users' polarity (SummEval: `coherence`); the package's `__init__`
    has declared the protocols."""
    from ..corpora import registry
    from .protocol import PROTOCOLS

    return PROTOCOLS[registry.spec(config or rated_config()).protocol].better_score


def _polarity(column: str, better: tuple[str, str] | None) -> str:
    """How the scores of `column` were read."""
    if better and column == better[0]:
        return f"`{column}`: {better[1]}, correlated as given"
    return f"`{column}`: higher = less coherent (the schema's error polarity), negated before correlating"
