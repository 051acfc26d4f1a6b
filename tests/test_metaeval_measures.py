"""The meta-evaluation measures on data small enough to check by hand: tau-b with ties, the five comparison sets,
the bootstrap, the bias matrix's orientation, and the checks on a scores file."""

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from cohbench.corpora import summeval
from cohbench.evaluation import kendall, rating_grid, rating_references, ratings, references
from cohbench.evaluation.bias import bias_matrix
from cohbench.evaluation.protocol import PredictionsError

from test_summeval_parse import fixture_paths

# 3 documents x 3 systems, with ties in the human scores (doc 1) and in the predictions (doc 1)
GOLD = np.array([[3, 2, 1], [2, 2, 1], [3, 1, 2]], dtype=float)
PRED = np.array([[0.9, 0.5, 0.1], [0.8, 0.8, 0.2], [0.3, 0.6, 0.9]])


def test_tau_b_by_hand_and_against_scipy():
    # pairs: 3 concordant, 1 discordant, 1 tied in x only, 1 tied in y only -> (3-1)/sqrt(5*5); tau-a would be 1/3
    assert kendall.kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.4)
    rng = np.random.default_rng(7)
    for _ in range(20):
        x, y = rng.integers(1, 4, 12), rng.integers(1, 5, 12)  # heavy ties
        assert kendall.kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)
    assert np.isnan(kendall.kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_the_five_measures_by_hand():
    result = kendall.correlations(GOLD, PRED, samples=0)
    value = {metric: result[metric]["value"] for metric in kendall.METRICS}
    # system means 8/3 > 5/3 > 4/3 and 2.0/3 > 1.9/3 > 1.2/3: same order
    assert value["tau_sys"] == pytest.approx(1.0)
    # per document: 1, 1 (the pair tied in both is no pair), -1/3
    assert value["tau_pair"] == pytest.approx((1 + 1 - 1 / 3) / 3)
    # 8 pairs strictly ordered by humans, 6 ordered the same way by the measure
    assert value["acc_pair"] == pytest.approx(6 / 8)
    # per system: 0, 0, 2/sqrt(2*3)
    assert result["per_system_tau_intra"] == pytest.approx([0.0, 0.0, 2 / np.sqrt(6)])
    assert value["tau_intra"] == pytest.approx(2 / np.sqrt(6) / 3)
    assert value["tau_sum"] == pytest.approx(scipy.stats.kendalltau(GOLD.ravel(), PRED.ravel()).statistic)


def test_scores_near_the_float_limit_give_the_taus_of_the_same_order_scaled_down():
    # tau reads only the order: 1e307-sized scores, whose sums pass the float range, are as good as small ones
    huge, small = kendall.correlations(GOLD, PRED * 1e308, samples=0), kendall.correlations(GOLD, PRED, samples=0)
    assert {m: huge[m]["value"] for m in kendall.METRICS} == {m: small[m]["value"] for m in kendall.METRICS}


def test_a_tie_in_the_measure_counts_as_wrong_in_acc_pair():
    gold = np.array([[2.0, 1.0]])
    assert kendall.correlations(gold, np.array([[5.0, 5.0]]), samples=0)["acc_pair"]["value"] == 0.0
    assert kendall.correlations(gold, np.array([[5.0, 4.0]]), samples=0)["acc_pair"]["value"] == 1.0


def test_groups_with_constant_scores_are_left_out_and_counted():
    pred = np.tile([[3.0, 2.0, 1.0]], (3, 1))  # constant within each system
    result = kendall.correlations(GOLD, pred, samples=0)
    assert result["tau_intra"]["value"] is None and result["tau_intra"]["systems_undefined"] == 3
    pred[0, 2] = 0.0  # system 2 now varies: only it is defined
    result = kendall.correlations(GOLD, pred, samples=0)
    assert result["tau_intra"]["systems_undefined"] == 2
    assert result["tau_intra"]["value"] == pytest.approx(kendall.kendall_tau_b(GOLD[:, 2], pred[:, 2]))


def test_the_weighted_bootstrap_equals_materialised_resamples():
    rng = np.random.default_rng(3)
    gold = rng.integers(3, 16, (12, 5)).astype(float)
    pred = rng.normal(size=(12, 5)) + gold / 5
    protocol = kendall.Comparisons(gold, pred)
    for _ in range(5):
        docs, systems = rng.integers(0, 12, 12), rng.integers(0, 5, 5)
        weighted = protocol.evaluate(np.bincount(docs, minlength=12)[None] * 1.0, np.bincount(systems, minlength=5)[None] * 1.0)
        explicit = kendall.correlations(gold[docs][:, systems], pred[docs][:, systems], samples=0)
        for metric in kendall.METRICS:
            assert weighted[metric][0] == pytest.approx(explicit[metric]["value"], abs=1e-12), metric


def test_bootstrap_intervals_are_seeded_and_bracket_the_estimate():
    rng = np.random.default_rng(5)
    gold = rng.integers(3, 16, (30, 6)).astype(float)
    pred = gold + rng.normal(scale=3, size=gold.shape)
    first = kendall.correlations(gold, pred, samples=200, seed=1)
    assert first == kendall.correlations(gold, pred, samples=200, seed=1)
    assert first != kendall.correlations(gold, pred, samples=200, seed=2)
    for metric in ("tau_sum", "tau_pair", "acc_pair", "tau_intra"):
        low, high = first[metric]["ci95"]
        assert low < first[metric]["value"] < high, metric


def test_system_means_the_data_make_equal_are_ties_in_tau_sys_whatever_the_summation_order():
    """Every system's 100 expert-style ratings (multiples of 1/3) a permutation of one set: every system mean is the
    same number, so tau_sys has nothing to order (undefined), never a win decided by rounding; the same for the
    measure's means; and the order of the documents or of the systems changes no measure by a bit."""
    rng = np.random.default_rng(5)
    ratings_set = rng.integers(3, 16, 100) / 3
    permuted = np.stack([rng.permutation(ratings_set) for _ in range(12)], axis=1)
    scores = rng.random((100, 12))
    assert kendall.correlations(permuted, scores, samples=0)["tau_sys"]["value"] is None
    assert kendall.correlations(scores, permuted, samples=0)["tau_sys"]["value"] is None
    gold = rng.integers(3, 16, (100, 12)) / 3
    shuffled = rng.permutation(100)
    orders = ((gold, scores), (gold[::-1], scores[::-1]), (gold[shuffled], scores[shuffled]), (gold[:, ::-1], scores[:, ::-1]))
    results = [kendall.correlations(g, s, samples=0) for g, s in orders]  # documents reversed, shuffled; systems reversed
    assert all([r[m]["value"] for m in kendall.METRICS] == [results[0][m]["value"] for m in kendall.METRICS] for r in results)


def test_bias_matrix_orientation():
    # system 0 is better on average (mean 3 vs 2); on doc 2 system 1's summary is better (an inverted pair)
    gold = np.array([[4.0, 1.0], [4.0, 2.0], [1.0, 3.0]])
    always_prefers_0 = np.array([[2.0, 1.0], [2.0, 1.0], [2.0, 1.0]])
    bias = bias_matrix(gold, always_prefers_0)
    assert list(bias["order"]) == [0, 1]
    assert bias["tau"][0, 1] == 1.0 and bias["pairs"][0, 1] == 2  # tau+: consistent pairs all right
    assert bias["tau"][1, 0] == -1.0 and bias["pairs"][1, 0] == 1  # tau-: the inverted pair wrong
    assert np.isnan(bias["tau"][0, 0])
    reversed_order = bias_matrix(gold[:, ::-1], always_prefers_0[:, ::-1])
    assert list(reversed_order["order"]) == [1, 0] and reversed_order["tau"][0, 1] == 1.0


@pytest.fixture(scope="module")
def human():
    return rating_grid.human_scores(summeval.parse(fixture_paths()).records)


def test_human_scores_from_records(human):
    assert human.systems == ("M0", "M8", "M22") and human.docs == ("cnn-test-bbbb", "dm-test-aaaa")
    # expert means: M0 3 and 14/3 (expert_mean records); M8 13/3 and 6/3; M22 8/3 and 13/3
    assert human.gold == pytest.approx(np.array([[3.0, 13 / 3, 8 / 3], [14 / 3, 2.0, 13 / 3]]))
    assert human.expert_sum.tolist() == [[9.0, 13.0, 8.0], [14.0, 6.0, 13.0]]


def test_scores_files_in_both_layouts_give_the_same_result(human, tmp_path):
    ids = [human.id_of(d, s) for d in range(2) for s in range(3)]
    scores = dict(zip(ids, [0.1, 0.5, 0.3, 0.9, 0.2, 0.4]))
    csv = tmp_path / "scores.csv"
    csv.write_text("doc_id,system,score\n" + "".join(f"{i.split('/')[0]},{i.split('/')[1]},{v}\n" for i, v in scores.items()))
    jsonl = tmp_path / "scores.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "score": v}) + "\n" for i, v in scores.items()))
    frame = pd.DataFrame({"id": list(scores), "score": list(scores.values())})
    grids = [rating_grid.score_grid(source, human).grid for source in (csv, jsonl, scores, frame)]
    assert all(np.array_equal(grids[0], grid) for grid in grids[1:])
    assert grids[0][1, 0] == 0.9


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.pop("dm-test-aaaa/M8"), r"1 of 6 summaries have no score \(dm-test-aaaa/M8\).*--allow-missing"),
        (lambda s: s.update({"dm-test-aaaa/M8": float("nan")}), r"1 score\(s\) are NaN, infinite or not numbers \(dm-test-aaaa/M8\)"),
        (lambda s: s.update({"dm-test-aaaa/M8": 10**400}), r"1 score\(s\) are NaN, infinite or not numbers \(dm-test-aaaa/M8\)"),
        (lambda s: s.update({"dm-test-zzzz/M8": 1.0, "dm-test-aaaa/M99": 2.0}), r"2 id\(s\) are not SummEval summaries .*dm-test-zzzz/M8, dm-test-aaaa/M99"),
    ],
)
def test_scores_that_do_not_fit_the_corpus_are_clear_errors(human, edit, message):
    scores = {human.id_of(d, s): 1.0 for d in range(2) for s in range(3)}
    edit(scores)
    with pytest.raises(PredictionsError, match=message):
        rating_grid.score_grid(scores, human)


