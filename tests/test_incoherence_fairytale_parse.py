"""FairytaleQA builder on tiny story files in the upstream format: windows, splits, MSD/DSD constraints, errors; and
the pinned story files (integration): the declared counts and the records at fixed positions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from corpus_case import CorpusCase, Lost, Opening, Removed, Replaced, mirror_parse_fixtures

from cohbench.corpora.registry import spec
from cohbench.corpora import fairytaleqa
from cohbench.errors import ParseError

FIX = Path(__file__).parent / "fixtures/fairytaleqa"
FILES = (("train", "Fox-tale-story.csv"), ("train", "hare-story.csv"), ("val", "owl-story.csv"), ("test", "bee-story.csv"))
PATHS = {"story_meta": FIX / "story_meta.csv", **{f"{s}/{f}": FIX / s / f for s, f in FILES}}

# 8-sentence windows of the pinned story files by the split and position in release order their MSD and DSD records
# hold (the same windows: DSD drops none of these): the openings of their sentences, found in this order in the
# story's CSV (`section,text`; a window w000 opens the story).
WINDOWS = {
    "train": {
        0: ("Snow-man-w000", (
            "\"It is so delightfully cold,\" said the", "This is just the kind of wind to blow", "How that great red thing up there is",
            "He meant the sun, who was just setting.", "\"It shall not make me wink.", "I shall manage to keep the pieces.\"",
            "He had two triangular pieces of tile in", "His mouth was made of an old broken")),
        9: ("Snow-man-w009", (
            "\"I'll tell you; they said I was a", "Then I used to lie in a velvet-covered", "They used to kiss my nose, and wipe my",
            "But after a while I grew too big for", "So I came to live on the lower story.", "You can look into the room from where",
            "I was indeed master to the housekeeper.", "It was certainly a smaller room than")),
        -1: ("yuletide-specters-w002", (
            "As she sat down it seemed to her that", "Then she realized that things were not", "When she came into the church-yard, it",
            "In those days people wore broad mantles", "She was wearing one of these mantles", "But she flung it away from her and",
            "It is said it was then one o'clock at", "So she sat and waited for the early")),
    },
    "validation": {
        0: ("assipattle-and-the-mester-stoorworm-w000", (
            "In far bygone days, in the North, there", "And the youngest of these seven sons", "Perhaps Assipattle deserved his name,",
            "When the sun was hot in the long summer", "And his brothers, working hard in the", "And when they came home from their",
            "So poor Assipattle had rather a hard", "But one day a very sad thing")),
        9: ("assipattle-and-the-mester-stoorworm-w009", (
            "But, ere he did so, the King's", "\"Nature teaches us that it is fitting", "And, if I had my way, the tail which it",
            "And at his words there was such a great", "Now, three weeks were allowed between", "And with her he should have the",
            "The sword bore the name of", "The news of all these things spread")),
        -1: ("why-dog-and-cat-are-enemies-w002", (
            "The mouse gnawed a hole in the chest,", "The cat put the ring in her mouth and", "Then they started out together for",
            "But the dog could only run along the", "The cat, however, quickly climbed over", "Then her master said to his wife: \"What",
            "We will always give her enough to eat", "But when the dog came home they beat")),
    },
    "test": {
        0: ("alleleiraugh-or-the-many-furred-creature-w000", (
            "There was once upon a time a King who", "It happened that she fell ill, and when", "Promise me this.'",
            "After the King had promised her this,", "For a long time the King was not to be", "At last his councillors said, 'The King",
            "So messengers were sent far and wide to", "But there was no one in the wide world,")),
        9: ("alleleiraugh-or-the-many-furred-creature-w009", (
            "And while he was dancing, he put a gold", "When it was finished he wanted to keep", "She ran as fast as she could to her",
            "The Many-furred Creature now ran into", "When the King found the reel at the", "Then he took her hand and held her",
            "The King seized the cloak and tore it", "Her golden hair came down, and she")),
        -1: ("whippety-stourie-w007", (
            "The Fairy took no notice of this,", "Then the young mother pretended to be", "\"Oh, sweet Madam Mistress,\" she cried,",
            "\"We have no need of bacon where I come", "\"Oh, dear Lady mine,\" pleaded the", "The Fairy stepped back a little, as if",
            "\"Art thou mad, woman,\" she cried", "Who in all the world would care to take")),
    },
}


def _spot_checks(generator: str, altered) -> dict:
    """Every record is a window with 2 of its 8 sentences removed or replaced (label 1): the story, the window and the
    sentences left are upstream's, which two were removed or replaced (and by which confounders) is generated."""
    return {split: {position: {"id": f"{window}:{generator}", "doc_id": window.rsplit("-w", 1)[0],
                               "corruption.source_id": window, "label": 1, "sentences": altered(tuple(map(Opening, openings)), 2),
                               "corruption.replaced": Lost(tuple(map(Opening, openings)), 2)}
                    for position, (window, openings) in windows.items()}
            for split, windows in WINDOWS.items()}


