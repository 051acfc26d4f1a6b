"""Sentence vectors (what the baseline and the embedding reference scorers read) are all-MiniLM-L6-v2's mean-pooled
embeddings, computed in float64 and rounded, so they depend neither on the batch a sentence met nor on the process's
code path: a process pinned for float32 training encodes in an unpinned one and gets the same bytes."""

import os

import numpy as np
import pytest

from cohbench import numerics
from cohbench.embedding_store import sentence_key, sentence_vectors
from cohbench.encoder import CPU, DIMENSIONS, VECTOR_DECIMALS, encode, encoder_path

pytestmark = pytest.mark.slow  # each test runs the encoder

SHORT = "Tom went home."
OTHERS = ["After a very long day at the harbour, where the ships had come in late, everyone was tired.",
          "Anna slept.", "The dog barked at the mailman."]


def vectors(sentences, **options) -> dict[str, np.ndarray]:
    return {s: v for s, v, _ in encode(sentences, device=CPU, tokens=False, **options)}


def test_vectors_are_sentence_transformers_mean_pooled_embeddings():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(encoder_path(), device="cpu").double()
    expected = model.encode([SHORT, *OTHERS], convert_to_numpy=True)
    ours = vectors([SHORT, *OTHERS])
    got = np.stack([ours[s] for s in [SHORT, *OTHERS]])
    assert got.shape == (4, DIMENSIONS) and got.dtype == np.float32
    assert np.abs(got - expected).max() <= 0.5 * 10.0 ** -VECTOR_DECIMALS + 1e-7  # the rounding, nothing more
    assert np.abs(got - np.round(got, VECTOR_DECIMALS)).max() < 1e-7  # on the grid, as float32 holds it


def test_a_sentences_vector_does_not_depend_on_its_batch():
    alone = vectors([SHORT])[SHORT]
    padded_among_longer = vectors([SHORT, *OTHERS])[SHORT]
    in_batches_of_one = vectors([SHORT, *OTHERS], batch_size=1)[SHORT]
    assert alone.tobytes() == padded_among_longer.tobytes() == in_batches_of_one.tobytes()


def test_a_process_pinned_for_training_encodes_off_that_path(tmp_path, monkeypatch):
    for name in numerics.FOR_TRAINING:
        monkeypatch.setenv(name, "")  # so that the pins set below are undone after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(numerics, "_set_here", set())
    here = sentence_vectors([SHORT, *OTHERS], tmp_path / "here")
    numerics.pin_for_training()
    assert numerics.unpinned(os.getenv, "MKL_CBWR") is None  # the encoding process runs without the pin
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"  # and this one keeps it
    pinned = sentence_vectors([SHORT, *OTHERS], tmp_path / "pinned")
    assert sorted(pinned) == sorted(here) == sorted(sentence_key(s) for s in [SHORT, *OTHERS])
    assert all(pinned[k].tobytes() == here[k].tobytes() for k in here)


@pytest.mark.parametrize("lengths", [[5, 3, 1], [4, 4]], ids=["padded", "unpadded"])
def test_the_attention_mask_the_encoder_passes_is_the_one_transformers_would_make(lengths):
    """The encoder makes the model's attention mask on the host's knowledge of the padding (transformers asks the
    device, a wait per batch): it must be exactly transformers' own for the model's attention, padded or not, or
    the encoded bytes could move."""
    import torch
    from transformers.masking_utils import create_bidirectional_mask

    from cohbench import encoder

    _, model = encoder._encoder("cpu")
    present = np.arange(max(lengths)) < np.array(lengths)[:, None]
    mask = torch.from_numpy(present.astype(np.int64))
    embeds = torch.zeros((len(lengths), max(lengths), DIMENSIONS), dtype=torch.float64)
    theirs = create_bidirectional_mask(config=model.config, inputs_embeds=embeds, attention_mask=mask)
    ours = encoder.attention_mask(present, mask)
    if theirs is None:
        assert ours is None
    else:
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and torch.equal(ours, theirs)
