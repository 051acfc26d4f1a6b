"""TimeTravel / Story Cloze builders on tiny fixtures in the upstream formats: splits, labels, drops, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cohbench import settings
from cohbench.registry import options
from cohbench.builders import storycloze, timetravel
from cohbench.errors import ParseError

FIX = Path(__file__).parent / "fixtures"
TT = {"timetravel_test": FIX / "timetravel/test_data.json", "timetravel_dev": FIX / "timetravel/dev_data.json"}
SC = {**TT, "storycloze_val": FIX / "storycloze/val.tsv", "storycloze_test": FIX / "storycloze/test.tsv"}


@pytest.fixture
def small_params(tmp_path, monkeypatch):
    """The project's params.yaml with the TimeTravel dev carve shrunk to the fixture's size."""
    params = settings.params()
    params["incoherence"]["timetravel"] = {"k": 1, "dev_stories": 1, "max_stories_per_split": None}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.setenv("COHBENCH_ROOT", str(tmp_path))
    return params


def test_timetravel_msd_splits_by_file_drops_unsplittable_endings_and_removes_one_inner_sentence(small_params):
    parsed = timetravel.parse(TT, "timetravel_msd", options("timetravel_msd"))
    assert parsed.upstream_records == 7 and parsed.dropped == {"ending_not_three_sentences": 1}
    by_split = {}
    for r in parsed.records:
        by_split.setdefault(r["split"], set()).add(r["doc_id"])
        assert len(r["sentences"]) == 4 and sum(r["gap_labels"]) == 1 and len(r["gap_labels"]) == 3
        assert r["corruption"]["source_id"] == r["doc_id"] and r["id"] == f"{r['doc_id']}:remove_sentences"
    assert by_split == {"test": {"t1", "t2", "t3"}, "validation": by_split["validation"], "train": by_split["train"]}
    assert len(by_split["validation"]) == 1 and by_split["validation"] | by_split["train"] == {"d1", "d2", "d4"}
    assert parsed.notes["by_split"]["test"]["missing_rate"] == 0.2


def test_timetravel_dsd_replaces_one_sentence_from_the_same_split_only(small_params):
    parsed = timetravel.parse(TT, "timetravel_dsd", options("timetravel_dsd"))
    made = sorted(r["split"] for r in parsed.records)
    assert made == ["test"] * 3 + ["train"] * 2  # the one validation story has no donor in its own split
    assert parsed.dropped == {"ending_not_three_sentences": 1, "no_confounder_below_tau": 1}
    split_of = {r["doc_id"]: r["split"] for r in parsed.records}
    for r in parsed.records:
        (inserted,) = r["corruption"]["inserted_ids"]
        donor = inserted.split("#s")[0]
        assert donor != r["doc_id"] and split_of[donor] == r["split"]
        assert sum(r["sentence_labels"]) == 1 and len(r["sentences"]) == 5


def test_truncated_timetravel_file_is_a_clear_error():
    with pytest.raises(ParseError, match="truncated_dev_data.json line 2 is not valid JSON"):
        timetravel.load_stories({**TT, "timetravel_dev": FIX / "timetravel/truncated_dev_data.json"})


def test_storycloze_pairs_wrong_and_right_endings_under_the_timetravel_story_id(small_params):
    parsed = storycloze.parse(SC, "storycloze_dsd", options("storycloze_dsd"))
    wrong = {r["doc_id"]: r for r in parsed.records if r["id"].endswith(":wrong_ending")}
    right = {r["doc_id"]: r for r in parsed.records if r["id"].endswith(":right_ending")}
    assert wrong["t1"]["sentences"][4] == "Julie hates soccer." and wrong["t1"]["sentence_labels"] == [0, 0, 0, 0, 1]
    assert right["t1"]["label"] == 0 and right["t1"]["sentence_labels"] == [0] * 5
    assert wrong["zz"]["label"] == 1 and {r["split"] for r in parsed.records} == {"test"}
    assert parsed.notes["stories_by_timetravel_split"]["test"] == 1
    assert parsed.notes["stories_by_timetravel_split"]["not in TimeTravel configs"] == 1
    assert parsed.notes["first_four_sentences_identical_to_timetravel"] == 2
    assert storycloze.CORPUS.config("storycloze_dsd").research_only


def test_storycloze_drops_stories_that_timetravel_trains_or_tunes_on(small_params):
    parsed = storycloze.parse(SC, "storycloze_dsd", options("storycloze_dsd"))
    # d1 is a TimeTravel dev-file story, so it sits in TimeTravel train or dev: a test-only config must not hold it.
    assert "d1" not in {r["doc_id"] for r in parsed.records}
    assert parsed.upstream_records == 6 and len(parsed.records) == 4
    assert sum(parsed.dropped.values()) == 2 and set(parsed.dropped) <= {"story_in_timetravel_train", "story_in_timetravel_validation"}


def test_storycloze_rejects_a_bad_answer_column(small_params):
    with pytest.raises(ParseError, match="bad_answer.tsv line 2"):
        storycloze.parse({**SC, "storycloze_test": FIX / "storycloze/bad_answer.tsv"}, "storycloze_dsd", options("storycloze_dsd"))
