"""`cohbench leaderboard`: scorers on every config they apply to, each config by its own protocol, with uncertainty.

Per config: each scorer's headline metric on the test split with its 95% bootstrap CI over documents
(`evaluation.headline`), the best reference scorer (the highest headline among the non-oracle references that apply)
and each scorer's difference from it with a paired-bootstrap CI on the same resampled documents
(`evaluation.paired_difference`), the config's version, and the published figures of that config with their
comparability flags, only where its records are a version this cohbench declares (a changed build or a derived copy,
`+dev`, gets none: the papers never scored those records). Where the papers report another metric on a config (SNaC's
recall at precision 0.70), each scorer's value of it stands beside theirs. Per scorer: the macro-average of its
headlines per metric, over the configs every compared scorer was scored on (`macro_configs`; the others are named in
`macro_left_out`), so averages compare; the configs are independent samples, so its CI combines theirs in quadrature
(each side's half-width separately), a normal approximation stated in the result.

A scorer that gives no usable predictions for a config (does not apply, a file missing, a function that raises or
returns the wrong count, NaN or a non-number) is one line naming scorer and config; that config is skipped for it and
counted, and `strict` makes the first such line an error. No figure is ever computed from a guessed value.
"""

from __future__ import annotations

import math
from pathlib import Path

from .. import published, settings
from ..errors import CohbenchError
from . import store
from .user_scorer import TIMEOUT
from .scorers import Release, Skip, resolve

DEFAULT_SAMPLES = 1000


class LeaderboardError(CohbenchError):
    """The leaderboard cannot be made as asked."""


def _release(folder: Path, configs: list[str] | None, split: str) -> tuple[Release, list[str], dict]:
    """The built configs that have the reported split (the others are named, not scored), read once, and the
    version and fingerprint of each scored one (`versions.provenance`)."""
    from ..corpora.registry import spec
    from ..release.files import MANIFEST, read_manifest
    from ..release.layout import built_configs, read_config
    from ..release.versions import provenance

    built = built_configs(folder)
    unknown = sorted(set(configs or ()) - set(built))
    if unknown:
        raise LeaderboardError(f"{', '.join(unknown)} is not built in {folder}; built configs: {', '.join(built)}")
    data = {c: read_config(folder, c, stats).splits for c, stats in built.items()}  # all: the vectors need every config
    scored = {c: splits for c, splits in data.items() if split in splits and (configs is None or c in configs)}
    cached: dict = {}

    def vectors():
        """The vectors of the train stage's sentence set (every built sentence or gap config, all splits, whatever
        `configs` picks), read from the embedding store that stage filled."""
        if "vectors" not in cached:
            from ..baseline.data import TASKS, release_vectors
            from ..evaluation import unit_of

            units = {c: unit_of(c) for c in sorted(data) if unit_of(c) in TASKS}
            cached["vectors"] = release_vectors(data, units, False, settings.cache_dir("embeddings", folder))
        return cached["vectors"]

    release = Release(folder, read_manifest(folder / MANIFEST), scored, {c: spec(c).protocol for c in scored}, vectors, frozenset(data))
    versions = provenance(folder, {c: built[c] for c in scored})["configs"]
    return release, sorted(c for c in data if split not in data[c] and (configs is None or c in configs)), versions


def _scored(chosen: dict, data: Release, versions: dict, split: str, samples: int, seed: int,
            strict: bool) -> tuple[dict, list[dict]]:
    """Per config: its version, every chosen scorer's headline with its CI and difference from the best reference,
    and the published figures where the records are a declared version; and the lines of what was skipped."""
    from ..evaluation import headline, paired_difference
    from ..evaluation import references as builtin
    from ..release.versions import is_development

    skipped: list[dict] = []

    def skip(scorer: str, config: str, why: str) -> None:
        line = f"{scorer} on {config}: {why}"
        if strict:
            raise LeaderboardError(f"{line} (--strict)")
        skipped.append({"scorer": scorer, "config": config, "why": why, "line": line})

    for scorer in chosen.values():
        for name in scorer.unknown_files:
            skip(scorer.name, name, "the folder's file names no built config, so it is not scored")
    options = {"split": split, "samples": samples, "seed": seed}
    board = {}
    for config, splits in data.splits.items():
        predictions, results = {}, {}
        references = [n for n, s in builtin.REFERENCES.items() if not s.oracle]
        for name in dict.fromkeys([*references, *chosen]):
            scorer = chosen.get(name) or resolve(name, set(data.splits))
            try:
                predictions[name] = scorer.predict(data, config)
                results[name] = headline(config, predictions[name], splits=splits, **options)
            except Skip as problem:
                if name in chosen:
                    skip(name, config, str(problem))
            except CohbenchError as problem:  # the predictions reader's one line: a wrong count, a bad value, a missing id
                if name in chosen:
                    skip(name, config, str(problem))
                predictions.pop(name, None)
        defined = {n: r for n, r in results.items() if n in references and r["value"] is not None}
        best = max(defined, key=lambda n: defined[n]["value"]) if defined else None
        entry = {"version": versions[config]["version"], "fingerprint": versions[config]["fingerprint"],
                 "protocol": data.protocols[config], "metric": None, "documents": None, "best_reference": best,
                 "references": {n: _figure(r) for n, r in results.items() if n in references}, "scores": {}}
        for name in chosen:
            if name not in results:
                continue
            entry.update(metric=results[name]["metric"], documents=results[name]["documents"])
            entry["scores"][name] = _figure(results[name]) | {"decision": results[name].get("decision")}
            if best is not None and results[name]["value"] is not None:
                paired = paired_difference(config, predictions[name], predictions[best], splits=splits, **options)
                entry["scores"][name]["difference"] = {"from": best, "value": paired["difference"], "ci": paired["ci"]}
        if best is not None:
            entry.update(metric=entry["metric"] or results[best]["metric"], documents=entry["documents"] or results[best]["documents"])
        entry["published"], entry["note"] = [], published.note(config)
        if is_development(entry["version"]):  # changed, derived or renamed records: the papers never scored them
            entry["published_withheld"] = (f"{config} here is {entry['version']}, records no cohbench version declares "
                                           "(a changed build or a derived copy), so no published figure is set beside it")
            board[config] = entry
            continue
        if paper := published.paper_metric(config, split):  # the papers' own metric, beside their figures of it
            # a figure on other data is listed below the board, never set in a scorer's cell as a rival
            entry["paper_metric"] = {"metric": paper[0], "published": [f["value"] for f in paper[1] if f["comparability"] != "other data"],
                                     "on_other_data": sum(f["comparability"] == "other data" for f in paper[1])}
            for name, score in entry["scores"].items():
                score["paper_metric"] = _paper_value(config, paper[0], predictions[name], splits, split)
        entry["published"] = published.figures(config, split)
        board[config] = entry
    return board, skipped


