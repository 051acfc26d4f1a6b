"""ROCStories builder on a tiny fixture in the upstream format (JSON lines of one-element lists): stories that do not
give five sentences and stories of an evaluation corpus are dropped and counted per instance, every removable
sentence makes its own MSD record, ids come from the story text, and a line of another shape is a clear error; and the
pinned sample (integration): the declared counts and the records at fixed positions."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_case import CorpusCase, Lost, Removed, Replaced, mirror_parse_fixtures

from cohbench.corpora import rocstories
from cohbench.errors import ParseError
from cohbench.corpora.registry import spec

FIX = Path(__file__).parent / "fixtures"
PATHS = {
    "rocstories_sample": FIX / "rocstories/roc_valid.json",
    "timetravel_test": FIX / "timetravel/test_data.json",
    "timetravel_dev": FIX / "timetravel/dev_data.json",
    "storycloze_val": FIX / "storycloze/val.tsv",
    "storycloze_test": FIX / "storycloze/test.tsv",
}
# Stories of roc_valid.json (its lines 4817, 2821 and 3115; doc_id is `roc-` + the sha256 of the line's text), by the
# position in release order their records hold; each story gives 3 records, one per instance (`#1`..`#3`).
STORIES = {
    0: ("roc-0011b8e75e1f", 1, (
        "Sam wanted to get a pet.", "He decided a cat would be best for his lifestyle.",
        "He visited a cat shelter to check out the cats.", "He liked one of the kittens, named Fluffy.", "Sam adopted Fluffy and took her home.")),
    9: ("roc-003c71d823f9", 1, (
        "Tom was going to his friend's wedding.", "It was a formal wedding.", "He realized that his suit didn't fit.",
        "Tom went to the mall and bought a new suit.", "He dropped off the old suit at a donation center.")),
    -1: ("roc-fffddca41653", 3, (
        "The mailman came around the corner with his satchel.", "The dog had been waiting for him.",
        "Just as the mailman crossed the front of the house he pounced.", "Mail went flying everywhere and the postman was cursing.",
        "The dog relished the coppery taste that filled his mouth.")),
}


def _spot_checks(generator: str, altered) -> dict:
    """Every record is an altered story (label 1): the story and its unaltered sentences are upstream's, which
    sentence an instance removed or replaced (and by which confounder) is generated."""
    return {"train": {position: {"id": f"{story}:{generator}#{instance}", "doc_id": story, "corruption.source_id": story,
                                 "label": 1, "sentences": altered(sentences, 1), "corruption.replaced": Lost(sentences, 1)}
                      for position, (story, instance, sentences) in STORIES.items()}}


parsed_from_mirror, from_mirror = mirror_parse_fixtures("rocstories_msd")


class TestRocStories(CorpusCase):
    CORPUS = "rocstories"
    FIXTURE_PATHS = PATHS
    SPOT_CHECKS = {"rocstories_msd": _spot_checks("remove_sentences", Removed),
                   "rocstories_dsd": _spot_checks("discordant_replace", Replaced)}


def test_msd_makes_one_record_per_removable_sentence_and_accounts_for_every_instance():
    opts = spec("rocstories_msd").generator_options()
    parsed = rocstories.parse(PATHS, "rocstories_msd", opts)
    assert opts.msd_instances == 3
    assert parsed.upstream_records == 4 * 3
    assert parsed.dropped == {"not_five_sentences": 3, "story_in_timetravel_or_story_cloze": 3}
    assert len(parsed.records) == 2 * 3 and {r["split"] for r in parsed.records} == {"train"}
    by_story = {}
    for record in parsed.records:
        by_story.setdefault(record["doc_id"], []).append(record)
        assert len(record["sentences"]) == 4 and sum(record["gap_labels"]) == 1
    for story, records in by_story.items():
        assert story.startswith("roc-") and len(story) == 4 + 12
        assert sorted(r["corruption"]["positions"][0] for r in records) == [0, 1, 2]  # every inner sentence once
        assert sorted(r["id"] for r in records) == [f"{story}:remove_sentences#{j}" for j in (1, 2, 3)]
    assert rocstories.parse(PATHS, "rocstories_msd", opts).records == parsed.records


def test_a_line_that_is_not_a_one_story_list_is_a_clear_error():
    with pytest.raises(ParseError, match=r"not_a_story_list.json line 2 is not a one-element list holding a story"):
        rocstories.parse({**PATHS, "rocstories_sample": FIX / "rocstories/not_a_story_list.json"}, "rocstories_msd",
                         spec("rocstories_msd").generator_options())


def test_a_sample_left_empty_by_the_filters_is_an_error_naming_them():
    with pytest.raises(ParseError, match=r"every story of all_dropped.json was dropped \(not_five_sentences: 1, "
                                         r"story_in_timetravel_or_story_cloze: 1\).*leakage filter"):
        rocstories.parse({**PATHS, "rocstories_sample": FIX / "rocstories/all_dropped.json"}, "rocstories_msd",
                         spec("rocstories_msd").generator_options())
