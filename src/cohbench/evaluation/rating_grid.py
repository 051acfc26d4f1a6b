"""SummEval as a document x system grid: the mean expert coherence of every summary (the human side of the
meta-evaluation, Steen & Markert 2022 §4), and a measure's scores laid on the same grid."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..display import escaped
from .reader import PredictionsError, Tally, directed_rows, finite, score_rows

DIMENSION = "coherence"
EXPERTS = 3


@dataclass(frozen=True)
class SummaryGrid:
    """The rated corpus as a document x system grid of summaries, without their ratings: what a measure may read."""

    docs: tuple[str, ...]
    systems: tuple[str, ...]
    system_names: tuple[str, ...]
    texts: np.ndarray  # (D, S) object: the summary, sentences joined by spaces; None = no summary
    variants: np.ndarray  # (D, S) object: text_variant of the record (None = SummEval's own text)

    @property
    def present(self) -> np.ndarray:
        return np.not_equal(self.texts, None)

    def id_of(self, d: int, s: int) -> str:
        return f"{self.docs[d]}/{self.systems[s]}"


@dataclass(frozen=True)
class HumanScores(SummaryGrid):
    """The grid with the mean expert coherence of every summary (the human side of the meta-evaluation)."""

    expert_sum: np.ndarray = field(kw_only=True)  # (D, S) sum of the 3 experts' coherence ratings, so ties stay exact; NaN = no summary

    @property
    def gold(self) -> np.ndarray:
        return self.expert_sum / EXPERTS


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


def summary_grid(records: Iterable[Mapping]) -> SummaryGrid:
    """The grid of rated summaries from records (or scorer views of them) with `doc_id`, `system`, `system_name`,
    `sentences` and `text_variant`."""
    records = list(records)
    if not records:
        raise PredictionsError("the SummEval corpus has no records; build it with `cohbench build summeval`")
    docs = tuple(sorted({r["doc_id"] for r in records}))
    systems = tuple(sorted({r["system"] for r in records}, key=_system_key))
    names = {r["system"]: r["system_name"] for r in records}
    d_index, s_index = {d: i for i, d in enumerate(docs)}, {s: i for i, s in enumerate(systems)}
    texts = np.full((len(docs), len(systems)), None, dtype=object)
    variants = np.full(texts.shape, None, dtype=object)
    for r in records:
        d, s = d_index[r["doc_id"]], s_index[r["system"]]
        texts[d, s] = " ".join(r["sentences"])
        variants[d, s] = r["text_variant"]
    return SummaryGrid(docs, systems, tuple(names[s] for s in systems), texts, variants)


def human_scores(records: Iterable[Mapping]) -> HumanScores:
    """The grid with its ratings, from built `summeval` records (a list of dicts or a `datasets.Dataset`)."""
    if hasattr(records, "column_names"):  # a datasets.Dataset: read the needed columns at once
        columns = ("id", "doc_id", "system", "system_name", "ratings", "sentences", "text_variant")
        records = [dict(zip(columns, row)) for row in zip(*(records[c] for c in columns))]
    records = list(records)
    grid = summary_grid(records)
    d_index, s_index = {d: i for i, d in enumerate(grid.docs)}, {s: i for i, s in enumerate(grid.systems)}
    expert_sum = np.full(grid.texts.shape, np.nan)
    for r in records:
        expert_sum[d_index[r["doc_id"]], s_index[r["system"]]] = _expert_sum(r["ratings"], r["id"])
    return HumanScores(grid.docs, grid.systems, grid.system_names, grid.texts, grid.variants, expert_sum=expert_sum)


def rated_config() -> str:
    """The config meta-evaluation scores against: the one the registry declares with the `metaeval` protocol."""
    from ..corpora import registry

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


class GridScores(NamedTuple):
    grid: np.ndarray  # (D, S) predicted scores in the error polarity, NaN where a summary has no score
    column: str  # where they were read from: `score`, `error`, or the protocol's better-polarity key (negated)


def score_grid(scores, human: SummaryGrid, *, allow_missing: bool = False, better: tuple[str, str] | None = None) -> GridScores:
    """Predicted scores on the grid, in the error polarity. `scores`: a CSV/JSONL path, a mapping id -> score
    (higher = more likely an error), a pandas DataFrame, or rows (dicts with `id` or `doc_id` + `system`, and one
    column of scores: `score` / `error`, or `better`'s key, read negated)."""
    if isinstance(scores, (str, Path)):
        rows = score_rows(Path(scores), better)
    elif isinstance(scores, Mapping):
        rows = ({"id": k, "score": v, "column": "score"} for k, v in scores.items())
    else:
        given = scores.to_dict("records") if hasattr(scores, "to_dict") else scores
        rows = (row for _, row in directed_rows(((f"score row {n}", row) for n, row in enumerate(given, 1)), better))
    index = {human.id_of(d, s): (d, s) for d, s in zip(*np.nonzero(human.present))}
    grid = np.full(human.present.shape, np.nan)
    column, seen, duplicates, unknown, not_numbers = "score", set(), Tally(), Tally(), Tally()
    for number, row in enumerate(rows, 1):
        if "id" not in row and not {"doc_id", "system"} <= set(row):
            raise PredictionsError(f"score row {number} has neither `id` nor `doc_id` and `system`")
        key, column = row["id"] if "id" in row else f"{row['doc_id']}/{row['system']}", row["column"]
        if not isinstance(key, str):
            raise PredictionsError(f"score row {number}: the id must be a string, found {escaped(repr(key))}")
        if key not in index:
            unknown.add(key)
            continue
        if key in seen:
            duplicates.add(key)
            continue
        seen.add(key)
        value = row["score"]
        if value is None:
            continue  # no score: missing
        if finite(value) is None:
            not_numbers.add(key)
            continue
        grid[index[key]] = float(value)
    if duplicates:
        raise PredictionsError(f"{duplicates.count} summary id(s) are scored more than once: {duplicates}")
    if unknown:
        raise PredictionsError(f"{unknown.count} id(s) are not SummEval summaries (expected <doc_id>/<system> such as {next(iter(index))}): {unknown}")
    if not_numbers:
        raise PredictionsError(f"{not_numbers.count} score(s) are NaN, infinite or not numbers ({not_numbers}); give finite numbers (leave a score out, or empty, for no score)")
    missing = [key for key, at in index.items() if np.isnan(grid[at])]
    if missing and not allow_missing:
        shown = ", ".join(escaped(k) for k in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise PredictionsError(f"{len(missing)} of {len(index)} summaries have no score ({shown}); score every summary, or pass --allow-missing to evaluate on the rest")
    if len(missing) == len(index):
        raise PredictionsError("no summary has a score; there is nothing to evaluate")
    return GridScores(grid, column)
