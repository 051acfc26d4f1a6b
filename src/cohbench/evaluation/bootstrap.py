"""The one bootstrap of evaluation: resampling with replacement, vectorised over samples and chunked.

A resample is represented by how often it draws each item (a document, or a system), a (B, n) matrix of counts;
every statistic is computed from those counts as weights, which equals the statistic of the materialised resample
(a drawn copy is the same item again). `resample` draws the counts chunk by chunk, so memory is bounded by the chunk,
not the number of samples, and no Python loop runs per resample. Several statistics given together see the SAME
counts (a paired bootstrap: both sides of a difference on the same resampled documents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .protocol import PredictionsError

DEFAULT_SAMPLES = 1000
MAX_SAMPLES = 100_000  # ~100x the default: a CI's percentiles are settled long before; more only runs for hours
CHUNK = 100  # samples per vectorised step: bounds memory at (CHUNK x units) floats per statistic
INTERVAL = "percentile, 2.5-97.5"

# counts (B, n) per resampled dimension -> (B,) values, or (B, k) for k statistics computed together (NaN = undefined)
Statistic = Callable[..., np.ndarray]


def check_settings(samples, seed) -> None:
    """Bootstrap settings as whole numbers >= 0 (numpy's generator refuses a negative seed with a traceback), and at
    most MAX_SAMPLES samples."""
    for what, value in (("number of bootstrap samples", samples), ("bootstrap seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PredictionsError(f"the {what} must be a whole number, 0 or more, not {value}")
    if samples > MAX_SAMPLES:
        raise PredictionsError(f"{samples} bootstrap samples is more than the {MAX_SAMPLES:,} allowed; "
                               f"the default {DEFAULT_SAMPLES:,} settles a 95% CI")


def counts(rng: np.random.Generator, samples: int, n: int) -> np.ndarray:
    """(samples, n) float counts: how often each of n items is drawn in each of `samples` resamples of size n."""
    draws = rng.integers(0, n, size=(samples, n))
    offsets = (np.arange(samples)[:, None] * n + draws).ravel()
    return np.bincount(offsets, minlength=samples * n).reshape(samples, n).astype(float)


def resample(statistics: Sequence[Statistic], sizes: Sequence[int], *, samples: int = DEFAULT_SAMPLES, seed: int = 0) -> list[np.ndarray]:
    """Each statistic's (samples, ...) values over the same resamples: per chunk, one count matrix per dimension of
    `sizes` (e.g. documents, or documents and systems), drawn in that order from one seeded generator."""
    check_settings(samples, seed)
    rng = np.random.default_rng(seed)
    chunks: list[list[np.ndarray]] = [[] for _ in statistics]
    for start in range(0, samples, CHUNK):
        drawn = [counts(rng, min(CHUNK, samples - start), n) for n in sizes]
        for out, statistic in zip(chunks, statistics):
            out.append(statistic(*drawn))
    return [np.concatenate(out) if out else np.empty(0) for out in chunks]


def percentile_interval(values: np.ndarray) -> list[float] | None:
    """The 95% percentile interval of the defined values; None when no resample gave a defined value."""
    defined = values[~np.isnan(values)]
    return [float(q) for q in np.percentile(defined, [2.5, 97.5])] if len(defined) else None


def ones(sizes: Sequence[int]) -> list[np.ndarray]:
    """The counts of the original sample (each item once): a statistic's point value."""
    return [np.ones((1, n)) for n in sizes]


# --- statistics of units grouped in documents, as functions of document counts ----------------------------------


def auc_statistic(gold: np.ndarray, scores: np.ndarray, document: np.ndarray) -> Statistic:
    """ROC-AUC of units weighted by their document's count (ties count half, as `metrics.roc_auc`): the units are
    sorted once; per resample, the weight of negatives below each distinct score is a cumulative sum."""
    gold, scores, document = np.asarray(gold) == 1, np.asarray(scores, dtype=float), np.asarray(document)
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else np.empty(0, dtype=int)
    positive, doc = gold[order], document[order]

    def auc(weights: np.ndarray) -> np.ndarray:
        if not len(starts):
            return np.full(len(weights), np.nan)
        w = weights[:, doc]
        pos = np.add.reduceat(w * positive, starts, axis=1)
        neg = np.add.reduceat(w * ~positive, starts, axis=1)
        below = np.cumsum(neg, axis=1) - neg
        pairs = pos.sum(1) * neg.sum(1)
        wins = (pos * (below + 0.5 * neg)).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pairs > 0, wins / np.where(pairs > 0, pairs, 1), np.nan)

    return auc


def balanced_accuracy_statistic(gold: np.ndarray, pred: np.ndarray, document: np.ndarray, documents: int) -> Statistic:
    """Balanced accuracy (mean recall of both classes) of units weighted by their document's count: each class's
    hits and totals are summed per document once, so a resample is two matrix-vector products per class."""
    gold, pred, document = np.asarray(gold) == 1, np.asarray(pred) == 1, np.asarray(document)

    def per_document(mask):
        return np.bincount(document, weights=mask.astype(float), minlength=documents)

    parts = [(per_document(gold & pred), per_document(gold)), (per_document(~gold & ~pred), per_document(~gold))]

    def balanced_accuracy(weights: np.ndarray) -> np.ndarray:
        recalls = []
        for hits, total in parts:
            t = weights @ total
            with np.errstate(invalid="ignore", divide="ignore"):
                recalls.append(np.where(t > 0, (weights @ hits) / np.where(t > 0, t, 1), np.nan))
        return (recalls[0] + recalls[1]) / 2

    return balanced_accuracy
