"""`cohbench evaluate`: each protocol against values computed by hand, threshold tuning on dev only, and clear
errors for predictions that do not fit the release."""

import json

import numpy as np
import pytest
from sklearn import metrics as sk

from cohbench.cli import main
from cohbench.evaluation import PredictionsError, evaluate, metrics, summary_lines

from release_fixture import plain_record, record, snac_like, write_config


def storysumm_like(rel):
    def summary(i, label, difficulty=None):
        return record(f"s{i}", f"story-{i}", ["One.", "Two."], label=label, difficulty=difficulty, sentence_labels=[0, label])

    val = [summary(1, 1, "easy"), summary(2, 0), summary(3, 1, "hard"), summary(4, 0)]
    test = [summary(5, 1, "easy"), summary(6, 1, "hard"), summary(7, 1, "hard"), summary(8, 0), summary(9, 0)]
    return write_config(rel, "storysumm", "storysumm", {"validation": val, "test": test})


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_storysumm_metrics_match_hand_computed_values(workspace):
    rel = storysumm_like(workspace / "release")
    labels = {"s1": 1, "s2": 0, "s3": 0, "s4": 1, "s5": 1, "s6": 1, "s7": 0, "s8": 0, "s9": 1}
    result = evaluate("storysumm", [{"id": i, "label": v} for i, v in labels.items()], release=rel)
    assert list(result["splits"]) == ["validation", "test", "full"]
    test = result["splits"]["test"]
    # gold 1 1 1 0 0, predicted 1 1 0 0 1: agreement 3/5, chance .6*.6 + .4*.4 = .52
    assert test["cohen_kappa"] == pytest.approx((0.6 - 0.52) / 0.48)
    assert test["predicted_faithful"] == pytest.approx(0.4)  # fractions in the result, percentages only in text
    assert test["precision_faithful"] == pytest.approx(0.5) and test["recall_faithful"] == pytest.approx(0.5)
    assert test["easy_detected"] == pytest.approx(1.0) and test["hard_detected"] == pytest.approx(0.5)
    assert test["balanced_accuracy"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert result["splits"]["full"]["summaries"] == 9


def test_score_only_predictions_get_a_threshold_tuned_on_val_by_balanced_accuracy(workspace):
    rel = storysumm_like(workspace / "release")
    scores = {"s1": 0.9, "s2": 0.2, "s3": 0.6, "s4": 0.7, "s5": 0.95, "s6": 0.1, "s7": 0.3, "s8": 0.5, "s9": 0.4}
    result = evaluate("storysumm", [{"id": i, "score": v} for i, v in scores.items()], release=rel)
    # on val (gold 1 0 1 0): 0.9 -> BAcc .75, 0.7 -> .5, 0.6 -> .75 (not better), 0.2 -> .5: the highest best wins
    assert result["decision"] == {"threshold": 0.9, "tuned_on": "validation", "criterion": "maximum balanced accuracy",
                                  "thresholded_metrics_on": ["test"]}
    assert result["splits"]["test"]["predicted_faithful"] == pytest.approx(0.8)  # only s5 >= 0.9
    # the tuning split, and the full row that contains it, get the threshold-free metrics only
    for flattered in ("validation", "full"):
        assert "balanced_accuracy" not in result["splits"][flattered] and result["splits"][flattered]["auc"] is not None
    assert result["splits"]["test"]["auc"] == pytest.approx(sk.roc_auc_score([1, 1, 1, 0, 0], [0.95, 0.1, 0.3, 0.5, 0.4]))
    given = evaluate("storysumm", [{"id": i, "score": v} for i, v in scores.items()], threshold=0.35, release=rel)
    assert given["decision"]["tuned_on"] is None and given["splits"]["test"]["predicted_faithful"] == pytest.approx(0.4)


def test_gap_protocol_matches_hand_computed_values(workspace):
    rel = workspace / "release"
    a = record("a", "d1", ["1.", "2.", "3.", "4.", "5."], gap_labels=[0, 1, 0, 0])
    b = record("b", "d2", ["1.", "2.", "3.", "4.", "5."], gap_labels=[1, 0, 0, 0])
    write_config(rel, "timetravel_msd", "timetravel", {"test": [a, b]})
    preds = [{"id": "a", "score": [0.1, 0.8, 0.3, 0.2]}, {"id": "b", "score": [0.4, 0.5, 0.05, 0.1]}]
    m = evaluate("timetravel_msd", preds, threshold=0.45, release=rel)["splits"]["test"]
    assert (m["units"], m["errors"]) == (8, 2)
    assert m["accuracy"] == pytest.approx(0.75) and m["precision"] == pytest.approx(0.5) and m["recall"] == pytest.approx(0.5)
    assert m["f1"] == pytest.approx(0.5) and m["auc"] == pytest.approx(11 / 12)


def test_snac_per_type_scores_and_span_overlap(workspace):
    rel = workspace / "release"
    write_config(rel, "snac", "snac", {"test": [snac_like("s1", "b1"), snac_like("s2", "b2")]})
    preds = [
        {"id": "s1", "label": [0, 1, 1], "types": [[], ["SceneE"], ["CharE"]], "spans": [{"sentence": 2, "type": "CharE", "text": "Bob left"}]},
        {"id": "s2", "label": [0, 0, 1], "types": [[], [], ["CharE"]], "spans": [{"sentence": 2, "type": "CharE", "start": 9, "end": 17}]},
    ]
    m = evaluate("snac", preds, release=rel)["splits"]["test"]
    assert m["sentence"]["precision"] == pytest.approx(2 / 3) and m["sentence"]["recall"] == pytest.approx(1.0)
    assert m["sentence_min2votes"]["errors"] == 2  # the span has 2 votes
    chare, scene = m["per_type"]["CharE"], m["per_type"]["SceneE"]
    assert (chare["precision"], chare["recall"], chare["f1"]) == (1.0, 1.0, 1.0)
    assert chare["ov"] == pytest.approx(0.5)  # "Bob left" overlaps "Bob"; "the farm" (9:17) does not
    assert scene["precision"] == 0.0 and scene["recall"] is None


def test_a_span_text_not_in_its_sentence_overlaps_nothing_and_still_counts_in_ov(workspace):
    rel = workspace / "release"
    write_config(rel, "snac", "snac", {"test": [snac_like("s1", "b1"), snac_like("s2", "b2")]})
    preds = [
        {"id": "s1", "label": [0, 1, 1], "types": [[], [], ["CharE"]], "spans": [{"sentence": 2, "type": "CharE", "text": "Bob left"}]},
        {"id": "s2", "label": [0, 0, 1], "types": [[], [], ["CharE"]], "spans": [{"sentence": 2, "type": "CharE", "text": "nowhere"}]},
    ]
    assert evaluate("snac", preds, release=rel)["splits"]["test"]["per_type"]["CharE"]["ov"] == pytest.approx(0.5)


def test_types_on_some_records_only_are_refused_rather_than_scored_as_the_split(workspace):
    rel = workspace / "release"
    write_config(rel, "snac", "snac", {"test": [snac_like("s1", "b1"), snac_like("s2", "b2")]})
    preds = [{"id": "s1", "label": [0, 1, 1], "types": [[], [], ["CharE"]]}, {"id": "s2", "label": [0, 0, 1]}]
    with pytest.raises(PredictionsError, match="types are given for 1 of the 2 records"):
        evaluate("snac", preds, release=rel)


def test_a_threshold_is_read_on_the_scale_the_scores_were_given_on(workspace, capsys):
    rel = storysumm_like(workspace / "release")
    scores = {"s1": 0.9, "s2": 0.2, "s3": 0.6, "s4": 0.7, "s5": 0.95, "s6": 0.1, "s7": 0.3, "s8": 0.5, "s9": 0.4}
    as_error = evaluate("storysumm", [{"id": i, "score": v} for i, v in scores.items()], threshold=0.35, release=rel)
    # the same predictions as faithfulness (higher = more faithful): at or below 0.65 is an error, as score >= 0.35
    as_faithfulness = evaluate("storysumm", [{"id": i, "faithfulness": 1 - v} for i, v in scores.items()], threshold=0.65, release=rel)
    assert as_faithfulness["splits"]["test"] == as_error["splits"]["test"]
    assert "threshold 0.65 on faithfulness given (faithfulness at or below it counts as an error)" in summary_lines(as_faithfulness)[0]
    mixed = [{"id": i, "score": v} if i < "s5" else {"id": i, "faithfulness": 1 - v} for i, v in scores.items()]
    with pytest.raises(PredictionsError, match="give every score under one key"):
        evaluate("storysumm", mixed, threshold=0.5, release=rel)


def test_metric_functions_agree_with_scikit_learn():
    rng = np.random.default_rng(0)
    gold, scores = rng.integers(0, 2, 200), rng.random(200).round(2)  # rounding makes ties
    pred = (scores >= 0.5).astype(int)
    assert metrics.roc_auc(gold, scores) == pytest.approx(sk.roc_auc_score(gold, scores))
    assert metrics.cohen_kappa(gold, pred) == pytest.approx(sk.cohen_kappa_score(gold, pred))
    assert metrics.balanced_accuracy(gold, pred) == pytest.approx(sk.balanced_accuracy_score(gold, pred))
    assert metrics.prf(gold, pred)["f1"] == pytest.approx(sk.f1_score(gold, pred))


def test_predictions_that_do_not_fit_are_one_clear_error(workspace, tmp_path, capsys):
    rel = storysumm_like(workspace / "release")
    everything = [{"id": f"s{i}", "label": 1} for i in range(1, 10)]
    with pytest.raises(PredictionsError, match=r"2 record\(s\) of storysumm \(validation/test\) have no prediction: s1, s2"):
        evaluate("storysumm", everything[2:], release=rel)
    with pytest.raises(PredictionsError, match=r"1 prediction line\(s\) name ids that are not records of storysumm: nope"):
        evaluate("storysumm", everything + [{"id": "nope", "label": 0}], release=rel)
    path = write(tmp_path / "dup.jsonl", everything + [{"id": "s3", "label": 0}])
    assert main(["evaluate", "storysumm", "--predictions", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"cohbench: error: {path}: 1 line(s) repeat an id: s3"
    write_config(rel, "timetravel_msd", "timetravel", {"test": [record("a", "d", ["1.", "2."], gap_labels=[1])]})
    with pytest.raises(PredictionsError, match=r"\(a\): score needs one value per unit \(1\), found 2 values"):
        evaluate("timetravel_msd", [{"id": "a", "score": [0.3, 0.1]}], threshold=0.5, release=rel)


def test_test_scores_alone_get_the_threshold_free_metrics_and_say_what_a_threshold_needs(workspace, tmp_path, capsys):
    rel = storysumm_like(workspace / "release")
    scores = {"s5": 0.95, "s6": 0.1, "s7": 0.3, "s8": 0.5, "s9": 0.4}  # test only: nothing to tune a threshold on
    result = evaluate("storysumm", [{"id": i, "score": v} for i, v in scores.items()], split="test", release=rel)
    test = result["splits"]["test"]
    assert test["auc"] == pytest.approx(sk.roc_auc_score([1, 1, 1, 0, 0], list(scores.values())))
    assert "balanced_accuracy" not in test and result["decision"]["threshold"] is None
    assert "--threshold" in result["decision"]["needs_threshold"] and "validation" in result["decision"]["needs_threshold"]
    path = write(tmp_path / "test.jsonl", [{"id": i, "score": v} for i, v in scores.items()])
    assert main(["evaluate", "storysumm", "--predictions", str(path), "--split", "test"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "threshold-free metrics only: binary metrics need --threshold T or predictions for every validation record" in out[0]
    assert out[1].endswith(f"AUC {100 * test['auc']:.1f}")
    write_config(rel, "timetravel_dsd", "timetravel", {"test": [plain_record("a", 1, [0, 1]), plain_record("b", 1, [1, 0])]})
    only = evaluate("timetravel_dsd", [{"id": "a", "score": [0.2, 0.9]}, {"id": "b", "score": [0.8, 0.1]}], release=rel)
    assert only["splits"]["test"]["auc"] == 1.0 and "no validation split" in only["decision"]["needs_threshold"]


def test_cli_prints_a_line_per_split_and_json(workspace, tmp_path, capsys):
    storysumm_like(workspace / "release")
    path = write(tmp_path / "p.jsonl", [{"id": f"s{i}", "label": i % 2} for i in range(1, 10)])
    assert main(["evaluate", "storysumm", "--predictions", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "storysumm (summary protocol; labels given; percentages, κ and τ as coefficients)"
    assert [line.split()[0] for line in out[1:]] == ["validation", "headline", "test", "headline", "full", "headline"]
    assert out[4].strip().startswith("headline balanced_accuracy 58.3 95% CI [") and out[4].endswith("(1000 resamples of 5 documents, seed 0)")
    assert main(["evaluate", "storysumm", "--predictions", str(path), "--json", "--split", "test"]) == 0
    assert list(json.loads(capsys.readouterr().out)["splits"]) == ["test"]


def test_summeval_reads_scores_in_one_polarity_on_every_entrance(workspace, tmp_path, capsys):
    """`evaluate summeval` and `metaeval summeval --scores` read the same file the same way (higher = less coherent):
    the same five τ, and the headline τ_intra with the same CI from the same seeded BOOT-BOTH resamples."""
    rel = workspace / "release"
    rows, preds = [], []
    for d in range(4):
        for s, system in enumerate(["M1", "M2", "M3"]):
            coherence = 1 + (d + 2 * s) % 5
            ratings = [{"annotator": f"e{k}", "annotator_type": "expert", "dimension": "coherence", "score": coherence} for k in range(3)]
            rows.append(record(f"d{d}/{system}", f"d{d}", ["A summary."], system=system, system_name=system, ratings=ratings))
            preds.append({"id": f"d{d}/{system}", "score": -coherence + 0.7 * ((d * s) % 3)})  # error polarity, imperfect
    write_config(rel, "summeval", "summeval", {"test": rows})
    path = write(tmp_path / "scores.jsonl", preds)
    result = evaluate("summeval", path, release=rel)
    assert result["protocol"] == "metaeval" and result["scores"].startswith("higher = less coherent")
    via_evaluate = result["splits"]["test"]
    assert main(["metaeval", "summeval", "--scores", str(path), "--json"]) == 0
    via_metaeval = json.loads(capsys.readouterr().out)
    for metric, entry in via_metaeval["metrics"].items():
        assert via_evaluate["metrics"][metric]["value"] == pytest.approx(entry["value"]), metric
    assert via_metaeval["metrics"]["tau_sum"]["value"] > 0.5  # low error scores = coherent: agreement, not its opposite
    headline = via_evaluate["headline"]
    assert headline["metric"] == "tau_intra" and headline["value"] == pytest.approx(via_metaeval["metrics"]["tau_intra"]["value"])
    assert headline["ci"] == pytest.approx(via_metaeval["metrics"]["tau_intra"]["ci95"])
    perfect = [{"id": p["id"], "score": -float(r["ratings"][0]["score"])} for p, r in zip(preds, rows)]
    assert evaluate("summeval", perfect, release=rel)["splits"]["test"]["metrics"]["tau_sum"]["value"] == pytest.approx(1.0)
