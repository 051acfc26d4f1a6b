"""The Story Cloze Test (`storycloze_dsd`, test only): tiny fixtures in the upstream format (wrong and right endings
under the TimeTravel story id, stories TimeTravel trains on dropped, errors), and the pinned files (integration)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_case import CorpusCase, expected_splits, mirror_parse_fixtures

from cohbench.corpora import storycloze
from cohbench.errors import ParseError
from cohbench.corpora.registry import spec

FIX = Path(__file__).parent / "fixtures"
TT = {"timetravel_test": FIX / "timetravel/test_data.json", "timetravel_dev": FIX / "timetravel/dev_data.json"}
SC = {**TT, "storycloze_val": FIX / "storycloze/val.tsv", "storycloze_test": FIX / "storycloze/test.tsv"}


parsed_from_mirror, from_mirror = mirror_parse_fixtures("storycloze_dsd")


def _story(story: str, ending: str, first: str, fifth: str) -> dict:
    """A row of the Story Cloze TSVs: its first sentence and the fifth sentence this record ends with, the quiz
    ending that AnswerRightEnding names (`right_ending`, label 0) or the other one (`wrong_ending`, label 1)."""
    wrong = int(ending == "wrong_ending")
    return {"id": f"{story}:{ending}", "doc_id": story, "label": wrong, "sentence_labels": [0, 0, 0, 0, wrong],
            "sentences[0]": first, "sentences[4]": fifth}


class TestStoryCloze(CorpusCase):
    CORPUS = "storycloze"
    FIXTURE_PATHS = SC
    SPOT_CHECKS = {"storycloze_dsd": {"test": {
        0: _story("00115125-5ba4-4d2d-b86c-99343afa7c59", "right_ending", "Kelly was super excited for the new drawing at work.",
                  "She was happy she won."),
        9: _story("00c4e875-144a-4c40-b83a-08a7e9926253", "wrong_ending", "Yao was an enthusiastic gardener.",
                  "The judges ate Yao's vegetables without rewarding him."),
        -1: _story("ffe078d1-6744-497d-bf45-e5df0bdfee66", "wrong_ending", "Sarah was at home when her power was shut off.",
                   "Sarah didn't pay her bill, so her power was shut off."),
    }}}


def test_pairs_wrong_and_right_endings_under_the_timetravel_story_id(small_params):
    parsed = storycloze.parse(SC, "storycloze_dsd", spec("storycloze_dsd").generator_options())
    wrong = {r["doc_id"]: r for r in parsed.records if r["id"].endswith(":wrong_ending")}
    right = {r["doc_id"]: r for r in parsed.records if r["id"].endswith(":right_ending")}
    assert wrong["t1"]["sentences"][4] == "Julie hates soccer." and wrong["t1"]["sentence_labels"] == [0, 0, 0, 0, 1]
    assert right["t1"]["label"] == 0 and right["t1"]["sentence_labels"] == [0] * 5
    assert wrong["zz"]["label"] == 1 and {r["split"] for r in parsed.records} == {"test"}
    assert parsed.notes["stories_by_timetravel_split"]["test"] == 1
    assert parsed.notes["stories_by_timetravel_split"]["not in TimeTravel configs"] == 1
    assert parsed.notes["first_four_sentences_identical_to_timetravel"] == 2
    assert storycloze.CORPUS.config("storycloze_dsd").research_only


def test_drops_stories_that_timetravel_trains_or_tunes_on(small_params):
    parsed = storycloze.parse(SC, "storycloze_dsd", spec("storycloze_dsd").generator_options())
    # d1 is a TimeTravel dev-file story, so it sits in TimeTravel train or dev: a test-only config must not hold it.
    assert "d1" not in {r["doc_id"] for r in parsed.records}
    assert parsed.upstream_records == 6 and len(parsed.records) == 4
    assert sum(parsed.dropped.values()) == 2 and set(parsed.dropped) <= {"story_in_timetravel_train", "story_in_timetravel_validation"}


def test_rejects_a_bad_answer_column(small_params):
    with pytest.raises(ParseError, match="bad_answer.tsv line 2"):
        storycloze.parse({**SC, "storycloze_test": FIX / "storycloze/bad_answer.tsv"}, "storycloze_dsd", spec("storycloze_dsd").generator_options())


@pytest.mark.integration
def test_every_story_is_located_in_timetravel_and_those_it_trains_or_tunes_on_are_dropped(parsed_from_mirror):
    parsed = parsed_from_mirror
    assert parsed.notes["stories"] == 3742
    timetravel = expected_splits("timetravel_msd")
    where = parsed.notes["stories_by_timetravel_split"]
    # 17 stories dropped from TimeTravel (unsplittable endings) + 1 Story Cloze id TimeTravel lacks; one TimeTravel
    # test story is not a Story Cloze story
    assert where == {"train": timetravel["train"], "validation": timetravel["validation"], "test": timetravel["test"] - 1,
                     "not in TimeTravel configs": 18}
    # the stories TimeTravel trains or tunes on are left out, the others give two records each, one with the wrong ending
    assert parsed.dropped == {"story_in_timetravel_train": 2 * where["train"], "story_in_timetravel_validation": 2 * where["validation"]}
    assert 2 * sum(r["label"] for r in parsed.records) == len(parsed.records) == 2 * (where["test"] + 18)
