"""The baseline's model on random embeddings: padding never changes a text's scores, SNaC-style prefix scoring judges
each sentence on the preceding text only, and a text longer than the model's positions is scored in windows, every
sentence by the model itself."""

import numpy as np
import pytest
import torch

from cohbench.baseline import Example
from cohbench.embedding_store import sentence_key
from cohbench.encoder import DIMENSIONS
from cohbench.baseline.sentence_level_fit import predict, predict_prefixes, windows
from cohbench.baseline.model import SentenceLevelDetector


@pytest.fixture
def setup():
    torch.manual_seed(0)
    model = SentenceLevelDetector(DIMENSIONS, 32, 2, 2, 0.0, 16)
    rng = np.random.default_rng(0)
    sentences = [f"sentence {i}." for i in range(12)]
    vectors = {sentence_key(s): rng.normal(size=DIMENSIONS).astype(np.float32) for s in sentences}
    return model, sentences, vectors


def example(sentences, task="sentences"):
    n = len(sentences)
    return Example("c", "x", "test", task, sentences, [0] * n, [0] * (n - 1))


def test_padding_in_a_batch_does_not_change_scores(setup):
    model, s, vectors = setup
    short, long = example(s[:4]), example(s[:10])
    alone = predict(model, [short], vectors, 16)[0]
    padded = predict(model, [short, long], vectors, 16)[0]
    np.testing.assert_allclose(alone, padded, atol=1e-5)
    gaps = predict(model, [example(s[:4], "gaps")], vectors, 16)[0]
    assert gaps.shape == (3,)


def test_prefix_scores_ignore_later_sentences(setup):
    model, s, vectors = setup
    one, other = example(s[:5]), example(s[:4] + [s[9]])
    np.testing.assert_allclose(predict_prefixes(model, [one], vectors, 16)[0][:4], predict_prefixes(model, [other], vectors, 16)[0][:4], atol=1e-6)
    assert not np.allclose(predict(model, [one], vectors, 16)[0][:4], predict(model, [other], vectors, 16)[0][:4])


def test_a_text_longer_than_the_positions_is_scored_in_windows_each_sentence_by_the_model(setup):
    model, s, vectors = setup
    rng = np.random.default_rng(1)
    long_text = [f"long {i}." for i in range(40)]
    vectors.update({sentence_key(t): rng.normal(size=DIMENSIONS).astype(np.float32) for t in long_text})
    spans = windows(40, 16)
    assert spans[0] == (0, 16) and spans[-1] == (24, 40) and all(b - a == 16 for a, b in spans)
    for task, units in (("sentences", 40), ("gaps", 39)):
        scores = predict(model, [example(long_text, task)], vectors, 16)[0]
        assert scores.shape == (units,) and np.isfinite(scores).all()
        # sentence 20 has the most context on both sides in the window starting at 16 (start 8 gives 12 before, 3 after)
        alone = predict(model, [example(long_text[16:32], task)], vectors, 16)[0]
        np.testing.assert_allclose(scores[20], alone[4], atol=1e-6)
