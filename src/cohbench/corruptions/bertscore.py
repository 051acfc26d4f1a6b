"""BERTScore as the `bert-score` package defines it (greedy matching of contextual token embeddings, idf off),
computed from a cache of token embeddings so that each unique sentence is encoded once.

The token embeddings are the one encoder's (`encoder`: all-MiniLM-L6-v2, all 6 layers, in float64 on every device,
bert-score's own tokenisation), so the numbers equal `bert_score.BERTScorer(model_type=<path>, num_layers=6).score`
(tests check ~1e-5). Within `embedding_store.kept_embeddings` (every release build), a sentence another build encoded
is read, not encoded again. What a release records and decides on from them (a confounder's similarity, below tau or
not) is rounded to `schema.FLOAT_DECIMALS`, and in float64 no kernel a CPU or GPU picks (AVX2, AVX-512, a thread
count) moves a score across that rounding, where float32 kernels do.

Raw MiniLM scores live on a different scale from the paper's encoder, so thresholds apply to the *rescaled*
score `(F - b) / (1 - b)`, b = mean F of random sentence pairs of the corpus (bert-score's own baseline
method); the baseline ships in `bertscore_baseline.json` (`compute_baseline` remakes it).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import embedding_store
from ..encoder import (AUTO, DIMENSIONS, NAME as ENCODER, Device, batch_memory, encode_batches, rounded_vectors,
                       to_device, to_host)
from ..errors import CorruptionError

BASELINE_FILE = Path(__file__).with_name("bertscore_baseline.json")
NUM_LAYERS = 6  # all layers of MiniLM-L6: the last hidden state, as bert-score returns for num_layers=6


class TokenEmbeddings:
    """Unit-normalised token embeddings of sentences, computed once per unique sentence (batched) and kept on the
    device as one tensor: every sentence's tokens one after another ([tokens, D] float32, computed in float64 and
    kept in float32 to halve the memory) beside their BERTScore weights, each sentence a (start, length) in it.

    The tensor holds at most `capacity` tokens (None: a quarter of the GPU's free memory, or `CPU_TOKENS` on the
    CPU): past it, the sentences the current call does not need are dropped (and encoded again if asked for). A call
    whose pairs run out of GPU memory is halved and run again."""

    def __init__(self, device: Device = AUTO, batch_size: int = 256, capacity: int | None = None):
        self.device = device
        self.batch_size = batch_size
        self.capacity = capacity
        self._span: dict[str, tuple[int, int]] = {}
        self._tokens = self._weights = None  # grown by doubling, `_used` rows taken
        self._used = 0

    def __len__(self) -> int:
        return len(self._span)

    def encode(self, sentences: Sequence[str]) -> None:
        import torch

        needed = set(sentences)  # never dropped to make room for one another
        todo = sorted(s for s in needed if s not in self._span)
        store = embedding_store.active()
        if store is not None:
            kept = [(s, store.tokens(s)) for s in todo]
            kept = [(s, found) for s, found in kept if found is not None]
            if kept:
                self._append([s for s, _ in kept], [len(w) for _, (_, w) in kept],
                             to_device(np.concatenate([t for _, (t, _) in kept]), self.device),
                             to_device(np.concatenate([w for _, (_, w) in kept]).astype(np.float64), self.device), needed)
            todo = [s for s in todo if s not in self._span]
        fresh, vectors = [], []
        for batch, batch_vectors, units, weights, lengths in encode_batches(todo, self.device, self.batch_size) if todo else ():
            # each sentence's tokens, row after row, picked by an index made on the host: a boolean mask would make
            # the host wait for the device to count what it selects
            rows = to_device(np.flatnonzero(np.arange(units.shape[1]) < np.array(lengths)[:, None]), self.device)
            self._append(batch, lengths, units.reshape(-1, units.shape[2]).index_select(0, rows),
                         weights.reshape(-1).index_select(0, rows), needed)
            if store is not None:
                fresh += batch
                vectors.append(batch_vectors)
        if fresh:  # what a release build keeps between runs: copied to the host in bulk, once per call
            self._keep(store, fresh, torch.cat(vectors))

    def _keep(self, store, sentences: Sequence[str], vectors) -> None:
        import torch

        rows = to_device(_rows([self._span[s] for s in sentences]), self.device)
        # one copy back: the float32 tokens' bits read as float64 pairs, beside the weights and vectors
        packed = to_host(torch.cat([self._tokens.index_select(0, rows).view(torch.float64).reshape(-1),
                                    self._weights.index_select(0, rows), vectors.reshape(-1)]))
        count = len(rows)
        weights_at = count * DIMENSIONS // 2  # float64 values the tokens take
        tokens = packed[:weights_at].view(np.float32).reshape(count, DIMENSIONS)
        weights = packed[weights_at : weights_at + count]
        start = 0
        for sentence, vector in zip(sentences, rounded_vectors(packed[weights_at + count :].reshape(-1, DIMENSIONS))):
            length = self._span[sentence][1]
            store.add(sentence, vector, (tokens[start : start + length], weights[start : start + length]))
            start += length

    def _append(self, sentences: Sequence[str], lengths: Sequence[int], tokens, weights, needed: set[str]) -> None:
        self._make_room(tokens.shape[0], tokens.shape[1], needed)
        end = self._used + tokens.shape[0]
        self._tokens[self._used : end] = tokens.to(self.device.kind)
        self._weights[self._used : end] = weights.to(self.device.kind)
        for sentence, length in zip(sentences, lengths):
            self._span[sentence] = (self._used, length)
            self._used += length

    def _make_room(self, incoming: int, width: int, needed: set[str]) -> None:
        """Room for `incoming` more tokens: past the capacity the sentences not `needed` are dropped first; then the
        tensor grows by doubling (within the capacity, unless what is needed takes more)."""
        import torch

        limit = self.capacity or _capacity(self.device, width)
        if self._used + incoming > limit and len(self._span) > len(needed & self._span.keys()):
            self._drop_all_but(needed)
        held = 0 if self._tokens is None else self._tokens.shape[0]
        if self._used + incoming <= held:
            return
        # doubling, up to the capacity; past it (a call that needs more) doubling still, not a reallocation per batch
        doubled = 2 * held if self._used + incoming > limit else min(2 * held, limit)
        size = max(self._used + incoming, doubled, 1 << 12)
        grown = torch.zeros((size, width), dtype=torch.float32, device=self.device.kind)
        grown_weights = torch.zeros(size, dtype=torch.float64, device=self.device.kind)
        if self._used:
            grown[: self._used], grown_weights[: self._used] = self._tokens[: self._used], self._weights[: self._used]
        self._tokens, self._weights = grown, grown_weights

    def _drop_all_but(self, needed: set[str]) -> None:
        kept = [(s, span) for s, span in self._span.items() if s in needed]
        rows = to_device(_rows([span for _, span in kept]), self.device)
        self._tokens, self._weights = self._tokens.index_select(0, rows), self._weights.index_select(0, rows)
        self._span, self._used = {}, 0
        for sentence, (_, length) in kept:
            self._span[sentence] = (self._used, length)
            self._used += length

    def f1(self, reference: str, candidates: Sequence[str]) -> list[float]:
        """Raw BERTScore F1 of each candidate against `reference` (symmetric in the pair)."""
        return self.f1_many([reference], [candidates])[0]

    def f1_many(self, references: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Raw BERTScore F1 of each reference's candidates (`f1_on_device`, copied to the host)."""
        found = iter(to_host(self.f1_on_device(references, candidates)).tolist())
        return [[next(found) for _ in cs] for cs in candidates]

    def f1_on_device(self, references: Sequence[str], candidates: Sequence[Sequence[str]]):
        """Raw BERTScore F1 of every (reference, candidate) pair, reference after reference, as one float64 tensor
        on the device, matched in padded batched products there: a candidate token's best match among the
        reference's tokens (precision) and a reference token's best match among the candidate's (recall), weighted
        means. Nothing here waits for the device."""
        import torch

        try:
            self.encode([*references, *(c for cs in candidates for c in cs)])
            pairs = [(r, c) for r, cs in zip(references, candidates) for c in cs]
            sizes = []
            for r, c in pairs:  # float64 elements a pair takes: its similarity matrix and both sentences' tokens
                ref_length, cand_length = self._span[r][1], self._span[c][1]
                sizes.append(ref_length * cand_length + (ref_length + cand_length) * DIMENSIONS)
            scores = [self._matched(pairs[start:end]) for start, end in _chunks(sizes, self.device)]
            return torch.cat(scores) if scores else torch.zeros(0, dtype=torch.float64, device=self.device.kind)
        except torch.OutOfMemoryError:
            pass  # retried below, once the error (whose traceback holds the failed call's tensors) is gone
        torch.cuda.empty_cache()
        if len(references) <= 1:
            raise CorruptionError(f"the GPU ({self.device}) ran out of memory matching one sentence's candidates "
                                  "(another process may hold its memory); free it, or run with --device cpu")
        half = len(references) // 2
        return torch.cat([self.f1_on_device(references[:half], candidates[:half]),
                          self.f1_on_device(references[half:], candidates[half:])])

    def _matched(self, pairs: Sequence[tuple[str, str]]):
        import torch

        def padded(sentences):
            """Token embeddings [P, W, D] and weights [P, W] in float64, gathered from the kept tensor, 0 beyond
            each sentence's length (W: the longest, known on the host), and where each sentence's tokens are."""
            spans = np.array([self._span[s] for s in sentences], dtype=np.int64)
            present = np.arange(spans[:, 1].max()) < spans[:, 1:2]
            at = to_device(np.where(present, spans[:, 0:1] + np.arange(present.shape[1]), 0), self.device)
            present = to_device(present, self.device)
            tokens = torch.where(present.unsqueeze(2), self._tokens[at].double(), 0.0)
            return tokens, torch.where(present, self._weights[at], 0.0), present

        ref, ref_w, ref_in = padded([r for r, _ in pairs])
        cand, cand_w, cand_in = padded([c for _, c in pairs])
        sim = torch.bmm(cand, ref.transpose(1, 2))  # [pair, candidate token, reference token]
        sim = sim.masked_fill(~(cand_in.unsqueeze(2) & ref_in.unsqueeze(1)), -torch.inf)
        # padding weighs 0 (and its -inf best match is replaced by 0 before weighting)
        best_for_candidate = torch.where(cand_in, sim.amax(dim=2), 0.0)
        best_for_reference = torch.where(ref_in, sim.amax(dim=1), 0.0)
        precision = _ratio(torch, (best_for_candidate * cand_w).sum(1), cand_w.sum(1))
        recall = _ratio(torch, (best_for_reference * ref_w).sum(1), ref_w.sum(1))
        return _ratio(torch, 2 * precision * recall, precision + recall)


