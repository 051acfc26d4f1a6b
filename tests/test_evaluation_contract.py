"""The evaluation contract: the vectorised bootstrap equals materialised resamples, `headline` and
`paired_difference` as the leaderboard and gate call them, no thresholded metric on its tuning split, and a new
protocol added with one declaration."""

import json

import numpy as np
import pytest

from cohbench.corpora import registry
from cohbench.cli import main
from cohbench.errors import RegistryError
from cohbench.evaluation import PROTOCOLS, Headline, PredictionsError, Protocol, bootstrap, declare, evaluate, headline, metrics, paired_difference
from cohbench.evaluation.declarations import auc_of, unit_lines
from cohbench.evaluation.detection import unit_metrics
from cohbench.release.layout import read_config

from release_fixture import record, write_config


def test_weighted_statistics_equal_the_metrics_of_materialised_resamples():
    rng = np.random.default_rng(5)
    documents = 30
    document = np.repeat(np.arange(documents), rng.integers(1, 6, documents))  # documents of 1-5 units
    gold = rng.integers(0, 2, len(document))
    scores = rng.integers(0, 7, len(document)) / 7  # ties within and across documents
    pred = (scores >= 0.5).astype(int)
    auc = bootstrap.auc_statistic(gold, scores, document)
    balanced = bootstrap.balanced_accuracy_statistic(gold, pred, document, documents)
    for _ in range(20):
        drawn = rng.integers(0, documents, documents)
        units = np.concatenate([np.flatnonzero(document == d) for d in drawn])
        counts = np.bincount(drawn, minlength=documents)[None] * 1.0
        assert auc(counts)[0] == pytest.approx(metrics.roc_auc(gold[units], scores[units]), abs=1e-12)
        assert balanced(counts)[0] == pytest.approx(metrics.balanced_accuracy(gold[units], pred[units]), abs=1e-12)


def test_resamples_are_seeded_chunked_and_shared_between_statistics():
    sums = lambda c: c.sum(1)  # noqa: E731 — every resample draws n items
    first = lambda c: c[:, 0]  # noqa: E731
    a, b = bootstrap.resample([sums, first], [7], samples=250, seed=3)  # 3 chunks of at most CHUNK
    assert a.shape == (250,) and np.all(a == 7)
    again, _ = bootstrap.resample([first, sums], [7], samples=250, seed=3)
    assert np.array_equal(again, b) and not np.array_equal(bootstrap.resample([first], [7], samples=250, seed=4)[0], b)


def storysumm_splits():
    """Validation where a threshold of 0.6 separates perfectly; test where that threshold is mediocre."""
    def summary(i, doc, label, score):
        return record(f"s{i}", doc, ["One.", "Two."], label=label, difficulty="easy" if label else None), score

    val = [summary(1, "a", 1, 0.9), summary(2, "a", 0, 0.2), summary(3, "b", 1, 0.7), summary(4, "b", 0, 0.5)]
    test = [summary(5, "c", 1, 0.8), summary(6, "c", 0, 0.65), summary(7, "d", 1, 0.3), summary(8, "d", 0, 0.1),
            summary(9, "e", 1, 0.55), summary(10, "e", 0, 0.62)]  # fmt: skip
    return {"validation": [r for r, _ in val], "test": [r for r, _ in test]}, [{"id": r["id"], "score": s} for r, s in val + test]


def test_a_threshold_is_never_applied_to_the_split_it_was_tuned_on(workspace):
    splits, scores = storysumm_splits()
    rel = write_config(workspace / "release", "storysumm", "storysumm", splits)
    # tuned on validation, the threshold (0.7) separates it perfectly: reported there, balanced accuracy would be 1.0
    gold_val = [r["label"] for r in splits["validation"]]
    assert metrics.balanced_accuracy(gold_val, [int(s["score"] >= 0.7) for s in scores[:4]]) == 1.0
    result = evaluate("storysumm", scores, release=rel)
    assert result["decision"]["threshold"] == 0.7 and result["decision"]["thresholded_metrics_on"] == ["test"]
    for flattered in ("validation", "full"):
        row = result["splits"][flattered]
        assert "balanced_accuracy" not in row and "cohen_kappa" not in row and row["headline"] is None
        assert row["auc"] is not None  # threshold-free metrics stay, and the row says why the others are absent
        assert row["threshold_withheld"] == "the threshold was tuned on validation: threshold-free metrics only"
    honest = result["splits"]["test"]
    assert honest["balanced_accuracy"] == pytest.approx((1 / 3 + 1) / 2)  # s5 detected; no faithful one flagged
    assert honest["headline"]["value"] == honest["balanced_accuracy"]
    only_val = evaluate("storysumm", scores, split="validation", release=rel)
    assert "balanced_accuracy" not in only_val["splits"]["validation"] and only_val["decision"]["thresholded_metrics_on"] == []
    with pytest.raises(PredictionsError, match="balanced_accuracy of storysumm on validation is not reported: its threshold was tuned on validation"):
        headline("storysumm", scores, splits=read_config(rel, "storysumm").splits, split="validation")
    given = evaluate("storysumm", scores, split="validation", threshold=0.4, release=rel)["splits"]["validation"]
    assert given["balanced_accuracy"] == pytest.approx(0.75)  # a given threshold is not tuned there: reported


