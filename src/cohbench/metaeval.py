"""Meta-evaluation of coherence measures on SummEval (Steen & Markert 2022, §4, §4.1, §6.1).

A measure's scores P(d, s) are compared with the mean expert coherence H(d, s) of every summary of document d
by system s, in Kendall's tau-b, over five sets of comparisons:

- tau_sys   system means of P against system means of H (C_sys);
- tau_sum   all summaries against each other (C_sum);
- tau_pair  per document, its summaries by different systems; averaged over documents (C_pair);
- acc_pair  the same pairs as a ranking accuracy: of the pairs humans order strictly, the share the measure
            orders the same way strictly (a tie in P counts as wrong);
- tau_intra per system, its summaries of different documents; averaged over systems (C_intra).

A tau over a group whose human or predicted scores are all tied is undefined; such groups are left out of the
averages and counted. 95% confidence intervals come from a bootstrap that resamples documents and systems
together, with replacement (Deutsch et al. 2021's BOOT-BOTH, as the paper's reference implementation does);
a resampled copy of a document or system counts as a distinct one.

Everything is vectorised over the bootstrap samples: a resample is represented by how often it draws each
document and system, and every tau-b is a quadratic form of those counts with the pairwise sign matrices of the
original data, which gives exactly the tau-b of the materialised resample (copies are tied with each other in
both H and P, so they add no pairs).
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import jsonlines, settings
from .display import escaped, not_a_file
from .errors import CohbenchError
from .protocols.predictions import finite

DIMENSION = "coherence"
EXPERTS = 3
DEFAULT_BOOTSTRAP = 1000
METRICS = ("tau_sys", "tau_sum", "tau_pair", "acc_pair", "tau_intra")
RESAMPLED = "documents and systems together, with replacement (BOOT-BOTH, Deutsch et al. 2021)"
_CHUNK = 100  # bootstrap samples per vectorised step: bounds memory at a few hundred MB


class ScoresError(CohbenchError):
    """A scores file does not fit the corpus it is evaluated on."""


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
    raise ScoresError(f"record {record_id} has neither {EXPERTS} expert {DIMENSION} ratings nor one expert mean")


def _system_key(system: str):
    return (int(system[1:]), system) if system[1:].isdigit() else (10**9, system)


def human_scores(records: Iterable[Mapping]) -> HumanScores:
    """The grid from built `summeval` records (a list of dicts or a `datasets.Dataset`)."""
    if hasattr(records, "column_names"):  # a datasets.Dataset: read the needed columns at once
        columns = ("id", "doc_id", "system", "system_name", "ratings", "sentences", "text_variant")
        records = [dict(zip(columns, row)) for row in zip(*(records[c] for c in columns))]
    records = list(records)
    if not records:
        raise ScoresError("the SummEval corpus has no records; build it with `cohbench build summeval`")
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
    from . import registry

    configs = registry.configs_where(protocol="metaeval")
    if len(configs) != 1:
        raise ScoresError(f"meta-evaluation needs exactly one config with the metaeval protocol; the registry has {configs}")
    return configs[0]


def load_human(release: Path | None = None, config: str | None = None) -> tuple[HumanScores, dict]:
    """The grid of the rated config built in the release, and which data it is (`versions.provenance`)."""
    from .release.layout import read_config, require_built
    from .release.versions import provenance
    from .schema import SPLITS

    config = config or rated_config()
    folder, stats = require_built(config, release)
    splits = read_config(folder, config, stats).splits
    return human_scores([r for split in SPLITS if split in splits for r in splits[split]]), provenance(folder, {config: stats})


# ---------------------------------------------------------------------------------------------- scores input


def read_scores(path: Path) -> Iterator[dict]:
    """Rows `{"id", "score"}` of a CSV or JSON-lines file with `doc_id`, `system`, `score` or `id`, `score`, read
    line by line. A score is a finite number; an empty CSV cell or a JSON null is no score (see --allow-missing);
    anything else stops the reading with one line naming the file and line."""
    path = Path(path)
    problem = not_a_file(path)
    if problem:
        raise ScoresError(f"scores file {path} {problem}; give the path of a CSV or JSONL file")
    rows = 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # a spreadsheet's CSV may start with a BOM
            lines = _jsonl_rows(path) if path.suffix.lower() in (".jsonl", ".json", ".ndjson") else _csv_rows(path, handle)
            for number, row in lines:
                rows += 1
                yield _score_row(path, number, row)
    except UnicodeDecodeError:
        raise ScoresError(f"{path.name} is not UTF-8 text; save it as UTF-8") from None
    if not rows:
        raise ScoresError(f"scores file {path.name} is empty; write one score per summary")


def _jsonl_rows(path: Path):
    for number, row in jsonlines.read(path, ScoresError, "write one JSON object per line"):
        if not isinstance(row, dict):
            raise ScoresError(f"{path.name} line {number} must be a JSON object; the file holds one object per line")
        yield number, row


def _csv_rows(path: Path, handle):
    reader = csv.DictReader(handle)
    try:
        columns = reader.fieldnames or []
        if "score" not in columns or not ("id" in columns or {"doc_id", "system"} <= set(columns)):
            if columns:
                raise ScoresError(f"{path.name} needs columns `doc_id`, `system`, `score` or `id`, `score`; it has {', '.join(columns)}")
            return
        for row in reader:
            if None in row or None in row.values():
                raise ScoresError(f"{path.name}: line {reader.line_num} has {'more' if None in row else 'fewer'} cells than the header")
            score = row["score"].strip()
            try:
                row["score"] = None if not score else float(score)
            except ValueError:
                raise ScoresError(f"{path.name}: line {reader.line_num}: score {score[:30]!r} is not a number") from None
            yield reader.line_num, row
    except csv.Error as error:
        raise ScoresError(f"{path.name} is not readable as CSV ({error})") from None


def _score_row(path: Path, number: int, row: dict) -> dict:
    where = f"{path.name}: line {number}"
    keys = ("id",) if "id" in row else ("doc_id", "system")
    if "score" not in row or any(k not in row for k in keys):
        raise ScoresError(f"{where} needs `doc_id`, `system`, `score` or `id`, `score`")
    if not all(isinstance(row[k], str) and row[k] for k in keys):
        raise ScoresError(f"{where}: {' and '.join(keys)} must be non-empty strings")
    score = row["score"]
    if score is not None and finite(score) is None:
        raise ScoresError(f"{where}: score {json.dumps(score)[:30]} is not a finite number")
    return {"id": row["id"] if "id" in row else f"{row['doc_id']}/{row['system']}", "score": score}


def _first(items: list, n: int = 5) -> str:
    return ", ".join(escaped(str(item)) for item in items[:n]) + (", ..." if len(items) > n else "")


def score_grid(scores, human: HumanScores, *, allow_missing: bool = False) -> np.ndarray:
    """(D, S) predicted scores, NaN where a summary has no score. `scores`: a CSV/JSONL path, a mapping
    id -> score, a pandas DataFrame, or rows (dicts with `id` or `doc_id` + `system`, and `score`)."""
    if isinstance(scores, (str, Path)):
        rows = read_scores(Path(scores))
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
            raise ScoresError(f"score row {number} has neither `id` nor `doc_id` and `system`: {row}")
        key = row["id"] if "id" in row else f"{row['doc_id']}/{row['system']}"
        if not isinstance(key, str):
            raise ScoresError(f"score row {number}: the id must be a string, found {key!r:.40}")
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
        raise ScoresError(f"{len(duplicates)} summary id(s) are scored more than once: {_first(duplicates)}")
    if unknown:
        raise ScoresError(f"{len(unknown)} id(s) are not SummEval summaries (expected <doc_id>/<system> such as {next(iter(index))}): {_first(unknown)}")
    if not_numbers:
        raise ScoresError(f"{len(not_numbers)} score(s) are NaN, infinite or not numbers ({_first(not_numbers)}); give finite numbers (leave a score out, or empty, for no score)")
    missing = [key for key, at in index.items() if np.isnan(grid[at])]
    if missing and not allow_missing:
        raise ScoresError(f"{len(missing)} of {len(index)} summaries have no score ({_first(missing)}); score every summary, or pass --allow-missing to evaluate on the rest")
    if len(missing) == len(index):
        raise ScoresError("no summary has a score; there is nothing to evaluate")
    return grid


# ---------------------------------------------------------------------------------------------- tau-b core


def _signs(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(..., n) -> (..., n, n): sign(v_i - v_j) for valid pairs, 0 elsewhere."""
    filled = np.where(valid, values, 0.0)
    signs = np.sign(filled[..., :, None] - filled[..., None, :])
    return signs * (valid[..., :, None] & valid[..., None, :])