def _paper_value(config: str, metric: str, predictions, splits: dict, split: str) -> float | None:
    """A scorer's value of the papers' metric on `split` (the headline carries the CI); None where its protocol does
    not compute that metric, or cannot here (a thresholded one with no threshold to apply)."""
    from ..evaluation import evaluate

    try:
        result = evaluate(config, predictions, split=split, splits=splits, samples=0)
    except CohbenchError:
        return None
    return metric_value(result["splits"][split], metric)


def metric_value(metrics: dict, name: str) -> float | None:
    """A metric of a split's result by the name the papers' table gives it (`recall_at_p70`, `per_type.CharE.f1`,
    `tau_sum`), where the protocol puts it: at the top, in the sentence block (SNaC), or among the measures (SummEval)."""
    for value in (metrics, metrics.get("sentence"), metrics.get("metrics")):
        for key in name.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        value = value.get("value") if isinstance(value, dict) else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def common_configs(board: dict, scorers) -> dict[str, list[str]]:
    """Per headline metric, the configs on which every scorer has a figure with a CI: the only set whose averages
    can be compared across scorers."""
    common: dict[str, list[str]] = {}
    for config, entry in board.items():
        scores = [entry["scores"].get(name) for name in scorers]
        if entry["metric"] and all(s and s["value"] is not None and s["ci"] for s in scores):
            common.setdefault(entry["metric"], []).append(config)
    return common


def _combined(entries: list[dict]) -> dict:
    """Macro-average of independent estimates with their CIs: mean, and each side's half-width in quadrature / k."""
    k = len(entries)
    mean = sum(e["value"] for e in entries) / k
    low = math.sqrt(sum((e["value"] - e["ci"][0]) ** 2 for e in entries)) / k
    high = math.sqrt(sum((e["ci"][1] - e["value"]) ** 2 for e in entries)) / k
    return {"value": mean, "ci": [mean - low, mean + high], "configs": k}


def leaderboard(
    scorers: list[str] | None = None,
    *,
    release: Path | None = None,
    configs: list[str] | None = None,
    split: str = "test",
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    strict: bool = False,
    output: Path | None = None,
    scorer_timeout: float = TIMEOUT,
) -> dict:
    """The leaderboard of `scorers` (default: every reference scorer and the baseline) on the built configs (or
    `configs`); results are also written per scorer under `output` (default `.cache/leaderboard/`), keyed by the
    release's version and manifest hash. Returns the result; `render` turns it into text, Markdown or a plot."""
    from ..evaluation import references as builtin

    from ..evaluation.bootstrap import check_settings

    if samples < 1:
        raise LeaderboardError(f"the bootstrap needs at least 1 sample, got {samples}")
    check_settings(samples, seed)
    folder = Path(release or settings.release_dir())
    target = store.folder(output, folder)  # a path inside a release is refused before any work
    data, unscored, versions = _release(folder, configs, split)
    names = list(scorers or [*(n for n, s in builtin.REFERENCES.items() if not s.oracle), "baseline"])
    chosen: dict = {}
    try:
        for name in dict.fromkeys(names):  # a user's function is imported here, in its own process: refused before any work
            chosen[name] = resolve(name, set(data.built), scorer_timeout)  # a folder's file of a built config left out by --config is no unknown file
        board, skipped = _scored(chosen, data, versions, split, samples, seed, strict)
    finally:
        for scorer in chosen.values():
            scorer.close()
    common = common_configs(board, chosen)
    macro = {name: {metric: _combined([board[c]["scores"][name] for c in configs]) for metric, configs in common.items()}
             for name in chosen}
    result = {
        "release": store.identity(folder, data.manifest),
        "split": split, "samples": samples, "seed": seed,
        "scorers": list(chosen),
        "configs": board,
        "macro": macro,
        "macro_configs": common,
        "macro_left_out": sorted(c for c, e in board.items() if c not in common.get(e["metric"], [])),
        "macro_interval": "per config a 95% percentile bootstrap CI over documents; the macro-average's CI combines "
                          "them in quadrature (independent configs, normal approximation)",
        "not_scored": {c: f"no {split} split" for c in unscored},
        "skipped": skipped,
    }  # fmt: skip
    result["written"] = store.write(result, target)
    return result


def _figure(result: dict) -> dict:
    return {"value": result["value"], "ci": result["ci"]}
