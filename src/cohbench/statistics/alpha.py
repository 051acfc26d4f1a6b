"""Krippendorff's α from counts: the coincidence matrix needs only how many coders gave each value to each unit,
not who gave them, so the counting runs in SQL (`pair_counts_sql`) and only the final arithmetic in Python."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from ..errors import CohbenchError
from .kind import fetch

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _delta2(values: np.ndarray, marginals: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's squared difference function δ²(c, k) for the given level of measurement."""
    c, k = np.meshgrid(values, values, indexing="ij")
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            d = ((c - k) / (c + k)) ** 2
        return np.nan_to_num(d)
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
        i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        return (cumulative[hi + 1] - cumulative[lo] - (marginals[i] + marginals[j]) / 2) ** 2
    raise CohbenchError(f"unknown level of measurement {level!r}; use one of {', '.join(LEVELS)}")


def alpha_from_coincidences(values: Iterable[float], matrix: np.ndarray, level: str = "nominal") -> float | None:
    """α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck from a coincidence matrix over sorted `values`.
    None where α is undefined (fewer than two pairable values, or no variation at all)."""
    values = np.asarray(list(values), dtype=float)
    matrix = np.asarray(matrix, dtype=float)
    marginals = matrix.sum(axis=1)
    n = marginals.sum()
    if n <= 1:
        return None
    delta = _delta2(values, marginals, level)
    expected = (np.outer(marginals, marginals) * delta).sum()
    if expected == 0:
        return None
    return float(1 - (n - 1) * (matrix * delta).sum() / expected)


def coincidences_from_pairs(pairs: Iterable[tuple[int, float, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Coincidence matrix from pair counts (m, c, k, S): S = Σ over units with m pairable values of
    n_uc (n_uk − [c = k]); each unit's pairs weigh 1 / (m − 1)."""
    pairs = list(pairs)
    values = np.array(sorted({p[1] for p in pairs} | {p[2] for p in pairs}), dtype=float)
    index = {v: i for i, v in enumerate(values)}
    matrix = np.zeros((len(values), len(values)))
    for m, c, k, count in sorted(pairs):  # a fixed order: the same counts always give the same float sums
        matrix[index[c], index[k]] += count / (m - 1)
    return values, matrix


def binary_pairs(histogram: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Pair counts of binary units from a histogram (m coders, c of whom marked the unit, how many units)."""
    totals = defaultdict(int)
    for m, c, units in histogram:
        if m < 2 or units == 0:
            continue
        totals[m, 1, 1] += units * c * (c - 1)
        totals[m, 1, 0] += units * c * (m - c)
        totals[m, 0, 1] += units * c * (m - c)
        totals[m, 0, 0] += units * (m - c) * (m - c - 1)
    return [(m, c, k, s) for (m, c, k), s in sorted(totals.items()) if s]


def binary_agreement(histogram: list[tuple[int, int, int]]) -> dict:
    """α (nominal) and two-agree % of binary units from their (m, c, units) histogram, zeros included."""
    marked = sum(units for m, c, units in histogram if c >= 1)
    two = sum(units for m, c, units in histogram if c >= 2)
    pairs = binary_pairs(histogram)
    alpha = alpha_from_coincidences(*coincidences_from_pairs(pairs), "nominal") if pairs else None
    return {
        "alpha": alpha,
        "two_agree_pct": 100 * two / marked if marked else None,
        "units": sum(units for _, _, units in histogram),
        "marked_units": marked,
        "units_marked_by_two_or_more": two,
    }


def with_zeros(marked: dict[int, dict[int, int]], totals: dict[int, int]) -> list[tuple[int, int, int]]:
    """Histogram (m, c, units) including the units nobody marked: all units of m-coder summaries minus the marked."""
    rows = []
    for m, total in sorted(totals.items()):
        by_c = marked.get(m, {})
        rows.append((m, 0, total - sum(by_c.values())))
        rows += [(m, c, n) for c, n in sorted(by_c.items())]
    return rows


def pair_counts_sql(units_sql: str) -> str:
    """Pair counts (stratum, m, c, k, S) from a relation (stratum, unit, value, n): n coders gave `value` to `unit`."""
    return f"""
        WITH v AS ({units_sql}),
        m AS (SELECT stratum, unit, sum(n) AS m FROM v GROUP BY stratum, unit HAVING sum(n) >= 2)
        SELECT a.stratum, m.m, a.value AS c, b.value AS k,
               sum(a.n * (b.n - CASE WHEN a.value = b.value THEN 1 ELSE 0 END))::BIGINT AS s
        FROM v a JOIN v b ON a.stratum = b.stratum AND a.unit = b.unit
                 JOIN m ON m.stratum = a.stratum AND m.unit = a.unit
        GROUP BY ALL ORDER BY ALL"""


def alpha_by_stratum(con, units_sql: str, levels: Iterable[str]) -> dict:
    """Krippendorff's α per level and stratum of a (stratum, unit, value, n) relation: {level: {stratum: α}}.
    The counting runs once in DuckDB; the levels differ only in the final arithmetic."""
    pairs = defaultdict(list)
    for stratum, m, c, k, s in fetch(con, pair_counts_sql(units_sql)):
        pairs[stratum].append((m, c, k, s))
    matrices = {stratum: coincidences_from_pairs(p) for stratum, p in pairs.items()}
    return {level: {stratum: alpha_from_coincidences(*matrix, level) for stratum, matrix in matrices.items()} for level in levels}
