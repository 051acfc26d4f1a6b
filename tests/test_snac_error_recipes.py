"""The recipes for SNaC's InconE, RefE and SceneE (corruptions/snac_errors.py) and mixtures of recipes: every negative
comes with its coherent counterpart after the same context, the negative carries the error its type names, what a
text cannot give is counted by reason, and a mixture makes exactly what its recipes make from the stories drawn to
them, refusing proportions that do not add up before any work."""

import pytest

from cohbench.corruptions import recipes
from cohbench.errors import CorruptionError
from cohbench.errors import RegistryError
from cohbench.schema import ERROR_TYPES, FEATURES
from generator_run import corrupt, narrative

TALE = ["Once upon a time a miller lived by the river with his three sons.", "The miller was old and poor.",
        "His eldest son was called Hans.", "One morning Hans found a golden feather in the yard.",
        "He showed the feather to his father.", "The old man said it came from a wonderful bird.",
        "Hans set out to find the bird.", "He walked for many days through the forest.",
        "At last he came to a castle on a hill.", "A king lived in the castle with his daughter.",
        "The princess was kind and beautiful.", "Hans asked the king about the bird.",
        "The king laughed at him.", "Hans did not give up.", "He climbed the tower at night.",
        "There he saw the bird asleep in a cage.", "Hans carried the cage back to the mill.",
        "His father wept for joy."]


def story(record_id: str, sentences=TALE) -> dict:
    return narrative(record_id, sentences)


def pairs(records):
    assert len(records) % 2 == 0
    return [(records[k], records[k + 1]) for k in range(0, len(records), 2)]


def check_pair(negative, positive, error_type):
    assert positive["id"] == negative["id"] + ":coherent"
    assert negative["label"] == 1 and positive["label"] == 0
    assert negative["sentences"][:-1] == positive["sentences"][:-1]  # the same context
    n = len(negative["sentences"]) - 1
    assert negative["sentence_labels"] == [-1] * n + [1] and positive["sentence_labels"] == [-1] * n + [0]
    (span,) = negative["spans"]
    assert ERROR_TYPES[span["type"]] == error_type and span["first_sentence"] == n and not positive["spans"]
    assert span["text"] in negative["sentences"][-1]
    # the negative's sentence took the place of the positive's, which the record keeps; the positive changed nothing
    assert negative["corruption"]["replaced"] == [positive["sentences"][-1]] and positive["corruption"]["replaced"] == []
    FEATURES.encode_example(negative)
    FEATURES.encode_example(positive)


def test_a_contradiction_turns_round_one_fact_of_an_earlier_sentence_and_names_it_as_antecedent():
    made = corrupt("contradiction", [story("a")], seed=2, instances=4)
    assert len(made) == 8
    for negative, positive in pairs(made):
        check_pair(negative, positive, "InconE")
        j = len(positive["sentences"]) - 1
        assert positive["sentences"] == TALE[: j + 1]  # the counterpart is the text's own next sentence
        (antecedent,) = negative["spans"][0]["antecedents"]
        assert antecedent in TALE[:j] and negative["sentences"][-1] != antecedent
        # the same sentence but for the words that turn it round
        assert len(set(negative["sentences"][-1].split()) ^ set(antecedent.split())) <= 3


def test_an_unintroduced_reference_differs_from_its_counterpart_in_one_article():
    made = corrupt("unintroduced_reference", [story("b")], seed=2, instances=3)
    assert len(made) == 6
    for negative, positive in pairs(made):
        check_pair(negative, positive, "RefE")
        before, after = positive["sentences"][-1].split(), negative["sentences"][-1].split()
        changed = [(x, y) for x, y in zip(before, after) if x != y]
        assert len(before) == len(after) and changed in ([("a", "the")], [("an", "the")], [("A", "The")], [("An", "The")])
        noun = negative["spans"][0]["text"].split()[-1].lower()
        assert not any(noun in s.lower() for s in positive["sentences"][:-1])  # never introduced before


def test_a_scene_jump_takes_a_later_sentence_and_neither_side_names_a_new_character():
    made = corrupt("scene_jump", [story("c")], seed=2, instances=3)
    assert made
    for negative, positive in pairs(made):
        check_pair(negative, positive, "SceneE")
        i = len(positive["sentences"]) - 1
        assert positive["sentences"] == TALE[: i + 1]
        j = TALE.index(negative["sentences"][-1])
        assert j >= i + 8 and negative["corruption"]["inserted_ids"] == [f"c#s{j}"]


