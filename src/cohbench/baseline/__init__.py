"""The bundled baseline: Cai et al.'s sentence-level detector trained on every release, scored with the
evaluation protocols, and held to floors (the gate) before a release is accepted.

`train()` reads the train splits of the incoherence configs named in `params.yaml` (`baseline.train_configs`,
whichever are built; SNaC's too when it is listed there), selects the epoch with the best mean dev
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
from ..schema import DEV_SPLITS, TRAIN_SPLITS

TASKS = ("sentences", "gaps")  # the registry tasks the detector has a head for


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

    @property
    def gold(self) -> list[int]:
        """The labels of the units the example is scored on: its sentences' or its gaps'."""
        return self.sentence_labels if self.task == "sentences" else self.gap_labels


def labelled_units(examples, predicted) -> dict[tuple[str, str], tuple[list, list]]:
    """(config, task) -> (gold, scores) over the labelled units (label >= 0) of `examples`, given each one's unit
    scores: the one flattening of predictions for model selection, thresholds and the studies."""
    grouped: dict[tuple[str, str], tuple[list, list]] = {}
    for e, scores in zip(examples, predicted):
        gold, kept = grouped.setdefault((e.config, e.task), ([], []))
        for label, score in zip(e.gold, scores):
            if label >= 0:
                gold.append(label)
                kept.append(score)
    return grouped


def mean_auc(examples, predicted) -> tuple[float, dict]:
    """Mean over configs of the ROC AUC of their labelled units, and the AUC per config (the epoch selection)."""
    from ..protocols import metrics

    per_config = {config: metrics.roc_auc(gold, scores) for (config, _), (gold, scores) in labelled_units(examples, predicted).items()}
    defined = [v for v in per_config.values() if v is not None]
    return (float(np.mean(defined)) if defined else float("nan")), per_config


def baseline_params() -> dict:
    params = settings.params().get("baseline")
    if not params:
        raise BaselineError("params.yaml has no `baseline:` settings")
    return params


def examples_of(config: str, rows: list[dict], task: str) -> list[Example]:
    """The records that have units of `task` to score (a gap needs two sentences), whatever their length:
    long texts are windowed by the model, never cut."""
    out = []
    for r in rows:
        sentences = r["sentences"]
        n = len(sentences)
        labels = r["sentence_labels"] if task == "sentences" else r["gap_labels"]
        if not labels or n < (1 if task == "sentences" else 2):
            continue
        sentence_labels = list(labels) if task == "sentences" else [-1] * n
        gap_labels = list(labels) if task == "gaps" else [-1] * (n - 1)
        out.append(Example(config, r["id"], r["split"], task, sentences, sentence_labels, gap_labels))
    return out


def _sample(examples: list[Example], limit: int | None, rng: np.random.Generator) -> list[Example]:
    if not limit or len(examples) <= limit:
        return examples
    keep = sorted(rng.choice(len(examples), size=limit, replace=False))
    return [examples[i] for i in keep]


def _dev_split(splits) -> str | None:
    return next((s for s in DEV_SPLITS if s in splits), None)


def _train_split(splits) -> str | None:
    return next((s for s in TRAIN_SPLITS if s in splits), None)


def release_data(release: Path) -> tuple[dict, dict[str, str], dict[str, str]]:
    """Every built config's records by split (read once), its protocol, and its task where the detector has a
    head for it (sentences or gaps), all as the registry declares them."""
    from ..registry import spec
    from ..release import read_config

    built = built_configs(release)
    data = {name: read_config(release, name, stats).splits for name, stats in built.items()}
    protocols = {name: spec(name).protocol for name in data}
    tasks = {name: spec(name).task for name in sorted(data) if spec(name).task in TASKS}
    return data, protocols, tasks


def release_vectors(data: dict, tasks: dict[str, str], p: dict, progress: bool) -> dict:
    """Sentence vectors of every sentence of every config the detector has a head for, all splits, in one call:
    the same set for `train` and every study of the same release, so they share one cached encoding."""
    from . import fit

    groups = [examples_of(config, rows, task) for config, task in tasks.items() for rows in data[config].values()]
    return fit.embed(groups, settings.project_root() / p["embedding_cache"], progress)


def training_sets(data: dict, tasks: dict[str, str], configs: list[str], p: dict) -> tuple[list[Example], list[Example]]:
    """Train examples (at most `max_train_records` per config, sampled with the seed) and dev examples."""
    rng = np.random.default_rng(p["seed"])
    train_set, dev_set = [], []
    for config in configs:
        splits = data[config]
        train = _train_split(splits)
        if train is None:
            raise BaselineError(f"{config} has no train split to train the baseline on")
        train_set += _sample(examples_of(config, splits[train], tasks[config]), p.get("max_train_records"), rng)
        if dev := _dev_split(splits):
            dev_set += examples_of(config, splits[dev], tasks[config])
    if not train_set:
        raise BaselineError(f"the train splits of {', '.join(configs)} hold no labelled record to train on")
    return train_set, dev_set


def train(*, release: Path | None = None, params: dict | None = None, progress: bool = True) -> dict:
    """Train, select on dev, score every applicable config beside the reference scorers; returns (and writes)
    the metrics. Timings go to the project's `.cache/timings/`, never into the release."""
    from ..protocols import PRECEDING_CONTEXT, evaluate
    from . import fit, reference

    release = release or settings.release_dir()
    p = params or baseline_params()
    data, protocols, tasks = release_data(release)
    built = data
    unknown = [c for c in p["train_configs"] if c in built and c not in tasks]
    if unknown:
        raise BaselineError(
            f"{', '.join(unknown)} has no sentence or gap labels to train on; configs the baseline can train on: "
            f"{', '.join(tasks)}"
        )
    train_configs = [c for c in p["train_configs"] if c in built]
    if not train_configs:
        raise BaselineError(
            f"none of the training configs ({', '.join(p['train_configs'])}) is built in {release}; build them first"
        )
    train_set, dev_set = training_sets(data, tasks, train_configs, p)
    # configs that are only trained on (no split but train) have nothing to score
    scored = {c: task for c, task in tasks.items() if set(data[c]) - set(TRAIN_SPLITS)}
    scored_examples = {
        c: examples_of(c, [r for s, rows in data[c].items() if s not in TRAIN_SPLITS for r in rows], task)
        for c, task in scored.items()
    }
    timings = {}
    started = time.perf_counter()
    vectors = release_vectors(data, tasks, p, progress)
    timings["embedding"] = time.perf_counter() - started
    started = time.perf_counter()
    references = {
        config: {
            name: evaluate(config, reference.predictions(name, data[config], protocols[config], task, vectors),
                           splits=data[config], release=release)
            for name in reference.scorers_for(task)
            if reference.applicable(name, data[config])
        }
        for config, task in scored.items()
    }
    timings["reference_scorers"] = time.perf_counter() - started
    started = time.perf_counter()
    model, selection = fit.fit(train_set, dev_set, vectors, p, progress)
    timings["training"] = time.perf_counter() - started
    # test-only configs (no dev split to tune on) take each head's threshold from the training configs' dev splits
    head_thresholds = fit.dev_thresholds(model, dev_set, vectors, p["max_sentences"])
    out_dir = release / "baseline"
    scores = {}
    for config, task in scored.items():
        examples = scored_examples[config]
        # SNaC judges each sentence given the preceding summary only; the other protocols see the whole text
        predicted = (fit.predict_prefixes if protocols[config] in PRECEDING_CONTEXT else fit.predict)(model, examples, vectors, p["max_sentences"])
        predictions = [{"id": e.id, "score": [round(float(v), 6) for v in s]} for e, s in zip(examples, predicted)]
        write_text(out_dir / "predictions" / f"{config}.jsonl", "".join(json.dumps(x) + "\n" for x in predictions))
        threshold = None if _dev_split(data[config]) else head_thresholds[task]
        scores[config] = evaluate(config, predictions, threshold=threshold, splits=data[config], release=release)
        if threshold is not None:
            scores[config]["decision"].update(
                tuned_on=f"dev splits of {', '.join(sorted({e.config for e in dev_set if e.task == task}))}",
                criterion="maximum F1 of the error class",
            )
    metrics = {
        "model": "sentence-level Transformer over all-MiniLM-L6-v2 sentence embeddings (Cai et al. 2021, §4.2)",
        "device": fit.device_name(),
        "settings": {k: v for k, v in p.items() if k not in ("floors", "margin_over_references", "published", "studies", "token_level")},
        "trained_on": {c: sum(1 for e in train_set if e.config == c) for c in train_configs},
        "selection": selection,
        "scores": scores,
        "references": references,
        "published": {c: v for c, v in (p.get("published") or {}).items() if c in scores},
    }
    write_text(out_dir / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    write_text(out_dir / "metrics.md", metrics_markdown(metrics))
    timings_path = settings.project_root() / ".cache" / "timings" / "train.json"
    write_text(timings_path, json.dumps({k: round(v, 1) for k, v in timings.items()} | {"device": fit.device_name()}, indent=2) + "\n")
    if progress:
        print(f"baseline trained in {timings['training']:.0f} s on {fit.device_name()} (embedding {timings['embedding']:.0f} s, "
              f"reference scorers {timings['reference_scorers']:.0f} s; {timings_path}); metrics in {out_dir / 'metrics.json'}",
              file=sys.stderr)
    return metrics


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _headline(result: dict) -> dict:
    """The test-split (else last split) binary metrics of a result, whatever its protocol."""
    splits = result["splits"]
    block = splits.get("test") or list(splits.values())[-1]
    return block.get("sentence", block)


def _f1(m: dict) -> str:
    if m.get("f1") is None:
        return "-"
    if m.get("degenerate"):
        return f"{_pct(m['f1'])} (flags {_pct(m['predicted_error_rate'])}%)"
    return _pct(m["f1"])


def _best_reference(references: dict) -> tuple[str, dict] | None:
    scored = {name: _headline(r) for name, r in references.items() if _headline(r).get("auc") is not None}
    if not scored:
        return None
    name = max(scored, key=lambda n: scored[n]["auc"])
    return name, scored[name]


def metrics_markdown(metrics: dict) -> str:
    """The card's baseline section: per config, the trained model beside the best untrained reference scorer on
    the same split (every scorer's result is in metrics.json and `cohbench evaluate --scorer`)."""
    selection = metrics["selection"]
    lines = [
        "## Baseline (machine-written)",
        "",
        f"{metrics['model']}; trained on {', '.join(f'{c} train ({n})' for c, n in metrics['trained_on'].items())}; "
        f"epoch {selection['epoch']} selected by mean validation AUC {_pct(selection['dev_auc'])} (seed "
        f"{metrics['settings']['seed']}, {metrics['device']}). Test split (else the only scored split), error class, "
        "percent. *Best untrained* is the best reference scorer on that split (`cohbench evaluate CONFIG --scorer "
        "NAME`); a trained number means something only beside it. F1 at the threshold tuned on validation; "
        "\"flags\" marks a threshold that calls (nearly) every unit an error.",
        "",
        "| config | units | AUC | AP | R@P70 | F1 | best untrained: AUC / AP | AUC gain | published AUC |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for config, result in metrics["scores"].items():
        m = _headline(result)
        best = _best_reference(metrics["references"].get(config, {}))
        rival = f"{best[0]} {_pct(best[1]['auc'])} / {_pct(best[1].get('average_precision'))}" if best else "-"
        gain = f"{100 * (m['auc'] - best[1]['auc']):+.1f}" if best and m.get("auc") is not None else "-"
        ref = metrics["published"].get(config)
        published = f"{_pct(ref['auc'])} ({ref['source']})" if ref else "-"
        lines.append(
            f"| `{config}` | {m['units']} | {_pct(m.get('auc'))} | {_pct(m.get('average_precision'))} "
            f"| {_pct(m.get('recall_at_p70'))} | {_f1(m)} | {rival} | {gain} | {published} |"
        )
    return "\n".join(lines) + "\n"
