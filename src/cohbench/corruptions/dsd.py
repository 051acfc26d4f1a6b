"""Discordant sentence detection (Cai et al. §3): replace K sentences by confounders.

For each replaced sentence x: BM25 top-`top_k` over the split's sentence pool (never x's own document), then
the highest-ranked candidate whose rescaled BERTScore F1 to x is below τ. Candidates are scored in BM25 order,
a few at a time, from cached token embeddings, stopping at the first acceptable one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..schema import ERROR, OK
from .bertscore import TokenEmbeddings, load_baseline, rescale
from .registry import CorruptionError, derived, generator, record_rng, sentence_id, span, to_columns, to_records
from .retrieval import Bm25


@dataclass(frozen=True)
class Confounder:
    index: int  # into the pool
    rank: int  # 1-based rank among the query's admissible BM25 candidates
    similarity: float  # rescaled BERTScore F1 to the replaced sentence


class ConfounderPool:
    """The sentences confounders may come from: those of one split only, with their ids and documents."""

    def __init__(self, split: str, texts: Sequence[str], ids: Sequence[str], doc_ids: Sequence[str], *,
                 retriever: str = "bm25s", top_k: int = 100, embeddings: TokenEmbeddings | None = None,
                 baseline: float | None = None):
        self.split = split
        self.texts, self.ids, self.doc_ids = list(texts), list(ids), list(doc_ids)
        self.top_k = top_k
        self.index = Bm25(self.texts, retriever)
        self.embeddings = embeddings or TokenEmbeddings()
        self.baseline = load_baseline()["F"] if baseline is None else baseline
        self._widest_doc = max((self.doc_ids.count(d) for d in set(self.doc_ids)), default=0)

    @classmethod
    def from_records(cls, records: Sequence[dict], **options) -> "ConfounderPool":
        splits = {r["split"] for r in records}
        if len(splits) != 1:
            raise CorruptionError(f"a confounder pool must hold one split, got {sorted(splits)}")
        texts, ids, docs = [], [], []
        for r in records:
            for i, text in enumerate(r["sentences"]):
                texts.append(text)
                ids.append(sentence_id(r["id"], i))
                docs.append(r["doc_id"])
        return cls(splits.pop(), texts, ids, docs, **options)

    def candidates(self, queries: Sequence[str], doc_ids: Sequence[str]) -> list[list[int]]:
        """Up to `top_k` pool indices per query, in BM25 order, never from the query's document or equal to it."""
        ranked = self.index.top(queries, self.top_k + self._widest_doc + 1)
        return [
            [i for i in hits if self.doc_ids[i] != doc and self.texts[i] != query][: self.top_k]
            for hits, query, doc in zip(ranked, queries, doc_ids)
        ]

    def choose(self, queries: Sequence[str], candidates: Sequence[list[int]], tau: float,
               exclude: Sequence[set[int]] | None = None) -> list[Confounder | None]:
        """For each query, the first candidate (BM25 order) with rescaled BERTScore < tau, or None."""
        exclude = exclude or [set() for _ in queries]
        chosen: list[Confounder | None] = [None] * len(queries)
        cursor = [0] * len(queries)
        live = [q for q in range(len(queries)) if candidates[q]]
        width = 1  # most queries accept their first candidate; unresolved ones look 2, 4, 8... further each round
        while live:
            # Score the next candidates of every unresolved query, encoding all new sentences in one batch.
            window = {q: [c for c in candidates[q][cursor[q] : cursor[q] + width] if c not in exclude[q]]
                      for q in live}
            self.embeddings.encode([queries[q] for q in live] + [self.texts[c] for cs in window.values() for c in cs])
            still = []
            for q in live:
                scores = self.embeddings.f1(queries[q], [self.texts[c] for c in window[q]])
                for c, raw in zip(window[q], scores):
                    similarity = rescale(raw, self.baseline)
                    if similarity < tau:
                        chosen[q] = Confounder(c, candidates[q].index(c) + 1, similarity)
                        break
                cursor[q] += width
                if chosen[q] is None and cursor[q] < len(candidates[q]):
                    still.append(q)
            live, width = still, width * 2
        return chosen


@generator("discordant_replace")
def discordant_replace(batch: dict[str, list], *, seed: int, pool: ConfounderPool, tau: float, k: int = 1,
                       min_position: int = 0, error_type: str | None = None) -> dict[str, list]:
    """Replace K sentences (positions drawn uniformly from `min_position` on) by confounders from `pool`.
    Replaced sentences are labelled 1 (`positions`), `inserted_ids` name the confounders, `similarities` are their
    rescaled BERTScore F1 to the sentence they replaced (rounded to 1e-4, so that float noise of batched encoding
    does not reach the output), `ranks` their BM25 rank. A record for which some position
    has no admissible confounder yields nothing. `error_type` adds a span of that type on each confounder."""
    records = to_records(batch)
    for record in records:
        if record["split"] != pool.split:
            raise CorruptionError(
                f"record {record['id']} is in split {record['split']!r} but the confounder pool holds {pool.split!r}; "
                "build one pool per split so that no confounder crosses splits"
            )
    positions = {}
    for record in records:
        eligible = range(min_position, len(record["sentences"]))
        if len(eligible) >= k:
            positions[record["id"]] = sorted(record_rng(seed, "discordant_replace", record["id"]).sample(eligible, k))
    found: dict[str, list[Confounder | None]] = {rid: [] for rid in positions}
    for j in range(k):  # the j-th replacement of every record; confounders already used in a record are excluded
        todo = [r for r in records if r["id"] in positions and all(found[r["id"]])]
        queries = [r["sentences"][positions[r["id"]][j]] for r in todo]
        candidates = pool.candidates(queries, [r["doc_id"] for r in todo])
        exclude = [{c.index for c in found[r["id"]]} for r in todo]
        for r, confounder in zip(todo, pool.choose(queries, candidates, tau, exclude)):
            found[r["id"]].append(confounder)
    out = []
    for record in records:
        picks = found.get(record["id"], [])
        if len(picks) != k or not all(picks):
            continue
        sentences = list(record["sentences"])
        labels = [OK] * len(sentences)
        spans = []
        for position, pick in zip(positions[record["id"]], picks):
            sentences[position] = pool.texts[pick.index]
            labels[position] = ERROR
            if error_type:
                spans.append(span(position, sentences[position], error_type))
        out.append(derived(
            record, "discordant_replace", seed, sentences=sentences, sentence_labels=labels, spans=spans,
            positions=positions[record["id"]], inserted_ids=[pool.ids[p.index] for p in picks],
            similarities=[round(p.similarity, 4) for p in picks], ranks=[p.rank for p in picks],
        ))
    return to_columns(out)
