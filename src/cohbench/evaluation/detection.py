"""Detection metrics of a split: the units of each record (sentences, gaps, the summary) flattened with their
gold labels, and the metrics of the summary- and unit-level protocols."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from . import metrics


def _units(unit: str, record: dict) -> list[int]:
    """Gold labels of a record's units (a prediction's lists have one entry per unit, checked on reading)."""
    if unit == "summary":
        return [record["label"]]
    n = len(record["sentences"])
    if unit == "gaps":
        return list(record["gap_labels"] or [-1] * (n - 1))
    return list(record["sentence_labels"] or [-1] * n)


class Units(NamedTuple):
    """A split's labelled units flattened: gold labels, binary decisions (None without labels or a threshold),
    scores (None for label-only predictions), and each unit's document (an index into `documents`)."""

    gold: np.ndarray
    pred: np.ndarray | None
    scores: np.ndarray | None
    document: np.ndarray
    documents: int


def gather(unit: str, rows: list[dict], predictions: Mapping, threshold: float | None) -> Units:
    """The labelled units of `rows` (-1 = no label is left out), with their predictions; the document of each
    unit is what the bootstrap resamples."""
    gold, labels, scores, where, documents = [], [], [], [], {}
    for record in rows:
        prediction = predictions[record["id"]]
        label, score = prediction.label, prediction.score
        for i, g in enumerate(_units(unit, record)):
            if g == -1:
                continue
            gold.append(g)
            where.append(documents.setdefault(record["doc_id"], len(documents)))
            scores.append(score[i] if score is not None else np.nan)
            if label is not None:
                labels.append(int(label[i]))
            elif threshold is not None:
                labels.append(int(score[i] >= threshold))
    scores = None if np.isnan(scores).any() else np.array(scores)  # NaN marks a label-only prediction
    pred = np.array(labels, dtype=int) if len(labels) == len(gold) else None
    return Units(np.array(gold, dtype=int), pred, scores, np.array(where, dtype=int), len(documents))


def summary_metrics(rows, predictions, threshold) -> dict:
    """StorySumm (Subbiah et al. §4, Tables 7-8): Cohen's κ, % predicted faithful, precision/recall of the faithful
    class, % of easy and of hard unfaithful summaries detected, balanced accuracy (+ AUC given scores)."""
    labelled = [r for r in rows if r["label"] != -1]
    gold, pred, scores, _, _ = gather("summary", labelled, predictions, threshold)
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


def unit_metrics(unit: str):
    """Accuracy, P, R, F1 of the error class and the ranking metrics over sentences or gaps (Cai et al. Table 3)."""

    def compute(rows, predictions, threshold) -> dict:
        gold, pred, scores, _, _ = gather(unit, rows, predictions, threshold)
        if pred is None:
            return {"units": len(gold), "errors": int(gold.sum())} | metrics.ranking_report(gold, scores)
        return metrics.binary_report(gold, pred, scores)

    return compute
