"""`cohbench train` + `cohbench gate` on a tiny discordant-sentence release built so that dissimilarity alone cannot
find the error (each story also holds two off-topic remarks, about the ocean and the mountains, labelled coherent): the trained baseline learns what
the untrained reference scorers cannot, is seeded, and passes; shuffled training labels fail; and the best
reference scorer's predictions, put in the baseline's place, fail the margin the gate asks over the references
(the lower end of a paired-bootstrap CI must clear it: an equal heuristic fails even a zero margin). A release whose
labels were shuffled (every split: the subtly broken release the gate exists to stop) fails, and its card claims no
margin. Every reference scorer's predictions ship beside the baseline's."""

import json
import re
import shutil

import numpy as np
import pytest

from cohbench.baseline import BaselineError, train
from cohbench.baseline.gate import check
from cohbench.cli import main
from cohbench.release.index import write_index
from cohbench.release.layout import built_configs
from cohbench.release.versions import provenance

from release_fixture import record, write_config

NAMES = ["Anna", "Ben", "Carla", "Dev", "Ema", "Farid", "Gus", "Hana"]
CHORES = ["baked bread", "watered the tomatoes", "fixed the fence", "swept the porch", "fed the chickens", "painted the shed"]
PLACES = ["in the kitchen", "behind the barn", "by the garden gate", "near the old well", "after breakfast", "before the rain"]
OCEAN = ["The submarine dived {n} metres below the polar ice.", "A blue whale surfaced {n} miles off the reef.",
         "The trawler hauled {n} tonnes of cod from the deep.", "Coral spawned on the atoll for {n} nights."]  # fmt: skip
PEAKS = ["Climbers reached the summit after {n} hours on the glacier.", "An avalanche buried the pass under {n} feet of snow.",
         "The volcano erupted for {n} days in the highlands.", "A rope team crossed {n} crevasses below the ridge."]  # fmt: skip
SPACE = ["The probe sent back {n} images of a frozen moon.", "A rocket engine fired for {n} seconds in orbit.",
         "The telescope found {n} new exoplanets near a red dwarf.", "Astronauts docked with the station after {n} hours."]  # fmt: skip

PARAMS = {
    "train_configs": ["timetravel_dsd"], "max_train_records": None, "max_sentences": 16, "d_model": 32, "layers": 1, "heads": 2,
    "dropout": 0.0, "learning_rate": 0.003, "weight_decay": 0.0, "batch_size": 16, "epochs": 6, "seed": 0,
}  # fmt: skip
MARGINS = {"timetravel_dsd": {"test.auc": 0.1}}


def stories(rng, count, prefix, shuffle_labels=False):
    out = []
    for i in range(count):
        name = NAMES[i % len(NAMES)]
        sentences = [f"{name} {rng.choice(CHORES)} {rng.choice(PLACES)}." for _ in range(5)]
        ocean, peaks, position = (int(p) for p in rng.permutation(5)[:3])
        for at, remarks in ((ocean, OCEAN), (peaks, PEAKS)):
            sentences[at] = str(rng.choice(remarks)).format(n=int(rng.integers(2, 90)))
        sentences[position] = str(rng.choice(SPACE)).format(n=int(rng.integers(2, 90)))
        labels = [0] * 5
        labels[int(rng.integers(0, 5)) if shuffle_labels else position] = 1
        out.append(record(f"{prefix}{i}", f"{prefix}{i}", sentences, sentence_labels=labels))
    return out


def toy_release(root, shuffle_labels=False):
    rng = np.random.default_rng(7)
    splits = {split: stories(rng, n, split[:2], shuffle_labels)
              for split, n in (("train", 80), ("validation", 20), ("test", 30))}
    return write_config(root, "timetravel_dsd", "timetravel", splits)


