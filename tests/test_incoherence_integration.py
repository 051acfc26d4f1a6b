"""Incoherence configs built from the real mirror: sizes, exact label rates, no story across splits, and a
byte-identical rebuild. DSD and FairytaleQA run on subsets (params below) to keep the suite fast."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import yaml

from cohbench import settings
from cohbench.registry import options
from cohbench.builders import fairytaleqa, storycloze, synthetic_coherence, timetravel
pytestmark = pytest.mark.integration


@pytest.fixture
def paths(mirror):
    """A corpus's inputs straight from the mirror (byte-exact upstream files; fetch's checks are tested elsewhere),
    so that no test copies FairytaleQA's 279 files into its private cache."""
    return lambda corpus: {source.name: mirror / source.relpath for source in corpus.sources}


@pytest.fixture
def params_with(tmp_path, monkeypatch, mirror):
    """Run with the project's params.yaml, some `incoherence` entries replaced (and the project's catalog)."""

    def apply(**sections):
        params = settings.params()
        for section, values in sections.items():
            params["incoherence"][section] = {**params["incoherence"][section], **values}
        root = tmp_path / "root"
        root.mkdir(exist_ok=True)
        (root / "params.yaml").write_text(yaml.safe_dump(params))
        (root / "catalog").symlink_to(settings.catalog_dir()) if not (root / "catalog").exists() else None
        monkeypatch.setenv("COHBENCH_ROOT", str(root))
        return params["incoherence"]

    return apply


def _no_story_in_two_splits(records):
    splits = {}
    for r in records:
        splits.setdefault(r["doc_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in splits.values())


def test_timetravel_msd_full_sizes_and_exact_20_percent(params_with, paths):
    params_with()
    parsed = timetravel.parse(paths(timetravel.CORPUS), "timetravel_msd", options("timetravel_msd"))
    assert parsed.upstream_records == 3742 and parsed.dropped == {"ending_not_three_sentences": 17}
    sizes = {split: v["records"] for split, v in parsed.notes["by_split"].items()}
    assert sizes == {"train": 1554, "validation": 300, "test": 1871}
    assert all(v["missing_rate"] == 0.2 for v in parsed.notes["by_split"].values())
    assert all(len(r["sentences"]) == 4 and r["gap_labels"].count(1) == 1 for r in parsed.records)
    _no_story_in_two_splits(parsed.records)


def test_timetravel_dsd_subset_draws_within_split_at_exactly_20_percent(params_with, paths):
    tau = params_with(timetravel={"max_stories_per_split": 25})["tau"]
    parsed = timetravel.parse(paths(timetravel.CORPUS), "timetravel_dsd", options("timetravel_dsd"))
    split_of = {r["doc_id"]: r["split"] for r in parsed.records}
    assert len(parsed.records) + parsed.dropped.get("no_confounder_below_tau", 0) == 75
    for r in parsed.records:
        donor = r["corruption"]["inserted_ids"][0].split("#s")[0]
        assert donor != r["doc_id"] and split_of[donor] == r["split"]
        assert r["sentence_labels"].count(1) == 1 and len(r["sentences"]) == 5
        assert r["corruption"]["similarities"][0] < tau
    assert all(v["discordant_rate"] == 0.2 for v in parsed.notes["by_split"].values())
    assert parsed.notes["accepted_confounder_similarity"]["q100"] < tau
    _no_story_in_two_splits(parsed.records)


def test_storycloze_full_and_its_stories_located_in_timetravel(params_with, paths):
    params_with()
    parsed = storycloze.parse(paths(storycloze.CORPUS), "storycloze_dsd", options("storycloze_dsd"))
    assert parsed.notes["stories"] == 3742
    where = parsed.notes["stories_by_timetravel_split"]
    # 17 stories dropped from TimeTravel (unsplittable endings) + 1 Story Cloze id TimeTravel lacks
    assert where == {"train": 1554, "validation": 300, "test": 1870, "not in TimeTravel configs": 18}
    # the stories TimeTravel trains or tunes on are left out: 1,870 + 18 stories remain, two records each
    assert parsed.dropped == {"story_in_timetravel_train": 2 * 1554, "story_in_timetravel_validation": 2 * 300}
    assert len(parsed.records) == 3776 and sum(r["label"] for r in parsed.records) == 1888


def test_fairytale_subset_keeps_story_splits_and_exact_25_percent(params_with, paths):
    params_with(fairytale={"max_stories_per_split": 1})
    inputs = paths(fairytaleqa.CORPUS)
    msd = fairytaleqa.parse(inputs, "fairytale_msd", options("fairytale_msd"))
    assert {r["split"] for r in msd.records} == {"train", "validation", "test"}
    assert all(v["missing_rate"] == 0.25 for v in msd.notes["by_split"].values())
    assert all(len(r["sentences"]) == 6 and r["gap_labels"].count(1) == 2 for r in msd.records)
    _no_story_in_two_splits(msd.records)
    dsd = fairytaleqa.parse(inputs, "fairytale_dsd", options("fairytale_dsd"))
    assert all(v["discordant_rate"] == 0.25 for v in dsd.notes["by_split"].values())
    _no_story_in_two_splits(dsd.records)


def test_synthetic_coherence_subset_is_balanced_and_typed(params_with, paths):
    params_with(fairytale={"max_stories_per_split": 1}, timetravel={"max_stories_per_split": 12},
                synthetic_coherence={"max_narratives_per_split": {"train": 6, "validation": 6, "test": 6}})
    parsed = synthetic_coherence.parse(paths(synthetic_coherence.CORPUS), "synthetic_coherence", options("synthetic_coherence"))
    for split, counts in parsed.notes["examples_by_split_and_label"].items():
        assert counts["negative"] == counts["positive"] > 0
    by_id = {r["id"]: r for r in parsed.records}
    for r in parsed.records:
        assert r["sentence_labels"][:-1] == [-1] * (len(r["sentences"]) - 1) and r["sentence_labels"][-1] == r["label"]
        if r["label"] == 1:
            positive = by_id[r["id"] + ":coherent"]
            assert positive["doc_id"] == r["doc_id"] and positive["split"] == r["split"] and len(r["spans"]) == 1
    assert set(parsed.notes["targeted_types"]) <= {"CharE", "SceneE"}
    _no_story_in_two_splits(parsed.records)


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
