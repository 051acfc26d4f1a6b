"""TimeTravel (`timetravel_msd`, `timetravel_dsd`): tiny fixtures in the upstream formats (splits, labels, drops,
errors), and every story of the pinned files (integration): the declared splits, exact rates, no story in two splits."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_case import CorpusCase, parse_config_from_mirror, assert_no_story_in_two_splits, counts_of, expected_splits

from cohbench.corpora import timetravel
from cohbench.errors import ParseError
from cohbench.corpora.registry import spec

FIX = Path(__file__).parent / "fixtures"
TT = {"timetravel_test": FIX / "timetravel/test_data.json", "timetravel_dev": FIX / "timetravel/dev_data.json"}


@pytest.fixture(scope="module")
def msd_from_mirror():
    """`timetravel_msd` parsed from the pinned files with the shipped params.yaml, once for the module."""
    return parse_config_from_mirror("timetravel_msd")


@pytest.fixture(scope="module")
def from_mirror(msd_from_mirror):
    return "timetravel_msd", counts_of(msd_from_mirror.records)


class TestTimeTravel(CorpusCase):
    CORPUS = "timetravel"


def test_msd_splits_by_file_drops_unsplittable_endings_and_removes_one_inner_sentence(small_params):
    parsed = timetravel.parse(TT, "timetravel_msd", spec("timetravel_msd").generator_options())
    assert parsed.upstream_records == 7 and parsed.dropped == {"ending_not_three_sentences": 1}
    by_split = {}
    for r in parsed.records:
        by_split.setdefault(r["split"], set()).add(r["doc_id"])
        assert len(r["sentences"]) == 4 and sum(r["gap_labels"]) == 1 and len(r["gap_labels"]) == 3
        assert r["corruption"]["source_id"] == r["doc_id"] and r["id"] == f"{r['doc_id']}:remove_sentences"
    assert by_split == {"test": {"t1", "t2", "t3"}, "validation": by_split["validation"], "train": by_split["train"]}
    assert len(by_split["validation"]) == 1 and by_split["validation"] | by_split["train"] == {"d1", "d2", "d4"}
    assert parsed.notes["by_split"]["test"]["missing_rate"] == 0.2


def test_dsd_replaces_one_sentence_from_the_same_split_only(small_params):
    parsed = timetravel.parse(TT, "timetravel_dsd", spec("timetravel_dsd").generator_options())
    made = sorted(r["split"] for r in parsed.records)
    assert made == ["test"] * 3 + ["train"] * 2  # the one validation story has no donor in its own split
    assert parsed.dropped == {"ending_not_three_sentences": 1, "no_confounder_below_tau": 1}
    split_of = {r["doc_id"]: r["split"] for r in parsed.records}
    for r in parsed.records:
        (inserted,) = r["corruption"]["inserted_ids"]
        donor = inserted.split("#s")[0]
        assert donor != r["doc_id"] and split_of[donor] == r["split"]
        assert sum(r["sentence_labels"]) == 1 and len(r["sentences"]) == 5


def test_truncated_file_is_a_clear_error():
    with pytest.raises(ParseError, match="truncated_dev_data.json line 2 is not valid JSON"):
        timetravel.load_stories({**TT, "timetravel_dev": FIX / "timetravel/truncated_dev_data.json"})


@pytest.mark.integration
def test_msd_of_every_story_drops_unsplittable_endings_at_exactly_20_percent(msd_from_mirror):
    parsed = msd_from_mirror
    assert parsed.upstream_records == 3742 and parsed.dropped == {"ending_not_three_sentences": 17}
    assert {split: v["records"] for split, v in parsed.notes["by_split"].items()} == expected_splits("timetravel_msd")
    assert all(v["missing_rate"] == 0.2 for v in parsed.notes["by_split"].values())
    assert all(len(r["sentences"]) == 4 and r["gap_labels"].count(1) == 1 for r in parsed.records)
    assert_no_story_in_two_splits(parsed.records)


@pytest.mark.integration
def test_dsd_subset_draws_within_split_at_exactly_20_percent(params_with, paths):
    tau = params_with(timetravel={"max_stories_per_split": 25})["tau"]
    parsed = timetravel.parse(paths(timetravel.CORPUS), "timetravel_dsd", spec("timetravel_dsd").generator_options())
    split_of = {r["doc_id"]: r["split"] for r in parsed.records}
    assert len(parsed.records) + parsed.dropped.get("no_confounder_below_tau", 0) == 75
    for r in parsed.records:
        donor = r["corruption"]["inserted_ids"][0].split("#s")[0]
        assert donor != r["doc_id"] and split_of[donor] == r["split"]
        assert r["sentence_labels"].count(1) == 1 and len(r["sentences"]) == 5
        assert r["corruption"]["similarities"][0] < tau
    assert all(v["discordant_rate"] == 0.2 for v in parsed.notes["by_split"].values())
    assert parsed.notes["accepted_confounder_similarity"]["q100"] < tau
    assert_no_story_in_two_splits(parsed.records)
