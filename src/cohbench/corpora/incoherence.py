"""What the incoherence-detection builders (TimeTravel, Story Cloze, FairytaleQA, ROCStories, synthetic_coherence)
share: the base of their typed generator options (read from params.yaml's `incoherence:` block by the release layer
and handed to `parse` through the builder config, so that the Hugging Face fingerprint sees them), the declaration
of an MSD/DSD config pair, whose `parsed` makes its records (`CorruptedPair`), running a recipe over coherent narratives with every
source accounted for, deterministic orders, and the statistics for the cards. Each corpus declares its own options
beside its `parse`, but for the options of narratives that other corpora read too (TimeTravel's and FairytaleQA's).
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from typing import Optional
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import CohbenchError
from ..corruptions import recipes
from .registry import ConfigSpec, Parsed

PARAMS_KEY = "incoherence"


def _block(params: dict, section: str) -> dict:
    """`incoherence.<section>` of params.yaml merged over the block's shared keys (seed, tau, retriever, top_k)."""
    block = params.get(PARAMS_KEY)
    if not block:
        raise CohbenchError(f"params.yaml has no `{PARAMS_KEY}:` block; restore it from the repository")
    shared = {k: v for k, v in block.items() if not isinstance(v, dict)}
    return {**shared, **(block.get(section) or {})}


