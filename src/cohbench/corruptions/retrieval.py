"""BM25 over a sentence pool: bm25s (exhaustive, the default), rank_bm25 (the reference implementation, exact
parity) or tantivy (an inverted index on disk, memory-mapped: a query scores the documents of its terms' posting
lists, all of them, since the Python binding's search collects through a multi-collector and never runs tantivy's
block-max WAND; catalog/SCALE.md measures it).

All three see the same tokens (`text.words`: lower-cased runs of word characters and apostrophes); tantivy receives
them joined by spaces and split on whitespace only (`TOKENS`, no other filter), so a sentence's terms and length
are the same everywhere. Their BM25 differs, so confounders agree between them only when the same retriever is
chosen: bm25s scores "lucene" BM25 (idf ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.5, b = 0.75, float32; its
exact top-k, `bm25_top`, runs on the CPU or batched on a GPU with the same candidates and scores); tantivy the
same idf with k1 = 1.2, b = 0.75 (fixed by tantivy), times k1 + 1 (a constant: no effect on the ranking), document
lengths stored on one byte (exact for short sentences, approximate beyond about 40 tokens) and float32 scores;
rank_bm25 its own Okapi idf. A query is the OR of its tokens, a repeated token counted each time. Ties are ordered
by pool index (lower first) for every retriever, at the k-th score too (the lowest indices are kept).

A bm25s index can be cut into shards by document (`Bm25.shards`) for pools too big for one worker: each shard
keeps the pool-wide term statistics, so a document scores the same in its shard as in the whole index, and the
per-shard top-k merged by (score, index) is the whole index's top-k. A tantivy pool with shards is one index per
shard of consecutive sentences, each with its own statistics (as Elasticsearch's per-shard scoring): the merged
top-k depends on the number of shards, which is therefore one of the parameters that decide the confounders. Each
tantivy shard lies in a folder marked with the pool's fingerprint; a worker opens it memory-mapped, and refuses a
folder that is missing or was built from another pool."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..atomic import write_text
from ..encoder import AUTO, Device
from ..text import words

RETRIEVERS = ("bm25s", "rank_bm25", "tantivy")
SCORED_ON_DEVICE = ("bm25s",)  # scores on the device it is given (`bm25_top`); the others on the CPU, whatever it is
EXTRA_OF = {"bm25s": "build", "rank_bm25": "build", "tantivy": "tantivy"}  # the cohbench extra that installs each
TOKENS = "cohbench_words"  # tantivy's name for `text.words`' tokens: split on whitespace, nothing else
SHARD_MARK = "cohbench-shard.json"  # written last into a tantivy shard's folder: which pool and which sentences
# Indexing memory of a tantivy shard's one writer thread (allocated as needed; tantivy takes at most ~4 GB a thread).
# A shard must fit one segment in it: measured ~20 B of index per short sentence on disk, more while indexing.
WRITER_HEAP = 2_000_000_000


def _unknown_or_missing(retriever: str):
    """A retriever that is unknown, or not installed (named with the extra that installs it), as an error."""
    from ..errors import CorruptionError

    if retriever not in RETRIEVERS:
        return CorruptionError(f"unknown retriever {retriever!r}; choose one of {', '.join(RETRIEVERS)}")
    module = retriever
    try:
        _bm25s() if module == "bm25s" else __import__(module)
    except ImportError:
        return CorruptionError(f"the {retriever} retriever needs the {module} package: pip install 'cohbench[{EXTRA_OF[retriever]}]'")
    return None


def _bm25s():
    """bm25s, imported without letting JAX (which bm25s tries at import, where it is installed) take 75% of a GPU's
    memory on first use; cohbench reads its scores and never its top-k (`bm25_top`)."""
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import bm25s

    return bm25s


def pool_index(texts: Sequence[str], retriever: str, shards: int = 1):
    """The index of a pool: (one index, None), or (None, `shards` shards whose top-k lists `merged_top` merges)."""
    problem = _unknown_or_missing(retriever)
    if problem:
        raise problem
    if retriever == "tantivy":
        built = TantivyShard.build_pool(texts, shards)
        return (built[0], None) if shards == 1 else (None, built)
    index = Bm25(texts, retriever)
    return (index, None) if shards == 1 else (None, index.shards(shards))


def bm25s_index(tokens: Sequence[Sequence[str]]):
    """A bm25s index of tokenised documents with the scores `bm25s.BM25().index(tokens)` computes, bit for bit,
    built with array operations instead of its Python loop over documents (~7x faster at 40,000 sentences: what a
    run's driver pays per story before any worker starts). Each (document, term) score is bm25s's own arithmetic
    ("lucene": idf ln(1 + (N - df + 0.5) / (df + 0.5)) in Python floats, rounded to float32; term frequency over
    tf + k1 * (1 - b + b * length / mean length) in float64; the product rounded to float32), stored as its CSC
    matrix (one column per term, documents ascending). Term ids follow first appearance, where bm25s's follow a
    set's order (a query adds its terms' columns in query order, so ids never change a score). A pool in which no
    sentence has a word is an index without terms, whose queries find nothing (bm25s refuses to index it)."""
    import math

    bm25s = _bm25s()
    index = bm25s.BM25(method="lucene")  # the arithmetic below is lucene's (bm25s's default)
    vocab: dict[str, int] = {}
    term_ids = np.fromiter((vocab.setdefault(t, len(vocab)) for doc in tokens for t in doc), dtype=np.int64)
    lengths = np.fromiter((len(doc) for doc in tokens), dtype=np.int64, count=len(tokens))
    width = max(len(vocab), 1)  # a (document, term) pair as one integer: document * width + term
    pairs, counts = np.unique(np.repeat(np.arange(len(tokens), dtype=np.int64), lengths) * width + term_ids,
                              return_counts=True)  # documents ascending, each pair with its frequency
    docs, terms = np.divmod(pairs, width)
    frequencies = np.bincount(terms, minlength=len(vocab))
    seen, which = np.unique(frequencies, return_inverse=True)  # a few hundred document frequencies, each logged once
    idf = np.array([math.log(1 + (len(tokens) - df + 0.5) / (df + 0.5)) for df in seen.tolist()], dtype=index.dtype)[which]
    mean_length = lengths.mean() if lengths.any() else 1.0  # no document has a term: no score uses it
    saturation = index.k1 * ((1 - index.b) + index.b * lengths / mean_length)
    tf = counts.astype(np.float64)
    scores = (idf[terms] * (tf / (saturation[docs] + tf))).astype(index.dtype)
    by_term = np.argsort(terms, kind="stable")  # documents stay ascending within a term's column
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(frequencies, out=indptr[1:])
    index.scores = {"data": scores[by_term], "indices": docs[by_term].astype(index.int_dtype), "indptr": indptr,
                    "num_docs": len(tokens)}
    index.vocab_dict = vocab
    index.unique_token_ids_set = set(vocab.values())
    index.nonoccurrence_array = None  # only bm25l and bm25+ subtract one
    return index


class Bm25:
    """An index held in memory: bm25s or rank_bm25 (`pool_index` checks the name; a tantivy index lies on disk)."""

    def __init__(self, texts: Sequence[str], retriever: str = "bm25s"):
        self.retriever = retriever
        self.size = len(texts)
        self._on_device = {}  # device -> bm25_top.DeviceBm25 of a bm25s index, made on first use there, never pickled
        tokens = [words(t) for t in texts]
        if retriever == "bm25s":
            self._index = bm25s_index(tokens)
            self._vocab = self._index.vocab_dict
        else:
            from rank_bm25 import BM25Okapi

            self._index = BM25Okapi(tokens)

    def __getstate__(self):
        return {**self.__dict__, "_on_device": {}}

    def top(self, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[int]]:
        """Indices of the `k` best-scoring pool texts for each query, best first (ties: lower index first)."""
        return [[i for i, _ in hits] for hits in self.scored_top(queries, k, device)]

    def scored_top(self, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[tuple[int, float]]]:
        """(index, score) of the `k` best-scoring pool texts for each query, best first (ties: lower index first).
        bm25s's run on `device`, with the same result everywhere."""
        k = min(k, self.size)
        if self.retriever == "rank_bm25":
            return [rank_bm25_top(self._index, q, k) for q in queries]
        from . import bm25_top

        terms = [[self._vocab[t] for t in words(q) if t in self._vocab] for q in queries]
        if not device.is_gpu:
            return bm25_top.cpu_top(self._index, terms, k)
        if device.kind not in self._on_device:
            self._on_device[device.kind] = bm25_top.DeviceBm25(self._index.scores, device)
        return self._on_device[device.kind].scored_top(terms, k)

    def shards(self, count: int) -> list["Bm25Shard"]:
        """The index cut into `count` shards of consecutive documents, each scoring with the pool-wide statistics."""
        if self.retriever != "bm25s":
            from ..errors import CorruptionError

            raise CorruptionError("rank_bm25 cannot be sharded; use --retriever bm25s or tantivy, or one shard")
        from .bm25_top import document_slices

        bounds = [round(n * self.size / count) for n in range(count + 1)]
        out = []
        for start, part in document_slices(self._index.scores, bounds):
            shard = copy.copy(self)
            shard.size, shard._on_device = part.shape[0], {}
            shard._index = copy.copy(self._index)
            shard._index.corpus = None
            shard._index.scores = {"data": part.data, "indices": part.indices.astype(np.int32),
                                   "indptr": part.indptr.astype(np.int64), "num_docs": part.shape[0]}
            out.append(Bm25Shard(start, shard))
        return out


