"""Evaluation protocols: score a model's predictions on a built config, as the corpus's paper does.

Predictions are JSONL, one object per release record: `{"id": ..., "score": ... | "label": ...}` in the schema's
polarity (higher score = more likely an error; label 1 = error). Unit-level protocols take lists, one entry per
unit (sentence or gap). Binary metrics need labels: give `label`, or `score` with a `threshold`, or let the
protocol tune the threshold on the config's validation split and report it; score-only predictions without
either (e.g. test predictions only) get the threshold-free metrics (AUC) and a note saying what a threshold needs.
Thresholds are never tuned on the split being reported. Proportions are fractions in the result; the text
(`summary_lines`) prints them as percentages with one decimal.

Protocols (`PROTOCOLS`; each config declares its own in the registry, `registry.spec(config).protocol`):
- summary     StorySumm (§4, Tables 7-8): Cohen's κ, % predicted faithful, precision/recall of the faithful class,
              % of easy and of hard unfaithful summaries detected, balanced accuracy; on val, test and full.
- typed_sentences  SNaC (§5, Table 11): sentence-level P/R/F1/accuracy and ROC-AUC (each sentence judged with the
              preceding summary as context); with `types`, per-type P/R/F1; with `spans`, ov. = the share of
              correctly typed sentences whose predicted span of that type overlaps a gold span of that type.
- sentences   DSD and sentence-level coherence (Cai et al. Table 3): accuracy, P, R, F1, AUC over sentences.
- gaps        MSD (Cai et al. Table 3): the same over the gaps between sentences.
- metaeval    SummEval: delegated to `cohbench.metaeval` (scores negated: it correlates with coherence).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np

from .. import registry
from ..display import coefficient, percent
from ..release.layout import read_config, require_built
from ..release.versions import provenance
from ..schema import COHERENCE_ERROR_TYPES, DEV_SPLITS, ERROR_TYPES, SPLITS, TRAIN_SPLITS, split_sort_key
from . import metrics
from .predictions import Prediction, PredictionsError, read_predictions
from .predictions import examples as _examples



def _load(config: str, release: Path | None) -> tuple[dict[str, list[dict]], dict]:
    """The config's records by split, and which data they are (`versions.provenance`)."""
    registry.spec(config)  # an unknown name: the closest registered one
    folder, stats = require_built(config, release)
    return read_config(folder, config, stats).splits, provenance(folder, {config: stats})


def _check_missing(config: str, predictions: Mapping, splits: Mapping[str, list[dict]], needed: Iterable[str]) -> None:
    missing = {r["id"] for split in needed for r in splits[split]} - set(predictions)
    if missing:
        raise PredictionsError(
            f"{len(missing)} record(s) of {config} ({'/'.join(needed)}) have no prediction: {_examples(missing)}"
        )


# --- units: what each protocol scores ---------------------------------------------------------------


def _units(protocol: str, record: dict) -> list[int]:
    """Gold labels of a record's units (a prediction's lists have one entry per unit, checked on reading).
    Every protocol but summary and gaps scores sentences."""
    if protocol == "summary":
        return [record["label"]]
    n = len(record["sentences"])
    if protocol == "gaps":
        return list(record["gap_labels"] or [-1] * (n - 1))
    return list(record["sentence_labels"] or [-1] * n)


def _gather(protocol: str, rows: list[dict], predictions: Mapping, threshold: float | None):
    """Flattened gold, labels and scores over labelled units (-1 = no label is left out)."""
    gold, labels, scores = [], [], []
    for record in rows:
        prediction = predictions[record["id"]]
        label, score = prediction.label, prediction.score
        for i, g in enumerate(_units(protocol, record)):
            if g == -1:
                continue
            gold.append(g)
            scores.append(score[i] if score is not None else np.nan)
            if label is not None:
                labels.append(int(label[i]))
            elif threshold is not None:
                labels.append(int(score[i] >= threshold))
    scores = None if np.isnan(scores).any() else np.array(scores)  # NaN marks a label-only prediction
    return np.array(gold, dtype=int), (np.array(labels, dtype=int) if len(labels) == len(gold) else None), scores


# --- protocols --------------------------------------------------------------------------------------


