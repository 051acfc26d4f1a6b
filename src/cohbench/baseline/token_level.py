"""The token-level incoherence detector of Cai et al. (2020, §4.1, Fig. 2a), over all-MiniLM-L6-v2.

A text goes in as `[CLS] x1 [SEP] x2 [SEP] ... xN [SEP]`; the encoder is fine-tuned end to end. Sentence k is
represented by s_k, the mean of the contextual states of its tokens and its [SEP], where the paper takes the
[SEP] state alone: all-MiniLM-L6-v2 was trained with mean pooling, and a logistic regression on its untrained
states (40 toy five-sentence stories, one sentence from another topic; 20 dev stories) found that sentence at
dev AUC 0.95 from the means and 0.46 from the [SEP] states. Two heads, each an MLP with one hidden
layer and a sigmoid (Eq. 1): the sentence head reads s_k (is x_k discordant? DSD), the gap head reads
[s_k; s_{k+1}] (is a sentence missing between x_k and x_{k+1}? MSD), as in the sentence-level model. One model,
both heads, trained jointly on examples of both tasks; the loss covers labelled units only (-1 = no label).

Long texts (SNaC summaries run to ~100 sentences) go through in overlapping windows of whole sentences that fit
`max_tokens` (each sentence cut to `max_sentence_tokens`), so the model scores every unit itself; nothing is
filled in. See `windows` and `plan` for the rule that picks the window a unit is scored (and trained) from, and
`predict(prefix=True)` for the SNaC protocol, where a sentence is judged on the text up to it only.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .data import BaselineError, Example, mean_auc
from ..display import progress_bar
from ..encoder import AUTO, encoder_path
from .training_loop import length_batches, masked_loss, train_epochs

PARAMS = (
    "seed", "epochs", "batch_size", "learning_rate", "weight_decay", "max_tokens", "max_sentence_tokens", "warmup_ratio",
)  # fmt: skip


def _head(inputs: int, width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, width), nn.GELU(), nn.Linear(width, 1))


class TokenLevelDetector(nn.Module):
    def __init__(self, encoder: nn.Module, tokenizer, max_tokens: int, max_sentence_tokens: int):
        super().__init__()
        limit = encoder.config.max_position_embeddings
        if not 2 * max_sentence_tokens + 3 <= max_tokens <= limit:
            raise BaselineError(
                f"max_tokens must hold two whole sentences and the special tokens (>= 2 x max_sentence_tokens + 3 = "
                f"{2 * max_sentence_tokens + 3}) and at most {limit} (the encoder's positions); got {max_tokens}"
            )
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.max_sentence_tokens = max_sentence_tokens
        width = encoder.config.hidden_size
        self.sentence_head = _head(width, width)
        self.gap_head = _head(2 * width, width)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, pool: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """input_ids, attention_mask B×T; pool B×S×T (row k averages sentence k's tokens and its [SEP]; all
        zero for padding) -> sentence logits B×S and gap logits B×(S-1) (gap j lies between sentences j and j+1)."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        s = torch.bmm(pool.to(hidden.dtype), hidden)  # a matrix product, not a scatter: deterministic on CUDA too
        gaps = torch.cat([s[:, :-1], s[:, 1:]], dim=-1)
        return self.sentence_head(s).squeeze(-1).float(), self.gap_head(gaps).squeeze(-1).float()


@functools.lru_cache(maxsize=1)
def _pretrained():
    """The packaged all-MiniLM-L6-v2 and its tokenizer, loaded offline once per process."""
    from transformers import AutoModel, AutoTokenizer

    path = encoder_path()
    return AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def detector(max_tokens: int = 256, max_sentence_tokens: int = 48) -> TokenLevelDetector:
    """An untrained detector: a fresh copy of the pretrained encoder and new heads (drawn from torch's seed)."""
    encoder, tokenizer = _pretrained()
    return TokenLevelDetector(copy.deepcopy(encoder), tokenizer, max_tokens, max_sentence_tokens)


# ----------------------------------------------------------------------------------------------- windows


def _fits(offsets: np.ndarray, start: int, stop: int, max_tokens: int) -> bool:
    """Whether sentences [start, stop) fit in one input: [CLS] + each sentence's tokens and its [SEP]."""
    return 1 + int(offsets[stop] - offsets[start]) + (stop - start) <= max_tokens


