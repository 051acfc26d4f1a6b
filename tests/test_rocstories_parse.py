"""ROCStories builder on a tiny fixture in the upstream format (JSON lines of one-element lists): stories that do not
give five sentences and stories of an evaluation corpus are dropped and counted per instance, every removable
sentence makes its own MSD record, ids come from the story text, and a line of another shape is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

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
