"""synthetic_coherence, made from TimeTravel's stories and FairytaleQA's windows: its fixtures parse with its own
`parse`, and the pinned files (integration) give the declared counts and, at fixed positions, pairs built on the
upstream narratives."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from corpus_case import FIXTURES, CorpusCase, Opening, mirror_parse_fixtures

from cohbench.corpora import registry

FAIRYTALE_FIXTURES = {"train": ("Fox-tale-story.csv", "hare-story.csv"), "val": ("owl-story.csv",), "test": ("bee-story.csv",)}
FAIRYTALE_STORIES = [source.name for source in registry.lookup("fairytaleqa").sources if "/" in source.name]


def _fixture_paths() -> dict[str, Path]:
    """FairytaleQA's parse reads every pinned story file by its upstream name: each stands for a fixture story of its
    split (in turn), beside TimeTravel's fixture files."""
    paths = {"timetravel_test": FIXTURES / "timetravel/test_data.json", "timetravel_dev": FIXTURES / "timetravel/dev_data.json",
             "story_meta": FIXTURES / "fairytaleqa/story_meta.csv"}
    for n, source in enumerate(FAIRYTALE_STORIES):
        split = source.split("/")[0]
        stories = FAIRYTALE_FIXTURES[split]
        paths[source] = FIXTURES / "fairytaleqa" / split / stories[n % len(stories)]
    return paths


parsed_from_mirror, from_mirror = mirror_parse_fixtures("synthetic_coherence")


def _pair(record_id: str, doc_id: str, label: int, first: str, last: str | None = None, generator: str | None = None) -> dict:
    """A spot check of one example: its narrative, label, first context sentence and (a positive's) upstream sentence,
    as read from the upstream file; a negative's sentence and span are generated, so only its generator is named."""
    expected = {"id": record_id, "doc_id": doc_id, "label": label, "sentences[0]": Opening(first)}
    if last is not None:
        expected["sentences[-1]"] = Opening(last)
    if generator is not None:
        expected["corruption.generator"] = generator
    return expected


# Read from TimeTravel's dev_data.json and test_data.json (premise, initial, original_ending) and from FairytaleQA's
# story files (sections, whitespace collapsed): a negative's context opens its story; a positive's last sentence is
# the story's own sentence at that point.
SPOT_CHECKS = {"synthetic_coherence": {
    "train": {
        0: _pair("001df42a-7c6c-4bee-bbb8-21950fe87d2c:discordant_replace", "001df42a-7c6c-4bee-bbb8-21950fe87d2c", 1,
                 "Kelly and her friends went to a new ice cream shop.", generator="discordant_replace"),
        9: _pair("0029bfd3-b3f3-42ec-ba8f-2ea9b26e19f8:entity_first_mention:coherent", "0029bfd3-b3f3-42ec-ba8f-2ea9b26e19f8",
                 0, "Dennis entered a surfing competition.", "Dennis won the competition."),
        -1: _pair("yuletide-specters-w002:next_sentence_swap:coherent", "yuletide-specters", 0,
                  "As she sat down it seemed to her that some one said:",
                  "When she came into the church-yard, it seemed to her as though she were surrounded"),
    },
    "validation": {
        0: _pair("03ab91cf-7c16-412f-8f41-781e96f9f1e7:discordant_replace", "03ab91cf-7c16-412f-8f41-781e96f9f1e7", 1,
                 "Three little girls were standing by a pool at a party.", generator="discordant_replace"),
        9: _pair("041399bb-cd42-4cda-b36b-1917f222c0ba:next_sentence_swap:coherent", "041399bb-cd42-4cda-b36b-1917f222c0ba",
                 0, "In the autumn, Susan planted some flower seeds in the backyard.",
                 "Once April came, little flowers appeared all over the backyard."),
        -1: _pair("why-dog-and-cat-are-enemies-w002:next_sentence_swap:coherent", "why-dog-and-cat-are-enemies", 0,
                  "The mouse gnawed a hole in the chest, and fetched out the ring.",
                  "The cat put the ring in her mouth and went back to the river, where the dog was waiting for her"),
    },
    "test": {
        0: _pair("01dab718-600d-4a7e-915e-b9d9e510d495:discordant_replace", "01dab718-600d-4a7e-915e-b9d9e510d495", 1,
                 "The city was bustling.", generator="discordant_replace"),
        9: _pair("01df4eef-791e-44b3-989b-2465df6a5f6b:next_sentence_swap:coherent", "01df4eef-791e-44b3-989b-2465df6a5f6b",
                 0, "Rory loved to eat chocolate.", "Rory ate all of the chocolate on the way home."),
        -1: _pair("whippety-stourie-w007:next_sentence_swap:coherent", "whippety-stourie", 0,
                  "The Fairy took no notice of this, however, but came close up to her",
                  "Then the young mother pretended to be in sorer distress than ever"),
    },
}}


class TestSyntheticCoherence(CorpusCase):
    CORPUS = "synthetic_coherence"
    FIXTURE_PATHS = _fixture_paths()
    SPOT_CHECKS = SPOT_CHECKS

    def parse_fixtures(self, corpus, config):
        # One FairytaleQA story per split is read (of the pinned names standing for 4 fixture stories): seconds, not
        # minutes. The parse checks every pinned story name against story_meta.csv, so the fixture's story_meta
        # lists them all, written here from the checksum table instead of committing a copy of the upstream file.
        options = registry.spec(config).generator_options()
        one_story = dataclasses.replace(options, fairytale=dataclasses.replace(options.fairytale, max_stories_per_split=1))
        with tempfile.TemporaryDirectory() as folder:
            meta = Path(folder) / "story_meta.csv"
            meta.write_text("filename,split\n" + "".join(f"{name.split('/')[1].removesuffix('-story.csv')},{name.split('/')[0]}\n"
                                                        for name in FAIRYTALE_STORIES), encoding="utf-8")
            return corpus.parse({**self.FIXTURE_PATHS, "story_meta": meta}, config, one_story)
