"""BM25 over a sentence pool: bm25s (fast, default) or rank_bm25 (the reference implementation, exact parity).

Both see the same tokens (lower-cased words). Their rankings differ (IDF variant; see gotchas), so confounders
agree between them only when the same retriever is chosen."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

RETRIEVERS = ("bm25s", "rank_bm25")
_WORD = re.compile(r"[\w']+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Bm25:
    def __init__(self, texts: Sequence[str], retriever: str = "bm25s"):
        if retriever not in RETRIEVERS:
            from .registry import CorruptionError

            raise CorruptionError(f"unknown retriever {retriever!r}; choose one of {', '.join(RETRIEVERS)}")
        self.retriever = retriever
        self.size = len(texts)
        tokens = [tokenize(t) for t in texts]
        if retriever == "bm25s":
            import bm25s

            self._index = bm25s.BM25()
            self._index.index(tokens, show_progress=False)
            self._vocab = self._index.vocab_dict
        else:
            from rank_bm25 import BM25Okapi

            self._index = BM25Okapi(tokens)

    def top(self, queries: Sequence[str], k: int) -> list[list[int]]:
        """Indices of the `k` best-scoring pool texts for each query, best first (ties: lower index first)."""
        k = min(k, self.size)
        if self.retriever == "rank_bm25":
            return [rank_bm25_top(self._index, q, k) for q in queries]
        query_tokens = [[t for t in tokenize(q) if t in self._vocab] for q in queries]
        out = [[] for _ in queries]
        live = [i for i, tokens in enumerate(query_tokens) if tokens]
        if live:
            docs, scores = self._index.retrieve([query_tokens[i] for i in live], k=k, show_progress=False, n_threads=1)
            for row, i in enumerate(live):
                # Re-sort by (score desc, index asc) so that ties are ordered the same on every platform.
                order = sorted(range(k), key=lambda j: (-float(scores[row, j]), int(docs[row, j])))
                out[i] = [int(docs[row, j]) for j in order if scores[row, j] > 0]
        return out


def rank_bm25_top(index, query: str, k: int) -> list[int]:
    """rank_bm25's ranking: score the whole pool, stable sort (ties: lower index first), no-match texts left out."""
    scores = index.get_scores(tokenize(query))
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]