def windows(lengths: Sequence[int], max_tokens: int) -> list[tuple[int, int]]:
    """Overlapping windows [start, stop) of whole sentences (token counts `lengths`) that cover the text.

    Each window is as long as fits; the next one starts half a window further on, or later if it must to reach
    past the end of the previous one. So consecutive windows share at least one sentence and every gap lies
    inside a window. Needs any two sentences to fit together (the detector checks its settings for that)."""
    n = len(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    out: list[tuple[int, int]] = []
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and _fits(offsets, start, stop + 1, max_tokens):
            stop += 1
        out.append((start, stop))
        if stop == n:
            break
        start += max(1, (stop - start) // 2)
        while not _fits(offsets, start, stop + 1, max_tokens):
            start += 1
    return out


def _span(unit: int, task: str) -> tuple[int, int]:
    """First and last sentence a unit needs in its window: sentence k itself; gap k both k and k+1."""
    return unit, unit + (task == "gaps")


def plan(lengths: Sequence[int], max_tokens: int, task: str) -> list[tuple[int, int, list[int]]]:
    """(start, stop, units) per window of `windows`: the units of `task` scored from that window.

    Each unit is scored from exactly one window: of those holding it, the one where it has the most context on
    both sides, i.e. the largest min(sentences before it, sentences after it) in the window; ties go to the
    larger total context, then to the earlier window. (A gap's sides are its two sentences.)"""
    bounds = windows(lengths, max_tokens)
    units: list[list[int]] = [[] for _ in bounds]
    for unit in range(len(lengths) - (task == "gaps")):
        first, last = _span(unit, task)

        def context(i: int) -> tuple[int, int, int]:
            start, stop = bounds[i]
            before, after = first - start, stop - 1 - last
            return min(before, after), before + after, -i

        units[max((i for i, (start, stop) in enumerate(bounds) if start <= first and last < stop), key=context)].append(unit)
    return [(start, stop, u) for (start, stop), u in zip(bounds, units)]


def _prefix_start(lengths: Sequence[int], last: int, max_tokens: int) -> int:
    """Start of the longest run of sentences ending at `last` that fits."""
    offsets = np.concatenate([[0], np.cumsum(lengths[: last + 1])])
    start = 0
    while not _fits(offsets, start, last + 1, max_tokens):
        start += 1
    return start


# ------------------------------------------------------------------------------------------------ inputs


@dataclass
class _Input:
    """One window as the encoder sees it, and which of the example's units it scores."""

    ids: list[int]
    seps: list[int]  # position of each sentence's [SEP] in ids
    example: int
    start: int  # the example's sentence index of the window's first sentence
    units: list[int]  # the example's units (of its task) scored here


def _tokens(model: TokenLevelDetector, examples: Sequence[Example]) -> dict[str, list[int]]:
    texts = sorted({s for e in examples for s in e.sentences})
    if not texts:
        return {}
    encoded = model.tokenizer(texts, add_special_tokens=False, truncation=True, max_length=model.max_sentence_tokens)
    return dict(zip(texts, encoded["input_ids"]))


def _inputs(model: TokenLevelDetector, examples: Sequence[Example], prefix: bool) -> list[_Input]:
    tokens = _tokens(model, examples)
    cls, sep = model.tokenizer.cls_token_id, model.tokenizer.sep_token_id
    out = []
    for index, e in enumerate(examples):
        pieces = [tokens[s] for s in e.sentences]
        lengths = [len(t) for t in pieces]
        if prefix:
            spans = []
            for unit in range(len(pieces) - (e.task == "gaps")):
                last = _span(unit, e.task)[1]
                spans.append((_prefix_start(lengths, last, model.max_tokens), last + 1, [unit]))
        else:
            spans = plan(lengths, model.max_tokens, e.task)
        for start, stop, units in spans:
            ids, seps = [cls], []
            for piece in pieces[start:stop]:
                ids += piece
                seps.append(len(ids))
                ids.append(sep)
            out.append(_Input(ids, seps, index, start, units))
    return out


def _tensors(model: TokenLevelDetector, chunk: list[_Input], dev: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width, count = max(len(x.ids) for x in chunk), max(len(x.seps) for x in chunk)
    ids = torch.full((len(chunk), width), model.tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(chunk), width), dtype=torch.long)
    pool = torch.zeros((len(chunk), count, width))
    for row, x in enumerate(chunk):
        ids[row, : len(x.ids)] = torch.tensor(x.ids)
        mask[row, : len(x.ids)] = 1
        first = 1  # after [CLS]
        for k, sep in enumerate(x.seps):
            pool[row, k, first : sep + 1] = 1.0 / (sep + 1 - first)
            first = sep + 1
    return ids.to(dev), mask.to(dev), pool.to(dev)


def _labels(chunk: list[_Input], examples: Sequence[Example], dev: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Sentence targets B×S and gap targets B×(S-1): each window's own units carry their labels, everything
    else -1, so a unit is trained once, in the window it is scored from."""
    count = max(len(x.seps) for x in chunk)
    sentence, gap = torch.full((len(chunk), count), -1.0), torch.full((len(chunk), count - 1), -1.0)
    for row, x in enumerate(chunk):
        e = examples[x.example]
        target, gold = (sentence, e.sentence_labels) if e.task == "sentences" else (gap, e.gap_labels)
        for unit in x.units:
            target[row, unit - x.start] = float(gold[unit])
    return sentence.to(dev), gap.to(dev)


def _autocast(dev: str):
    return torch.autocast("cuda", dtype=torch.bfloat16) if dev == "cuda" else contextlib.nullcontext()


@contextlib.contextmanager
def _deterministic():
    """Deterministic kernels while training and scoring (CPU ones already are; CUDA needs asking), restored after."""
    before, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


# ------------------------------------------------------------------------------------------------ scoring


def predict(
    model: TokenLevelDetector, examples: list[Example], prefix: bool = False, batch_size: int = 32
) -> list[np.ndarray]:
    """Per example, P(error) of each unit of its task: len(sentences) values for "sentences", len - 1 for "gaps".

    prefix=False: each unit is scored from its window of `plan` (context on both sides). prefix=True (SNaC §5:
    a sentence is judged given the preceding summary): unit i is scored from the longest run of sentences
    ending at it (a gap: at its second sentence) that fits, so nothing after it is seen."""
    dev = next(model.parameters()).device.type
    inputs = _inputs(model, examples, prefix)
    out = [np.full(len(e.sentences) - (e.task == "gaps"), np.nan) for e in examples]
    model.eval()
    with torch.no_grad(), _deterministic():
        batches = length_batches([len(x.ids) for x in inputs], batch_size, None)
        for batch in progress_bar(batches, shown=True, desc="scoring", leave=False):
            chunk = [inputs[i] for i in batch]
            with _autocast(dev):
                sentence_logits, gap_logits = model(*_tensors(model, chunk, dev))
            sentence_p, gap_p = torch.sigmoid(sentence_logits).cpu().numpy(), torch.sigmoid(gap_logits).cpu().numpy()
            for row, x in enumerate(chunk):
                p = sentence_p if examples[x.example].task == "sentences" else gap_p
                for unit in x.units:
                    out[x.example][unit] = p[row, unit - x.start]
    return out


# ----------------------------------------------------------------------------------------------- training


def _labelled(x: _Input, examples: Sequence[Example]) -> bool:
    gold = examples[x.example].gold
    return any(gold[unit] >= 0 for unit in x.units)


def fit(train_set: list[Example], dev_set: list[Example], p: dict, progress: bool) -> tuple[TokenLevelDetector, dict]:
    """Fine-tune the detector on `train_set` (both heads, jointly); keep the epoch with the best mean dev AUC.

    `p`: seed, epochs, batch_size (windows per step), learning_rate, weight_decay, max_tokens,
    max_sentence_tokens, warmup_ratio (linear warm-up over that share of the steps, then linear decay to 0).
    Returns the model (best epoch's weights) and {"epoch", "dev_auc", "dev_auc_per_config", "history"}."""
    missing = [k for k in PARAMS if k not in p]
    if missing:
        raise BaselineError(f"the token-level baseline needs {', '.join(missing)} under `baseline:` in params.yaml")
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(p["seed"])
    rng = np.random.default_rng(p["seed"])
    dev = AUTO.kind
    model = detector(p["max_tokens"], p["max_sentence_tokens"]).to(dev)
    inputs = [x for x in _inputs(model, train_set, prefix=False) if _labelled(x, train_set)]
    if not inputs:
        raise BaselineError("the token-level baseline got no labelled unit to train on")
    steps = p["epochs"] * -(-len(inputs) // p["batch_size"])
    optimiser = torch.optim.AdamW(model.parameters(), lr=p["learning_rate"], weight_decay=p["weight_decay"], fused=True)
    schedule = get_linear_schedule_with_warmup(optimiser, int(p["warmup_ratio"] * steps), steps)
    loss_fn = nn.BCEWithLogitsLoss()
    lengths = [len(x.ids) for x in inputs]

    def step(batch) -> float:
        chunk = [inputs[i] for i in batch]
        sentence_labels, gap_labels = _labels(chunk, train_set, dev)
        with _autocast(dev):
            sentence_logits, gap_logits = model(*_tensors(model, chunk, dev))
        loss = masked_loss(sentence_logits, sentence_labels, loss_fn) + masked_loss(gap_logits, gap_labels, loss_fn)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        return loss.item()

    def dev_auc():
        return mean_auc(dev_set, predict(model, dev_set, batch_size=p["batch_size"]))

    with _deterministic():
        batches = lambda: length_batches(lengths, p["batch_size"], rng)  # noqa: E731
        return train_epochs(model, p["epochs"], batches, step, dev_auc if dev_set else None, progress)
