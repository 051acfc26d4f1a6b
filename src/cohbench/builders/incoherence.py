"""Shared by the incoherence-detection builders (TimeTravel, FairytaleQA, synthetic_coherence): their parameters
from params.yaml, MSD/DSD over coherent narratives one split at a time, and the statistics for the cards."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from .. import settings
from ..errors import CohbenchError
from . import recipes

PARAMS_KEY = "incoherence"


def params(section: str | None = None) -> dict:
    """`incoherence:` in params.yaml (or one of its sections, merged over the shared keys)."""
    block = settings.params().get(PARAMS_KEY)
    if not block:
        raise CohbenchError(f"params.yaml has no `{PARAMS_KEY}:` block; restore it from the repository")
    shared = {k: v for k, v in block.items() if not isinstance(v, dict)}
    return {**shared, **(block.get(section) or {})} if section else dict(block)


def stable_order(keys: Iterable[str], salt: str) -> list[str]:
    """Keys in an order fixed by their sha256 (used to carve splits and subsets deterministically)."""
    return sorted(keys, key=lambda k: hashlib.sha256(f"{salt}\x00{k}".encode()).hexdigest())


def by_split(records: Sequence[dict]) -> dict[str, list[dict]]:
    groups = defaultdict(list)
    for record in records:
        groups[record["split"]].append(record)
    return dict(sorted(groups.items()))


def _made(recipe: str, coherent: Sequence[dict], config: str, params: dict) -> list[dict]:
    outputs, _ = recipes.run(recipe, coherent, params)
    out = [record for made in outputs for record in made]
    for record in out:
        record["config"] = config
    return out


def msd(coherent: Sequence[dict], config: str, seed: int, k: int) -> list[dict]:
    return _made("msd", coherent, config, {"seed": seed, "k": k})


def dsd(coherent: Sequence[dict], config: str, opts: dict, k: int) -> list[dict]:
    """The dsd recipe: each split draws only on its own sentence pool."""
    return _made("dsd", coherent, config, {key: opts[key] for key in ("seed", "tau", "top_k", "retriever")} | {"k": k})


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


def count_dropped(coherent: Sequence[dict], corrupted: Sequence[dict], reason: str) -> dict:
    made = Counter(r["corruption"]["source_id"] for r in corrupted)
    missing = sum(1 for r in coherent if r["id"] not in made)
    return {reason: missing} if missing else {}
