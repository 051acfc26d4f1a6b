"""What the baseline learns from and is scored on: a release's records as examples of the detector's two tasks
(a label per sentence, or per gap between sentences), its parameters, and the flattening of unit predictions
that model selection, thresholds and the studies share."""


from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import settings
from ..errors import CohbenchError
from ..release.layout import built_configs
from ..schema import DEV_SPLITS, TRAIN_SPLITS

TASKS = ("sentences", "gaps")  # the protocol units the detector has a head for


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
    from ..evaluation import metrics

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


def dev_split(splits) -> str | None:
    return next((s for s in DEV_SPLITS if s in splits), None)


def train_split(splits) -> str | None:
    return next((s for s in TRAIN_SPLITS if s in splits), None)


def release_data(release: Path) -> tuple[dict, dict[str, str], dict[str, str]]:
    """Every built config's records by split (read once), its protocol, and its task (its protocol's unit) where
    the detector has a head for it (sentences or gaps)."""
    from ..evaluation import unit_of
    from ..corpora.registry import spec
    from ..release.layout import read_config

    built = built_configs(release)
    data = {name: read_config(release, name, stats).splits for name, stats in built.items()}
    protocols = {name: spec(name).protocol for name in data}
    tasks = {name: unit_of(name) for name in sorted(data) if unit_of(name) in TASKS}
    return data, protocols, tasks


def labelled_task(splits: dict[str, list[dict]]) -> str | None:
    """The task a folder's config trains (gaps where any gap is labelled, else sentences where any sentence is), read
    from its records, never from its name; None when it has neither."""
    for task, field in (("gaps", "gap_labels"), ("sentences", "sentence_labels")):
        if any(label >= 0 for rows in splits.values() for r in rows for label in r[field] or ()):
            return task
    return None


def folder_data(folders: list[Path]) -> tuple[dict, dict[str, str], dict[str, Path]]:
    """The configs of folders laid out like a release (`cohbench corrupt` outputs, `derive` copies), read through the
    one reader: records by split, the task of each (its protocol has the task's name) and its folder. A config of
    the same name in two folders is refused: every figure names its config."""
    from ..release.layout import read_config

    data, tasks, where = {}, {}, {}
    for folder in (Path(f).expanduser().resolve() for f in folders):
        built = built_configs(folder) if folder.is_dir() else {}
        if not built:
            raise BaselineError(f"--train-data {folder} holds no config laid out like a release (data/<config>/<split>.parquet "
                                "and stats/<config>.json); give a `cohbench corrupt` output")
        for name, stats in built.items():
            if name in where:
                raise BaselineError(f"config {name} is in both {where[name]} and {folder}; make one under another name "
                                    "(cohbench corrupt --config NAME)")
            splits = read_config(folder, name, stats).splits
            task = labelled_task(splits)
            if task is None:
                raise BaselineError(f"{name} in {folder} has no sentence or gap labels to train on")
            data[name], tasks[name], where[name] = splits, task, folder
    return data, tasks, where


def release_vectors(data: dict, tasks: dict[str, str], progress: bool, folder: Path | None = None, read_also=()) -> dict:
    """sha256 key -> vector of every sentence of every config the detector has a head for, all splits: read from the
    embedding store, where the builds left the vectors of every sentence they encoded; the rest encoded once."""
    from ..embedding_store import sentence_vectors

    sentences = {s for config, task in tasks.items() for rows in data[config].values()
                 for e in examples_of(config, rows, task) for s in e.sentences}
    return sentence_vectors(sentences, folder, progress, read_also)  # settings.cache_dir and caches_also_read of the data's folders


def training_sets(data: dict, tasks: dict[str, str], configs: list[str], p: dict) -> tuple[list[Example], list[Example]]:
    """Train examples (at most `max_train_records` per config, sampled with the seed) and dev examples."""
    rng = np.random.default_rng(p["seed"])
    train_set, dev_set = [], []
    for config in configs:
        splits = data[config]
        train = train_split(splits)
        if train is None:
            raise BaselineError(f"{config} has no train split to train the baseline on")
        train_set += _sample(examples_of(config, splits[train], tasks[config]), p.get("max_train_records"), rng)
        if dev := dev_split(splits):
            dev_set += examples_of(config, splits[dev], tasks[config])
    if not train_set:
        raise BaselineError(f"the train splits of {', '.join(configs)} hold no labelled record to train on")
    return train_set, dev_set
