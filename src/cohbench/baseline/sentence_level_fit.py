"""Training loop of the baseline: seeded, CUDA when present, model selection on dev AUC."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from ..evaluation import metrics
from .data import labelled_units, mean_auc
from .. import numerics
from ..embedding_store import sentence_key
from ..encoder import AUTO, DIMENSIONS
from .model import SentenceLevelDetector
from .training_loop import length_batches, masked_loss, train_epochs


def device_name() -> str:
    return torch.cuda.get_device_name(0) if AUTO.is_gpu else "cpu"


def _batch(examples, vectors, dev: str):
    n = max(len(e.sentences) for e in examples)
    x = np.zeros((len(examples), n, DIMENSIONS), dtype=np.float32)
    mask = np.zeros((len(examples), n), dtype=bool)
    sentence_labels = np.full((len(examples), n), -1, dtype=np.float32)
    gap_labels = np.full((len(examples), max(n - 1, 1)), -1, dtype=np.float32)
    for i, e in enumerate(examples):
        k = len(e.sentences)
        x[i, :k] = [vectors[sentence_key(s)] for s in e.sentences]
        mask[i, :k] = True
        sentence_labels[i, :k] = e.sentence_labels
        gap_labels[i, : k - 1] = e.gap_labels
    as_tensor = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
    return as_tensor(x), as_tensor(mask), as_tensor(sentence_labels), as_tensor(gap_labels)


def windows(n: int, size: int) -> list[tuple[int, int]]:
    """Overlapping windows [start, end) of at most `size` sentences covering 0..n, half a window apart."""
    if n <= size:
        return [(0, n)]
    starts = list(range(0, n - size, max(size // 2, 1))) + [n - size]
    return [(start, start + size) for start in starts]


def _window_of(i: int, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """The window in which sentence i has the most context on its poorer side (the first such window on ties)."""
    return max((w for w in spans if w[0] <= i < w[1]), key=lambda w: min(i - w[0], w[1] - 1 - i))


def _cut(e, start: int, end: int):
    return dataclasses.replace(e, sentences=e.sentences[start:end], sentence_labels=e.sentence_labels[start:end],
                               gap_labels=e.gap_labels[start : end - 1])


def training_windows(examples, size: int) -> list:
    """Texts longer than the model's positions become overlapping windows, each a training example."""
    return [_cut(e, a, b) for e in examples for a, b in windows(len(e.sentences), size)]


def predict(model, examples, vectors, size: int, batch_size: int = 256) -> list[np.ndarray]:
    """Per example, P(error) of each unit of its task (sentences or gaps), every unit scored by the model itself:
    a text longer than `size` sentences is scored in overlapping windows, each unit from the window where it has
    the most context on both sides (a gap as its left sentence)."""
    pieces, plan = [], []
    for e in examples:
        spans = windows(len(e.sentences), size)
        first = len(pieces)
        pieces += [_cut(e, a, b) for a, b in spans]
        units = len(e.sentences) - (1 if e.task == "gaps" else 0)
        chosen = [spans.index(_window_of(i, spans)) for i in range(units)]
        plan.append([(first + w, i - spans[w][0]) for i, w in enumerate(chosen)])
    scored = _predict_windows(model, pieces, vectors, batch_size)
    return [np.array([scored[piece][at] for piece, at in units], dtype=np.float32) for units in plan]


def predict_prefixes(model, examples, vectors, size: int, batch_size: int = 256) -> list[np.ndarray]:
    """Per example, P(error) of each sentence judged on the text up to it (SNaC §5: context = the preceding
    summary): sentence i is scored by a pass over the last `size` sentences of sentences[:i+1]."""
    prefixes = [_cut(e, max(0, i + 1 - size), i + 1) for e in examples for i in range(len(e.sentences))]
    last = [p[-1] for p in _predict_windows(model, prefixes, vectors, batch_size)]
    out, at = [], 0
    for e in examples:
        out.append(np.array(last[at : at + len(e.sentences)], dtype=np.float32))
        at += len(e.sentences)
    return out


def _predict_windows(model, examples, vectors, batch_size: int) -> list[np.ndarray]:
    """Per example (no longer than the model's positions), P(error) of each unit of its task."""
    model.eval()
    out = []
    with torch.no_grad(), numerics.training_arithmetic():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            x, mask, _, _ = _batch(chunk, vectors, AUTO.kind)
            sentence_logits, gap_logits = model(x, mask)
            sentence_p, gap_p = torch.sigmoid(sentence_logits).cpu().numpy(), torch.sigmoid(gap_logits).cpu().numpy()
            for i, e in enumerate(chunk):
                k = len(e.sentences)
                out.append(sentence_p[i, :k] if e.task == "sentences" else gap_p[i, : k - 1])
    return out


def dev_thresholds(model, dev_set, vectors, size: int) -> dict[str, float | None]:
    """Per head, the threshold with the best F1 of the error class over the training configs' dev splits."""
    by_task: dict[str, tuple[list, list]] = {}
    for (_, task), (gold, scores) in labelled_units(dev_set, predict(model, dev_set, vectors, size)).items():
        g, s = by_task.setdefault(task, ([], []))
        g += gold
        s += scores
    return {
        task: metrics.tune_threshold(g, s, lambda a, b: metrics.prf(a, b)["f1"]) if g else None for task, (g, s) in by_task.items()
    } | {task: None for task in ("sentences", "gaps") if task not in by_task}


def fit(train_set, dev_set, vectors, p: dict, progress: bool):
    with numerics.training_arithmetic():
        return _fit(train_set, dev_set, vectors, p, progress)


def _fit(train_set, dev_set, vectors, p: dict, progress: bool):
    torch.manual_seed(p["seed"])
    rng = np.random.default_rng(p["seed"])
    dev = AUTO.kind
    model = SentenceLevelDetector(DIMENSIONS, p["d_model"], p["layers"], p["heads"], p["dropout"], p["max_sentences"]).to(dev)
    optimiser = torch.optim.AdamW(model.parameters(), lr=p["learning_rate"], weight_decay=p.get("weight_decay", 0.01))
    loss_fn = nn.BCEWithLogitsLoss()
    train_set = training_windows(train_set, p["max_sentences"])
    lengths = [len(e.sentences) for e in train_set]

    def step(batch) -> float:
        x, mask, sentence_labels, gap_labels = _batch([train_set[i] for i in batch], vectors, dev)
        sentence_logits, gap_logits = model(x, mask)
        loss = masked_loss(sentence_logits, sentence_labels, loss_fn) + masked_loss(gap_logits, gap_labels[:, : gap_logits.shape[1]], loss_fn)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        return loss.item()

    def dev_auc():
        return mean_auc(dev_set, predict(model, dev_set, vectors, p["max_sentences"]))

    batches = lambda: length_batches(lengths, p["batch_size"], rng)  # noqa: E731
    return train_epochs(model, p["epochs"], batches, step, dev_auc if dev_set else None, progress)
