"""Discordant sentence detection (Cai et al. §3): replace K sentences by confounders.

For each replaced sentence x: BM25 top-`top_k` over the split's sentence pool (never x's own document), then
the highest-ranked candidate whose rescaled BERTScore F1 to x is below τ. Candidates are scored in BM25 order,
a few at a time, from cached token embeddings, stopping at the first acceptable one.

Two stages that an engine may run on different workers: `plan_replacements` (positions drawn per record id,
BM25 candidates) and `replace_planned` (BERTScore encoding and the choice), each on the device it is given.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..encoder import AUTO, Device, to_device, to_host
from ..schema import ERROR, FLOAT_DECIMALS, OK
from .bertscore import TokenEmbeddings, load_baseline, rescale
from ..errors import CorruptionError
from .registry import count, derived, generator, record_rng, seeded_sets, sentence_id, span
from .retrieval import merged_top, pool_index


MATCHING_ROUND = "cohbench::matching_round"  # the profiler's name of one round of `ConfounderPool.choose`


@dataclass(frozen=True)
class Confounder:
    index: int  # into the pool
    rank: int  # 1-based rank among the query's admissible BM25 candidates
    similarity: float  # rescaled BERTScore F1 to the replaced sentence


class ConfounderPool:
    """The sentences confounders may come from: those of one split only, with their ids and documents.

    With `shards` > 1 the BM25 index is kept as that many document shards (`retrieval.pool_index`) whose
    top-k lists are merged, so that an engine can hold one shard per worker at a time. The pool travels between
    processes without its embedding cache (each worker encodes with its own). Its sentences, ids and documents are
    Arrow arrays: put in Ray's object store once, every worker reads them there without a copy (a list of Python
    strings would be rebuilt, about 3x larger, in each)."""

    def __init__(self, split: str, texts: Sequence[str], ids: Sequence[str], doc_ids: Sequence[str], *,
                 retriever: str = "bm25s", top_k: int = 100, embeddings: TokenEmbeddings | None = None,
                 baseline: float | None = None, shards: int = 1):
        import pyarrow as pa

        self.split = split
        texts, doc_ids = list(texts), list(doc_ids)
        self.texts, self.ids, self.doc_ids = (pa.array(column, pa.large_string()) for column in (texts, list(ids), doc_ids))
        self.top_k = top_k
        self.index, self.shards = pool_index(texts, retriever, shards)
        self.embeddings = embeddings
        self.baseline = load_baseline()["F"] if baseline is None else baseline
        self._widest_doc = max(Counter(doc_ids).values(), default=0)

    def __getstate__(self):
        return {**self.__dict__, "embeddings": None}

    def __len__(self) -> int:
        return len(self.texts)

    def texts_at(self, indices: Sequence[int]) -> list[str]:
        return _at(self.texts, indices)

    def ids_at(self, indices: Sequence[int]) -> list[str]:
        return _at(self.ids, indices)

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

    def candidates(self, queries: Sequence[str], doc_ids: Sequence[str], device: Device = AUTO) -> list[list[int]]:
        """Up to `top_k` pool indices per query, in BM25 order, never from the query's document or equal to it;
        bm25s scores on `device` (None: the GPU where there is one), with the same candidates everywhere."""
        k = self.top_k + self._widest_doc + 1
        ranked = merged_top(self.shards, queries, k, device) if self.shards else self.index.top(queries, k, device)
        return [
            [i for i, text, hit_doc in zip(hits, self.texts_at(hits), _at(self.doc_ids, hits)) if hit_doc != doc and text != query][: self.top_k]
            for hits, query, doc in zip(ranked, queries, doc_ids)
        ]

    def choose(self, queries: Sequence[str], candidates: Sequence[list[int]], tau: float,
               exclude: Sequence[set[int]] | None = None, device: Device = AUTO) -> list[Confounder | None]:
        """For each query, the first candidate (BM25 order) with rescaled BERTScore < tau, or None. Each round
        matches the next candidates of every unresolved query in one batched product on `device`."""
        import torch

        exclude = exclude or [set() for _ in queries]
        if self.embeddings is None or self.embeddings.device.kind != device.kind:
            self.embeddings = TokenEmbeddings(device)
        chosen: list[Confounder | None] = [None] * len(queries)
        cursor = [0] * len(queries)
        live = [q for q in range(len(queries)) if candidates[q]]
        width = 1  # most queries accept their first candidate; unresolved ones look 2, 4, 8... further each round
        while live:
            # Score the next candidates of every unresolved query, encoding all new sentences in one batch.
            window = {q: [c for c in candidates[q][cursor[q] : cursor[q] + width] if c not in exclude[q]]
                      for q in live}
            with torch.profiler.record_function(MATCHING_ROUND):
                picked = self._first_below(tau, [queries[q] for q in live], [window[q] for q in live], device)
            still = []
            for q, pick in zip(live, picked):
                if pick is not None:
                    c, similarity = pick
                    chosen[q] = Confounder(c, candidates[q].index(c) + 1, similarity)
                cursor[q] += width
                if chosen[q] is None and cursor[q] < len(candidates[q]):
                    still.append(q)
            live, width = still, width * 2
        return chosen

    def _first_below(self, tau: float, queries: Sequence[str], windows: Sequence[list[int]],
                     device: Device) -> list[tuple[int, float] | None]:
        """For each query, its window's first candidate whose rescaled BERTScore, at the precision it is recorded
        at, is below tau, with that similarity; or None. The device marks each query's first candidate that may be
        (one whose score is not tau + 10^-FLOAT_DECIMALS or more, which no rounding brings below tau), and the round
        comes back in one copy; the host decides on exactly the value it records from there on."""
        import torch

        scores = self.embeddings.f1_on_device(queries, [self.texts_at(w) for w in windows])
        pairs = scores.shape[0]
        if not pairs:
            return [None] * len(queries)
        sizes = np.fromiter(map(len, windows), np.int64, len(windows))
        query_of_pair = to_device(np.repeat(np.arange(len(windows)), sizes), device)
        maybe = (scores - self.baseline) / (1.0 - self.baseline) < tau + 10.0**-FLOAT_DECIMALS
        at = torch.where(maybe, torch.arange(pairs, device=scores.device), pairs)
        first = torch.full((len(windows),), pairs, dtype=torch.int64, device=scores.device)
        first = first.scatter_reduce(0, query_of_pair, at, "amin")
        copied = to_host(torch.cat([scores, first.double()]))  # the round's one copy back
        raw, first = copied[:pairs].tolist(), copied[pairs:].astype(np.int64)
        ends = np.cumsum(sizes).tolist()
        picked: list[tuple[int, float] | None] = [None] * len(windows)
        for n, (window, position, end) in enumerate(zip(windows, first.tolist(), ends)):
            for p in range(position, end):  # past `position` only for a score within 10^-FLOAT_DECIMALS of tau
                similarity = round(rescale(raw[p], self.baseline), FLOAT_DECIMALS)
                if similarity < tau:
                    picked[n] = (window[p - end + len(window)], similarity)
                    break
        return picked


def _at(column, indices: Sequence[int]) -> list[str]:
    """The values of an Arrow column at `indices`, as Python strings."""
    import pyarrow as pa

    return column.take(pa.array(indices, pa.int64())).to_pylist()


@generator("discordant_replace")
def discordant_replace(records: list[dict], *, seed: int, pool: ConfounderPool, tau: float, k: int = 1,
                       min_position: int = 0, error_type: str | None = None, instances: int = 1,
                       dropped: Counter | None = None) -> list[dict]:
    """Replace K sentences (positions drawn uniformly from `min_position` on) by confounders from `pool`.
    Replaced sentences are labelled 1 (`positions`) and kept in `replaced`, `inserted_ids` name the confounders,
    `similarities` are their rescaled BERTScore F1 to the sentence they replaced (rounded to `schema.FLOAT_DECIMALS`,
    the precision tau is compared at), `ranks` their BM25 rank. A record with fewer than K positions from
    `min_position` on (`too_short_for_replacement`), or for which some position has no admissible confounder
    (`no_confounder_below_tau`), yields nothing. `error_type` adds a span of that type on each confounder.
    `instances` > 1 makes up to that many records per source, each replacing a different set of positions (ids
    end in `#1`, `#2`, ...): more training data from the same stories; each instance not made is counted."""
    plans = plan_replacements(records, pool, seed=seed, k=k, min_position=min_position, instances=instances)
    made = replace_planned(records, plans, pool, seed=seed, tau=tau, error_type=error_type)
    for plan, out in zip(plans, made):
        for _ in range(instances if plan is None else len(plan) - len(out)):
            count(dropped, "too_short_for_replacement" if plan is None else "no_confounder_below_tau")
    return [r for out in made for r in out]


def _position_sets(rng, eligible: range, k: int, instances: int, record: dict) -> list[list[int]]:
    """The positions each instance replaces: one seeded draw of K (instances = 1, the draw every release config
    was built with), or up to `instances` distinct K-sets in a seeded order."""
    if instances == 1:
        return [sorted(rng.sample(eligible, k))]
    return seeded_sets(rng, lambda: [list(c) for c in combinations(eligible, k)], math.comb(len(eligible), k), instances, record)


def plan_replacements(records: Sequence[dict], pool: ConfounderPool, *, seed: int, k: int = 1,
                      min_position: int = 0, instances: int = 1, device: Device = AUTO) -> list[list[dict] | None]:
    """Stage 1, per record: for each instance, the K positions to replace (drawn by seed and record id) and each
    position's BM25 candidates; None for a record with fewer than K eligible sentences."""
    for record in records:
        if record["split"] != pool.split:
            raise CorruptionError(
                f"record {record['id']} is in split {record['split']!r} but the confounder pool holds {pool.split!r}; "
                "build one pool per split so that no confounder crosses splits"
            )
    plans: list[list[dict] | None] = [None] * len(records)
    for n, record in enumerate(records):
        eligible = range(min_position, len(record["sentences"]))
        if len(eligible) >= k:
            rng = record_rng(seed, "discordant_replace", record["id"])
            plans[n] = [{"variant": None if instances == 1 else f"discordant_replace#{j}", "positions": positions}
                        for j, positions in enumerate(_position_sets(rng, eligible, k, instances, record), 1)]
    units = [unit for plan in plans if plan for unit in plan]
    queries = [records[n]["sentences"][position] for n, plan in enumerate(plans) if plan
               for unit in plan for position in unit["positions"]]
    docs = [records[n]["doc_id"] for n, plan in enumerate(plans) if plan for unit in plan for _ in unit["positions"]]
    found = iter(pool.candidates(queries, docs, device))
    for unit in units:
        unit["candidates"] = [next(found) for _ in unit["positions"]]
    return plans