class Bm25Shard:
    """A slice of a sharded index: documents [offset, offset + size) of the pool."""

    def __init__(self, offset: int, index: Bm25):
        self.offset, self.index = offset, index

    def scored_top(self, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[tuple[int, float]]]:
        return [[(self.offset + i, score) for i, score in hits] for hits in self.index.scored_top(queries, k, device)]


def merged_top(shards: Sequence, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[int]]:
    """Top-k per shard, merged: the `k` best (score desc, pool index asc) of all shards' candidates."""
    merged = [[] for _ in queries]
    for shard in shards:
        for hits, found in zip(merged, shard.scored_top(queries, k, device)):
            hits += found
    return [[i for i, _ in sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:k]] for hits in merged]


def rank_bm25_top(index, query: str, k: int) -> list[int]:
    """rank_bm25's ranking: score the whole pool, stable sort (ties: lower index first), no-match texts left out."""
    scores = index.get_scores(words(query))
    return [(int(i), float(scores[i])) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]


def pool_fingerprint(texts: Sequence[str]) -> str:
    """sha256 of the pool's sentences in order: what a tantivy shard's folder must have been built from."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


class TantivyShard:
    """Pool sentences [offset, offset + size) in a tantivy index in `path`, opened (memory-mapped) on first search
    in each process: a pickled shard is its folder's name, never the index."""

    def __init__(self, path: Path, offset: int, size: int, pool: str):
        self.path, self.offset, self.size, self.pool = Path(path), offset, size, pool
        self._searcher = None

    def __getstate__(self):
        return {**self.__dict__, "_searcher": None}

    @staticmethod
    def _schema():
        import tantivy

        schema = tantivy.SchemaBuilder()
        schema.add_text_field("text", tokenizer_name=TOKENS, index_option="freq")  # BM25 needs no positions
        return schema.build()

    @staticmethod
    def _with_tokens(index):
        import tantivy

        index.register_tokenizer(TOKENS, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
        return index

    @classmethod
    def build_pool(cls, texts: Sequence[str], shards: int) -> list["TantivyShard"]:
        """Index `texts` as `shards` shards of consecutive sentences under a new temporary folder, removed when the
        first shard is collected in this process (TMPDIR decides where: a folder every Ray worker can read)."""
        folder = Path(tempfile.mkdtemp(prefix="cohbench-tantivy-"))
        built = []
        try:
            pool = pool_fingerprint(texts)
            bounds = [round(n * len(texts) / shards) for n in range(shards + 1)]
            for n, (start, end) in enumerate(zip(bounds, bounds[1:])):
                built.append(cls.build(texts[start:end], start, pool, folder / f"shard-{n:05d}", shards))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        weakref.finalize(built[0], shutil.rmtree, folder, True)
        return built

    @classmethod
    def build(cls, texts: Sequence[str], offset: int, pool: str, path: Path, shards: int = 1) -> "TantivyShard":
        """One shard, written by one indexing thread into one segment: its documents are then numbered in pool
        order, which is the order tantivy gives hits of equal score (so a top-k cut never depends on the engine).
        A shard too large for one segment within the writer's memory is refused, naming the shards it needs."""
        import tantivy

        from ..errors import CorruptionError

        path.mkdir(parents=True)
        index = cls._with_tokens(tantivy.Index(cls._schema(), path=str(path)))
        writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
        for text in texts:
            writer.add_document(tantivy.Document(text=" ".join(words(text))))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        segments = index.searcher().num_segments
        if segments > 1:
            raise CorruptionError(f"a pool shard of {len(texts):,} sentences does not fit one tantivy segment in "
                                  f"{WRITER_HEAP / 1e9:.0f} GB of indexing memory; cut the pool into at least "
                                  f"{shards * segments} shards (--pool-shards, incoherence.pool_shards)")
        shard = cls(path, offset, len(texts), pool)
        write_text(path / SHARD_MARK, json.dumps(shard.mark(), sort_keys=True))
        return shard

    def mark(self) -> dict:
        return {"pool": self.pool, "offset": self.offset, "size": self.size}

    def _open(self):
        from ..errors import CorruptionError

        where = f"index shard {self.path} (pool sentences {self.offset}-{self.offset + self.size})"
        try:
            found = json.loads((self.path / SHARD_MARK).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise CorruptionError(f"{where} is missing or unfinished; a worker must read the folder the driver built "
                                  "it in (set TMPDIR to a shared file system), or run again") from None
        if found != self.mark():
            raise CorruptionError(f"{where} was built from another pool (fingerprint {str(found.get('pool'))[:12]}, "
                                  f"expected {self.pool[:12]}); delete it and run again")
        import tantivy

        index = self._with_tokens(tantivy.Index.open(str(self.path)))
        self._schema_of, self._searcher = index.schema, index.searcher()
        return self._searcher

    def top(self, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[int]]:
        return [[i for i, _ in hits] for hits in self.scored_top(queries, k)]

    def scored_top(self, queries: Sequence[str], k: int, device: Device = AUTO) -> list[list[tuple[int, float]]]:
        """(pool index, score) of the `k` best-scoring sentences of the shard for each query, best first; ties by
        pool index, as tantivy orders equal scores by document number (one segment, in pool order: `build`). tantivy
        searches on the CPU, whatever `device`."""
        import tantivy

        searcher = self._searcher or self._open()
        k = min(k, self.size)
        out = []
        for text in queries:
            tokens = words(text)
            if not tokens or k == 0:
                out.append([])
                continue
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema_of, "text", t)) for t in tokens])
            out.append([(self.offset + address.doc, float(score)) for score, address in searcher.search(query, k, count=False).hits])
        return out