@dataclasses.dataclass(frozen=True)
class GeneratorOptions:
    """Generator options shared by every incoherence config: the seed, and DSD's confounder search (Cai et al. §3).
    A corpus subclasses it with its own fields and the `SECTION` of params.yaml's `incoherence:` block."""

    seed: int
    tau: float  # rescaled BERTScore F1 below which a confounder is accepted
    retriever: str
    top_k: int

    SECTION = ""

    @classmethod
    def from_params(cls, params: dict) -> "GeneratorOptions":
        """The options from params.yaml; a field typed with another corpus's options (the narratives a config is
        made from) is read from that corpus's own section."""
        values = _block(params, cls.SECTION)
        types = typing.get_type_hints(cls)
        nested = {name for name, kind in types.items() if isinstance(kind, type) and issubclass(kind, GeneratorOptions)}
        fields = [f.name for f in dataclasses.fields(cls)]
        missing = [name for name in fields if name not in values and name not in nested]
        if missing:
            raise CohbenchError(f"params.yaml's `{PARAMS_KEY}.{cls.SECTION}` lacks {', '.join(missing)}; restore it from the repository")
        return cls(**{name: types[name].from_params(params) if name in nested else _frozen(values[name]) for name in fields})

    def as_dict(self) -> dict:
        return {f.name: _thawed(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def recipe_params(self, recipe: str, **given) -> dict:
        """The parameters `recipe` reads, taken from these options (and `given`, e.g. `instances`)."""
        values = {**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, **given}
        return {name: values[name] for name in ("seed", *recipes.RECIPES[recipe].options) if name in values}

    def recorded(self, recipe: str) -> dict:
        """What a card records of these options for a config made with `recipe`: every option, less the shared
        confounder-search ones that the recipe does not read (tau means nothing to MSD); of another corpus's options
        (the narratives the config is made from), the corpus's own."""
        reads = {"seed", *recipes.RECIPES[recipe].options}
        shared = {f.name for f in dataclasses.fields(GeneratorOptions)}
        out = {}
        for name in (f.name for f in dataclasses.fields(self)):
            value = getattr(self, name)
            if isinstance(value, GeneratorOptions):
                out[name] = {k: v for k, v in value.as_dict().items() if k not in shared}
            elif name not in shared or name in reads:
                out[name] = _thawed(value)
        return out


# The options of the narratives several corpora read, declared here so that no corpus imports another: TimeTravel's
# stories (its own configs, the Story Cloze split check, synthetic_coherence, the BERTScore calibration) and
# FairytaleQA's windows (its own configs and synthetic_coherence).
@dataclasses.dataclass(frozen=True)
class TimeTravelOptions(GeneratorOptions):
    k: int  # sentences altered per 5-sentence story
    dev_stories: int  # carved from the dev file by sha256 of the story id; the rest is train
    max_stories_per_split: Optional[int]

    SECTION = "timetravel"


@dataclasses.dataclass(frozen=True)
class FairytaleOptions(GeneratorOptions):
    window: int  # consecutive sentences per record
    k: int  # sentences altered per window
    max_stories_per_split: Optional[int]
    max_windows_per_story: Optional[int]

    SECTION = "fairytale"


def _frozen(value):
    return tuple(value.items()) if isinstance(value, dict) else value


def _thawed(value):
    if isinstance(value, GeneratorOptions):
        return value.as_dict()
    return dict(value) if isinstance(value, tuple) else value


def stable_order(keys: Iterable[str], salt: str) -> list[str]:
    """Keys in an order fixed by their sha256 (used to carve splits and subsets deterministically)."""
    return sorted(keys, key=lambda k: hashlib.sha256(f"{salt}\x00{k}".encode()).hexdigest())


def by_split(records: Sequence[dict]) -> dict[str, list[dict]]:
    groups = defaultdict(list)
    for record in records:
        groups[record["split"]].append(record)
    return dict(sorted(groups.items()))


def corrupted_records(recipe: str, coherent: Sequence[dict], config: str, params: dict, dropped: Counter) -> list[dict]:
    """Run a recipe over `coherent`, making up to `params["instances"]` (default 1) records per source, each
    altering different positions, for `config`. Every instance not made is counted in `dropped`: a source made
    nothing from, once per instance, by the recipe's reason (too short for it, no confounder below tau, ...); a
    source made fewer from (a position without an admissible confounder), the missing ones by the recipe's own."""
    count = params.get("instances", 1)
    outputs, reasons = recipes.run(recipe, coherent, params)
    dropped.update({reason: n * count for reason, n in reasons.items()})
    partial = sum(count - len(out) for out in outputs if out)
    if partial:
        dropped[recipes.RECIPES[recipe].not_applicable] += partial
    records = [record for out in outputs for record in out]
    for record in records:
        record["config"] = config
    return records


def _quantiles(values: Sequence[float]) -> dict:
    if not values:
        return {}
    array = np.asarray(values, dtype=float)
    return {
        "n": len(values), "mean": round(float(array.mean()), 4),
        **{f"q{int(q * 100):02d}": round(float(np.quantile(array, q)), 4) for q in (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)},
    }


def label_statistics(records: Sequence[dict], gap_task: bool) -> dict:
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


# The protocol that scores each recipe's config: MSD predicts the gap a sentence was removed from, DSD the sentences
# that were replaced (Cai et al. 2020, §3).
PAIR_PROTOCOLS = {"msd": "gaps", "dsd": "sentences"}


@dataclasses.dataclass(frozen=True)
class CorruptedPair:
    """An MSD/DSD config pair made from one corpus's coherent narratives: `<prefix>_msd` (sentences removed) and
    `<prefix>_dsd` (sentences replaced by confounders), both taking the corpus's `options`."""

    prefix: str
    options: type[GeneratorOptions]
    msd: str  # what the MSD config holds
    dsd: str  # what the DSD config holds
    research_only: bool = False

    @property
    def configs(self) -> tuple[ConfigSpec, ...]:
        return tuple(ConfigSpec(name=f"{self.prefix}_{recipe}", description=getattr(self, recipe), protocol=protocol,
                                options=self.options, research_only=self.research_only)
                     for recipe, protocol in PAIR_PROTOCOLS.items())

    def recipe(self, config: str) -> str:
        """The recipe that makes `config` (msd or dsd)."""
        recipe = config.removeprefix(f"{self.prefix}_")
        if recipe not in PAIR_PROTOCOLS or config != f"{self.prefix}_{recipe}":
            raise CohbenchError(f"{config!r} is not one of {', '.join(spec.name for spec in self.configs)}")
        return recipe

    def parsed(self, config: str, options: GeneratorOptions, coherent: Sequence[dict], upstream_records: int, dropped: Counter,
               instances: int | None = None, **notes) -> Parsed:
        """`config`'s records: its recipe run over the coherent records (`instances` per source where given), with
        every upstream record accounted for (`dropped` holds what was dropped before) and the card's statistics:
        labels by split, the options the recipe read, and the corpus's own `notes`."""
        recipe = self.recipe(config)
        given = {} if instances is None else {"instances": instances}
        records = corrupted_records(recipe, coherent, config, options.recipe_params(recipe, **given), dropped)
        account = {**label_statistics(records, gap_task=recipe == "msd"), "parameters": options.recorded(recipe), **notes}
        return Parsed(records=records, upstream_records=upstream_records, dropped=dict(+dropped), notes=account)
