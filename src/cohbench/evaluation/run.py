"""`cohbench evaluate`: score a model's predictions on a built config with the config's protocol, as its paper does.

Predictions are JSONL, one object per release record: `{"id": ..., "score": ... | "label": ...}` in the schema's
polarity (higher score = more likely an error; label 1 = error). Binary metrics need labels: give `label`, or `score`
with a `threshold`, or let the protocol tune the threshold on the config's validation split. A tuned threshold is
applied only to splits other than the one it was tuned on: the tuning split (and the "full" row that contains it)
gets the threshold-free metrics only, and the decision says where the thresholded ones are reported. Every reported
split carries its headline metric with a 95% bootstrap CI over documents (`headline`). Proportions are fractions in
the result; `summary_lines` prints them as percentages with one decimal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..corpora import registry
from ..release.layout import read_config, require_built
from ..release.versions import provenance
from ..schema import DEV_SPLITS, SPLITS, TRAIN_SPLITS, split_sort_key
from . import bootstrap, metrics
from .detection import gather
from .declarations import protocol_of, protocols
from .protocol import PredictionsError, Protocol
from .reader import examples, read_predictions

COMBINED = "full"  # the evaluation splits together (StorySumm's tables report val, test and full)


def load(config: str, release: Path | None) -> tuple[dict[str, list[dict]], dict]:
    """The config's records by split, and which data they are (`versions.provenance`)."""
    registry.spec(config)  # an unknown name: the closest registered one
    folder, stats = require_built(config, release)
    return read_config(folder, config, stats).splits, provenance(folder, {config: stats})


def check_threshold(threshold) -> None:
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold)):
        raise PredictionsError(f"the threshold must be a finite number, not {threshold}")


def check_missing(config: str, predictions: Mapping, splits: Mapping[str, list[dict]], needed: Iterable[str]) -> None:
    missing = {r["id"] for split in needed for r in splits[split]} - set(predictions)
    if missing:
        raise PredictionsError(f"{len(missing)} record(s) of {config} ({'/'.join(needed)}) have no prediction: {examples(missing)}")


def report_splits(splits: Mapping[str, list[dict]], protocol: Protocol, only: str | None) -> dict[str, list[str]]:
    """Reported split -> the config splits it is made of."""
    if only:
        if only not in SPLITS:
            raise PredictionsError(f"{only!r} is not a cohbench split: every config uses {', '.join(SPLITS)}")
        if only not in splits:
            raise PredictionsError(f"split {only!r} is not in this config; splits: {', '.join(splits)}")
        return {only: [only]}
    chosen = {s: [s] for s in splits if s not in TRAIN_SPLITS}
    if protocol.combined_row and len(chosen) > 1 and not set(TRAIN_SPLITS) & set(splits):
        chosen[COMBINED] = [s for members in chosen.values() for s in members]
    return chosen


def decide(config: str, protocol: Protocol, splits: Mapping[str, list[dict]], predictions: Mapping, threshold: float | None) -> dict | str:
    """How binary decisions are made: "labels given", a given threshold, one tuned on the validation split, or none
    (with what a threshold needs)."""
    if all(p.label is not None for p in predictions.values()):
        return "labels given"
    if protocol.criterion is None:
        return f"no threshold: the {protocol.name} protocol's metrics are threshold-free"
    if threshold is not None:
        return _given(threshold, predictions)
    dev = next((s for s in DEV_SPLITS if s in splits), None)
    if dev is not None and {r["id"] for r in splits[dev]} <= set(predictions):
        gold, _, scores, _, _ = gather(protocol.unit, splits[dev], predictions, None)
        if scores is None:
            raise PredictionsError(f"every prediction on {dev} needs a score to tune a threshold")
        tuned = metrics.tune_threshold(gold, scores, protocol.criterion.value)
        return {"threshold": tuned, "tuned_on": dev, "criterion": protocol.criterion.description}
    # Threshold-free metrics (AUC) need none; the binary ones wait for a threshold, and the result says how.
    how = f"predictions for every {dev} record to tune one on" if dev else "(it has no validation split to tune one on)"
    return {"threshold": None, "tuned_on": None, "criterion": None,
            "needs_threshold": f"binary metrics need --threshold T {'or ' if dev else ''}{how}"}  # fmt: skip


def _given(threshold: float, predictions: Mapping) -> dict:
    """A `--threshold` as applied to the scores, which are held in the error polarity: one given on a `better_score`
    scale (faithfulness, coherence) is negated with them, so that a score at or below it counts as an error."""
    keys = sorted({p.score_key for p in predictions.values() if p.score is not None})
    if len(keys) > 1:
        raise PredictionsError(f"--threshold is read on one scale, and the predictions give scores as {' and '.join(keys)}; "
                               "give every score under one key")
    if keys and keys[0] != "score":
        return {"threshold": -threshold, "tuned_on": None, "criterion": "given", "given_on": [keys[0], threshold]}
    return {"threshold": threshold, "tuned_on": None, "criterion": "given"}


def threshold_for(decision: dict | str, members: list[str]) -> float | None:
    """The threshold applied to a reported split made of `members`: none on the split it was tuned on (metrics
    there would be flattered), nor where there is none (labels given, or no threshold yet)."""
    if not isinstance(decision, dict) or decision["threshold"] is None or decision["tuned_on"] in members:
        return None
    return decision["threshold"]