def _tau_parts(gold_signs: np.ndarray, pred_signs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair matrices whose weighted sums give tau-b: concordance, pairs untied in H, pairs untied in P."""
    return gold_signs * pred_signs, np.abs(gold_signs), np.abs(pred_signs)


def _tau(num, untied_gold, untied_pred) -> np.ndarray:
    denominator = np.sqrt(untied_gold * untied_pred)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, num / np.where(denominator > 0, denominator, 1.0), np.nan)


def _quad_grouped(weights: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """weights (B, n), matrices (G, n, n) -> (B, G): w^T M_g w for every sample and group. One matrix product
    for all groups: many tiny ones cost more in call overhead (and thread hand-offs) than in arithmetic."""
    groups, n, _ = matrices.shape
    product = weights @ matrices.transpose(1, 0, 2).reshape(n, groups * n)  # [b, g*n + j] = sum_i w_bi M_gij
    return np.einsum("bgn,bn->bg", product.reshape(len(weights), groups, n), weights)


def _untied_pairs(weights: np.ndarray, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """w^T [v_i != v_j] w over valid items (B samples), without an n x n matrix: the weight of all pairs minus
    that of pairs inside groups of equal value (w_i^2 terms appear in both and cancel)."""
    items = np.flatnonzero(valid)
    if not len(items):
        return np.zeros(len(weights))
    order = items[np.argsort(values[items], kind="stable")]
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    w = weights[:, order]
    return w.sum(1) ** 2 - (np.add.reduceat(w, starts, axis=1) ** 2).sum(1)


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two equally long score lists; NaN where either is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    valid = np.ones(x.shape, dtype=bool)
    parts = _tau_parts(_signs(x, valid), _signs(y, valid))
    return float(_tau(*(part.sum() for part in parts)))


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 1 of defined values, weighted; and how many groups were undefined (per sample)."""
    defined = ~np.isnan(values)
    total = (weights * defined).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total > 0, (np.where(defined, values, 0.0) * weights).sum(1) / np.where(total > 0, total, 1), np.nan)
    return mean, (~defined & (weights > 0)).sum(1)