def replace_planned(records: Sequence[dict], plans: Sequence[list[dict] | None], pool: ConfounderPool, *, seed: int,
                    tau: float, error_type: str | None = None, device: Device = AUTO) -> list[list[dict]]:
    """Stage 2: for each record, the corrupted record of each planned instance that has a candidate below tau at
    every position ([] when none has). The j-th replacement of every instance is chosen together; confounders
    already used in an instance are excluded."""
    units = [(n, unit) for n, plan in enumerate(plans) if plan for unit in plan]
    found: list[list[Confounder | None]] = [[] for _ in units]
    k = max((len(unit["positions"]) for _, unit in units), default=0)
    for j in range(k):
        todo = [u for u in range(len(units)) if all(found[u])]
        queries = [records[units[u][0]]["sentences"][units[u][1]["positions"][j]] for u in todo]
        candidates = [units[u][1]["candidates"][j] for u in todo]
        exclude = [{c.index for c in found[u]} for u in todo]
        for u, confounder in zip(todo, pool.choose(queries, candidates, tau, exclude, device)):
            found[u].append(confounder)
    out: list[list[dict]] = [[] for _ in records]
    for (n, unit), picks in zip(units, found):
        if len(picks) != len(unit["positions"]) or not all(picks):
            continue
        record = records[n]
        sentences = list(record["sentences"])
        labels = [OK] * len(sentences)
        spans = []
        for position, pick in zip(unit["positions"], picks):
            sentences[position] = pool.texts_at([pick.index])[0]
            labels[position] = ERROR
            if error_type:
                spans.append(span(position, sentences[position], error_type))
        out[n].append(derived(
            record, "discordant_replace", seed, variant=unit["variant"], sentences=sentences, sentence_labels=labels,
            spans=spans, positions=unit["positions"], inserted_ids=pool.ids_at([p.index for p in picks]),
            similarities=[p.similarity for p in picks], ranks=[p.rank for p in picks],
            replaced=[record["sentences"][position] for position in unit["positions"]],
        ))
    return out
