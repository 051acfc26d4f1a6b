"""Kendall's tau-b between a measure and human ratings over the five sets of comparisons of Steen & Markert
(2022, §4, §4.1), as quadratic forms of resampling counts, so the bootstrap is vectorised over samples:

- tau_sys   system means of P against system means of H (C_sys);
- tau_sum   all summaries against each other (C_sum);
- tau_pair  per document, its summaries by different systems; averaged over documents (C_pair);
- acc_pair  the same pairs as a ranking accuracy: of the pairs humans order strictly, the share the measure
            orders the same way strictly (a tie in P counts as wrong);
- tau_intra per system, its summaries of different documents; averaged over systems (C_intra).

A tau over a group whose human or predicted scores are all tied is undefined; such groups are left out of the
averages and counted. 95% confidence intervals come from `bootstrap.resample` over documents and systems together,
with replacement (Deutsch et al. 2021's BOOT-BOTH, as the paper's reference implementation does); a resampled copy
of a document or system counts as a distinct one. Every tau-b is a quadratic form of the counts with the pairwise
sign matrices of the original data, which gives exactly the tau-b of the materialised resample (copies are tied
with each other in both H and P, so they add no pairs). P here is in coherence polarity (higher = more coherent):
`ratings` turns predictions (higher = less coherent) around before calling.
"""

from __future__ import annotations

import math

import numpy as np

from . import bootstrap

METRICS = ("tau_sys", "tau_sum", "tau_pair", "acc_pair", "tau_intra")
RESAMPLED = "documents and systems together, with replacement (BOOT-BOTH, Deutsch et al. 2021)"


def _signs(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(..., n) -> (..., n, n): sign(v_i - v_j) for valid pairs, 0 elsewhere."""
    filled = np.where(valid, values, 0.0)
    signs = np.sign(filled[..., :, None] - filled[..., None, :])
    return signs * (valid[..., :, None] & valid[..., None, :])


def _tau_parts(gold_signs: np.ndarray, pred_signs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair matrices whose weighted sums give tau-b: concordance, pairs untied in H, pairs untied in P."""
    return gold_signs * pred_signs, np.abs(gold_signs), np.abs(pred_signs)


def _tau(num, untied_gold, untied_pred) -> np.ndarray:
    denominator = np.sqrt(untied_gold * untied_pred)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, num / np.where(denominator > 0, denominator, 1.0), np.nan)