def _summary_metrics(rows, predictions, threshold) -> dict:
    labelled = [r for r in rows if r["label"] != -1]
    gold, pred, scores = _gather("summary", labelled, predictions, threshold)
    out = {"summaries": len(gold), "unfaithful": int(gold.sum()), "auc": metrics.roc_auc(gold, scores) if scores is not None else None}
    if pred is None:
        return out
    faithful = metrics.prf(gold, pred, positive=0)
    detected = {}
    for level in ("easy", "hard"):
        picked = [i for i, r in enumerate(labelled) if r["label"] == 1 and r["difficulty"] == level]
        detected[f"{level}_detected"] = float(np.mean(pred[picked] == 1)) if picked else None
    return out | {
        "cohen_kappa": metrics.cohen_kappa(gold, pred),
        "predicted_faithful": float(np.mean(pred == 0)),
        "precision_faithful": faithful["precision"],
        "recall_faithful": faithful["recall"],
        **detected,
        "balanced_accuracy": metrics.balanced_accuracy(gold, pred),
    }


def _unit_metrics(protocol):
    def compute(rows, predictions, threshold) -> dict:
        gold, pred, scores = _gather(protocol, rows, predictions, threshold)
        if pred is None:
            return {"units": len(gold), "errors": int(gold.sum())} | metrics.ranking_report(gold, scores)
        return metrics.binary_report(gold, pred, scores)

    return compute


def _sentence_starts(record: dict) -> list[int | None]:
    """Offset of each sentence inside its segment (sentences are cut from their segment in order)."""
    starts, cursor = [], {}
    for sentence, segment in zip(record["sentences"], record["sentence_segments"]):
        at = record["segments"][segment].find(sentence, cursor.get(segment, 0))
        starts.append(at if at >= 0 else None)
        if at >= 0:
            cursor[segment] = at + len(sentence)
    return starts


def _predicted_spans(prediction: Prediction) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(sentence, type) -> predicted character ranges in that sentence (resolved when the file was read)."""
    out: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for sentence, error_type, start, end in prediction.spans:
        out.setdefault((sentence, error_type), []).append((start, end))
    return out


def _gold_spans(record: dict) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(sentence, type) -> gold character ranges, in sentence coordinates, of every resolved span."""
    starts = _sentence_starts(record)
    out: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for span in record["spans"]:
        if span["start"] is None or span["first_sentence"] is None:
            continue
        for i in range(span["first_sentence"], span["last_sentence"] + 1):
            if starts[i] is None:
                continue
            local = (span["start"] - starts[i], span["end"] - starts[i])
            out.setdefault((i, ERROR_TYPES[span["type"]]), []).append(local)
    return out


def _snac_metrics(rows, predictions, threshold) -> dict:
    from ..builders.snac import sentence_examples

    out = {"sentence": _unit_metrics("sentences")(rows, predictions, threshold)}
    min2 = [dict(r, sentence_labels=r["sentence_labels_min2votes"]) for r in rows]
    out["sentence_min2votes"] = _unit_metrics("sentences")(min2, predictions, threshold)
    typed = [r for r in rows if predictions[r["id"]].types is not None]
    if not typed:
        return out
    counts = {t: {"tp": 0, "fp": 0, "fn": 0, "overlap": 0, "with_spans": 0} for t in ERROR_TYPES}
    for record in typed:
        prediction = predictions[record["id"]]
        gold_types = [set(e["error_types"]) for e in sentence_examples(record)]
        predicted_spans, gold_spans = _predicted_spans(prediction), _gold_spans(record)
        for i, (gold, predicted) in enumerate(zip(gold_types, prediction.types)):
            for t in set(predicted) | gold:
                c = counts[t]
                if t in predicted and t in gold:
                    c["tp"] += 1
                    if (i, t) in predicted_spans:
                        c["with_spans"] += 1
                        c["overlap"] += any(
                            ps < ge and gs < pe for ps, pe in predicted_spans[(i, t)] for gs, ge in gold_spans.get((i, t), [])
                        )
                elif t in predicted:
                    c["fp"] += 1
                else:
                    c["fn"] += 1
    per_type = {}
    for t, c in counts.items():
        if t not in COHERENCE_ERROR_TYPES and not (c["tp"] or c["fp"]):
            continue  # gold types are coherence errors only (§5); language types appear when predicted
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        per_type[t] = {
            "precision": p,
            "recall": r,
            "f1": (2 * p * r / (p + r) if p + r else 0.0) if p is not None and r is not None else None,
            "ov": c["overlap"] / c["with_spans"] if c["with_spans"] else None,
            "gold": c["tp"] + c["fn"],
            "predicted": c["tp"] + c["fp"],
        }
    out["per_type"] = per_type
    return out