@pytest.mark.slow
def test_the_baseline_beats_the_reference_scorers_is_seeded_and_passes_the_gate(workspace):
    rel = toy_release(workspace / "release")
    metrics = train(release=rel, params=PARAMS, progress=False)
    test = metrics["scores"]["timetravel_dsd"]["splits"]["test"]
    references = {name: r["splits"]["test"]["auc"] for name, r in metrics["references"]["timetravel_dsd"].items()}
    assert set(references) == {"position_prior", "tfidf_dissimilarity", "embedding_dissimilarity", "embedding_closest_dissimilarity",
                               "novelty_count", "entity_cue"}
    assert test["auc"] > 0.95 and test["f1"] > 0.6, test
    assert test["auc"] > max(references.values()) + 0.1, references  # the other remarks fool dissimilarity
    assert metrics["trained_on"] == {"timetravel_dsd": 80} and metrics["scores"]["timetravel_dsd"]["decision"]["tuned_on"] == "validation"
    lines = (rel / "baseline/predictions/baseline/timetravel_dsd.jsonl").read_text().splitlines()
    assert len(lines) == 50 and len(json.loads(lines[0])["score"]) == 5
    for name in references:  # the reference scorers' predictions ship too, so a leaderboard need not re-run them
        assert len((rel / f"baseline/predictions/{name}/timetravel_dsd.jsonl").read_text().splitlines()) == 50
    margin = metrics["margins"]["timetravel_dsd"]
    assert margin["best_reference"] == max(references, key=references.get) and margin["ci"][0] > 0.1, margin
    card = (rel / "baseline/metrics.md").read_text()
    assert "| `timetravel_dsd` | 150 | 100.0 |" in card and f"over {margin['best_reference']}" in card
    assert re.search(r"\| \+\d+\.\d \[\+\d+\.\d, \+\d+\.\d\] over \w+ \|", card), card  # the margin with its CI
    assert "seconds" not in json.dumps(metrics)  # timings stay out of the release
    assert train(release=rel, params=PARAMS, progress=False)["scores"] == metrics["scores"]
    gate = check(release=rel, floors={"timetravel_dsd": {"test.auc": 0.8, "test.f1": 0.5}, "not_built": {"test.auc": 0.9}}, margins=MARGINS)
    assert gate["ok"], gate["lines"]
    assert [c["status"] for c in gate["checks"]] == ["skipped", "passed", "passed", "passed"]
    assert gate["checks"][-1]["ci"][0] > 0.1 and "paired CI over 30 documents (1000 resamples)" in gate["lines"][-2]
    shipped = json.loads((rel / "baseline/gate.json").read_text())
    assert shipped["ok"] and shipped["data"] == provenance(rel, {"timetravel_dsd": built_configs(rel)["timetravel_dsd"]})  # names its data
    write_index(rel)
    assert "## Baseline (machine-written)" in (rel / "README.md").read_text()


@pytest.mark.slow
def test_a_release_with_shuffled_labels_fails_the_gate(workspace, capsys, monkeypatch):
    rel = toy_release(workspace / "release", shuffle_labels=True)
    metrics = train(release=rel, params=PARAMS, progress=False)
    assert metrics["scores"]["timetravel_dsd"]["splits"]["test"]["auc"] < 0.8
    gate = check(release=rel, floors={"timetravel_dsd": {"test.auc": 0.8}}, margins=MARGINS)
    assert not gate["ok"] and re.fullmatch(r"FAILED  timetravel_dsd test\.auc = [1-7]?\d\.\d \(floor 80\.0\)", gate["lines"][0]), gate["lines"]
    assert gate["checks"][1]["status"] == "FAILED"  # and it does not beat the reference scorers either
    assert "| none: " in (rel / "baseline/metrics.md").read_text()  # the card claims no margin
    monkeypatch.setattr("cohbench.baseline.gate.baseline_params", lambda: {"floors": {"timetravel_dsd": {"test.auc": 0.8}}})
    assert main(["gate"]) == 1
    out = capsys.readouterr().out
    assert "gate FAILED: 0 of 2 checks cleared or skipped" in out
    assert "FAILED  timetravel_dsd: labelled, with a test split, but neither a margin" in out  # no silent omission


@pytest.mark.slow
def test_a_scored_config_without_a_margin_is_listed_as_not_validated_with_its_reason(workspace):
    rel = toy_release(workspace / "release")
    train(release=rel, params=PARAMS, progress=False)
    gate = check(release=rel, floors={}, margins={}, not_validated={"timetravel_dsd": "too few test documents"})
    assert gate["ok"] and [c["status"] for c in gate["checks"]] == ["not validated"], gate["lines"]
    assert gate["lines"] == ["not validated timetravel_dsd: too few test documents",
                             "gate passed: 0 of 0 checks cleared or skipped; not validated: timetravel_dsd"]
    assert not check(release=rel, floors={}, margins={}, not_validated={})["ok"]