def _pair(record: str, window: str, first: str, last: str | None = None) -> dict:
    """A snac_synthetic record: context + sentence from a 48-sentence window. The window and the context's first
    sentence are upstream's; a negative (label 1) ends with a sentence the recipe made (generated), its coherent
    counterpart (`:coherent`, label 0) with the window's own next sentence, `last`."""
    coherent = record.endswith(":coherent")
    return {"id": record, "doc_id": window.rsplit("-w", 1)[0], "corruption.source_id": window, "label": int(not coherent),
            "sentences[0]": Opening(first), **({"sentences[-1]": Opening(last)} if coherent else {})}


# The records of snac_synthetic at positions 0, 9 and last, whose sentences were found in the story's CSV
SNAC_SYNTHETIC = {
    "train": {
        0: _pair("Snow-man-w000:unintroduced_reference0", "Snow-man-w000", '"It is so delightfully cold," said the Snow Man'),
        9: _pair("Snow-man-w000:unintroduced_reference4:coherent", "Snow-man-w000", '"It is so delightfully cold," said the Snow Man',
                 "From every twig glistened a white radiance."),
        -1: _pair("youth-who-was-to-serve-three-years-without-pay-w003:unintroduced_reference5:coherent",
                  "youth-who-was-to-serve-three-years-without-pay-w003", "Now a great ship from abroad had shortly before",
                  "Suddenly a rat crossed her path."),
    },
    "validation": {
        0: _pair("assipattle-and-the-mester-stoorworm-w000:unintroduced_reference0", "assipattle-and-the-mester-stoorworm-w000",
                 "In far bygone days, in the North, there lived"),
        9: _pair("assipattle-and-the-mester-stoorworm-w000:unintroduced_reference4:coherent", "assipattle-and-the-mester-stoorworm-w000",
                 "In far bygone days, in the North, there lived", "Now the Queen was the King's second wife"),
        -1: _pair("tongue-cut-sparrow-w001:unintroduced_reference5:coherent", "tongue-cut-sparrow-w001",
                  "While he wiped away the tears with the sleeve of", '"Where have you been all this time?" she asked'),
    },
}


parsed_from_mirror, from_mirror = mirror_parse_fixtures("fairytale_msd")


class TestFairytaleQA(CorpusCase):
    CORPUS = "fairytaleqa"
    FIXTURE_PATHS = PATHS
    SPOT_CHECKS = {"fairytale_msd": _spot_checks("remove_sentences", Removed),
                   "fairytale_dsd": _spot_checks("discordant_replace", Replaced), "snac_synthetic": SNAC_SYNTHETIC}

    def parse_fixtures(self, corpus, config):
        options = spec(config).generator_options()
        if config == "snac_synthetic":  # the fixture stories are shorter than its 48-sentence windows
            options = dataclasses.replace(options, window=8, instances=2)
        return fairytaleqa.parse(self.FIXTURE_PATHS, config, options, FILES)  # only the fixture stories


@pytest.fixture(autouse=True)
def project_params(project_root):
    project_root(catalog="project")  # the declared versions and expectations, for CorpusCase's checks


def test_windows_follow_section_order_and_report_the_case_defect():
    records, cut, dropped, stats = fairytaleqa.windows(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)
    assert cut == 5 and not dropped  # fox 20 sentences -> 2 windows, hare/owl 9 -> 1 each, bee 8 -> 1
    fox = [r for r in records if r["doc_id"] == "Fox-tale"]
    assert [r["id"] for r in fox] == ["Fox-tale-w000", "Fox-tale-w001"]
    assert fox[0]["sentences"][0] == "The fox found a red apple in the forest."  # section 1 first, line breaks collapsed
    assert fox[1]["sentences"][-1] == "The fox carried the spoon to the mill."
    assert stats["sentences_not_in_a_window"] == 4 + 1 + 1
    assert stats["file_names_differing_from_story_meta_in_case"] == ["Fox-tale-story.csv is 'fox-tale' in story_meta.csv"]
    assert {r["split"] for r in records} == {"train", "validation", "test"}


