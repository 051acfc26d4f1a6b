"""What the encoder made, kept between runs (`embedding_store`): a sentence one build encoded is read by the
next build and by the baseline, with the same scores and vectors; a damaged pack, or one from another encoder, is
never read."""

from __future__ import annotations

import numpy as np
import pytest

from cohbench import embedding_store, encoder
from cohbench.corruptions.bertscore import TokenEmbeddings
from cohbench.encoder import CPU
from cohbench.embedding_store import sentence_key, sentence_vectors

REFERENCE = "The fox ran into the dark forest."
CANDIDATES = ["A fox hid in the woods at night.", "The king counted his gold.", "Rain fell on the old mill."]


def scores() -> list[float]:
    return TokenEmbeddings(device=CPU).f1(REFERENCE, CANDIDATES)


def refuse_to_encode(monkeypatch):
    monkeypatch.setattr(encoder, "_encoder", lambda device: pytest.fail("encoded a kept sentence again"))


@pytest.mark.slow
def test_a_later_build_reads_the_embeddings_an_earlier_one_kept(tmp_path, monkeypatch):
    with embedding_store.kept_embeddings(tmp_path):
        first = scores()
    packs = sorted(tmp_path.rglob("*.npz"))
    assert [p.parent.name for p in packs] == ["tokens", "vectors"]
    refuse_to_encode(monkeypatch)
    with embedding_store.kept_embeddings(tmp_path):
        assert scores() == first
    assert sorted(tmp_path.rglob("*.npz")) == packs  # nothing new to keep


@pytest.mark.slow
def test_what_a_build_keeps_is_what_the_encoder_makes_bit_for_bit(tmp_path):
    """The store gets a call's tokens, weights and vectors in one packed copy from the device: unpacked, each
    sentence's are the encoder's own, in their dtypes."""
    sentences = [REFERENCE, *CANDIDATES]
    with embedding_store.kept_embeddings(tmp_path):
        TokenEmbeddings(device=CPU).encode(sentences)
        store = embedding_store.active()
        for sentence, vector, (tokens, weights) in encoder.encode(sentences, CPU):
            kept_tokens, kept_weights = store.tokens(sentence)
            assert kept_tokens.dtype == np.float32 and np.array_equal(kept_tokens, tokens)
            assert kept_weights.dtype == np.float64 and np.array_equal(kept_weights, weights)
            assert store.vector(sentence).dtype == np.float32 and np.array_equal(store.vector(sentence), vector)


@pytest.mark.slow
def test_the_baseline_reads_the_vectors_a_build_left(tmp_path, monkeypatch):
    with embedding_store.kept_embeddings(tmp_path):
        scores()
    fresh = sentence_vectors([REFERENCE, *CANDIDATES], tmp_path / "elsewhere")
    refuse_to_encode(monkeypatch)
    kept = sentence_vectors([*CANDIDATES, REFERENCE, REFERENCE], tmp_path)
    assert sorted(kept) == sorted(sentence_key(s) for s in [REFERENCE, *CANDIDATES])
    assert all(np.array_equal(kept[k], fresh[k]) for k in kept)


def test_vectors_encoded_once_are_read_back_and_only_the_missing_encoded(tmp_path, monkeypatch):
    first = sentence_vectors(CANDIDATES, tmp_path)
    asked = []
    real = encoder.encode_batches
    monkeypatch.setattr(encoder, "encode_batches", lambda sentences, **kw: asked.append(sorted(sentences)) or real(sentences, **kw))
    both = sentence_vectors([REFERENCE, *CANDIDATES], tmp_path)
    assert asked == [[REFERENCE]]
    assert all(np.array_equal(both[k], v) for k, v in first.items())
    assert len(list((tmp_path / "vectors").glob("*.npz"))) == 2


def test_without_a_store_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores()
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_pack_is_deleted_and_its_sentences_encoded_again(tmp_path, capsys):
    with embedding_store.kept_embeddings(tmp_path):
        first = scores()
    (pack,) = (tmp_path / "tokens").glob("*.npz")
    content = bytearray(pack.read_bytes())
    content[-100] ^= 1
    pack.write_bytes(bytes(content))
    with embedding_store.kept_embeddings(tmp_path):
        assert scores() == first
    assert "its bytes do not match its name" in capsys.readouterr().err
    (remade,) = (tmp_path / "tokens").glob("*.npz")
    assert remade.read_bytes() != bytes(content)


def test_a_pack_from_another_encoder_is_not_read(tmp_path, monkeypatch):
    with embedding_store.kept_embeddings(tmp_path):
        scores()
    monkeypatch.setattr(embedding_store, "FORMAT", embedding_store.FORMAT + 1)
    with embedding_store.kept_embeddings(tmp_path):
        scores()
    assert len(list((tmp_path / "tokens").glob("*.npz"))) == 2  # this encoder's own pack beside the other's
