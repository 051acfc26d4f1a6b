"""The sentence-feature head that scores SNaC: each sentence read against the sentences before it only, what it
learns from names a text never introduced, its cross-validated choice of L2 (never the test split), and the same
bytes on a second run."""

import numpy as np
import pytest

from cohbench import sentence_cues
from cohbench.baseline import feature_model
from cohbench.baseline.data import Example
from cohbench.embedding_store import sentence_key

pytestmark = pytest.mark.slow  # each test trains or runs the feature head over encoded sentences

HEAD = {"l2": [1.0, 0.1, 0.01], "folds": 3, "seed": 0}
NAMES = ["Anna", "Boris", "Clara", "Dmitri", "Elena", "Fyodor", "Galina", "Ivan", "Katya", "Lev", "Marta", "Nikolai"]
DEEDS = ["walked to the market", "wrote a long letter", "sold the old horse", "visited the church", "left the city"]


def summary(rng, index: int, split: str) -> Example:
    """A summary whose first sentence introduces its hero; an error is a sentence naming someone never introduced."""
    hero = NAMES[index % len(NAMES)]
    sentences, labels = [f"{hero} is a young clerk in Moscow."], [0]
    for k in range(1, 7):
        if rng.random() < 0.35:
            stranger = NAMES[(index + 3 + k) % len(NAMES)]
            sentences.append(f"{stranger} {rng.choice(DEEDS)} on day {k} of story {index}.")
            labels.append(1)
        else:
            sentences.append(f"{rng.choice(['He', 'Then he', hero])} {rng.choice(DEEDS)} on day {k} of story {index}.")
            labels.append(0)
    return Example("snac", f"{split}{index}", split, "sentences", sentences, labels, [-1] * 6)


def corpus(seed=0):
    rng = np.random.default_rng(seed)
    examples = {split: [summary(rng, i + offset, split) for i in range(n)]
                for split, n, offset in (("train", 30, 0), ("validation", 6, 100), ("test", 12, 200))}
    vectors_rng = np.random.default_rng(1)
    vectors = {}
    for e in (e for split in examples.values() for e in split):
        for s in e.sentences:
            v = vectors_rng.standard_normal(8)
            vectors[sentence_key(s)] = np.round(v / np.linalg.norm(v), 5).astype(np.float32)
    sentences = [s for split in examples.values() for e in split for s in e.sentences]
    return examples, vectors, sentence_cues.analyse(sentences)


def test_features_read_each_sentence_against_the_sentences_before_it_only():
    sentences = ["Anna is a clerk.", "Boris sold the horse.", "He left."]
    later = ["Anna is a clerk.", "Boris sold the horse.", "Anna and Boris met Clara."]
    analyses = sentence_cues.analyse(sentences + later)
    v = np.eye(3, 8, dtype=np.float32)
    first, second = sentence_cues.text_features(sentences, analyses, v), sentence_cues.text_features(later, analyses, v)
    assert np.array_equal(first[:2], second[:2])  # what comes after a sentence never changes its row
    new = sentence_cues.NAMES.index("has_new_name")
    assert list(first[:, new]) == [1.0, 1.0, 0.0] and second[2, new] == 1.0  # Boris new at 2; Clara new at 3
    assert first[2, sentence_cues.NAMES.index("opens_with_pronoun")] == 1.0
    assert first.shape == (3, sentence_cues.WIDTH)


def test_the_head_learns_unintroduced_names_chooses_l2_by_cross_validation_and_repeats_its_bytes():
    from cohbench.evaluation import metrics

    examples, vectors, analyses = corpus()
    head = feature_model.fit(examples["train"], examples["validation"], vectors, analyses, HEAD)
    assert set(head.cross_validation["mean_auc_by_l2"]) == {1.0, 0.1, 0.01}
    assert head.l2 == max(head.cross_validation["mean_auc_by_l2"].items(), key=lambda kv: (kv[1], kv[0]))[0]
    scores = feature_model.predict(head, examples["test"], vectors, analyses)
    gold = [label for e in examples["test"] for label in e.sentence_labels]
    assert metrics.roc_auc(gold, [float(x) for s in scores for x in s]) > 0.95
    assert feature_model.weights(head)["has_new_name"] > 0
    again = feature_model.predict(feature_model.fit(examples["train"], examples["validation"], vectors, analyses, HEAD),
                                  examples["test"], vectors, analyses)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(scores, again))



def test_a_head_for_other_text_keeps_the_novelty_prior_where_its_data_teach_nothing():
    """Trained on other text than it scores, the head is pulled towards the untrained novelty sum, not towards zero:
    labels that say nothing about names leave it finding the names a summary never introduced."""
    import pytest

    from cohbench.baseline.data import BaselineError
    from cohbench.evaluation import metrics

    examples, vectors, analyses = corpus()
    rng = np.random.default_rng(3)
    noise = [Example(e.config, e.id, e.split, e.task, e.sentences, [int(v) for v in rng.integers(0, 2, len(e.sentences))],
                     e.gap_labels) for e in examples["train"]]
    own = feature_model.for_other_text({"folds": 3, "seed": 0, "synthetic_l2": 100, "synthetic_prior": 1.0})
    assert own["l2"] == [100.0] and own["prior"] == 1.0
    gold = [label for e in examples["test"] for label in e.sentence_labels]

    def auc(prior: float) -> float:
        head = feature_model.fit(noise, [], vectors, analyses, own | {"prior": prior})
        return metrics.roc_auc(gold, [float(x) for s in feature_model.predict(head, examples["test"], vectors, analyses) for x in s])

    novelty = metrics.roc_auc(gold, [float(x) for e in examples["test"] for x in sentence_cues.novelty(e.sentences, analyses)])
    centred, plain = auc(1.0), auc(0.0)
    assert novelty > 0.8 and centred >= novelty - 0.01 and plain < novelty - 0.1
    with pytest.raises(BaselineError, match="synthetic_prior"):
        feature_model.for_other_text({"synthetic_l2": 100})
