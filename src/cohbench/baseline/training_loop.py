"""What both baselines' training loops share: the masked loss, length-sorted batches, and the epoch loop that keeps
the epoch with the best mean dev AUC."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ..display import progress_bar


def masked_loss(logits: torch.Tensor, labels: torch.Tensor, loss_fn) -> torch.Tensor:
    """The loss over labelled units only (-1 = no label); zero, still attached to the graph, when none is labelled."""
    keep = labels >= 0
    return loss_fn(logits[keep], labels[keep]) if keep.any() else logits.sum() * 0


def length_batches(lengths: Sequence[int], size: int, rng: np.random.Generator | None) -> list[list[int]]:
    """Batches of items of similar length (a 100-sentence SNaC summary is not padded against 5-sentence stories).
    With `rng`: random order within a length and random order of batches, both from the seed; without, in length
    order (scoring)."""
    order = rng.permutation(len(lengths)) if rng is not None else np.arange(len(lengths))
    order = order[np.argsort([lengths[i] for i in order], kind="stable")]
    batches = [order[start : start + size].tolist() for start in range(0, len(order), size)]
    return [batches[i] for i in rng.permutation(len(batches))] if rng is not None else batches


def train_epochs(
    model: torch.nn.Module,
    epochs: int,
    batches: Callable[[], list],
    step: Callable[[object], float],
    dev_auc: Callable[[], tuple[float, dict]] | None,
    progress: bool,
) -> tuple[torch.nn.Module, dict]:
    """Run `epochs` epochs of `step` (one optimiser step on a batch, returning its loss) over `batches()` (drawn
    anew each epoch), scoring `dev_auc()` (mean AUC, per config) after each; keep the weights of the best epoch
    (the last one without a dev set). Returns the model and {"epoch", "dev_auc", "dev_auc_per_config", "history"}."""
    best_state, best = None, {"epoch": 0, "dev_auc": -1.0, "dev_auc_per_config": {}}
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        drawn = batches()
        total = 0.0
        for batch in progress_bar(drawn, shown=progress, desc=f"epoch {epoch}", leave=False):
            total += step(batch)
        auc, per_config = dev_auc() if dev_auc is not None else (float("nan"), {})
        history.append({"epoch": epoch, "train_loss": round(total / max(len(drawn), 1), 4), "dev_auc": round(auc, 4)})
        if progress:
            print(f"epoch {epoch}: train loss {history[-1]['train_loss']:.4f}, mean dev AUC {auc:.4f}", file=sys.stderr)
        if best_state is None or dev_auc is None or auc > best["dev_auc"]:
            best_state = copy.deepcopy(model.state_dict())
            rounded = {k: round(v, 4) if v is not None else None for k, v in per_config.items()}
            best = {"epoch": epoch, "dev_auc": round(auc, 4), "dev_auc_per_config": rounded}
    model.load_state_dict(best_state)
    return model, best | {"history": history}
