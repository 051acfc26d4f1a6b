"""Krippendorff's α as cohbench computes it (pair counts in DuckDB, arithmetic in numpy) against hand computation
and against the `krippendorff` package on the same value matrices."""

from __future__ import annotations

import duckdb
import krippendorff
import numpy as np
import pandas as pd
import pytest

from cohbench.statistics.alpha import LEVELS, alpha_by_stratum, binary_agreement

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12 units, with missing values.
TEXTBOOK = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
TEXTBOOK_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def sql_alpha(matrix: np.ndarray, level: str) -> float:
    """α of a coders x units matrix through cohbench's SQL path."""
    coders, units = np.nonzero(~np.isnan(matrix))
    long = pd.DataFrame({"stratum": "all", "unit": units, "value": matrix[coders, units]})
    con = duckdb.connect()
    con.register("ratings_long", long)
    units_sql = "SELECT stratum, unit, value, count(*) AS n FROM ratings_long GROUP BY ALL"
    return alpha_by_stratum(con, units_sql, [level])[level]["all"]


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_reproduces_krippendorffs_textbook_example(level):
    assert round(sql_alpha(TEXTBOOK, level), 3) == TEXTBOOK_ALPHA[level]
    assert sql_alpha(TEXTBOOK, level) == pytest.approx(krippendorff.alpha(reliability_data=TEXTBOOK, level_of_measurement=level), abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_the_krippendorff_package_on_random_likert_ratings(level, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=40)
    matrix = np.clip(truth + rng.integers(-1, 2, size=(5, 40)), 1, 5).astype(float)
    matrix[rng.random(matrix.shape) < 0.15] = NAN  # missing ratings: units with 0-5 values
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    assert sql_alpha(matrix, level) == pytest.approx(expected, abs=1e-12)


def test_binary_alpha_by_hand():
    # 2 coders, 4 units: (1,1), (0,0), (1,0), (0,0). Coincidences o11 = 2, o00 = 4, o10 = o01 = 1; n = 8,
    # n1 = 3, n0 = 5: alpha = 1 - (n - 1)(o10 + o01) / (2 n0 n1) = 1 - 7 * 2 / 30.
    histogram = [(2, 2, 1), (2, 0, 2), (2, 1, 1)]
    result = binary_agreement(histogram)
    assert result["alpha"] == pytest.approx(1 - 14 / 30)
    assert result["two_agree_pct"] == pytest.approx(50.0)  # 2 units marked by anyone, 1 of them by both
    assert result["units"] == 4


def test_binary_alpha_matches_the_package_with_mixed_coder_counts():
    # units coded by 3 or by 4 coders, as SNaC summaries are
    histogram = [(3, 0, 20), (3, 1, 5), (3, 2, 3), (3, 3, 4), (4, 0, 9), (4, 1, 2), (4, 3, 1), (4, 4, 2)]
    columns = []
    for m, c, units in histogram:
        column = [1.0] * c + [0.0] * (m - c) + [NAN] * (4 - m)
        columns += [column] * units
    matrix = np.array(columns).T
    assert binary_agreement(histogram)["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-12
    )


def test_alpha_is_undefined_without_variation():
    assert binary_agreement([(3, 0, 10)])["alpha"] is None
    assert binary_agreement([(3, 0, 10)])["two_agree_pct"] is None
