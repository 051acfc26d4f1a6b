"""BM25 over a sentence pool: bm25s (fast, default) or rank_bm25 (the reference implementation, exact parity).

Both see the same tokens (lower-cased words). Their rankings differ (IDF variant; see gotchas), so confounders
agree between them only when the same retriever is chosen.

A bm25s index can be cut into shards by document (`Bm25.shards`) for pools too big for one worker: each shard
keeps the pool-wide term statistics, so a document scores the same in its shard as in the whole index, and the
per-shard top-k merged by (score, index) is the whole index's top-k (up to which of several candidates tied
exactly at the k-th score are kept)."""

from __future__ import annotations

import copy
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
        return [[i for i, _ in hits] for hits in self.scored_top(queries, k)]

    def scored_top(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """(index, score) of the `k` best-scoring pool texts for each query, best first (ties: lower index first)."""
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
                out[i] = [(int(docs[row, j]), float(scores[row, j])) for j in order if scores[row, j] > 0]
        return out

    def shards(self, count: int) -> list["Bm25Shard"]:
        """The index cut into `count` shards of consecutive documents, each scoring with the pool-wide statistics."""
        if self.retriever != "bm25s":
            from .registry import CorruptionError

            raise CorruptionError("only the bm25s retriever can be sharded; use --retriever bm25s or one shard")
        import scipy.sparse as sp

        scores = self._index.scores
        matrix = sp.csc_matrix((scores["data"], scores["indices"], scores["indptr"]),
                               shape=(scores["num_docs"], len(scores["indptr"]) - 1))
        bounds = [round(n * self.size / count) for n in range(count + 1)]
        out = []
        for start, end in zip(bounds, bounds[1:]):
            part = matrix[start:end].tocsc()
            part.sort_indices()
            shard = copy.copy(self)
            shard.size = end - start
            shard._index = copy.copy(self._index)
            shard._index.corpus = None
            shard._index.scores = {"data": part.data, "indices": part.indices.astype(np.int32),
                                   "indptr": part.indptr.astype(np.int64), "num_docs": end - start}
            out.append(Bm25Shard(start, shard))
        return out


class Bm25Shard:
    """A slice of a sharded index: documents [offset, offset + size) of the pool."""

    def __init__(self, offset: int, index: Bm25):
        self.offset, self.index = offset, index

    def scored_top(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        return [[(self.offset + i, score) for i, score in hits] for hits in self.index.scored_top(queries, k)]


def merged_top(shards: Sequence, queries: Sequence[str], k: int) -> list[list[int]]:
    """Top-k per shard, merged: the `k` best (score desc, pool index asc) of all shards' candidates."""
    merged = [[] for _ in queries]
    for shard in shards:
        for hits, found in zip(merged, shard.scored_top(queries, k)):
            hits += found
    return [[i for i, _ in sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:k]] for hits in merged]


def rank_bm25_top(index, query: str, k: int) -> list[int]:
    """rank_bm25's ranking: score the whole pool, stable sort (ties: lower index first), no-match texts left out."""
    scores = index.get_scores(tokenize(query))
    return [(int(i), float(scores[i])) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]