PROTOCOLS: dict[str, tuple[Callable, Callable]] = {
    # name -> (metrics function, tuning criterion on dev: higher is better)
    "summary": (_summary_metrics, metrics.balanced_accuracy),
    "typed_sentences": (_snac_metrics, lambda g, p: metrics.prf(g, p)["f1"]),
    "sentences": (_unit_metrics("sentences"), lambda g, p: metrics.prf(g, p)["f1"]),
    "gaps": (_unit_metrics("gaps"), lambda g, p: metrics.prf(g, p)["f1"]),
}
# Protocols that judge each unit on the text before it only (SNaC §5: the preceding summary is the context).
PRECEDING_CONTEXT = frozenset({"typed_sentences"})
CRITERIA = {"summary": "maximum balanced accuracy", "typed_sentences": "maximum F1 of the error class", "sentences": "maximum F1 of the error class", "gaps": "maximum F1 of the error class"}  # fmt: skip
METAEVAL = "metaeval"  # correlation with human ratings, delegated to `cohbench.metaeval`
# What a model predicts under each protocol: a label per sentence, per gap between sentences, per summary, or a
# score correlated with human ratings.
UNITS = {"summary": "summary", "typed_sentences": "sentences", "sentences": "sentences", "gaps": "gaps", METAEVAL: "ratings"}


def unit_of(config: str) -> str:
    """What a model predicts on `config`: its protocol's unit."""
    return UNITS[protocol_of(config)]


def protocol_of(config: str) -> str:
    """The protocol `config` declares in the registry."""
    protocol = registry.spec(config).protocol
    if protocol not in PROTOCOLS and protocol != METAEVAL:
        raise PredictionsError(f"{config} declares protocol {protocol!r}; protocols: {', '.join([*PROTOCOLS, METAEVAL])}")
    return protocol


def _report_splits(splits: Mapping[str, list[dict]], protocol: str, only: str | None) -> dict[str, list[dict]]:
    if only:
        if only not in SPLITS:
            raise PredictionsError(f"{only!r} is not a cohbench split: every config uses {', '.join(SPLITS)}")
        if only not in splits:
            raise PredictionsError(f"split {only!r} is not in this config; splits: {', '.join(splits)}")
        return {only: splits[only]}
    chosen = {s: rows for s, rows in splits.items() if s not in TRAIN_SPLITS}
    if protocol == "summary" and len(chosen) > 1 and not set(TRAIN_SPLITS) & set(splits):
        chosen["full"] = [r for rows in chosen.values() for r in rows]
    return chosen


def evaluate(
    config: str,
    predictions,
    *,
    split: str | None = None,
    threshold: float | None = None,
    release: Path | None = None,
    splits: Mapping[str, list[dict]] | None = None,
) -> dict:
    """Score `predictions` (a JSONL path or dicts) on a built config with its protocol; see the module docstring.
    `splits` are the config's records when the caller has read them already (and says which data they are); else the
    result names the data it was computed on (`data`: release and config version, fingerprint)."""
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold)):
        raise PredictionsError(f"the threshold must be a finite number, not {threshold}")
    data = None
    if splits is None:
        splits, data = _load(config, release)
    else:
        splits = {s: splits[s] for s in sorted(splits, key=split_sort_key)}
    protocol = protocol_of(config)
    records = {r["id"]: r for rows in splits.values() for r in rows}
    predictions = read_predictions(predictions, protocol, records, config)
    if protocol == METAEVAL:
        return _metaeval(config, predictions, splits) | ({"data": data} if data else {})
    compute, criterion = PROTOCOLS[protocol]
    reported = _report_splits(splits, protocol, split)
    has_labels = all(p.label is not None for p in predictions.values())
    _check_missing(config, predictions, splits, [s for s in reported if s != "full"])
    decision = "labels given"
    if not has_labels and threshold is not None:
        decision = {"threshold": threshold, "tuned_on": None, "criterion": "given"}
    elif not has_labels:
        dev = next((s for s in DEV_SPLITS if s in splits), None)
        if dev is not None and {r["id"] for r in splits[dev]} <= set(predictions):
            gold, _, scores = _gather(protocol, splits[dev], predictions, None)
            if scores is None:
                raise PredictionsError(f"every prediction on {dev} needs a score to tune a threshold")
            threshold = metrics.tune_threshold(gold, scores, criterion)
            decision = {"threshold": threshold, "tuned_on": dev, "criterion": CRITERIA[protocol]}
        else:
            # Threshold-free metrics (AUC) need none; the binary ones wait for a threshold, and the result says how.
            how = f"predictions for every {dev} record to tune one on" if dev else "(it has no validation split to tune one on)"
            decision = {"threshold": None, "tuned_on": None, "criterion": None,
                        "needs_threshold": f"binary metrics need --threshold T {'or ' if dev else ''}{how}"}  # fmt: skip
    results = {name: compute(rows, predictions, None if has_labels else threshold) for name, rows in reported.items()}
    out = {"config": config, "protocol": protocol, "predictions": len(predictions), "decision": decision, "splits": results}
    return out | ({"data": data} if data else {})


