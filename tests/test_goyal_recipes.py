"""Goyal et al.'s synthetic recipes as the paper writes them (§5.1): every negative comes with its positive, the
coref-based negative is s_j after its context without the entity's introduction s_i, the next-sentence negative a
later sentence of the same text after s_1..s_i; the same records whatever the batches, in the schema."""

from cohbench.corruptions import recipes
from generator_run import corrupt, narrative
from cohbench.schema import ERROR_TYPES, FEATURES

TEXT = ["Anna lived in Kiev with her father.", "She had a grey cat.", "One winter the cat ran off.",
        "Anna searched the whole town.", "Her father Pyotr helped her.", "Pyotr found the cat by the river.",
        "They carried it home."]


def story(record_id: str, sentences=TEXT) -> dict:
    return narrative(record_id, sentences)


def pairs(records):
    return [(records[k], records[k + 1]) for k in range(0, len(records), 2)]


def test_coref_negatives_drop_the_introduction_and_positives_keep_it():
    made = corrupt("goyal_coref", [story("a")], seed=3, instances=5)
    assert made and len(made) % 2 == 0
    for negative, positive in pairs(made):
        assert positive["id"] == negative["id"] + ":coherent"
        assert negative["label"] == 1 and positive["label"] == 0
        assert negative["sentences"][-1] == positive["sentences"][-1]  # the same s_j
        j = len(positive["sentences"]) - 1
        assert positive["sentences"] == TEXT[: j + 1]  # its original context s_1..s_{j-1}
        (dropped,) = [s for s in TEXT[:j] if s not in negative["sentences"]]  # exactly s_i is gone
        assert negative["sentence_labels"] == [-1] * (j - 1) + [1] and positive["sentence_labels"] == [-1] * j + [0]
        assert ERROR_TYPES[negative["spans"][0]["type"]] == "CharE" and not positive["spans"]
        mention = negative["spans"][0]["text"]
        assert mention in negative["sentences"][-1] and mention.split()[-1] in dropped  # s_i introduced it
        assert negative["corruption"]["replaced"] == []  # s_j took no sentence's place: dropped context is no position
        FEATURES.encode_example(negative)
        FEATURES.encode_example(positive)
    # Anna (s_1 -> s_4) and Pyotr (s_5 -> s_6): two entities, two pairs, however many are asked for
    assert {len(p["sentences"]) for _, p in pairs(made)} == {4, 6}


def test_next_sentence_negatives_take_a_later_sentence_and_positives_the_true_next_one():
    made = corrupt("goyal_next_sentence", [story("b")], seed=3, instances=3)
    assert len(made) == 6
    for negative, positive in pairs(made):
        i = len(positive["sentences"]) - 1
        assert positive["sentences"] == TEXT[: i + 1] and negative["sentences"][:-1] == TEXT[:i] and i >= 1
        assert TEXT.index(negative["sentences"][-1]) > i  # s_j with j > i + 1, counted from 1
        assert negative["corruption"]["inserted_ids"] == [f"b#s{TEXT.index(negative['sentences'][-1])}"]
        assert negative["corruption"]["replaced"] == [positive["sentences"][-1]]  # s_j took the place of s_{i+1}


def test_the_same_records_whatever_the_batches_and_what_cannot_be_made_is_counted():
    stories = [story(f"s{n}") for n in range(4)] + [story("short", TEXT[:2])]
    for name in ("goyal_coref", "goyal_next_sentence"):
        whole = corrupt(name, stories, seed=5, instances=2)
        assert whole == [r for s in stories for r in corrupt(name, [s], seed=5, instances=2)]
    _, dropped = recipes.run("goyal_coref", [story("none", ["A dog ran.", "A cat sat.", "It rained."])], {"seed": 1})
    assert dropped == {"no_entity_named_twice": 1}
    _, dropped = recipes.run("goyal_next_sentence", [story("short", TEXT[:2])], {"seed": 1})
    assert dropped == {"too_short_for_recipe": 1}
