"""One figure per scorer and config, with its uncertainty: the protocol's headline metric on one split with a 95%
bootstrap CI over documents (`headline`), and the paired difference of two scorers' headlines over the SAME
resampled documents (`paired_difference`), for leaderboards and gates.

A thresholded headline (StorySumm's balanced accuracy) uses the predictions' labels, a given threshold, or one tuned
on the validation split; a threshold tuned there is never applied to the validation split itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..schema import split_sort_key
from . import bootstrap
from .declarations import protocol_of, protocols
from .protocol import PredictionsError
from .reader import read_predictions
from .run import check_missing, check_threshold, decide, headline_of, threshold_for


def _prepare(config: str, predictions, splits: Mapping[str, list[dict]], split: str, threshold: float | None,
             protocol_name: str | None):
    """(protocol, the split's rows, checked predictions, decision, threshold applied on the split)."""
    check_threshold(threshold)
    protocol = protocols()[protocol_name] if protocol_name else protocol_of(config)
    if split not in splits:
        raise PredictionsError(f"split {split!r} is not in {config}; splits: {', '.join(sorted(splits, key=split_sort_key))}")
    records = {r["id"]: r for rows in splits.values() for r in rows}
    checked = read_predictions(predictions, protocol, records, config)
    check_missing(config, checked, splits, [split])
    if not protocol.headline.thresholded:
        return protocol, splits[split], checked, "threshold-free", None
    decision = decide(config, protocol, splits, checked, threshold)
    applied = threshold_for(decision, [split])
    if decision != "labels given" and applied is None:
        why = (f"its threshold was tuned on {split}" if isinstance(decision, dict) and decision.get("tuned_on") == split
               else decision["needs_threshold"] if isinstance(decision, dict) else "no threshold applies")
        raise PredictionsError(f"{protocol.headline.name} of {config} on {split} is not reported: {why}; give labels or a threshold")
    return protocol, splits[split], checked, decision, applied


def headline(config: str, predictions, *, splits: Mapping[str, list[dict]], split: str = "test", samples: int = bootstrap.DEFAULT_SAMPLES,
             seed: int = 0, threshold: float | None = None, protocol: str | None = None) -> dict:
    """The headline metric of `predictions` (a JSONL path or dicts `{"id", "score"}`) on `split` of `config`
    (`splits`: its records by split), with a 95% CI from `samples` seeded resamples of the split's documents.
    `decision` says how binary decisions were made where the metric needs them; `protocol` as `evaluate`'s."""
    bootstrap.check_settings(samples, seed)
    protocol, rows, checked, decision, applied = _prepare(config, predictions, splits, split, threshold, protocol)
    figure = headline_of(protocol, rows, checked, applied, samples=samples, seed=seed)
    return {"config": config, "protocol": protocol.name, "metric": figure["metric"], "split": split, "value": figure["value"],
            "ci": figure["ci"], "documents": figure["documents"], "samples": samples, "seed": seed, "decision": decision}  # fmt: skip


def paired_difference(config: str, predictions_a, predictions_b, *, splits: Mapping[str, list[dict]], split: str = "test",
                      samples: int = bootstrap.DEFAULT_SAMPLES, seed: int = 0, protocol: str | None = None) -> dict:
    """Headline of A minus headline of B on `split`, with a 95% CI from resampling the SAME documents for both
    (a paired bootstrap): the interval excludes 0 only where A's advantage survives which documents were drawn."""
    bootstrap.check_settings(samples, seed)
    declared, rows, checked_a, decision_a, applied_a = _prepare(config, predictions_a, splits, split, None, protocol)
    _, _, checked_b, decision_b, applied_b = _prepare(config, predictions_b, splits, split, None, protocol)
    sizes, statistic_a = declared.headline_statistic(rows, checked_a, applied_a)
    sizes_b, statistic_b = declared.headline_statistic(rows, checked_b, applied_b)
    if tuple(sizes) != tuple(sizes_b):
        raise PredictionsError(f"the two scorers cover different documents of {config} {split}: {sizes} vs {sizes_b}")
    point_a, point_b = (float(s(*bootstrap.ones(sizes))[0]) for s in (statistic_a, statistic_b))
    a, b = bootstrap.resample([statistic_a, statistic_b], sizes, samples=samples, seed=seed)
    defined = not (math.isnan(point_a) or math.isnan(point_b))
    return {
        "config": config, "protocol": declared.name, "metric": declared.headline.name, "split": split,
        "value_a": None if math.isnan(point_a) else point_a, "value_b": None if math.isnan(point_b) else point_b,
        "difference": point_a - point_b if defined else None,
        "ci": bootstrap.percentile_interval(a - b) if defined else None,
        "documents": sizes[0], "samples": samples, "seed": seed, "decision_a": decision_a, "decision_b": decision_b,
    }  # fmt: skip
