"""TimeTravel (`timetravel_msd`, `timetravel_dsd`): tiny fixtures in the upstream formats (splits, labels, drops,
errors), and every story of the pinned files (integration): the declared splits, exact rates, no story in two splits."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_case import CorpusCase, Lost, Removed, Replaced, assert_no_story_in_two_splits, expected_splits, mirror_parse_fixtures

from cohbench.corpora import timetravel
from cohbench.errors import ParseError
from cohbench.corpora.registry import spec

FIX = Path(__file__).parent / "fixtures"
TT = {"timetravel_test": FIX / "timetravel/test_data.json", "timetravel_dev": FIX / "timetravel/dev_data.json"}


parsed_from_mirror, from_mirror = mirror_parse_fixtures("timetravel_msd")


# Stories of the pinned files as they give them (premise, initial, the 3 sentences of original_ending), by the split
# and position in release order their records hold: train and validation are carved from dev_data.json, test is
# test_data.json.
STORIES = {
    "train": {
        0: ("001df42a-7c6c-4bee-bbb8-21950fe87d2c", (
            "Kelly and her friends went to a new ice cream shop.", "They were excited to try the new flavors.",
            "One of the flavors was wasabi.", "Even though it looked gross it tasted good.", "Kelly was glad she tried new flavors.")),
        9: ("02200fbb-9771-46f3-809b-1c70cb0c41d7", (
            "Ray hung a tire on a rope to make his daughter a swing.", "She climbed into it and played happily.",
            "Then Ray heard a loud, sickening crack, and a loud crash.",
            "The branch holding the swing had broken and his daughter had fallen!", "Ray ran to his daughter to make sure she was okay.")),
        -1: ("ffcd78ff-f1c4-416a-b3d7-d4f9fe32c83a", (
            "Harry secretly hated haunted houses, but couldn't let his friend down.",
            "Faking a brave face, the went forth into the darkened house.",
            "He managed to make it all way through without screaming out loud.",
            "At the very end, they fell through a trick floor into a bunch of goo.", "Harry wished he wouldn't have went.")),
    },
    "validation": {
        0: ("006aa20e-51a7-48ea-8e1d-572f24cf1551", (
            "I ordered a family meal at a Chinese restaurant.", "As soon as I placed it on the table, my family attacked it.",
            "They were eating a lot out of the meal.", "After everyone ate, there was no food left.",
            "I was happy we found a new favorite restaurant.")),
        9: ("0e1cae86-3c60-4150-b34a-f306fa9fa1e3", (
            "Tommy was having a bad day.", "His friends tried to cheer him up by taking him out.", "He grumbled but went along.",
            "He drank and danced with his friends all night.", "Tommy had good friends.")),
        -1: ("fedc6a43-057c-4684-ad11-200180ade0d3", (
            "Quinn spent a lot of time caring for her lawn.", "She felt that a well-kept lawn reflected well on the house.",
            "Quinn thought that it made the only first impression that mattered.",
            "Her region experienced a drought and watering restrictions happened.",
            "She researched methods of lawn care that took less water.")),
    },
    "test": {
        0: ("00115125-5ba4-4d2d-b86c-99343afa7c59", (
            "Kelly was super excited for the new drawing at work.", "She was hoping she could win the new iPad.",
            "She put her name in and crossed her fingers.", "Luckily her name was picked.", "She was happy she won.")),
        9: ("01ba0600-2b67-4bd1-be61-35edd41d9a50", (
            "Linda always wanted to learn to ice skate.", "She asked her mom to sign her up for lesson.",
            "She fell over and over again.", "She kept practicing every day.", "Linda was determined.")),
        -1: ("ffe078d1-6744-497d-bf45-e5df0bdfee66", (
            "Sarah was at home when her power was shut off.", "She had no money to pay the late bill and fees.",
            "She contacted a charity in town.", "She explained the situation.", "A charity gave Sarah money to pay her power bill.")),
    },
}


def _spot_checks(generator: str, altered) -> dict:
    """Every record is an altered story (label 1): the story and its unaltered sentences are upstream's, which one
    sentence was removed or replaced (and by which confounder) is generated."""
    return {split: {position: {"id": f"{story}:{generator}", "doc_id": story, "corruption.source_id": story, "label": 1,
                               "sentences": altered(sentences, 1), "corruption.replaced": Lost(sentences, 1)}
                    for position, (story, sentences) in stories.items()}
            for split, stories in STORIES.items()}


class TestTimeTravel(CorpusCase):
    CORPUS = "timetravel"
    FIXTURE_PATHS = TT
    SPOT_CHECKS = {"timetravel_msd": _spot_checks("remove_sentences", Removed),
                   "timetravel_dsd": _spot_checks("discordant_replace", Replaced)}


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
def test_msd_of_every_story_drops_unsplittable_endings_at_exactly_20_percent(parsed_from_mirror):
    parsed = parsed_from_mirror
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
