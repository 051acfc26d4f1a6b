"""SummEval as a document x system grid: the mean expert coherence of every summary (the human side of the
meta-evaluation, Steen & Markert 2022 §4), and a measure's scores laid on the same grid."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..display import escaped
from .reader import PredictionsError, finite, score_rows

DIMENSION = "coherence"
EXPERTS = 3


@dataclass(frozen=True)
class HumanScores:
    """The corpus as a document x system grid: mean expert coherence and the summary text of every cell."""

    docs: tuple[str, ...]
    systems: tuple[str, ...]
    system_names: tuple[str, ...]
    expert_sum: np.ndarray  # (D, S) sum of the 3 experts' coherence ratings, so ties stay exact; NaN = no summary
    texts: np.ndarray  # (D, S) object: the summary, sentences joined by spaces
    variants: np.ndarray  # (D, S) object: text_variant of the record (None = SummEval's own text)

    @property
    def gold(self) -> np.ndarray:
        return self.expert_sum / EXPERTS

    @property
    def present(self) -> np.ndarray:
        return ~np.isnan(self.expert_sum)

    def id_of(self, d: int, s: int) -> str:
        return f"{self.docs[d]}/{self.systems[s]}"


def _expert_sum(ratings: list[dict], record_id: str) -> float:
    experts = [r["score"] for r in ratings if r["dimension"] == DIMENSION and r["annotator_type"] == "expert"]
    means = [r["score"] for r in ratings if r["dimension"] == DIMENSION and r["annotator_type"] == "expert_mean"]
    if len(experts) == EXPERTS:
        return float(sum(experts))
    if len(means) == 1 and abs(EXPERTS * means[0] - round(EXPERTS * means[0])) < 1e-3:
        return float(round(EXPERTS * means[0]))  # float32 storage rounds 8/3; the sum of three integers is exact
    raise PredictionsError(f"record {record_id} has neither {EXPERTS} expert {DIMENSION} ratings nor one expert mean")


def _system_key(system: str):
    return (int(system[1:]), system) if system[1:].isdigit() else (10**9, system)


def human_scores(records: Iterable[Mapping]) -> HumanScores:
    """The grid from built `summeval` records (a list of dicts or a `datasets.Dataset`)."""
    if hasattr(records, "column_names"):  # a datasets.Dataset: read the needed columns at once
        columns = ("id", "doc_id", "system", "system_name", "ratings", "sentences", "text_variant")
        records = [dict(zip(columns, row)) for row in zip(*(records[c] for c in columns))]
    records = list(records)
    if not records:
        raise PredictionsError("the SummEval corpus has no records; build it with `cohbench build summeval`")
    docs = tuple(sorted({r["doc_id"] for r in records}))
    systems = tuple(sorted({r["system"] for r in records}, key=_system_key))
    names = {r["system"]: r["system_name"] for r in records}
    d_index, s_index = {d: i for i, d in enumerate(docs)}, {s: i for i, s in enumerate(systems)}
    expert_sum = np.full((len(docs), len(systems)), np.nan)
    texts = np.full(expert_sum.shape, None, dtype=object)
    variants = np.full(expert_sum.shape, None, dtype=object)
    for r in records:
        d, s = d_index[r["doc_id"]], s_index[r["system"]]
        expert_sum[d, s] = _expert_sum(r["ratings"], r["id"])
        texts[d, s] = " ".join(r["sentences"])
        variants[d, s] = r["text_variant"]
    return HumanScores(docs, systems, tuple(names[s] for s in systems), expert_sum, texts, variants)


def rated_config() -> str:
    """The config meta-evaluation scores against: the one the registry declares with the `metaeval` protocol."""
    from .. import registry

    configs = registry.configs_where(protocol="metaeval")
    if len(configs) != 1:
        raise PredictionsError(f"meta-evaluation needs exactly one config with the metaeval protocol; the registry has {configs}")
    return configs[0]


def load_human(release: Path | None = None, config: str | None = None) -> tuple[HumanScores, dict]:
    """The grid of the rated config built in the release, and which data it is (`versions.provenance`)."""
    from ..release.layout import read_config, require_built
    from ..release.versions import provenance
    from ..schema import SPLITS

    config = config or rated_config()
    folder, stats = require_built(config, release)
    splits = read_config(folder, config, stats).splits
    return human_scores([r for split in SPLITS if split in splits for r in splits[split]]), provenance(folder, {config: stats})


def _first(items: list, n: int = 5) -> str:
    return ", ".join(escaped(str(item)) for item in items[:n]) + (", ..." if len(items) > n else "")


def score_grid(scores, human: HumanScores, *, allow_missing: bool = False) -> np.ndarray:
    """(D, S) predicted scores, NaN where a summary has no score. `scores`: a CSV/JSONL path, a mapping
    id -> score, a pandas DataFrame, or rows (dicts with `id` or `doc_id` + `system`, and `score`)."""
    if isinstance(scores, (str, Path)):
        rows = score_rows(Path(scores))
    elif isinstance(scores, Mapping):
        rows = [{"id": k, "score": v} for k, v in scores.items()]
    elif hasattr(scores, "to_dict"):
        rows = scores.to_dict("records")
    else:
        rows = list(scores)
    index = {human.id_of(d, s): (d, s) for d, s in zip(*np.nonzero(human.present))}
    grid = np.full(human.expert_sum.shape, np.nan)
    seen, duplicates, unknown, not_numbers = set(), [], [], []
    for number, row in enumerate(rows, 1):
        if "id" not in row and not {"doc_id", "system"} <= set(row):
            raise PredictionsError(f"score row {number} has neither `id` nor `doc_id` and `system`: {row}")
        key = row["id"] if "id" in row else f"{row['doc_id']}/{row['system']}"
        if not isinstance(key, str):
            raise PredictionsError(f"score row {number}: the id must be a string, found {key!r:.40}")
        if key in seen:
            duplicates.append(key)
            continue
        seen.add(key)
        if key not in index:
            unknown.append(key)
            continue
        value = row.get("score")
        if value is None:
            continue  # no score: missing
        if finite(value) is None:
            not_numbers.append(key)
            continue
        grid[index[key]] = float(value)
    if duplicates:
        raise PredictionsError(f"{len(duplicates)} summary id(s) are scored more than once: {_first(duplicates)}")
    if unknown:
        raise PredictionsError(f"{len(unknown)} id(s) are not SummEval summaries (expected <doc_id>/<system> such as {next(iter(index))}): {_first(unknown)}")
    if not_numbers:
        raise PredictionsError(f"{len(not_numbers)} score(s) are NaN, infinite or not numbers ({_first(not_numbers)}); give finite numbers (leave a score out, or empty, for no score)")
    missing = [key for key, at in index.items() if np.isnan(grid[at])]
    if missing and not allow_missing:
        raise PredictionsError(f"{len(missing)} of {len(index)} summaries have no score ({_first(missing)}); score every summary, or pass --allow-missing to evaluate on the rest")
    if len(missing) == len(index):
        raise PredictionsError("no summary has a score; there is nothing to evaluate")
    return grid
