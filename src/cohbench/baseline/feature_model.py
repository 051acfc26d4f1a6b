"""The baseline's sentence-feature head: a logistic regression over `sentence_cues.NAMES` (standardised) beside the
MiniLM sentence vector, each sentence read against the sentences before it (SNaC §5), trained on the train splits of
`baseline.sentence_features.train_configs` (SNaC) and scoring those configs.

Why a head of its own: SNaC's errors are a character never introduced (CharE), a pronoun or a definite with nothing
to point at (RefE), a jump in scene (SceneE). From ~100 summaries a model over sentence vectors does not find these
(the Transformer trained on SNaC reached 61.7 test AUC), while counts of new names and pronoun cues carry them; and
trained jointly with the synthetic configs, shared weights learn the synthetic cues (low similarity to the context
means an error), which are flat on SNaC. The L2 strength is chosen by document-grouped cross-validation on the
train and validation splits, never on test. Float32 on the pinned path, full-batch L-BFGS: the same bytes on every
CPU (`numerics`)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import torch

from ..embedding_store import sentence_key
from .. import sentence_cues
from .data import BaselineError, Example

ITERATIONS = 100  # L-BFGS steps: the loss is convex and settles long before (checked on SNaC)


@dataclass
class FeatureHead:
    mean: torch.Tensor
    scale: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    l2: float
    cross_validation: dict


def sentence_matrix(examples: list[Example], vectors: dict, analyses: dict) -> list[np.ndarray]:
    """Per example, len(sentences) x (sentence_cues.WIDTH + vector width) float32 rows: the features of each sentence
    read against the sentences before it, then its vector."""
    out = []
    for e in examples:
        v = np.stack([vectors[sentence_key(s)] for s in e.sentences])
        out.append(np.hstack([sentence_cues.text_features(e.sentences, analyses, v), v]).astype(np.float32))
    return out


def _labelled(examples: list[Example], rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, group = [], [], []
    for e, r in zip(examples, rows):
        keep = [i for i, label in enumerate(e.sentence_labels) if label >= 0]
        x.append(r[keep])
        y += [e.sentence_labels[i] for i in keep]
        group += [e.config + "/" + e.id] * len(keep)
    return np.vstack(x), np.array(y, dtype=np.float32), np.array(group)


def novelty_centre(scale: torch.Tensor, length: float) -> torch.Tensor:
    """The untrained `novelty_count` reference as weights on the standardised features: the direction of the sum of the
    `sentence_cues.NOVELTY` counts (a count's standardised weight is its standard deviation), at `length`."""
    centre = torch.zeros_like(scale)
    centre[sentence_cues.NOVELTY_COLUMNS] = scale[sentence_cues.NOVELTY_COLUMNS]
    return centre * (length / centre.norm())


def _fit(x: np.ndarray, y: np.ndarray, l2: float, seed: int, rows: np.ndarray | None = None,
         prior: float = 0.0) -> tuple[torch.Tensor, ...]:
    """`rows`: each row's weight in the loss (a weighted mean), or None for a plain mean. `prior`: the L2 penalty pulls
    the weights towards `novelty_centre` at this length instead of towards zero (0: towards zero)."""
    torch.manual_seed(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    mean, scale = xt.mean(0), xt.std(0).clamp(min=1e-6)
    z = (xt - mean) / scale
    centre = novelty_centre(scale, prior) if prior else torch.zeros(z.shape[1])
    weight = centre.clone().requires_grad_(True)
    bias = torch.zeros(1, requires_grad=True)
    optimiser = torch.optim.LBFGS([weight, bias], max_iter=ITERATIONS, line_search_fn="strong_wolfe")
    if rows is None:
        loss_fn = torch.nn.BCEWithLogitsLoss()
    else:
        share = torch.from_numpy((rows / rows.sum()).astype(np.float32))
        loss_fn = lambda logits, target: (torch.nn.functional.binary_cross_entropy_with_logits(  # noqa: E731
            logits, target, reduction="none") * share).sum()

    def closure():
        optimiser.zero_grad()
        loss = loss_fn(z @ weight + bias, yt) + l2 * ((weight - centre) @ (weight - centre)) / 2
        loss.backward()
        return loss

    optimiser.step(closure)
    return mean, scale, weight.detach(), bias.detach()


def _scores(head: tuple, x: np.ndarray) -> np.ndarray:
    mean, scale, weight, bias = head
    with torch.no_grad():
        return torch.sigmoid(((torch.from_numpy(x) - mean) / scale) @ weight + bias).numpy()


def _folds(groups: np.ndarray, k: int) -> np.ndarray:
    """Fold of each row: its document's (crc32 of the group name) modulo k, so a document never spans folds."""
    return np.array([zlib.crc32(g.encode("utf-8")) % k for g in groups])


def fit(train_set: list[Example], dev_set: list[Example], vectors: dict, analyses: dict, p: dict) -> FeatureHead:
    """The L2 strength of `p["l2"]` with the best mean AUC over `p["folds"]` document-grouped folds of train +
    validation, then refitted on all of them."""
    from ..evaluation import metrics

    examples = [e for e in train_set + dev_set if e.task == "sentences"]
    if not examples:
        raise BaselineError("the sentence-feature head has no sentence labels to train on")
    x, y, groups = _labelled(examples, sentence_matrix(examples, vectors, analyses))
    fold = _folds(groups, p["folds"])
    by_l2 = {}
    for l2 in p["l2"]:
        aucs = []
        for k in range(p["folds"]):
            train, held = fold != k, fold == k
            if held.any() and train.any() and 0 < y[held].sum() < held.sum():
                aucs.append(metrics.roc_auc(y[held].tolist(), _scores(_fit(x[train], y[train], l2, p["seed"], prior=p.get("prior", 0.0)),
                                                                      x[held]).tolist()))
        by_l2[l2] = round(float(np.mean(aucs)), 4) if aucs else None
    defined = {l2: auc for l2, auc in by_l2.items() if auc is not None}
    if not defined:
        raise BaselineError("the sentence-feature head's cross-validation has no fold with both classes")
    l2 = max(defined, key=lambda v: (defined[v], v))  # ties: the stronger penalty
    return FeatureHead(*_fit(x, y, l2, p["seed"], prior=p.get("prior", 0.0)), l2=l2, cross_validation={"folds": p["folds"], "mean_auc_by_l2": by_l2})


def for_other_text(params: dict) -> dict:
    """The head's parameters for training on other text than it scores (synthetic data, one's own data): the one
    strong L2 penalty `synthetic_l2` instead of the cross-validated grid, centred on the untrained novelty sum at
    length `synthetic_prior` instead of on zero (params.yaml says why)."""
    for key in ("synthetic_l2", "synthetic_prior"):
        if not isinstance(params.get(key), (int, float)) or isinstance(params.get(key), bool) or params[key] < 0:
            raise BaselineError(f"params.yaml has no non-negative number for baseline.sentence_features.{key}; restore it from the repository")
    return params | {"l2": [float(params["synthetic_l2"])], "prior": float(params["synthetic_prior"])}


def fit_with_synthetic(human: list[Example], synthetic: list[Example], vectors: dict, analyses: dict, p: dict,
                       weights: list[float]) -> FeatureHead:
    """SYN+FT: the head trained on `human` (the target's train + validation) pooled with `synthetic`, each synthetic
    row weighing `w` against a human row's 1. `w` (from `weights`) and the L2 strength are chosen together by the
    mean AUC over `p["folds"]` document-grouped folds of the human rows alone (the synthetic rows always train);
    `w` = 0 is FT itself, so the choice can say that the synthetic data does not help."""
    from ..evaluation import metrics

    hx, hy, groups = _labelled(human, sentence_matrix(human, vectors, analyses))
    sx, sy, _ = _labelled(synthetic, sentence_matrix(synthetic, vectors, analyses))
    fold = _folds(groups, p["folds"])

    def fitted(keep: np.ndarray, w: float, l2: float):
        if not w:  # FT exactly: the human rows alone, a plain mean
            return _fit(hx[keep], hy[keep], l2, p["seed"])
        rows = np.concatenate([np.ones(int(keep.sum())), np.full(len(sy), float(w))])
        return _fit(np.vstack([hx[keep], sx]), np.concatenate([hy[keep], sy]), l2, p["seed"], rows)

    by_setting = {}
    for w, l2 in ((w, l2) for w in weights for l2 in p["l2"]):
        aucs = []
        for k in range(p["folds"]):
            train, held = fold != k, fold == k
            if held.any() and train.any() and 0 < hy[held].sum() < held.sum():
                aucs.append(metrics.roc_auc(hy[held].tolist(), _scores(fitted(train, w, l2), hx[held]).tolist()))
        by_setting[(w, l2)] = round(float(np.mean(aucs)), 4) if aucs else None
    defined = {key: auc for key, auc in by_setting.items() if auc is not None}
    if not defined:
        raise BaselineError("the SYN+FT head's cross-validation has no fold with both classes")
    w, l2 = max(defined, key=lambda key: (defined[key], -key[0], key[1]))  # ties: less synthetic, stronger penalty
    head = fitted(np.ones(len(hy), dtype=bool), w, l2)
    return FeatureHead(*head, l2=l2, cross_validation={
        "folds": p["folds"], "synthetic_weight": w,
        "mean_auc_by_weight_and_l2": {f"{key[0]}/{key[1]}": auc for key, auc in by_setting.items()}})


def predict(head: FeatureHead, examples: list[Example], vectors: dict, analyses: dict) -> list[np.ndarray]:
    """Per example, P(error) of each sentence, read against the sentences before it only."""
    parts = (head.mean, head.scale, head.weight, head.bias)
    return [_scores(parts, rows) for rows in sentence_matrix(examples, vectors, analyses)]


def weights(head: FeatureHead) -> dict[str, float]:
    """The features' weights (per standard deviation), for the card: what the head learned."""
    return {name: round(float(w), 4) for name, w in zip(sentence_cues.NAMES, head.weight[: sentence_cues.WIDTH])}