CPU_TOKENS = 1 << 21  # tokens kept on the CPU at most: 3.2 GB of float32 embeddings and float64 weights


def _capacity(device: Device, width: int) -> int:
    """Tokens the kept tensor may hold: on a GPU what `encoder.batch_memory` (a quarter of the free memory) takes."""
    return batch_memory() // (4 * width + 8) if device.is_gpu else CPU_TOKENS


def _rows(spans) -> np.ndarray:
    """The rows of the kept tensor that (start, length) spans cover, span after span."""
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    lengths = spans[:, 1]
    ends = np.cumsum(lengths)
    return np.repeat(spans[:, 0] - (ends - lengths), lengths) + np.arange(int(ends[-1]) if len(ends) else 0)


def _chunks(sizes: Sequence[int], device: Device, budget: int | None = None):
    """[start, end) runs of pairs whose tensors fit the budget (float64 elements, padded to the widest: counted as
    the widest pair of the run times its length). On a GPU the budget follows the free memory (`encoder.batch_memory`)."""
    if budget is None:
        budget = 1 << 23
        if device.is_gpu:
            budget = max(budget, batch_memory() // (8 * 4))
    start, widest = 0, 0
    for end, size in enumerate(sizes):
        widest = max(widest, size)
        if end > start and widest * (end + 1 - start) > budget:
            yield start, end
            start, widest = end, size
    if sizes:
        yield start, len(sizes)


def _ratio(torch, numerators, denominators):
    """numerators / denominators, 0 where a denominator is 0 (a sentence of only [CLS] and [SEP], or P + R = 0)."""
    return torch.where(denominators > 0, numerators / torch.where(denominators > 0, denominators, 1.0), 0.0)


def rescale(raw: float, baseline: float) -> float:
    """bert-score's baseline rescaling: 0 = the mean random pair, 1 = identical. Strictly increasing in `raw`."""
    return (raw - baseline) / (1.0 - baseline)


@functools.lru_cache(maxsize=1)
def load_baseline(path: Path = BASELINE_FILE) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def compute_baseline(sentences: Sequence[str], pairs: int, seed: int, embeddings: TokenEmbeddings | None = None) -> dict:
    """Mean raw P/R/F of `pairs` random pairs of distinct sentences (bert-score's baseline method), with quantiles."""
    rng = random.Random(seed)
    unique = sorted(set(sentences))
    drawn = [tuple(rng.sample(unique, 2)) for _ in range(pairs)]
    embeddings = embeddings or TokenEmbeddings()
    embeddings.encode([s for pair in drawn for s in pair])
    f1 = np.array([f for (f,) in embeddings.f1_many([a for a, _ in drawn], [[b] for _, b in drawn])])
    return {
        "encoder": ENCODER,
        "num_layers": NUM_LAYERS,
        "idf": False,
        "pairs": pairs,
        "seed": seed,
        "F": float(f1.mean()),
        "F_quantiles": {q: float(np.quantile(f1, float(q))) for q in ("0.05", "0.5", "0.95", "0.99")},
    }