def test_the_same_records_whatever_the_batches_and_what_cannot_be_made_is_counted():
    stories = [story(f"s{n}") for n in range(3)]
    for name in ("contradiction", "unintroduced_reference", "scene_jump"):
        whole = corrupt(name, stories, seed=5, instances=2)
        assert whole == [r for s in stories for r in corrupt(name, [s], seed=5, instances=2)]
    plain = ["Tom ran.", "Sue sat.", "Tom ran again.", "Sue sat again."]
    assert recipes.run("contradiction", [story("d", plain)], {"seed": 1})[1] == {"nothing_to_contradict": 1}
    assert recipes.run("unintroduced_reference", [story("d", plain)], {"seed": 1})[1] == {
        "no_first_mention_to_make_definite": 1}
    assert recipes.run("scene_jump", [story("d", TALE[:6])], {"seed": 1})[1] == {"too_short_for_recipe": 1}
    assert recipes.run("contradiction", [story("e", TALE[:2])], {"seed": 1})[1] == {"too_short_for_recipe": 1}


def test_a_contradiction_turns_whole_words_round_never_the_start_of_another_word():
    import random

    from cohbench.corruptions.snac_errors import contradicted

    for sentence in ("The dog ran down the hill.", "A wasp stung him.", "The island lay west."):
        turned = contradicted(sentence, random.Random(0))
        assert turned is None or turned[1] in ("East", "east")  # "do", "was", "is" inside a word are no auxiliaries
    assert contradicted("She cannot swim.", random.Random(0)) == ("She can swim.", "can")
    assert contradicted("They don't know.", random.Random(0)) == ("They do know.", "do")


@pytest.mark.slow
def test_a_mixture_gives_each_story_to_one_recipe_and_keeps_exactly_what_it_makes():
    stories = [story(f"m{n}") for n in range(40)]
    spec = "contradiction:0.25+scene_jump:0.25+unintroduced_reference:0.5"
    mixed, _ = recipes.run(spec, stories, {"seed": 4, "instances": 2})
    shares = recipes.proportions(spec)
    drawn = [recipes.assigned(4, s["id"], shares) for s in stories]
    for record, out, name in zip(stories, mixed, drawn):
        alone, _ = recipes.run(name, [record], {"seed": 4, "instances": 2})
        assert out == alone[0]
    assert set(drawn) == set(shares) and drawn.count("unintroduced_reference") > drawn.count("scene_jump")


def test_a_story_a_mixture_made_nothing_from_is_dropped_with_the_reason_of_the_recipe_it_was_drawn_to():
    spec = "goyal_coref:0.5+scene_jump:0.5"
    nameless = [story(f"n{n}", ["A dog ran to the river.", "It was cold.", "The dog swam.", "It rained."] * 2) for n in range(30)]
    outputs, dropped = recipes.run(spec, nameless, {"seed": 4})
    drawn = [recipes.assigned(4, s["id"], recipes.proportions(spec)) for s in nameless]
    assert not any(outputs)  # no name for goyal_coref to follow; eight sentences, too short for scene_jump's ten
    assert dropped == {"goyal_coref:no_entity_named_twice": drawn.count("goyal_coref"),
                       "scene_jump:too_short_for_recipe": drawn.count("scene_jump")}


@pytest.mark.parametrize("spec,message", [
    ("goyal_coref:0.6+scene_jump:0.5", "sum to 1.1, not 1"),
    ("goyal_coref:-0.5+scene_jump:1.5", "must be a number of at least 0"),
    ("goyal_coref:nan+scene_jump:1", "must be a number of at least 0"),
    ("goyal_coref:half+scene_jump:0.5", "is not RECIPE:PROPORTION"),
    ("goyal_coref:0.5+goyal_coref:0.5", "names goyal_coref twice"),
    ("dsd:0.5+scene_jump:0.5", "dsd shares a pool across stories"),
])
def test_a_mixture_that_does_not_add_up_is_refused_in_one_line_before_anything_runs(spec, message):
    with pytest.raises(CorruptionError, match=message):
        recipes.resolve(spec, {})


def test_an_unknown_recipe_in_a_mixture_is_refused_naming_the_known_ones():
    with pytest.raises(RegistryError, match="unknown recipe 'no_such'; known: .*scene_jump"):
        recipes.resolve("no_such:0.5+scene_jump:0.5", {})


def test_snac_mixture_is_the_mixture_the_transfer_study_chose():
    import json
    from pathlib import Path

    study = json.loads((Path(__file__).parents[1] / "catalog/baseline/snac_transfer.json").read_text())
    chosen = study["synthetic_only_model"]["row"].removeprefix("recipe ")
    assert recipes.lookup("snac_mixture").description.endswith(
        ", ".join(f"{name} {share:g}" for name, share in recipes.proportions(chosen).items()))
