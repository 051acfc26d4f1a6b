"""Corruption generators on tiny records: labels, provenance, constraints, seeded determinism, registry."""

from __future__ import annotations

import pytest

from cohbench.corruptions import GENERATORS
from cohbench.corruptions.msd import removable_count, removable_set_at, removable_sets
from cohbench.corruptions.registry import generator, to_columns, to_records
from cohbench.errors import CorruptionError, RegistryError
from generator_run import corrupt
from cohbench.schema import ERROR_TYPES, FEATURES, NO_LABEL, empty_record

STORY = [
    "Julie loved soccer more than anything.",
    "Her team was tied with one minute left.",
    "Ashley passed her the ball.",
    "Julie kicked as hard as she could.",
    "The ball soared into the net and Julie's team won.",
]


def record(rid: str, sentences, doc: str | None = None, split: str = "train") -> dict:
    r = empty_record()
    r.update(id=rid, corpus="test", config="test", split=split, doc_id=doc or rid, sentences=list(sentences),
             sentence_labels=[0] * len(sentences))
    return r


BATCH = [record(f"story-{n}", [f"{s} ({n})" for s in STORY]) for n in range(6)] + [record("short", STORY[:2])]


def run(name, records=BATCH, seed=7, **params):
    return corrupt(name, records, seed=seed, **params)


def test_registry_rejects_duplicate_names_and_unknown_generators():
    with pytest.raises(RegistryError, match="corruption generator 'shuffle' is registered twice"):
        generator("shuffle")(lambda batch, seed: batch)
    with pytest.raises(RegistryError, match="unknown corruption generator 'no_such_generator'; known: .*remove_sentences"):
        GENERATORS["no_such_generator"]


@pytest.mark.parametrize("name,params", [
    ("shuffle", {}), ("shuffle", {"window": 2}), ("repetition", {}), ("remove_sentences", {"k": 1}),
    ("next_sentence_swap", {}), ("entity_first_mention", {}),
])
def test_same_seed_same_output_regardless_of_batch_boundaries(name, params):
    whole = run(name, **params)
    one_by_one = [out for r in BATCH for out in run(name, [r], **params)]
    assert whole == one_by_one and whole == run(name, **params)
    assert whole, f"{name} produced nothing on the fixture"
    other_seeds = [run(name, seed=s, **params) for s in range(8, 14)]
    if name != "entity_first_mention":  # one admissible choice per fixture story: the seed cannot matter
        assert any(o != whole for o in other_seeds)


@pytest.mark.parametrize("name,params", [("shuffle", {}), ("remove_sentences", {"k": 1}), ("repetition", {})])
def test_outputs_encode_in_the_schema_and_carry_provenance(name, params):
    for out in run(name, **params):
        FEATURES.encode_example(out)
        assert out["corruption"]["generator"] == name and out["corruption"]["seed"] == 7
        assert out["id"] == f"{out['corruption']['source_id']}:{name}" and out["label"] == 1


def test_shuffle_labels_every_moved_sentence_and_window_variant_stays_local():
    for out in run("shuffle"):
        order = out["corruption"]["positions"]
        assert sorted(order) != order or order != list(range(len(order)))
        assert out["sentence_labels"] == [int(src != i) for i, src in enumerate(order)]
        assert 1 in out["sentence_labels"]
    for out in run("shuffle", window=2):
        assert all(abs(src - i) <= 1 for i, src in enumerate(out["corruption"]["positions"]))
        assert out["id"].endswith(":shuffle-w2")


def test_shuffle_labels_by_text_and_leaves_a_text_no_permutation_changes():
    knock = record("knock", ["Knock knock.", "Knock knock.", "Who is there?"])
    for seed in range(20):  # whichever order is drawn, the text differs, and only a sentence that moved in text is 1
        (out,) = run("shuffle", [knock], seed=seed)
        assert out["sentences"] != knock["sentences"]
        assert out["sentence_labels"] == [int(a != b) for a, b in zip(out["sentences"], knock["sentences"])]
    assert run("shuffle", [record("ha", ["Ha."] * 3)]) == []
    assert run("shuffle", [record("pairs", ["A.", "A.", "B.", "B."])], window=2) == []  # each window is one sentence twice