def test_msd_removes_two_inner_non_adjacent_sentences_per_window():
    parsed = fairytaleqa.parse(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)
    assert len(parsed.records) == 5 and parsed.upstream_records == 5
    windows = {r["id"]: r["sentences"] for r in fairytaleqa.windows(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)[0]}
    for r in parsed.records:
        window = windows[r["corruption"]["source_id"]]
        kept = [window.index(s) for s in r["sentences"]]
        removed = sorted(set(range(8)) - set(kept))
        assert kept[0] == 0 and kept[-1] == 7 and len(removed) == 2 and removed[1] - removed[0] > 1
        assert r["gap_labels"] == [int(b - a > 1) for a, b in zip(kept, kept[1:])]
    assert all(v["missing_rate"] == 0.25 for v in parsed.notes["by_split"].values())


def test_dsd_never_draws_from_the_same_story_so_single_story_splits_get_no_confounder():
    parsed = fairytaleqa.parse(PATHS, "fairytale_dsd", spec("fairytale_dsd").generator_options(), FILES)
    # val and test each hold one story: no admissible confounder; train's two stories lend to each other.
    assert parsed.dropped == {"no_confounder_below_tau": 2}
    made = {r["corruption"]["source_id"]: r["split"] for r in parsed.records}
    assert made == {"Fox-tale-w000": "train", "Fox-tale-w001": "train", "hare-w000": "train"}
    for r in parsed.records:
        donors = {i.split("-w")[0] for i in r["corruption"]["inserted_ids"]}
        assert r["doc_id"] not in donors and r["sentence_labels"].count(1) == 2


def test_a_story_file_with_another_header_is_a_clear_error():
    bad = {**PATHS, "test/bee-story.csv": FIX / "bad/bee-story.csv"}
    with pytest.raises(ParseError, match="bee-story.csv must have the header `section,text`"):
        fairytaleqa.windows(bad, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)


def test_snac_synthetic_pairs_come_from_train_and_validation_stories_only_with_every_window_accounted(project_root):
    from cohbench.corruptions import recipes
    from cohbench.schema import ERROR_TYPES

    project_root(lambda params: params["incoherence"]["snac_synthetic"].update(window=8, instances=2))
    options = spec("snac_synthetic").generator_options()
    parsed = fairytaleqa.parse(PATHS, "snac_synthetic", options, FILES)
    # five windows (fox 2, hare, owl, bee 1 each), each able to give two pairs of two records
    assert parsed.upstream_records == 5 * 4 and parsed.dropped["test_story_never_training_data"] == 4
    assert {r["split"] for r in parsed.records} <= {"train", "validation"} and "bee" not in {r["doc_id"] for r in parsed.records}
    shares = recipes.proportions("goyal_coref:0.2+unintroduced_reference:0.8")
    for reason in set(parsed.dropped) - {"test_story_never_training_data"}:
        assert reason.split(":")[0] in shares  # a window its recipe gave less: that recipe's own reason
    negatives = parsed.records[0::2]
    assert negatives and all(r["label"] == 1 and r["config"] == "snac_synthetic" for r in negatives)
    for negative, positive in zip(negatives, parsed.records[1::2]):
        assert positive["id"] == f"{negative['id']}:coherent" and positive["label"] == 0
        # a minimal pair: the same context with another sentence (RefE), or the same sentence after another context (CharE)
        same_context, same_sentence = (positive["sentences"][:-1] == negative["sentences"][:-1],
                                       positive["sentences"][-1] == negative["sentences"][-1])
        assert same_context != same_sentence and negative["sentences"][:-1]
        assert negative["corruption"]["generator"] == recipes.assigned(options.seed, negative["corruption"]["source_id"], shares)
        assert [ERROR_TYPES[s["type"]] for s in negative["spans"]] == [{"goyal_coref": "CharE", "unintroduced_reference": "RefE"}[negative["corruption"]["generator"]]]
