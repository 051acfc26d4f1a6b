"""Binary classification metrics in the schema's polarity (1 = has an error), as plain numpy functions.

Undefined values (a ratio with an empty denominator, AUC with one class) are None, never a silent 0."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def confusion(gold: np.ndarray, pred: np.ndarray, positive: int = 1) -> dict[str, int]:
    gold, pred = np.asarray(gold) == positive, np.asarray(pred) == positive
    return {
        "tp": int(np.sum(gold & pred)),
        "fp": int(np.sum(~gold & pred)),
        "fn": int(np.sum(gold & ~pred)),
        "tn": int(np.sum(~gold & ~pred)),
    }


def prf(gold, pred, positive: int = 1) -> dict[str, float | None]:
    c = confusion(gold, pred, positive)
    p, r = _ratio(c["tp"], c["tp"] + c["fp"]), _ratio(c["tp"], c["tp"] + c["fn"])
    f1 = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    return {"precision": p, "recall": r, "f1": f1}


def accuracy(gold, pred) -> float | None:
    gold, pred = np.asarray(gold), np.asarray(pred)
    return _ratio(float(np.sum(gold == pred)), len(gold))


def balanced_accuracy(gold, pred) -> float | None:
    """Mean of the recall of both classes (StorySumm §3: accounts for class imbalance)."""
    recalls = [prf(gold, pred, positive)["recall"] for positive in (0, 1)]
    return None if None in recalls else float(np.mean(recalls))


def cohen_kappa(gold, pred) -> float | None:
    gold, pred = np.asarray(gold), np.asarray(pred)
    n = len(gold)
    if not n:
        return None
    observed = np.mean(gold == pred)
    expected = sum(np.mean(gold == k) * np.mean(pred == k) for k in (0, 1))
    return None if expected == 1 else float((observed - expected) / (1 - expected))


def roc_auc(gold, scores) -> float | None:
    """Area under the ROC curve = P(score of a random error > score of a random non-error), ties counting half
    (the Mann-Whitney U statistic, with average ranks)."""
    gold, scores = np.asarray(gold) == 1, np.asarray(scores, dtype=float)
    positives, negatives = int(gold.sum()), int((~gold).sum())
    if not positives or not negatives:
        return None
    ranks = rankdata(scores)
    return float((ranks[gold].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def binary_report(gold, pred, scores=None) -> dict:
    """Accuracy, P/R/F1 of the error class and, given scores, ROC-AUC (Cai et al. Table 3; SNaC §5)."""
    out = {"units": len(gold), "errors": int(np.sum(np.asarray(gold) == 1)), "accuracy": accuracy(gold, pred), **prf(gold, pred)}
    out["auc"] = roc_auc(gold, scores) if scores is not None else None
    return out


def tune_threshold(gold, scores, criterion) -> float:
    """The score threshold (predict an error when score >= threshold) that maximises `criterion(gold, pred)` on
    a development split; candidates are the observed scores, ties broken towards the higher threshold."""
    gold, scores = np.asarray(gold), np.asarray(scores, dtype=float)
    best, best_value = None, -np.inf
    for candidate in np.unique(scores)[::-1]:
        value = criterion(gold, (scores >= candidate).astype(int))
        if value is not None and value > best_value:
            best, best_value = float(candidate), value
    if best is None:
        raise ValueError("no threshold gives a defined value of the tuning criterion on the development split")
    return best