def test_repetition_repeats_half_the_sentences_after_their_original():
    source = {r["id"]: r for r in BATCH}
    for out in run("repetition"):
        original = source[out["corruption"]["source_id"]]["sentences"]
        assert len(out["sentences"]) == len(original) + round(0.5 * len(original)) or len(original) == 2
        for position, inserted, sp in zip(out["corruption"]["positions"], out["corruption"]["inserted_ids"], out["spans"]):
            index = int(inserted.rsplit("#s", 1)[1])
            assert out["sentences"][position] == original[index]
            assert out["sentences"][:position].count(original[index]) >= 1  # the original comes first
            assert out["sentence_labels"][position] == 1 and ERROR_TYPES[sp["type"]] == "RepE"
        assert sum(out["sentence_labels"]) == len(out["corruption"]["positions"])
        assert [s for s, l in zip(out["sentences"], out["sentence_labels"]) if l == 0] == original


def test_remove_sentences_never_first_last_or_adjacent_and_gap_labels_mark_the_holes():
    assert removable_sets(5, 2) == [(1, 3)]
    assert removable_sets(8, 2) and all(b - a > 1 and a > 0 and b < 7 for a, b in removable_sets(8, 2))
    eight = [record(f"w{n}", [f"Sentence {i} of {n}." for i in range(8)]) for n in range(30)]
    removed_positions = set()
    for out in run("remove_sentences", eight, k=2):
        original = next(r for r in eight if r["id"] == out["corruption"]["source_id"])["sentences"]
        kept = [original.index(s) for s in out["sentences"]]
        removed = sorted(set(range(8)) - set(kept))
        removed_positions.update(removed)
        assert len(removed) == 2 and 0 not in removed and 7 not in removed and removed[1] - removed[0] > 1
        assert out["gap_labels"] == [int(b - a > 1) for a, b in zip(kept, kept[1:])]
        assert len(out["gap_labels"]) == 5 and sum(out["gap_labels"]) == 2
        assert out["corruption"]["positions"] == [g for g, v in enumerate(out["gap_labels"]) if v]
        assert out["corruption"]["replaced"] == [original[i] for i in removed]  # the sentence each gap lost
    assert removed_positions == set(range(1, 7))
    assert [o["corruption"]["source_id"] for o in run("remove_sentences", k=1)] == [r["id"] for r in BATCH[:-1]]


def test_the_removed_set_is_drawn_without_listing_every_set_and_is_the_one_the_listing_gives():
    for size in range(16):
        for k in range(1, 6):
            listed = removable_sets(size, k)
            assert removable_count(size, k) == len(listed), (size, k)
            assert [removable_set_at(index, size, k) for index in range(len(listed))] == listed, (size, k)
    hundred = record("long", [f"Sentence {i}." for i in range(100)])  # 55 million admissible sets of five
    (out,) = run("remove_sentences", [hundred], k=5)
    removed = sorted(set(hundred["sentences"]) - set(out["sentences"]), key=hundred["sentences"].index)
    positions = [hundred["sentences"].index(s) for s in removed]
    assert len(positions) == 5 and 0 < positions[0] and positions[-1] < 99 and all(b - a > 1 for a, b in zip(positions, positions[1:]))


def test_several_instances_from_too_many_position_sets_are_refused_naming_the_record():
    hundred = record("long", [f"Sentence {i}." for i in range(100)])
    with pytest.raises(CorruptionError, match=r"record long: 2 instances are drawn from its 54,891,018 sets of positions"):
        run("remove_sentences", [hundred], k=5, instances=2)
    assert len(run("remove_sentences", [hundred], k=2, instances=2)) == 2  # 4,656 sets: listed and shuffled


