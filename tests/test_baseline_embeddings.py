"""The baseline's sentence embeddings depend only on the run's sentence set, never on what an earlier run cached."""

import numpy as np

from cohbench.baseline.embeddings import DIMENSIONS, EmbeddingCache, sentence_key

SHORT = "Tom went home."
EARLIER = [SHORT, "After a very long day at the harbour, where the ships had come in late, everyone was tired."]
NOW = [SHORT, "Anna slept.", "The dog barked at the mailman."]


def test_vectors_of_a_set_do_not_depend_on_what_was_cached_before(tmp_path):
    warm = EmbeddingCache(tmp_path / "warm")
    warm.embed(EARLIER, progress=False)
    after_earlier = warm.embed(NOW, progress=False)
    fresh = EmbeddingCache(tmp_path / "fresh").embed(NOW, progress=False)
    assert sorted(after_earlier) == sorted(fresh) == sorted(sentence_key(s) for s in NOW)
    assert all(np.array_equal(after_earlier[k], fresh[k]) and fresh[k].shape == (DIMENSIONS,) for k in fresh)


def test_a_set_seen_before_is_read_back_not_encoded(tmp_path, capsys):
    cache = EmbeddingCache(tmp_path)
    first = cache.embed(NOW + [SHORT], progress=True)
    assert "encoding 3 sentence(s)" in capsys.readouterr().err
    again = EmbeddingCache(tmp_path).embed(reversed(NOW), progress=True)
    assert "encoding" not in capsys.readouterr().err
    assert all(np.array_equal(first[k], again[k]) for k in first) and len(list(tmp_path.glob("*.npz"))) == 1