@pytest.mark.slow
def test_training_data_without_a_test_split_named_as_not_validated_is_listed_with_its_figure(workspace):
    rel = toy_release(workspace / "release")
    write_config(rel, "snac_synthetic", "fairytaleqa", {"train": stories(np.random.default_rng(1), 12, "sy")})
    train(release=rel, params=PARAMS, progress=False)
    why = {"snac_synthetic": "teaches SNaC 68.5, below entity_cue's 70.2", "rocstories_dsd": "not built here"}
    gate = check(release=rel, floors={}, margins=MARGINS, not_validated=why)
    assert gate["ok"] and "not validated snac_synthetic: teaches SNaC 68.5, below entity_cue's 70.2" in gate["lines"]
    assert gate["lines"][-1].endswith("; not validated: snac_synthetic")  # a config the release lacks is not listed


@pytest.mark.slow
def test_the_best_reference_scorer_in_the_baselines_place_fails_the_margin(workspace):
    rel = toy_release(workspace / "release")
    metrics = train(release=rel, params=PARAMS, progress=False)
    references = metrics["references"]["timetravel_dsd"]
    best = max(references, key=lambda name: references[name]["splits"]["test"]["auc"])
    predictions = rel / "baseline/predictions"
    shutil.copy(predictions / best / "timetravel_dsd.jsonl", predictions / "baseline/timetravel_dsd.jsonl")
    gate = check(release=rel, floors={}, margins={"timetravel_dsd": {"test.auc": 0.0}})
    assert not gate["ok"]
    (margin,) = gate["checks"]
    assert margin["status"] == "FAILED" and margin["value"] == 0.0 and margin["ci"] == [0.0, 0.0], margin
    assert f"best reference {best}" in margin["why"]
    wrong = check(release=rel, floors={}, margins={"timetravel_dsd": {"test.f1": 0.0}})["checks"][0]
    assert wrong["status"] == "FAILED" and "measured on the headline, test.auc" in wrong["why"]


def test_training_on_a_config_without_sentence_or_gap_labels_names_the_configs_it_can_train_on(workspace):
    rel = toy_release(workspace / "release")
    write_config(rel, "storysumm", "storysumm", {"test": [record("s1", "d1", ["One.", "Two."], label=1)]})
    with pytest.raises(BaselineError, match=r"storysumm has no sentence or gap labels to train on; configs the "
                                            r"baseline can train on: timetravel_dsd"):
        train(release=rel, params=PARAMS | {"train_configs": ["storysumm"]}, progress=False)


def test_a_training_config_that_is_not_built_is_refused_naming_it(workspace):
    rel = toy_release(workspace / "release")
    with pytest.raises(BaselineError, match=r"^fairytale_dsd \(baseline.train_configs or sentence_features\) is not built"):
        train(release=rel, params=PARAMS | {"train_configs": ["timetravel_dsd", "fairytale_dsd"]}, progress=False)
    with pytest.raises(BaselineError, match=r"^timetravel_msd .* is not built"):
        train(release=rel, params=PARAMS | {"sentence_features": {"train_configs": ["timetravel_msd"]}}, progress=False)


@pytest.mark.slow
def test_the_whole_metrics_file_is_the_same_bytes_on_another_blas_path(workspace):
    """numpy's BLAS on one thread with its generic kernels (OPENBLAS_CORETYPE=Prescott), against its defaults: the
    training is pinned (numerics.FOR_TRAINING) and every sum behind a reported figure is exact, so baseline/metrics.json
    and the gate's file come out byte for byte the same."""
    import os
    import subprocess
    import sys

    rel = toy_release(workspace / "release")
    run = ("import json, sys; from pathlib import Path; from cohbench.baseline import train; from cohbench.baseline.gate import check; "
           f"from test_baseline_gate import PARAMS, MARGINS; rel = Path({str(rel)!r}); train(release=rel, params=PARAMS, progress=False); "
           "check(release=rel, floors={'timetravel_dsd': {'test.auc': 0.8}}, margins=MARGINS)")
    written = []
    for path in ({}, {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Prescott"}):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **path}
        done = subprocess.run([sys.executable, "-c", run], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        written.append({name: (rel / "baseline" / name).read_bytes() for name in ("metrics.json", "gate.json", "metrics.md")})
        shutil.rmtree(rel / "baseline")
    assert written[0] == written[1]