class _Protocol:
    """Pair matrices of one (gold, pred) grid, computed once; `evaluate(m, c)` for count weights m (B, D), c (B, S)."""

    def __init__(self, gold: np.ndarray, pred: np.ndarray):
        self.gold, self.pred = gold, pred
        self.valid = ~np.isnan(gold) & ~np.isnan(pred)
        valid = self.valid
        # per document, pairs of systems; per system, pairs of documents; all summaries
        self.pair = _tau_parts(_signs(gold, valid), _signs(pred, valid))
        self.intra = _tau_parts(_signs(gold.T, valid.T), _signs(pred.T, valid.T))
        # all summaries: only the concordance needs an (n x n) matrix, in float32 to halve the largest product's
        # cost; exact, as entries are -1/0/1 and a sample's weights sum to D*S, so w @ M is integer and < 2**24
        self.flat = (gold.ravel(), pred.ravel(), valid.ravel())
        gold_signs, pred_signs = _signs(gold.ravel(), valid.ravel()), _signs(pred.ravel(), valid.ravel())
        self.summary_concordance = (gold_signs * pred_signs).astype(np.float32)
        wins = _signs(gold, valid) > 0  # (D, S, S): H(d, s) > H(d, t)
        self.human_wins = wins.astype(float)
        self.agreed_wins = (wins & (_signs(pred, valid) > 0)).astype(float)

    def _sys(self, m, c):
        weights = m @ self.valid  # (B, S): documents behind each system mean
        with np.errstate(invalid="ignore", divide="ignore"):
            gold_means = (m @ np.where(self.valid, self.gold, 0.0)) / weights
            pred_means = (m @ np.where(self.valid, self.pred, 0.0)) / weights
        has_mean = weights > 0
        parts = _tau_parts(_signs(gold_means, has_mean), _signs(pred_means, has_mean))
        return _tau(*(np.einsum("bs,bst,bt->b", c, part, c) for part in parts))

    def evaluate(self, m: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
        n_docs, n_sys = m.shape[1], c.shape[1]
        per_doc = _tau(*(_quad_grouped(c, part) for part in self.pair))  # (B, D)
        per_sys = _tau(*(_quad_grouped(m, part) for part in self.intra))  # (B, S)
        w = (m[:, :, None] * c[:, None, :]).reshape(len(m), n_docs * n_sys)
        gold_flat, pred_flat, valid_flat = self.flat
        summary = _tau(
            ((w.astype(np.float32) @ self.summary_concordance).astype(float) * w).sum(1),
            _untied_pairs(w, gold_flat, valid_flat),
            _untied_pairs(w, pred_flat, valid_flat),
        )
        wins = (_quad_grouped(c, self.human_wins) * m).sum(1)
        agreed = (_quad_grouped(c, self.agreed_wins) * m).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = np.where(wins > 0, agreed / np.where(wins > 0, wins, 1), np.nan)
        tau_pair, pair_undefined = _weighted_mean(per_doc, m)
        tau_intra, intra_undefined = _weighted_mean(per_sys, c)
        return {
            "tau_sys": self._sys(m, c),
            "tau_sum": summary,
            "tau_pair": tau_pair,
            "acc_pair": accuracy,
            "tau_intra": tau_intra,
            "per_system": per_sys,
            "pair_undefined": pair_undefined,
            "intra_undefined": intra_undefined,
        }


def _counts(rng: np.random.Generator, samples: int, n: int) -> np.ndarray:
    draws = rng.integers(0, n, size=(samples, n))
    offsets = (np.arange(samples)[:, None] * n + draws).ravel()
    return np.bincount(offsets, minlength=samples * n).reshape(samples, n).astype(float)


def correlations(gold: np.ndarray, pred: np.ndarray, *, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> dict:
    """All five measures of agreement between (D, S) grids, with bootstrap 95% CIs (NaN = no summary/score)."""
    gold, pred = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    if gold.shape != pred.shape or gold.ndim != 2:
        raise ValueError(f"gold and pred must be (documents, systems) grids of one shape, got {gold.shape} and {pred.shape}")
    protocol = _Protocol(gold, pred)
    n_docs, n_sys = gold.shape
    point = protocol.evaluate(np.ones((1, n_docs)), np.ones((1, n_sys)))
    samples = {metric: [] for metric in METRICS}
    rng = np.random.default_rng(seed)
    for start in range(0, bootstrap, _CHUNK):
        size = min(_CHUNK, bootstrap - start)
        m, c = _counts(rng, size, n_docs), _counts(rng, size, n_sys)
        result = protocol.evaluate(m, c)
        for metric in METRICS:
            samples[metric].append(result[metric])
    out = {}
    for metric in METRICS:
        values = np.concatenate(samples[metric]) if bootstrap else np.empty(0)
        defined = values[~np.isnan(values)]
        ci = [float(q) for q in np.percentile(defined, [2.5, 97.5])] if len(defined) else None
        entry = {"value": _num(point[metric][0]), "ci95": ci, "bootstrap_undefined": int(len(values) - len(defined))}
        if metric == "tau_pair":
            entry["documents_undefined"] = int(point["pair_undefined"][0])
        if metric == "tau_intra":
            entry["systems_undefined"] = int(point["intra_undefined"][0])
        out[metric] = entry
    out["per_system_tau_intra"] = [_num(v) for v in point["per_system"][0]]
    return out


def _num(value) -> float | None:
    return None if np.isnan(value) else float(value)


def bias_matrix(gold: np.ndarray, pred: np.ndarray) -> dict:
    """§6.1: systems ordered by mean human score (over the scored summaries), best first; cell (i, j), i != j, is
    (2 |H ∩ P| - |H|) / |H| over the documents where system i's summary is rated higher than system j's (H)
    and the measure also scores i's higher (P). Above the diagonal (i better on average) this is tau+ of
    (s_i, s_j); below it tau- of (s_j, s_i). Undefined (no such document) and diagonal cells are NaN."""
    gold, pred = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    valid = ~np.isnan(gold) & ~np.isnan(pred)
    means = np.nanmean(np.where(valid, gold, np.nan), axis=0)
    order = np.argsort(-means, kind="stable")
    g, p, v = gold[:, order], pred[:, order], valid[:, order]
    pairs_valid = v[:, :, None] & v[:, None, :]
    human = (g[:, :, None] > g[:, None, :]) & pairs_valid
    agreed = human & (p[:, :, None] > p[:, None, :])
    pairs, correct = human.sum(0), agreed.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(pairs > 0, (2 * correct - pairs) / np.where(pairs > 0, pairs, 1), np.nan)
    np.fill_diagonal(tau, np.nan)
    return {"order": order, "mean_human": means[order], "tau": tau, "pairs": pairs}


# ---------------------------------------------------------------------------------------------- reference measures

ReferenceMeasure = Callable[[HumanScores, np.random.Generator], np.ndarray]
REFERENCE_MEASURES: dict[str, ReferenceMeasure] = {}
NOISE = 1e-6  # below every gap between distinct values of the base measures (>= 1/300), so it only breaks ties
TRANSFORMER_SYSTEMS = frozenset({"M17", "M20", "M22", "M23"})  # T5, GPT-2, BART, Pegasus (paper fn. 5)


def reference_measure(name: str):
    def register(func: ReferenceMeasure) -> ReferenceMeasure:
        if name in REFERENCE_MEASURES:
            raise CohbenchError(f"reference measure {name!r} is registered twice")
        REFERENCE_MEASURES[name] = func
        return func

    return register


@reference_measure("uppercase")
def uppercase(human: HumanScores, rng) -> np.ndarray:
    """Number of upper-case letters in the summary (§4.2). The 400 summaries only BARTScore's copy keeps were
    published by SummEval in lower case (paper fn. 4: only BART, GPT-2 and Pegasus dynamic-mix write capitals);
    BARTScore re-capitalised sentence starts, so their SummEval count is that of the lower-cased text, 0."""
    count = np.vectorize(lambda text, variant: 0 if variant else sum(ch.isupper() for ch in text), otypes=[float])
    return np.where(human.present, count(human.texts, human.variants), np.nan)


@reference_measure("architecture")
def architecture(human: HumanScores, rng) -> np.ndarray:
    """1 for systems built on pretrained transformers (T5, GPT-2, BART, Pegasus), else 0 (§4.2)."""
    flags = np.array([s in TRANSFORMER_SYSTEMS for s in human.systems], dtype=float)
    return np.where(human.present, flags[None, :], np.nan)


@reference_measure("upper-bound")
def upper_bound(human: HumanScores, rng) -> np.ndarray:
    """Every summary gets its system's mean human score: perfect system ranking, nothing within a system (§4.2)."""
    means = np.nanmean(human.gold, axis=0)
    return np.where(human.present, means[None, :], np.nan)


@reference_measure("random")
def random_scores(human: HumanScores, rng) -> np.ndarray:
    """Uniform random scores: the chance baseline (Table 3, RND)."""
    return np.where(human.present, rng.random(human.expert_sum.shape), np.nan)


def _noised(base: ReferenceMeasure) -> ReferenceMeasure:
    def measure(human, rng):
        return base(human, rng) + rng.random(human.expert_sum.shape) * NOISE

    measure.__doc__ = f"{base.__name__} plus tie-breaking noise in [0, {NOISE}) (§4.2, Table 1's (r) variants)."
    return measure


for _name in ("uppercase", "architecture", "upper-bound"):
    reference_measure(f"{_name}-noised")(_noised(REFERENCE_MEASURES[_name]))


def reference_scores(name: str, human: HumanScores, seed: int = 0) -> np.ndarray:
    if name not in REFERENCE_MEASURES:
        raise ScoresError(f"unknown reference measure {name!r}; choose one of {', '.join(REFERENCE_MEASURES)}")
    return REFERENCE_MEASURES[name](human, np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------------- the protocol


def evaluate(
    scores=None,
    *,
    measure: str | None = None,
    human: HumanScores | None = None,
    records: Iterable[Mapping] | None = None,
    allow_missing: bool = False,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    plot: Path | None = None,
    config: str | None = None,
) -> dict:
    """Score a coherence measure against SummEval's mean expert coherence: the five measures with 95% CIs and
    the bias matrix. Give `scores` (a CSV/JSONL path, a mapping id -> score, or rows) or a reference `measure`.
    The ratings come from `human`, else `records`, else the built release's config with the metaeval protocol."""
    if (scores is None) == (measure is None):
        raise ScoresError("give either scores to evaluate or the name of a reference measure, not both or neither")
    if bootstrap < 0:
        raise ScoresError(f"the number of bootstrap samples must be 0 or more, got {bootstrap}")
    if plot:
        plot = settings.user_output(plot)  # refused before any work
    started = time.perf_counter()
    source = "given ratings" if human is not None or records is not None else config or rated_config()
    data = None
    if human is None and records is None:
        human, data = load_human(config=source)
    human = human or human_scores(records)
    pred = reference_scores(measure, human, seed) if measure else score_grid(scores, human, allow_missing=allow_missing)
    gold = human.expert_sum  # tau is scale-free; integer sums keep tied system means exactly tied
    result = correlations(gold, pred, bootstrap=bootstrap, seed=seed)
    bias = bias_matrix(gold, pred)
    labels = [f"{name} ({system})" for name, system in zip(human.system_names, human.systems)]
    scored = int((~np.isnan(pred) & human.present).sum())
    out = {
        "ratings_from": source,
        "measure": measure or (str(scores) if isinstance(scores, (str, Path)) else "scores"),
        "gold": f"mean of {EXPERTS} expert {DIMENSION} ratings",
        "summaries": int(human.present.sum()),
        "documents": len(human.docs),
        "systems": len(human.systems),
        "scored": scored,
        "missing": int(human.present.sum()) - scored,
        "metrics": {metric: result[metric] for metric in METRICS},
        "per_system_tau_intra": dict(zip(human.systems, result["per_system_tau_intra"])),
        "bootstrap": {"samples": bootstrap, "seed": seed, "resampled": RESAMPLED, "interval": "percentile, 2.5-97.5"},
        "bias_matrix": {
            "systems": [human.systems[i] for i in bias["order"]],
            "labels": [labels[i] for i in bias["order"]],
            "mean_human": [float(x) / EXPERTS for x in bias["mean_human"]],
            "tau": [[_num(x) for x in row] for row in bias["tau"]],
            "pairs": bias["pairs"].astype(int).tolist(),
        },
    }
    if data:
        out["data"] = data
    if plot:
        plot_bias_matrix(out, Path(plot))
        out["plot"] = str(plot)
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out


def bias_table(result: dict) -> list[dict]:
    """The bias matrix as rows: one per ordered pair of systems (row system wins over column system)."""
    bias = result["bias_matrix"]
    rows = []
    for i, row_system in enumerate(bias["systems"]):
        for j, column_system in enumerate(bias["systems"]):
            if i != j:
                rows.append(
                    {
                        "row_system": row_system,
                        "column_system": column_system,
                        "kind": "tau_plus" if i < j else "tau_minus",
                        "tau": bias["tau"][i][j],
                        "pairs": bias["pairs"][i][j],
                    }
                )
    return rows


def write_bias_table(result: dict, path: Path) -> None:
    import pandas as pd

    from .atomic import atomic_path

    path = settings.user_output(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".json":
            tmp.write_text(json.dumps(bias_table(result), indent=2) + "\n", encoding="utf-8")
        else:
            pd.DataFrame(bias_table(result)).to_csv(tmp, index=False)


SMALL_N = 5  # bias-matrix cells over fewer document pairs are marked in the plot


def plot_bias_matrix(result: dict, path: Path) -> None:
    """A heatmap of the bias matrix with each cell's tau and pair count; systems best (mean human score) first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt

    from .atomic import atomic_path

    bias = result["bias_matrix"]
    tau = np.array([[np.nan if x is None else x for x in row] for row in bias["tau"]])
    n = len(tau)
    labels = [f"{label}  {mean:.2f}" for label, mean in zip(bias["labels"], bias["mean_human"])]
    fig, ax = plt.subplots(figsize=(0.62 * n + 4, 0.55 * n + 2.5))
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(tau), cmap=cmap, vmin=-1, vmax=1)
    for i in range(n):
        for j in range(n):
            if i != j:
                text = "n/a" if np.isnan(tau[i, j]) else f"{tau[i, j]:+.2f}"
                color = "white" if abs(np.nan_to_num(tau[i, j])) > 0.55 else "black"  # readable on dark cells
                few = bias["pairs"][i][j] < SMALL_N and not np.isnan(tau[i, j])
                if few:  # a τ over 2-3 pairs is ±1 by arithmetic, not evidence: hatch the cell
                    ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#777777", linewidth=0))
                ax.text(j, i - 0.14, text, ha="center", va="center", fontsize=7, color=color)
                ax.text(j, i + 0.26, f"n={bias['pairs'][i][j]}", ha="center", va="center", fontsize=5.5, color=color,
                        fontweight="bold" if few else "normal")
    ax.set_xticks(range(n), bias["labels"], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.set_xlabel("column system (systems ordered by mean expert coherence, best first)")
    ax.set_ylabel("row system, with its mean expert coherence (1-5)")
    ax.set_title(
        f"Bias matrix of {result['measure']} on SummEval\n"
        "cell = τ over documents where the row system's summary is rated more coherent than the column system's\n"
        "above diagonal: τ+ (consistent pairs)   below diagonal: τ− (inverted pairs)   n = document pairs\n"
        f"hatched: fewer than {SMALL_N} pairs, too few for τ to mean much",
        fontsize=8,
    )
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="τ: 1 = measure always agrees, −1 = always disagrees")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=150, format="png")
    plt.close(fig)
