"""Token embeddings kept between builds (`generators.embedding_store`): a sentence one build encoded is read by the
next, with the same scores; a damaged pack, or one from another encoder, is never read."""

from __future__ import annotations

import pytest

from cohbench.generators import bertscore, embedding_store
from cohbench.generators.bertscore import TokenEmbeddings

REFERENCE = "The fox ran into the dark forest."
CANDIDATES = ["A fox hid in the woods at night.", "The king counted his gold.", "Rain fell on the old mill."]


def scores() -> list[float]:
    return TokenEmbeddings(device="cpu").f1(REFERENCE, CANDIDATES)


def test_a_later_build_reads_the_embeddings_an_earlier_one_kept(tmp_path, monkeypatch):
    with embedding_store.kept_embeddings(tmp_path):
        first = scores()
    (pack,) = tmp_path.glob("*.npz")
    monkeypatch.setattr(bertscore, "_encoder", lambda device: pytest.fail("encoded a kept sentence again"))
    with embedding_store.kept_embeddings(tmp_path):
        assert scores() == first
    assert list(tmp_path.glob("*.npz")) == [pack]  # nothing new to keep


def test_without_a_store_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores()
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_pack_is_deleted_and_its_sentences_encoded_again(tmp_path, capsys):
    with embedding_store.kept_embeddings(tmp_path):
        first = scores()
    (pack,) = tmp_path.glob("*.npz")
    content = bytearray(pack.read_bytes())
    content[-100] ^= 1
    pack.write_bytes(bytes(content))
    with embedding_store.kept_embeddings(tmp_path):
        assert scores() == first
    assert "its bytes do not match its name" in capsys.readouterr().err
    (remade,) = tmp_path.glob("*.npz")
    assert remade.read_bytes() != bytes(content)


def test_a_pack_from_another_encoder_is_not_read(tmp_path, monkeypatch):
    with embedding_store.kept_embeddings(tmp_path):
        scores()
    monkeypatch.setattr(embedding_store, "FORMAT", embedding_store.FORMAT + 1)
    with embedding_store.kept_embeddings(tmp_path):
        scores()
    assert len(list(tmp_path.glob("*.npz"))) == 2  # this encoder's own pack beside the other's
