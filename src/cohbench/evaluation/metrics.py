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


def _precision_recall_curve(gold, scores) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall of the error class at every distinct score threshold, highest threshold first
    (tied scores enter together, so no order among ties is invented)."""
    gold, scores = np.asarray(gold) == 1, np.asarray(scores, dtype=float)
    order = np.argsort(-scores, kind="stable")
    gold, scores = gold[order], scores[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    true_positives = np.cumsum(gold)[last_of_tie]
    predicted = last_of_tie + 1
    return true_positives / predicted, true_positives / gold.sum()


def average_precision(gold, scores) -> float | None:
    """Area under the precision-recall curve as the step sum over thresholds, sum_n (R_n - R_{n-1}) P_n; it
    does not rise with the share of easy negatives, unlike AUC."""
    if not np.any(np.asarray(gold) == 1) or len(gold) == 0:
        return None
    precision, recall = _precision_recall_curve(gold, scores)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def recall_at_precision(gold, scores, minimum: float) -> float | None:
    """The highest recall of the error class at a threshold whose precision is at least `minimum` (SNaC App.
    reports its detectors at precision 0.7); 0.0 when no threshold reaches that precision."""
    if not np.any(np.asarray(gold) == 1):
        return None
    precision, recall = _precision_recall_curve(gold, scores)
    reached = precision >= minimum
    return float(recall[reached].max()) if reached.any() else 0.0


RECALL_AT_PRECISION = 0.7
# A tuned threshold that flags (nearly) every unit makes P/R/F1 the class prior, not a detector's merit.
DEGENERATE_POSITIVE_RATE = 0.95


def ranking_report(gold, scores) -> dict:
    """Threshold-free metrics of the error class: ROC-AUC, average precision, recall at precision 0.7."""
    defined = scores is not None and len(gold) > 0
    return {
        "auc": roc_auc(gold, scores) if defined else None,
        "average_precision": average_precision(gold, scores) if defined else None,
        f"recall_at_p{round(100 * RECALL_AT_PRECISION)}": recall_at_precision(gold, scores, RECALL_AT_PRECISION) if defined else None,
    }


def binary_report(gold, pred, scores=None) -> dict:
    """Accuracy, P/R/F1 of the error class and, given scores, the ranking metrics (Cai et al. Table 3; SNaC §5).
    `predicted_error_rate` says how much the decision flags; `degenerate` is set when it flags (nearly) all."""
    out = {"units": len(gold), "errors": int(np.sum(np.asarray(gold) == 1)), "accuracy": accuracy(gold, pred), **prf(gold, pred)}
    rate = _ratio(float(np.sum(np.asarray(pred) == 1)), len(pred))
    out["predicted_error_rate"] = rate
    out["degenerate"] = rate is not None and rate >= DEGENERATE_POSITIVE_RATE
    return out | ranking_report(gold, scores)


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