def headline_of(protocol: Protocol, rows: list[dict], predictions: Mapping, threshold: float | None, *, samples: int, seed: int) -> dict:
    """The headline metric of one split with its 95% bootstrap CI over documents; value None where undefined."""
    sizes, statistic = protocol.headline_statistic(rows, predictions, threshold)
    point = statistic(*bootstrap.ones(sizes))[0]
    (values,) = bootstrap.resample([statistic], sizes, samples=samples, seed=seed)
    return {
        "metric": protocol.headline.name,
        "value": None if math.isnan(point) else float(point),
        "ci": bootstrap.percentile_interval(values) if not math.isnan(point) else None,
        "documents": sizes[0],
        "samples": samples,
        "seed": seed,
    }


def headline_applies(protocol: Protocol, predictions: Mapping, decision: dict | str, threshold: float | None) -> bool:
    """Whether the headline can be reported on a split: a thresholded one needs labels or a threshold applicable
    there, a threshold-free one (AUC, τ) scores."""
    if protocol.headline.thresholded:
        return decision == "labels given" or threshold is not None
    return all(p.score is not None for p in predictions.values())


def evaluate(
    config: str,
    predictions,
    *,
    split: str | None = None,
    threshold: float | None = None,
    release: Path | None = None,
    splits: Mapping[str, list[dict]] | None = None,
    samples: int = bootstrap.DEFAULT_SAMPLES,
    seed: int = 0,
    protocol: str | None = None,
) -> dict:
    """Score `predictions` (a JSONL path or dicts) on a built config with its protocol; see the module docstring.
    `splits` are the config's records when the caller has read them already (and says which data they are); else the
    result names the data it was computed on (`data`: release and config version, fingerprint). `samples` bootstrap
    resamples of documents (seeded) give each split's headline metric its 95% CI. `protocol` scores data the registry
    does not declare (a `corrupt` output's config, with `splits`); by default the config's declared one."""
    check_threshold(threshold)
    bootstrap.check_settings(samples, seed)
    data = None
    if splits is None:
        splits, data = load(config, release)
    else:
        splits = {s: splits[s] for s in sorted(splits, key=split_sort_key)}
    protocol = protocols()[protocol] if protocol else protocol_of(config)
    records = {r["id"]: r for rows in splits.values() for r in rows}
    predictions = read_predictions(predictions, protocol, records, config)
    reported = report_splits(splits, protocol, split)
    check_missing(config, predictions, splits, sorted({s for members in reported.values() for s in members}, key=split_sort_key))
    decision = decide(config, protocol, splits, predictions, threshold)
    if isinstance(decision, dict) and decision["tuned_on"]:
        decision["thresholded_metrics_on"] = [name for name, members in reported.items() if decision["tuned_on"] not in members]
    results = {}
    for name, members in reported.items():
        rows = [r for s in members for r in splits[s]]
        applied = threshold_for(decision, members)
        results[name] = protocol.metrics(rows, predictions, applied)
        if isinstance(decision, dict) and decision["tuned_on"] in members:
            results[name]["threshold_withheld"] = f"the threshold was tuned on {decision['tuned_on']}: threshold-free metrics only"
        applies = headline_applies(protocol, predictions, decision, applied)
        results[name]["headline"] = headline_of(protocol, rows, predictions, applied, samples=samples, seed=seed) if applies else None
    out = {"config": config, "protocol": protocol.name, "unit": protocol.unit, "scores": protocol.scores,
           "predictions": len(predictions), "decision": decision, "splits": results}  # fmt: skip
    return out | ({"data": data} if data else {})


def summary_lines(result: dict) -> list[str]:
    """The result as text: a header saying how decisions were made, then the protocol's lines per split and each
    split's headline with its CI."""
    from .declarations import protocols

    protocol = protocols()[result["protocol"]]
    decision = result["decision"]
    if not isinstance(decision, dict):
        how = decision
    elif decision["threshold"] is None:
        how = f"threshold-free metrics only: {decision['needs_threshold']}"
    elif decision["tuned_on"]:
        # tuned on a split of this config: applied only off it; tuned elsewhere (the baseline's heads): applied on all
        on = decision.get("thresholded_metrics_on")
        shown = "every reported split" if on is None else (", ".join(on) + " only" if on else "no reported split")
        how = f"threshold {decision['threshold']:.4g} tuned on {decision['tuned_on']} ({decision['criterion']}), applied on {shown}"
    elif "given_on" in decision:
        key, given = decision["given_on"]
        how = f"threshold {given:.4g} on {key} given ({key} at or below it counts as an error)"
    else:
        how = f"threshold {decision['threshold']:.4g} given"
    lines = [f"{result['config']} ({result['protocol']} protocol; {how}; percentages, κ and τ as coefficients)"]
    for split, m in result["splits"].items():
        lines.extend(protocol.lines(split, m))
        if "threshold_withheld" in m:
            lines.append(f"        ({m['threshold_withheld']})")
        if m.get("headline"):
            lines.append(f"        headline {headline_text(m['headline'])}")
    return lines


def headline_text(h: dict) -> str:
    from ..display import coefficient, percent

    show = coefficient if h["metric"].startswith("tau") else percent
    ci = f"[{show(h['ci'][0])}, {show(h['ci'][1])}]" if h["ci"] else "no CI"
    return f"{h['metric']} {show(h['value'])} 95% CI {ci} ({h['samples']} resamples of {h['documents']} documents, seed {h['seed']})"