def _quad_grouped(weights: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """weights (B, n), matrices (G, n, n) -> (B, G): w^T M_g w for every sample and group. One matrix product
    for all groups: many tiny ones cost more in call overhead (and thread hand-offs) than in arithmetic."""
    groups, n, _ = matrices.shape
    product = weights @ matrices.transpose(1, 0, 2).reshape(n, groups * n)  # [b, g*n + j] = sum_i w_bi M_gij
    return np.einsum("bgn,bn->bg", product.reshape(len(weights), groups, n), weights)


def _untied_pairs(weights: np.ndarray, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """w^T [v_i != v_j] w over valid items (B samples), without an n x n matrix: the weight of all pairs minus
    that of pairs inside groups of equal value (w_i^2 terms appear in both and cancel)."""
    items = np.flatnonzero(valid)
    if not len(items):
        return np.zeros(len(weights))
    order = items[np.argsort(values[items], kind="stable")]
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    w = weights[:, order]
    return w.sum(1) ** 2 - (np.add.reduceat(w, starts, axis=1) ** 2).sum(1)


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two equally long score lists; NaN where either is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    valid = np.ones(x.shape, dtype=bool)
    parts = _tau_parts(_signs(x, valid), _signs(y, valid))
    return float(_tau(*(part.sum() for part in parts)))


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 1 of defined values, weighted; and how many groups were undefined (per sample). Each sum is
    exact (`math.fsum`), so the mean does not depend on the order of the documents or systems summed."""
    defined = ~np.isnan(values)
    total = (weights * defined).sum(1)  # whole counts: exact in any order
    sums = np.array([math.fsum(row) for row in (np.where(defined, values, 0.0) * weights).tolist()])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total > 0, sums / np.where(total > 0, total, 1), np.nan)
    return mean, (~defined & (weights > 0)).sum(1)


def _system_means(m: np.ndarray, values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, S) mean of each system's valid scores, document d counted m[b, d] times, and where there is one. Each sum
    is exact (`math.fsum` of the multiset), then rounded once: means that the data make equal (a permutation of one
    set of ratings) are equal floats, so tau counts a tie, whatever the summation order of a BLAS kernel."""
    counts = m.astype(np.int64)
    means = np.full((len(m), values.shape[1]), np.nan)
    for s in range(values.shape[1]):
        scores, times = values[valid[:, s], s], counts[:, valid[:, s]]
        for b in range(len(m)):
            if total := int(times[b].sum()):
                means[b, s] = _exact_mean(np.repeat(scores, times[b]).tolist(), total)
    return means, ~np.isnan(means)


def _exact_mean(values: list[float], count: int) -> float:
    """The exact sum, rounded once, over `count`; a sum past the float range (scores near 1e308: tau reads only their
    order) sums the scores each divided first, as exact and as equal for equal multisets."""
    try:
        return math.fsum(values) / count
    except OverflowError:
        return math.fsum(value / count for value in values)


class Comparisons:
    """Pair matrices of one (gold, pred) grid, computed once; `evaluate(m, c)` for count weights m (B, D), c (B, S)."""

    def __init__(self, gold: np.ndarray, pred: np.ndarray):
        self.gold, self.pred = gold, pred
        self.valid = ~np.isnan(gold) & ~np.isnan(pred)
        valid = self.valid
        # per document, pairs of systems; per system, pairs of documents; all summaries
        self.pair = _tau_parts(_signs(gold, valid), _signs(pred, valid))
        self.intra = _tau_parts(_signs(gold.T, valid.T), _signs(pred.T, valid.T))
        # all summaries: only the concordance needs an (n x n) matrix, in float32 to halve the largest product's
        # cost; exact, as entries are -1/0/1 and a sample's weights sum to D*S, so w @ M is integer and < 2**24
        self.flat = (gold.ravel(), pred.ravel(), valid.ravel())
        gold_signs, pred_signs = _signs(gold.ravel(), valid.ravel()), _signs(pred.ravel(), valid.ravel())
        self.summary_concordance = (gold_signs * pred_signs).astype(np.float32)
        wins = _signs(gold, valid) > 0  # (D, S, S): H(d, s) > H(d, t)
        self.human_wins = wins.astype(float)
        self.agreed_wins = (wins & (_signs(pred, valid) > 0)).astype(float)

    def _sys(self, m, c):
        gold_means, has_mean = _system_means(m, self.gold, self.valid)
        pred_means, _ = _system_means(m, self.pred, self.valid)
        parts = _tau_parts(_signs(gold_means, has_mean), _signs(pred_means, has_mean))
        return _tau(*(np.einsum("bs,bst,bt->b", c, part, c) for part in parts))

    def tau_intra(self, m: np.ndarray, c: np.ndarray) -> np.ndarray:
        """(B,) tau_intra alone (the meta-evaluation's headline), without the other four's pair matrices."""
        per_sys = _tau(*(_quad_grouped(m, part) for part in self.intra))
        return _weighted_mean(per_sys, c)[0]

    def all_metrics(self, m: np.ndarray, c: np.ndarray) -> np.ndarray:
        """(B, 5): the five measures of `METRICS`, in that order, per resample."""
        result = self.evaluate(m, c)
        return np.stack([result[metric] for metric in METRICS], axis=1)

    def evaluate(self, m: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
        n_docs, n_sys = m.shape[1], c.shape[1]
        per_doc = _tau(*(_quad_grouped(c, part) for part in self.pair))  # (B, D)
        per_sys = _tau(*(_quad_grouped(m, part) for part in self.intra))  # (B, S)
        w = (m[:, :, None] * c[:, None, :]).reshape(len(m), n_docs * n_sys)
        gold_flat, pred_flat, valid_flat = self.flat
        summary = _tau(
            ((w.astype(np.float32) @ self.summary_concordance).astype(float) * w).sum(1),
            _untied_pairs(w, gold_flat, valid_flat),
            _untied_pairs(w, pred_flat, valid_flat),
        )
        wins = (_quad_grouped(c, self.human_wins) * m).sum(1)
        agreed = (_quad_grouped(c, self.agreed_wins) * m).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = np.where(wins > 0, agreed / np.where(wins > 0, wins, 1), np.nan)
        tau_pair, pair_undefined = _weighted_mean(per_doc, m)
        tau_intra, intra_undefined = _weighted_mean(per_sys, c)
        return {
            "tau_sys": self._sys(m, c),
            "tau_sum": summary,
            "tau_pair": tau_pair,
            "acc_pair": accuracy,
            "tau_intra": tau_intra,
            "per_system": per_sys,
            "pair_undefined": pair_undefined,
            "intra_undefined": intra_undefined,
        }


def correlations(gold: np.ndarray, pred: np.ndarray, *, samples: int = bootstrap.DEFAULT_SAMPLES, seed: int = 0) -> dict:
    """All five measures of agreement between (D, S) grids, with bootstrap 95% CIs (NaN = no summary/score)."""
    gold, pred = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    if gold.shape != pred.shape or gold.ndim != 2:
        raise ValueError(f"gold and pred must be (documents, systems) grids of one shape, got {gold.shape} and {pred.shape}")
    comparisons = Comparisons(gold, pred)
    point = comparisons.evaluate(*bootstrap.ones(gold.shape))
    (values,) = bootstrap.resample([comparisons.all_metrics], gold.shape, samples=samples, seed=seed)
    out = {}
    for k, metric in enumerate(METRICS):
        column = values[:, k] if samples else np.empty(0)
        entry = {"value": number_or_none(point[metric][0]), "ci95": bootstrap.percentile_interval(column),
                 "bootstrap_undefined": int(np.isnan(column).sum())}
        if metric == "tau_pair":
            entry["documents_undefined"] = int(point["pair_undefined"][0])
        if metric == "tau_intra":
            entry["systems_undefined"] = int(point["intra_undefined"][0])
        out[metric] = entry
    out["per_system_tau_intra"] = [number_or_none(v) for v in point["per_system"][0]]
    return out


def number_or_none(value) -> float | None:
    return None if np.isnan(value) else float(value)
