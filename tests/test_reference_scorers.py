"""Untrained reference scorers, one registry keyed by unit: each ranks an obviously discordant sentence (or the gap
left by a missing one) above the rest, the entity cue ranks a sentence that brings in an unintroduced name above
one that does not, summary references read the summary and its source, rating references are SummEval's measures
in the error polarity, a scorer's needs (not its name) decide where it applies, the SNaC protocol's context is the
preceding text only, and `cohbench evaluate --scorer` scores a built config by its protocol, or refuses an unknown
scorer with the known names."""

import json

import numpy as np
import pytest

from cohbench.evaluation import references as reference
from cohbench.cli import main

from release_fixture import record, write_config

GARDEN = ["Maya planted tomatoes in her garden.", "Maya watered the tomatoes in her garden every morning.",
          "The tomatoes in her garden grew red and heavy.", "Maya picked the ripe tomatoes in August.",
          "Maya made a sauce from the tomatoes of her garden."]  # fmt: skip
SPACE = "The rocket engine fired for ninety seconds before docking with the orbital station."


def scored(texts, task="sentences", prefix_only=False, train_texts=(), train_labels=(), records=()):
    return reference.Scored(texts=texts, train_texts=list(train_texts), train_labels=list(train_labels), prefix_only=prefix_only,
                            unit=task, records=list(records))


@pytest.mark.parametrize("name", ["tfidf_dissimilarity", "embedding_dissimilarity", "embedding_closest_dissimilarity"])
def test_dissimilarity_scorers_rank_the_discordant_sentence_first(name, workspace):
    story = GARDEN[:2] + [SPACE] + GARDEN[3:]
    scores = reference.REFERENCES[name].score(scored([story], train_texts=[GARDEN, [SPACE]]))[0]
    assert len(scores) == 5 and int(np.argmax(scores)) == 2


def test_the_closest_sentence_dissimilarity_reads_the_one_nearest_sentence_not_the_context_s_mean(workspace):
    # a space sentence repeated after a garden story: far from the context's mean, but its twin is in the context
    story = GARDEN[:3] + [SPACE] + GARDEN[3:] + [SPACE]
    closest = reference.REFERENCES["embedding_closest_dissimilarity"].score(scored([story], prefix_only=True))[0]
    mean = reference.REFERENCES["embedding_dissimilarity"].score(scored([story], prefix_only=True))[0]
    assert closest[0] == 0.0 and closest[-1] == pytest.approx(0.0, abs=1e-9) and mean[-1] > 0.3
    assert int(np.argmax(closest)) == 3  # the first space sentence, with no twin before it


def test_the_novelty_count_sums_the_head_s_five_novelty_cues_read_against_the_sentences_before(workspace):
    from cohbench import sentence_cues

    story = ["Anna lived in Kiev with her father.", "She baked bread every morning.",
             "Count Orlov arrived with the ambassador.", "Anna served them bread."]
    counts = reference.REFERENCES["novelty_count"].score(scored([story], prefix_only=True))[0]
    rows = sentence_cues.text_features(story, sentence_cues.analyse(story), np.zeros((4, 1)))
    columns = [sentence_cues.NAMES.index(n) for n in sentence_cues.NOVELTY]
    assert counts == [float(v) for v in rows[:, columns].sum(axis=1)]
    assert counts[2] > counts[3] and counts[1] == 0.0  # strangers and a new definite; a pronoun and known names


@pytest.mark.parametrize("name", ["tfidf_gap_drop", "embedding_gap_drop"])
def test_gap_scorers_rank_the_gap_at_a_topic_break_first(name, workspace):
    text = GARDEN[:3] + [SPACE, "Its crew of three checked the docking clamps of the orbital station."]
    scores = reference.REFERENCES[name].score(scored([text], task="gaps", train_texts=[GARDEN, text[3:]]))[0]
    assert len(scores) == 4 and int(np.argmax(scores)) == 2


def test_prefix_context_ignores_later_sentences_and_gives_the_first_sentence_no_evidence(workspace):
    one = GARDEN[:3] + [SPACE, GARDEN[4]]
    other = GARDEN[:3] + [SPACE, SPACE]
    score = reference.REFERENCES["tfidf_dissimilarity"].score
    a, b = score(scored([one, other], prefix_only=True, train_texts=[GARDEN]))
    assert a[0] == 0.0 and a[:4] == b[:4] and a[3] == max(a)


