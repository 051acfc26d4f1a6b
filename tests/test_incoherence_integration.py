"""Incoherence configs built from the real mirror: exact label rates, no story across splits, and a byte-identical
rebuild. FairytaleQA and synthetic_coherence run on subsets (params below) to keep the suite fast; TimeTravel and Story
Cloze are checked in their own modules."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from corpus_case import assert_no_story_in_two_splits

from cohbench.corpora import fairytaleqa, synthetic_coherence
from cohbench.corpora.registry import spec

pytestmark = pytest.mark.integration


def test_fairytale_subset_keeps_story_splits_and_exact_25_percent(params_with, paths):
    params_with(fairytale={"max_stories_per_split": 1})
    inputs = paths(fairytaleqa.CORPUS)
    msd = fairytaleqa.parse(inputs, "fairytale_msd", spec("fairytale_msd").generator_options())
    assert {r["split"] for r in msd.records} == {"train", "validation", "test"}
    assert all(v["missing_rate"] == 0.25 for v in msd.notes["by_split"].values())
    assert all(len(r["sentences"]) == 6 and r["gap_labels"].count(1) == 2 for r in msd.records)
    assert_no_story_in_two_splits(msd.records)
    dsd = fairytaleqa.parse(inputs, "fairytale_dsd", spec("fairytale_dsd").generator_options())
    assert all(v["discordant_rate"] == 0.25 for v in dsd.notes["by_split"].values())
    assert_no_story_in_two_splits(dsd.records)


def test_synthetic_coherence_subset_is_balanced_and_typed(params_with, paths):
    params_with(fairytale={"max_stories_per_split": 1}, timetravel={"max_stories_per_split": 12},
                synthetic_coherence={"max_narratives_per_split": {"train": 6, "validation": 6, "test": 6}})
    parsed = synthetic_coherence.parse(paths(synthetic_coherence.CORPUS), "synthetic_coherence", spec("synthetic_coherence").generator_options())
    for split, counts in parsed.notes["examples_by_split_and_label"].items():
        assert counts["negative"] == counts["positive"] > 0
    by_id = {r["id"]: r for r in parsed.records}
    for r in parsed.records:
        assert r["sentence_labels"][:-1] == [-1] * (len(r["sentences"]) - 1) and r["sentence_labels"][-1] == r["label"]
        if r["label"] == 1:
            positive = by_id[r["id"] + ":coherent"]
            assert positive["doc_id"] == r["doc_id"] and positive["split"] == r["split"] and len(r["spans"]) == 1
    assert set(parsed.notes["targeted_types"]) <= {"CharE", "SceneE"}
    assert_no_story_in_two_splits(parsed.records)


def test_rebuilding_a_config_is_byte_identical(params_with, workspace):
    from cohbench.release.build import build

    params_with(timetravel={"max_stories_per_split": 15})
    first = build("timetravel_dsd", progress=False)
    second = build("timetravel_dsd", progress=False)
    assert {s: f["sha256"] for s, f in first["files"].items()} == {s: f["sha256"] for s, f in second["files"].items()}
    table = pq.read_table(workspace / "release/data/timetravel_dsd/test.parquet")
    assert table.num_rows == 15


def test_the_shipped_bertscore_baseline_was_drawn_from_the_sentences_calibrate_uses_today(mirror, workspace):
    from cohbench.calibration import calibration_sentences
    from cohbench.corruptions.bertscore import load_baseline

    shipped = load_baseline()
    sources = calibration_sentences()
    # remake it with `cohbench calibrate` when params.yaml changes which sentences TimeTravel's train split holds
    assert shipped["sentences_from"] == {name: len(group) for name, group in sources.items()}
    assert (shipped["pairs"], shipped["seed"]) == (5000, 13)
