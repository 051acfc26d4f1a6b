"""Shared by the incoherence-detection builders (TimeTravel, Story Cloze, FairytaleQA, synthetic_coherence):
their typed generator options (read from params.yaml's `incoherence:` block by the release layer, handed to
`parse` through the builder config so that the Hugging Face fingerprint sees them), MSD/DSD over coherent
narratives one split at a time, and the statistics for the cards."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Optional

import numpy as np

from .. import settings
from ..atomic import write_text
from ..generators.bertscore import BASELINE_FILE, compute_baseline, load_baseline
from ..errors import CohbenchError
from ..generators import recipes

PARAMS_KEY = "incoherence"


def _block(params: dict, section: str) -> dict:
    """`incoherence.<section>` of params.yaml merged over the block's shared keys (seed, tau, retriever, top_k)."""
    block = params.get(PARAMS_KEY)
    if not block:
        raise CohbenchError(f"params.yaml has no `{PARAMS_KEY}:` block; restore it from the repository")
    shared = {k: v for k, v in block.items() if not isinstance(v, dict)}
    return {**shared, **(block.get(section) or {})}


@dataclasses.dataclass(frozen=True)
class Options:
    """Options shared by every incoherence config: the seed, and DSD's confounder search (Cai et al. §3)."""

    seed: int
    tau: float  # rescaled BERTScore F1 below which a confounder is accepted
    retriever: str
    top_k: int

    SECTION = ""

    @classmethod
    def from_params(cls, params: dict) -> "Options":
        values = _block(params, cls.SECTION)
        fields = [f.name for f in dataclasses.fields(cls)]
        missing = [name for name in fields if name not in values]
        if missing:
            raise CohbenchError(f"params.yaml's `{PARAMS_KEY}.{cls.SECTION}` lacks {', '.join(missing)}; restore it from the repository")
        return cls(**{name: _frozen(values[name]) for name in fields})

    def as_dict(self) -> dict:
        return {f.name: _thawed(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _frozen(value):
    return tuple(value.items()) if isinstance(value, dict) else value


def _thawed(value):
    return dict(value) if isinstance(value, tuple) else value


@dataclasses.dataclass(frozen=True)
class TimeTravelOptions(Options):
    k: int  # sentences altered per 5-sentence story
    dev_stories: int  # carved from the dev file by sha256 of the story id; the rest is train
    max_stories_per_split: Optional[int]

    SECTION = "timetravel"


@dataclasses.dataclass(frozen=True)
class FairytaleOptions(Options):
    window: int  # consecutive sentences per record
    k: int  # sentences altered per window
    max_stories_per_split: Optional[int]
    max_windows_per_story: Optional[int]

    SECTION = "fairytale"


@dataclasses.dataclass(frozen=True)
class RocStoriesOptions(Options):
    k: int  # sentences altered per 5-sentence story
    msd_instances: int  # records per story for MSD, each removing a different sentence
    dsd_instances: int  # records per story for DSD, each replacing a different sentence

    SECTION = "rocstories"


@dataclasses.dataclass(frozen=True)
class SyntheticOptions(Options):
    max_narratives_per_split: tuple  # ((split, limit), ...) per source corpus
    timetravel: TimeTravelOptions
    fairytale: FairytaleOptions

    SECTION = "synthetic_coherence"

    @classmethod
    def from_params(cls, params: dict) -> "SyntheticOptions":
        values = _block(params, cls.SECTION)
        return cls(seed=values["seed"], tau=values["tau"], retriever=values["retriever"], top_k=values["top_k"],
                   max_narratives_per_split=_frozen(values["max_narratives_per_split"]),
                   timetravel=TimeTravelOptions.from_params(params), fairytale=FairytaleOptions.from_params(params))


def stable_order(keys: Iterable[str], salt: str) -> list[str]:
    """Keys in an order fixed by their sha256 (used to carve splits and subsets deterministically)."""
    return sorted(keys, key=lambda k: hashlib.sha256(f"{salt}\x00{k}".encode()).hexdigest())


def by_split(records: Sequence[dict]) -> dict[str, list[dict]]:
    groups = defaultdict(list)
    for record in records:
        groups[record["split"]].append(record)
    return dict(sorted(groups.items()))


def _made(recipe: str, coherent: Sequence[dict], config: str, params: dict, dropped: Counter) -> list[dict]:
    """Run a recipe over `coherent`; the sources it made nothing from are counted in `dropped` by the recipe's
    reason (too short for it, or its own: no confounder below tau, ...)."""
    outputs, reasons = recipes.run(recipe, coherent, params)
    dropped.update(reasons)
    out = [record for made in outputs for record in made]
    for record in out:
        record["config"] = config
    return out


def instances(recipe: str, coherent: Sequence[dict], config: str, params: dict, count: int, dropped: Counter) -> list[dict]:
    """Run a recipe making up to `count` records per source (each altering different positions); every instance
    not made is counted: a source made nothing from, `count` times by the recipe's reason, a source made fewer
    from (a position without an admissible confounder), the missing ones by the recipe's own reason."""
    outputs, reasons = recipes.run(recipe, coherent, params | {"instances": count})
    dropped.update({reason: n * count for reason, n in reasons.items()})
    partial = sum(count - len(made) for made in outputs if made)
    if partial:
        dropped[recipes.get_recipe(recipe).not_applicable] += partial
    out = [record for made in outputs for record in made]
    for record in out:
        record["config"] = config
    return out


def msd(coherent: Sequence[dict], config: str, seed: int, k: int, dropped: Counter) -> list[dict]:
    return _made("msd", coherent, config, {"seed": seed, "k": k}, dropped)


def dsd(coherent: Sequence[dict], config: str, opts: Options, dropped: Counter, k: int) -> list[dict]:
    """The dsd recipe: each split draws only on its own sentence pool."""
    params = {"seed": opts.seed, "tau": opts.tau, "top_k": opts.top_k, "retriever": opts.retriever, "k": k}
    return _made("dsd", coherent, config, params, dropped)


def _quantiles(values: Sequence[float]) -> dict:
    if not values:
        return {}
    array = np.asarray(values, dtype=float)
    return {
        "n": len(values), "mean": round(float(array.mean()), 4),
        **{f"q{int(q * 100):02d}": round(float(np.quantile(array, q)), 4) for q in (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)},
    }


def notes(records: Sequence[dict], gap_task: bool) -> dict:
    """Per-split sizes and label rates, and for DSD the similarity and rank distribution of accepted confounders."""
    out = {}
    for split, group in by_split(records).items():
        if gap_task:
            missing = sum(sum(r["gap_labels"]) for r in group)
            original = sum(len(r["sentences"]) for r in group) + missing
            out[split] = {"records": len(group), "sentences_shown": original - missing, "removed": missing,
                          "missing_rate": round(missing / original, 6) if original else None}
        else:
            labels = [v for r in group for v in r["sentence_labels"] if v != -1]
            out[split] = {"records": len(group), "sentences": len(labels), "discordant": sum(labels),
                          "discordant_rate": round(sum(labels) / len(labels), 6) if labels else None}
    result = {"by_split": out}
    similarities = [s for r in records if r["corruption"] for s in r["corruption"]["similarities"]]
    if similarities:
        ranks = [k for r in records for k in r["corruption"]["ranks"]]
        result["accepted_confounder_similarity"] = _quantiles(similarities)
        result["accepted_confounder_bm25_rank"] = {**_quantiles(ranks), "rank_1_share": round(ranks.count(1) / len(ranks), 4)}
    return result


def calibration_sentences(params: dict | None = None) -> dict[str, list[str]]:
    """The sentences the rescaling baseline is drawn from, by source: the TimeTravel train split (coherent
    stories, before any corruption) under params.yaml's TimeTravel options."""
    from ..fetch import fetch
    from . import timetravel

    opts = TimeTravelOptions.from_params(settings.params() if params is None else params)
    records, _, _ = timetravel.coherent_records(fetch(timetravel.CORPUS), "calibration", opts)
    return {"timetravel/train": [s for r in records if r["split"] == "train" for s in r["sentences"]]}


def calibrate(pairs: int = 5000, seed: int = 13, target: Path = BASELINE_FILE, params: dict | None = None) -> dict:
    """Remake the BERTScore rescaling baseline (`bertscore_baseline.json`, which tau applies to) from random pairs
    of `calibration_sentences`, as bert-score's authors did for their encoders with Common Crawl; `cohbench
    calibrate` runs it (measured: reproduces the shipped file)."""
    sources = calibration_sentences(params)
    baseline = compute_baseline([s for group in sources.values() for s in group], pairs=pairs, seed=seed)
    baseline["sentences_from"] = {name: len(group) for name, group in sources.items()}
    write_text(target, json.dumps(baseline, indent=2, sort_keys=True) + "\n")
    load_baseline.cache_clear()
    return baseline