def test_next_sentence_swap_puts_a_later_sentence_after_a_nonempty_context():
    for out in run("next_sentence_swap"):
        original = next(r for r in BATCH if r["id"] == out["corruption"]["source_id"])["sentences"]
        (i,) = out["corruption"]["positions"]
        j = int(out["corruption"]["inserted_ids"][0].rsplit("#s", 1)[1])
        assert i >= 1 and j > i and out["sentences"] == original[:i] + [original[j]]
        assert out["corruption"]["replaced"] == [original[i]]
        assert out["sentence_labels"] == [NO_LABEL] * i + [1]
        assert ERROR_TYPES[out["spans"][0]["type"]] == "SceneE" and out["spans"][0]["first_sentence"] == i


def test_entity_first_mention_drops_the_introduction_and_labels_the_next_mention():
    outs = run("entity_first_mention", BATCH[:1])
    assert len(outs) == 1
    out = outs[0]
    # Julie is introduced in sentence 0 and next named in sentence 3 (Ashley has one mention only).
    assert out["sentences"] == [s + " (0)" for s in STORY[1:4]]
    assert out["sentence_labels"] == [NO_LABEL, NO_LABEL, 1]
    assert out["spans"][0]["text"] == "Julie" and ERROR_TYPES[out["spans"][0]["type"]] == "CharE"
    aliased = record("alias", ["Mr. Lorry visited the bank.", "It was raining.", "The clerk was late.", "Lorry waited."])
    (alias_out,) = run("entity_first_mention", [aliased])
    assert alias_out["sentences"][-1] == "Lorry waited." and alias_out["spans"][0]["text"] == "Lorry"


def test_ne_bigram_keeps_entities_as_often_as_they_occur_then_the_bigrams():
    from cohbench.corruptions.nlp import analyse
    from cohbench.corruptions.surface import entity_texts

    (out,) = run("ne_bigram", BATCH[:1], bigrams=["of the", "in the"])
    (entities,) = analyse([" ".join(BATCH[0]["sentences"])], entity_texts)
    assert entities.count("Julie") >= 2 and "Ashley" in entities  # repeated entities are kept as often as found
    assert out["sentences"] == [" ".join(entities + ["of the", "in the"])]
    assert ERROR_TYPES[out["spans"][0]["type"]] == "GramE"
    from cohbench.corruptions.surface import top_bigrams

    assert top_bigrams(["the cat of the house", "of the day"], n=1) == ["of the"]


def test_the_ne_bigram_recipe_takes_each_records_bigrams_from_its_own_split():
    from cohbench.corruptions import recipes
    from release_fixture import record

    stories = [record("tr", "tr", ["Anna saw the red kite.", "Anna saw the red kite again."], split="train"),
               record("te", "te", ["Bob fed the grey cat.", "Bob fed the grey cat twice."], split="test")]
    made, _ = recipes.run("ne_bigram", stories, {"seed": 0})
    train_text, test_text = (out[0]["sentences"][0] for out in made)
    assert "red kite" in train_text and "grey cat" not in train_text  # nothing of the test story reaches train
    assert "grey cat" in test_text and "red kite" not in test_text


def test_columnar_batches_round_trip_and_datasets_map_agrees_with_a_plain_call(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    assert to_records(to_columns(BATCH)) == BATCH
    ds = datasets.Dataset.from_list(BATCH, features=FEATURES)
    expected = datasets.Dataset.from_list(run("remove_sentences", k=1), features=FEATURES).to_list()
    # other batch boundaries and two worker processes give the same records
    parallel = ds.map(GENERATORS["remove_sentences"], batched=True, batch_size=2, num_proc=2,
                      fn_kwargs={"seed": 7, "k": 1}, remove_columns=ds.column_names, features=FEATURES)
    assert parallel.to_list() == expected


def test_a_record_a_generator_cannot_use_is_counted_with_its_reason():
    from collections import Counter

    removal, swap = Counter(), Counter()
    assert len(run("remove_sentences", k=1, dropped=removal)) == 6
    assert len(run("next_sentence_swap", dropped=swap)) == 6
    assert removal == {"too_short_for_removal": 1} and swap == {"too_short_for_swap": 1}
    assert len(run("remove_sentences", k=1)) == 6  # without an account the generator runs the same