def test_duplicate_ids_are_an_error_and_missing_ones_can_be_allowed(human):
    rows = [{"id": human.id_of(d, s), "score": float(d + s)} for d in range(2) for s in range(3)]
    with pytest.raises(PredictionsError, match=r"1 summary id\(s\) are scored more than once: cnn-test-bbbb/M0"):
        rating_grid.score_grid(rows + rows[:1], human)
    grid = rating_grid.score_grid(rows[1:], human, allow_missing=True).grid
    assert np.isnan(grid[0, 0]) and np.isfinite(grid).sum() == 5
    result = ratings.evaluate(rows[1:], human=human, allow_missing=True, bootstrap=10)
    assert result["scored"] == 5 and result["missing"] == 1


def test_reference_measures_on_the_fixture(human):
    upper = references.reference_scores("upper-bound", human)
    assert upper[:, 0].tolist() == pytest.approx([23 / 6] * 2)
    assert references.reference_scores("architecture", human)[0].tolist() == [0.0, 0.0, 1.0]  # M22 is BART
    # M0's BARTScore text has sentence-initial capitals that SummEval's lower-cased original lacks
    assert references.reference_scores("uppercase", human)[:, 0].tolist() == [0.0, 0.0]
    assert references.reference_scores("uppercase", human)[1, 2] > 0
    noised = references.reference_scores("architecture-noised", human, seed=4)
    assert np.all(np.abs(noised - references.reference_scores("architecture", human)) < rating_references.NOISE)
    assert np.array_equal(noised, references.reference_scores("architecture-noised", human, seed=4))
    with pytest.raises(PredictionsError, match="unknown reference measure 'length'"):
        references.reference_scores("length", human)


def test_the_meta_evaluation_result_holds_no_timing(human):
    # the train stage ships this result inside the release, whose bytes must not depend on the run
    ids = [human.id_of(d, s) for d in range(2) for s in range(3)]
    result = ratings.evaluate(dict(zip(ids, [0.1, 0.5, 0.3, 0.9, 0.2, 0.4])), human=human, bootstrap=10)
    assert "seconds" not in json.dumps(result)