def test_headline_and_paired_difference_as_the_leaderboard_calls_them(workspace):
    splits, scores = storysumm_splits()
    write_config(workspace / "release", "storysumm", "storysumm", splits)
    figure = headline("storysumm", scores, splits=splits, samples=500, seed=1)
    assert set(figure) == {"config", "protocol", "metric", "split", "value", "ci", "documents", "samples", "seed", "decision"}
    assert (figure["metric"], figure["split"], figure["documents"], figure["samples"]) == ("balanced_accuracy", "test", 3, 500)
    assert figure["decision"]["tuned_on"] == "validation" and figure["ci"][0] <= figure["value"] <= figure["ci"][1]
    assert figure == headline("storysumm", scores, splits=splits, samples=500, seed=1)  # seeded
    same = paired_difference("storysumm", scores, scores, splits=splits, samples=300)
    assert same["difference"] == 0.0 and same["ci"] == [0.0, 0.0]  # the same documents on both sides, every resample
    perfect = [{"id": s["id"], "label": r["label"]} for s, r in zip(scores, splits["validation"] + splits["test"])]
    better = paired_difference("storysumm", perfect, scores, splits=splits, samples=300)
    assert {"metric", "value_a", "value_b", "difference", "ci", "documents", "samples"} <= set(better)
    assert better["value_a"] == 1.0 and better["difference"] == pytest.approx(1.0 - figure["value"])
    assert better["ci"][0] >= 0  # never worse on any resample of the same documents


def test_evaluate_reports_the_headline_with_a_seeded_ci_on_every_split(workspace, tmp_path, capsys):
    rows = {split: [record(f"{split}{i}", f"{split}-d{i // 2}", ["a.", "b.", "c."], sentence_labels=[0, i % 2, 1 - i % 2]) for i in range(8)]
            for split in ("validation", "test")}  # fmt: skip
    write_config(workspace / "release", "timetravel_dsd", "timetravel", rows)
    preds = [{"id": r["id"], "score": [0.1, 0.4 + 0.1 * (i % 3), 0.5]} for rs in rows.values() for i, r in enumerate(rs)]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(path), "--json", "--bootstrap", "200", "--seed", "4"]) == 0
    result = json.loads(capsys.readouterr().out)
    for split, m in result["splits"].items():
        h = m["headline"]
        assert (h["metric"], h["value"], h["documents"], h["samples"], h["seed"]) == ("auc", m["auc"], 4, 200, 4), split
        assert h["ci"][0] <= h["value"] <= h["ci"][1]
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(path), "--bootstrap", "-1"]) == 1
    assert "bootstrap samples must be a whole number, 0 or more" in capsys.readouterr().err
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(path), "--seed", "-1"]) == 1
    assert capsys.readouterr().err.strip() == "cohbench: error: the bootstrap seed must be a whole number, 0 or more, not -1"


@pytest.fixture
def story_flag_config(monkeypatch):
    """A config of a new corpus naming a protocol that only its declaration (below) defines; removed afterwards."""
    registry.corpora()  # discover the built-in corpora first, so that a later discovery does not re-register them
    for table in (registry._CORPORA, registry._CONFIGS, PROTOCOLS):
        monkeypatch.setattr(table, "_entries", dict(table._entries))  # the test's entries go with its copy
    corpus = registry.lookup("storysumm")
    spec = registry.ConfigSpec("story_flags", "whole stories flagged as incoherent", protocol="story_flag")
    registry.register(registry.Corpus(**{**corpus.__dict__, "name": "story_flags", "configs": (spec,)}))
    return "story_flags"


def test_a_protocol_is_one_declaration(workspace, story_flag_config):
    # the whole of adding a protocol: one declaration, built from the blocks the built-in ones use
    declare(Protocol(
        name="story_flag", unit="summary", description="is the whole story incoherent (one score per story)",
        metrics=unit_metrics("summary"), lines=unit_lines,
        headline=Headline("auc", ("auc",)), headline_statistic=auc_of("summary"),
    ))  # fmt: skip
    stories = {split: [record(f"{split}{i}", f"{split}{i}", ["A.", "B."], label=i % 2) for i in range(6)] for split in ("validation", "test")}
    rel = write_config(workspace / "release", story_flag_config, "story_flags", stories)
    scores = [{"id": r["id"], "score": 0.2 + 0.5 * r["label"] + 0.01 * i} for rows in stories.values() for i, r in enumerate(rows)]
    result = evaluate(story_flag_config, scores, release=rel, samples=100)
    assert (result["protocol"], result["unit"]) == ("story_flag", "summary")
    assert result["decision"] == "no threshold: the story_flag protocol's metrics are threshold-free"
    test = result["splits"]["test"]
    assert test["auc"] == 1.0 and test["headline"]["value"] == 1.0 and test["headline"]["documents"] == 6
    assert headline(story_flag_config, scores, splits=read_config(rel, story_flag_config).splits, samples=100)["value"] == 1.0
    with pytest.raises(PredictionsError, match=r"score must be one value for this protocol, found a list"):
        evaluate(story_flag_config, [dict(s, score=[s["score"]]) for s in scores], release=rel)
    with pytest.raises(PredictionsError, match=r'"types" is only scored by the typed_sentences protocol, not story_flag'):
        evaluate(story_flag_config, [dict(s, types=[[]]) for s in scores], release=rel)
    with pytest.raises(RegistryError, match="protocol 'story_flag' is registered twice"):
        declare(PROTOCOLS["story_flag"])