def _metaeval(config: str, predictions: Mapping[str, Prediction], splits) -> dict:
    from .. import metaeval

    rows = predictions
    negated = [{"id": i, "score": -float(p.score[0])} for i, p in rows.items() if p.score is not None]
    if len(negated) != len(rows):
        raise PredictionsError(f"{config} is scored by correlation: every prediction needs a score")
    result = metaeval.evaluate(negated, records=[r for rs in splits.values() for r in rs])
    return {"config": config, "protocol": METAEVAL, "predictions": len(rows), "polarity": "scores negated (higher = more coherent)", "metaeval": result}


def summary_lines(result: dict) -> list[str]:
    """The result as text: one line per split (and per error type for SNaC)."""
    if result["protocol"] == METAEVAL:
        m = result["metaeval"]["metrics"]
        shown = {k: (percent if k.startswith("acc") else coefficient)(v["value"]) for k, v in m.items()}  # Acc_pair is a proportion
        return [f"{result['config']}: " + "  ".join(f"{k} {v}" for k, v in shown.items()) + f"  ({result['polarity']})"]
    decision = result["decision"]
    if not isinstance(decision, dict):
        how = decision
    elif decision["threshold"] is None:
        how = f"threshold-free metrics only: {decision['needs_threshold']}"
    else:
        how = f"threshold {decision['threshold']:.4g}" + (f" tuned on {decision['tuned_on']} ({decision['criterion']})" if decision["tuned_on"] else " given")
    lines = [f"{result['config']} ({result['protocol']} protocol; {how}; percentages, κ as a coefficient)"]
    for split, m in result["splits"].items():
        if result["protocol"] == "summary":
            lines.append(
                f"  {split:<5} {m['summaries']} summaries: Cohen κ {coefficient(m.get('cohen_kappa'))}  faithful predicted "
                f"{percent(m.get('predicted_faithful'))}  "
                f"P/R faithful {percent(m.get('precision_faithful'))}/{percent(m.get('recall_faithful'))}  "
                f"easy {percent(m.get('easy_detected'))} / hard {percent(m.get('hard_detected'))} detected  "
                f"BAcc {percent(m.get('balanced_accuracy'))}  AUC {percent(m.get('auc'))}"
            )
            continue
        blocks = {"sentence": m["sentence"], "≥2 votes": m["sentence_min2votes"]} if result["protocol"] == "typed_sentences" else {"": m}
        for name, b in blocks.items():
            lines.append(
                f"  {split:<5} {name + ' ' if name else ''}{b['units']} units ({b['errors']} errors): Acc {percent(b.get('accuracy'))}  "
                f"P {percent(b.get('precision'))}  R {percent(b.get('recall'))}  F1 {percent(b.get('f1'))}  AUC {percent(b.get('auc'))}  "
                f"AP {percent(b.get('average_precision'))}  R@P70 {percent(b.get('recall_at_p70'))}"
                + (f"  (flags {percent(b['predicted_error_rate'])}% of units: the threshold decides nothing)" if b.get("degenerate") else "")
            )
        for t, b in (m.get("per_type") or {}).items():
            lines.append(f"    {t:<7} P {percent(b['precision'])}  R {percent(b['recall'])}  F1 {percent(b['f1'])}  ov. {percent(b['ov'])}  (gold {b['gold']}, predicted {b['predicted']})")
    return lines