def test_position_prior_is_the_train_error_rate_at_each_position():
    train_labels = [[0, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]
    data = scored([["a", "b", "c", "d"]], train_texts=[["x"] * 3] * 4, train_labels=train_labels)
    assert reference.REFERENCES["position_prior"].score(data) == [[0.25, 0.5, 0.25, pytest.approx(4 / 12)]]  # past the train lengths: overall rate
    with pytest.raises(reference.ScorerError, match="needs a labelled train split"):
        reference.REFERENCES["position_prior"].score(scored([["a"]]))


def _toy_release(root):
    def story(i, position):
        sentences = list(GARDEN)
        sentences[position] = SPACE.replace("ninety", str(10 + i))
        labels = [0] * 5
        labels[position] = 1
        return record(f"s{i}", f"s{i}", sentences, sentence_labels=labels)

    splits = {"train": [story(i, i % 5) for i in range(10)], "validation": [story(i, i % 5) for i in range(10, 15)],
              "test": [story(i, (i + 2) % 5) for i in range(15, 20)]}  # fmt: skip
    return write_config(root, "timetravel_dsd", "timetravel", splits)


def test_evaluate_with_a_scorer_reports_threshold_free_metrics_beside_the_tuned_ones(workspace, capsys):
    _toy_release(workspace / "release")
    assert main(["evaluate", "timetravel_dsd", "--scorer", "embedding_dissimilarity", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    test = result["splits"]["test"]
    assert result["scorer"] == "embedding_dissimilarity" and result["decision"]["tuned_on"] == "validation"
    assert test["auc"] == 1.0 and test["average_precision"] == 1.0 and test["recall_at_p70"] == 1.0


def test_an_unknown_or_inapplicable_scorer_is_refused_with_the_known_names(workspace, capsys):
    _toy_release(workspace / "release")
    assert main(["evaluate", "timetravel_dsd", "--scorer", "bm25"]) == 1
    err = capsys.readouterr().err
    assert "unknown reference scorer 'bm25'" in err and "embedding_dissimilarity" in err and "Traceback" not in err
    assert main(["evaluate", "timetravel_dsd", "--scorer", "tfidf_gap_drop"]) == 1
    assert "scorers for sentences units: position_prior, tfidf_dissimilarity, embedding_dissimilarity, embedding_closest_dissimilarity, novelty_count, entity_cue" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--sizes", "abc"], ["--sizes", "0"], ["--seeds", "x"], ["--token-sizes", "-5"]])
def test_a_study_with_bad_sizes_or_seeds_is_refused_with_one_line(argv, workspace, capsys):
    assert main(["study", "learning-curve", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "takes" in err and "Traceback" not in err


def test_the_snac_protocol_gives_the_scorers_the_preceding_text_only(workspace):
    rows = [record("r", "d", GARDEN[:3] + [SPACE, GARDEN[4]], sentence_labels=[0, 0, 0, 1, 0], split="test")]
    snac = reference.predictions("tfidf_dissimilarity", {"test": rows}, "typed_sentences")
    plain = reference.predictions("tfidf_dissimilarity", {"test": rows}, "sentences")
    assert snac[0]["score"][0] == 0.0 and plain[0]["score"][0] > 0.0


def test_the_entity_cue_scores_a_sentence_by_the_names_it_brings_in_unintroduced():
    text = ["Maya planted tomatoes.", "She watered them.", "Then Ferdinand sold the tractor.", "Maya thanked Ferdinand."]
    assert reference.REFERENCES["entity_cue"].score(scored([text]))[0] == [1.0, 0.0, 1.5, 0.0]  # the tractor: half a name


def test_summary_references_read_the_summary_and_its_source():
    records = [{"source_text": "Anna baked bread in the old kitchen."}, {"source_text": "Anna baked bread."}]
    texts = [["Anna baked bread."], ["Anna flew a rocket to the moon."]]
    data = scored(texts, task="summary", records=records)
    assert reference.REFERENCES["summary_length"].score(data) == [3.0, 7.0]
    assert reference.REFERENCES["source_novelty"].score(data) == [0.0, 0.75]  # of anna, flew, rocket, moon, only anna is in the source


def test_a_scorer_applies_where_the_data_gives_what_it_declares_it_needs():
    labelled = {"train": [record("t", "t", ["A.", "B."], sentence_labels=[0, 1])], "test": [record("r", "r", ["A."])]}
    unlabelled = {"test": [record("r", "r", ["A."])]}
    assert reference.applicable("position_prior", labelled, "sentences")
    assert reference.unmet("position_prior", unlabelled, "sentences") == "needs a train split labelled for its unit"
    assert reference.unmet("source_novelty", unlabelled, "summary") == "needs a source text on every scored record"
    assert reference.unmet("entity_cue", labelled, "gaps").startswith("scores sentences units")
    assert set(reference.scorers_for("ratings")) >= {"uppercase", "architecture", "random", "summary_length"}
    assert all(reference.scorers_for(unit) for unit in ("sentences", "gaps", "summary", "ratings"))


def test_rating_references_are_the_meta_evaluation_measures_in_the_error_polarity():
    rows = [record(f"d{d}/{s}", f"d{d}", ["Some Capitals Here." if s == "M22" else "lower case."], system=s, split="test",
                   ratings=[{"annotator": f"e{k}", "annotator_type": "expert", "dimension": "coherence", "score": 3} for k in range(3)])
            for d in range(2) for s in ("M0", "M22")]  # fmt: skip
    lines = {line["id"]: line["score"] for line in reference.predictions("architecture", {"test": rows}, "metaeval")}
    assert lines == {"d0/M0": 0.0, "d0/M22": -1.0, "d1/M0": 0.0, "d1/M22": -1.0}  # BART is a transformer: more coherent
    assert reference.REFERENCES["upper-bound"].oracle and not reference.REFERENCES["architecture"].oracle
