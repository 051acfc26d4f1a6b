"""The bundled baseline: Cai et al.'s sentence-level detector trained on every release, scored with the
evaluation protocols, and held to floors (the gate) before a release is accepted.

`train()` reads the train splits of the incoherence configs named in `params.yaml` (`baseline.train_configs`,
whichever are built; SNaC train only when `baseline.train_on_snac`), selects the epoch with the best mean dev
AUC over those configs, and scores every built config that a sentence or gap head applies to (its dev and test
splits; test-only configs such as `storycloze_dsd` get the threshold tuned on the training configs' dev splits).
Outputs in `<release>/baseline/`: metrics.json, metrics.md (rendered into the card), predictions/<config>.jsonl.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import settings
from ..atomic import write_text
from ..errors import CohbenchError
from ..release import built_configs

TASK_OF_PROTOCOL = {"gaps": "gaps", "sentences": "sentences", "snac": "sentences"}

# Cai et al. 2021, Table 3, "Sentence-level" row (BERT sentence embeddings, no pre-training). Their test sets are
# crowd-verified subsets of the automatic ones (Table 2); ours are the automatic test splits, so this is a
# reference point, not a replication.
PUBLISHED = {
    "timetravel_msd": {"source": "Cai et al. 2021, Table 3 (sentence-level, TimeTravel MSD)", "accuracy": 0.755, "precision": 0.671, "recall": 0.520, "f1": 0.586, "auc": 0.801},
    "timetravel_dsd": {"source": "Cai et al. 2021, Table 3 (sentence-level, TimeTravel DSD)", "accuracy": 0.873, "precision": 0.712, "recall": 0.612, "f1": 0.659, "auc": 0.890},
}  # fmt: skip


class BaselineError(CohbenchError):
    """The baseline cannot be trained or gated on this release."""


@dataclass
class Example:
    config: str
    id: str
    split: str
    task: str  # "sentences" or "gaps"
    sentences: list[str]
    sentence_labels: list[int]
    gap_labels: list[int]


def baseline_params() -> dict:
    params = settings.params().get("baseline")
    if not params:
        raise BaselineError("params.yaml has no `baseline:` settings")
    return params


def examples_of(config: str, rows: list[dict], task: str, max_sentences: int) -> list[Example]:
    out = []
    for r in rows:
        sentences = r["sentences"][:max_sentences]
        n = len(sentences)
        labels = r["sentence_labels"] if task == "sentences" else r["gap_labels"]
        if not labels or n < 2:
            continue
        sentence_labels = list(labels[:n]) if task == "sentences" else [-1] * n
        gap_labels = list(labels[: n - 1]) if task == "gaps" else [-1] * (n - 1)
        out.append(Example(config, r["id"], r["split"], task, sentences, sentence_labels, gap_labels))
    return out


def _sample(examples: list[Example], limit: int | None, rng: np.random.Generator) -> list[Example]:
    if not limit or len(examples) <= limit:
        return examples
    keep = sorted(rng.choice(len(examples), size=limit, replace=False))
    return [examples[i] for i in keep]


def train(*, release: Path | None = None, params: dict | None = None, progress: bool = True) -> dict:
    """Train, select on dev, score every applicable config; returns (and writes) the metrics."""
    from ..protocols import evaluate, protocol_of
    from ..validation.frames import read_config
    from . import fit

    release = release or settings.release_dir()
    p = params or baseline_params()
    built = built_configs(release)
    data = {name: read_config(release, name, stats).splits for name, stats in built.items()}
    protocols = {name: protocol_of(name, splits) for name, splits in data.items()}
    train_configs = [c for c in p["train_configs"] if c in built] + (["snac"] if p.get("train_on_snac") and "snac" in built else [])
    if not train_configs:
        raise BaselineError(
            f"none of the training configs ({', '.join(p['train_configs'])}) is built in {release}; build them first"
        )
    rng = np.random.default_rng(p["seed"])
    train_set, dev_set = [], []
    for config in train_configs:
        task = TASK_OF_PROTOCOL[protocols[config]]
        splits = data[config]
        if "train" not in splits:
            raise BaselineError(f"{config} has no train split to train the baseline on")
        train_set += _sample(examples_of(config, splits["train"], task, p["max_sentences"]), p.get("max_train_records"), rng)
        dev = next((s for s in ("dev", "val", "validation") if s in splits), None)
        if dev:
            dev_set += examples_of(config, splits[dev], task, p["max_sentences"])
    scored = {c: TASK_OF_PROTOCOL[protocols[c]] for c in sorted(built) if protocols[c] in TASK_OF_PROTOCOL}
    scored_examples = {
        c: examples_of(c, [r for s, rows in data[c].items() if s != "train" for r in rows], task, p["max_sentences"])
        for c, task in scored.items()
    }
    started = time.perf_counter()
    vectors = fit.embed([train_set, dev_set, *scored_examples.values()], settings.project_root() / p["embedding_cache"], progress)
    embed_seconds = time.perf_counter() - started
    started = time.perf_counter()
    model, selection = fit.fit(train_set, dev_set, vectors, p, progress)
    train_seconds = time.perf_counter() - started
    # test-only configs (no dev split to tune on) take each head's threshold from the training configs' dev splits
    head_thresholds = fit.dev_thresholds(model, dev_set, vectors)
    out_dir = release / "baseline"
    scores = {}
    for config, task in scored.items():
        examples = scored_examples[config]
        # SNaC judges each sentence given the preceding summary only; the other protocols see the whole text
        predicted = (fit.predict_prefixes if protocols[config] == "snac" else fit.predict)(model, examples, vectors)
        lines = [{"id": e.id, "score": [round(float(v), 6) for v in s]} for e, s in zip(examples, predicted)]
        predictions = _complete(data[config], lines, task, p["max_sentences"])
        write_text(out_dir / "predictions" / f"{config}.jsonl", "".join(json.dumps(x) + "\n" for x in predictions))
        has_dev = any(s in data[config] for s in ("dev", "val", "validation"))
        threshold = None if has_dev else head_thresholds[task]
        scores[config] = evaluate(config, predictions, threshold=threshold, release=release)
        if threshold is not None:
            scores[config]["decision"].update(
                tuned_on=f"dev splits of {', '.join(sorted({e.config for e in dev_set if e.task == task}))}",
                criterion="maximum F1 of the error class",
            )
    metrics = {
        "model": "sentence-level Transformer over all-MiniLM-L6-v2 sentence embeddings (Cai et al. 2021, §4.2)",
        "device": fit.device_name(),
        "settings": {k: v for k, v in p.items() if k != "floors"},
        "trained_on": {c: sum(1 for e in train_set if e.config == c) for c in train_configs},
        "selection": selection,
        "seconds": {"embedding": round(embed_seconds, 1), "training": round(train_seconds, 1)},
        "scores": scores,
        "published": {c: v for c, v in PUBLISHED.items() if c in scores},
    }
    write_text(out_dir / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    write_text(out_dir / "metrics.md", metrics_markdown(metrics))
    if progress:
        print(f"baseline trained in {train_seconds:.0f} s on {fit.device_name()}; metrics in {out_dir / 'metrics.json'}", file=sys.stderr)
    return metrics


def _complete(splits: dict, lines: list[dict], task: str, max_sentences: int) -> list[dict]:
    """Predictions for every non-train record: records the model could not score (under 2 sentences) get 0,
    sentences past `max_sentences` get the last scored value, so the protocol sees one value per unit."""
    by_id = {line["id"]: line["score"] for line in lines}
    out = []
    for split, rows in splits.items():
        if split == "train":
            continue
        for r in rows:
            units = len(r["sentences"]) - (1 if task == "gaps" else 0)
            got = by_id.get(r["id"], [])
            filler = got[-1] if got else 0.0
            out.append({"id": r["id"], "score": (got + [filler] * units)[:units]})
    return out


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _headline(result: dict) -> dict:
    """The test-split (else last split) binary metrics of a result, whatever its protocol."""
    splits = result["splits"]
    block = splits.get("test") or list(splits.values())[-1]
    return block.get("sentence", block)


def metrics_markdown(metrics: dict) -> str:
    lines = [
        "## Baseline (machine-written)",
        "",
        f"{metrics['model']}; trained on {', '.join(f'{c} train ({n})' for c, n in metrics['trained_on'].items())}, "
        f"epoch {metrics['selection']['epoch']} selected by mean dev AUC {metrics['selection']['dev_auc']:.3f}; "
        f"{metrics['seconds']['training']:.0f} s of training on {metrics['device']} (seed {metrics['settings']['seed']}). "
        "Test split, error class, percent:",
        "",
        "| config | units | Acc | P | R | F1 | AUC | threshold | published (Acc / P / R / F1 / AUC) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for config, result in metrics["scores"].items():
        m = _headline(result)
        ref = metrics["published"].get(config)
        published = " / ".join(_pct(ref[k]) for k in ("accuracy", "precision", "recall", "f1", "auc")) + f" ({ref['source']})" if ref else "-"
        decision = result["decision"]
        threshold = f"{decision['threshold']:.3f} ({decision['tuned_on']})"
        lines.append(
            f"| `{config}` | {m['units']} | {_pct(m.get('accuracy'))} | {_pct(m.get('precision'))} | {_pct(m.get('recall'))} "
            f"| {_pct(m.get('f1'))} | {_pct(m.get('auc'))} | {threshold} | {published} |"
        )
    return "\n".join(lines) + "\n"
