"""The release gate: the baseline's scores must clear the floors of `params.yaml` (`baseline.floors`) and beat
the best untrained reference scorer on the same test documents beyond noise (`baseline.margin_over_references`).

A floor is `config: {metric path: minimum}`, the path going into the config's evaluation result, e.g.
`test.f1` or `test.sentence.auc` (SNaC). Floors of configs the release does not hold are reported as skipped;
a built config without a baseline score, or a metric that is undefined, fails. A margin is `config: {split.metric:
m}`, the metric being the config's headline: the lower end of the 95% paired-bootstrap CI of the baseline's figure
minus the best reference scorer's, over the same resampled documents (`margins.margin`, on the predictions the
release ships), must exceed m; so a release whose labels a heuristic predicts as well as the trained model, or
within the noise of a small test split, cannot pass, whatever the floors. Every other scored config with a test split
must be named in `baseline.not_validated` with the reason it cannot be validated, and is listed as not validated;
one named nowhere fails the gate. Training data without a test split named there (a synthetic config, judged by its
transfer to the config it is made for) is listed with its reason as well. The verdict is also written to
`<release>/baseline/gate.json` (the release card stage depends on it)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import jsonout, settings
from ..display import percent
from ..release.layout import built_configs, read_config, shipped_predictions
from .data import BaselineError, baseline_params
from .margins import margin as paired_margin


def _lookup(result: dict, path: str):
    node = result["splits"]
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _floor_checks(floors: dict, scores: dict, built: dict) -> list[dict]:
    checks = []
    for config, minimums in sorted(floors.items()):
        for metric, floor in sorted(minimums.items()):
            entry = {"config": config, "metric": metric, "floor": floor, "kind": "floor"}
            if config not in built:
                checks.append(entry | {"status": "skipped", "value": None, "why": "config not built"})
                continue
            value = _lookup(scores[config], metric) if config in scores else None
            ok = value is not None and value >= floor
            why = "no baseline score" if config not in scores else ("undefined" if value is None else None)
            checks.append(entry | {"status": "passed" if ok else "FAILED", "value": value, "why": why})
    return checks


def _shipped(release: Path, config: str) -> tuple[Path | None, dict[str, Path]]:
    """The baseline's and every reference scorer's predictions on `config` that the train stage wrote."""
    folder = release / "baseline" / "predictions"
    baseline = shipped_predictions(release, "baseline", config)
    references = {p.name: p / f"{config}.jsonl" for p in sorted(folder.iterdir()) if p.is_dir() and p.name != "baseline"} if folder.is_dir() else {}
    return (baseline if baseline.is_file() else None), {name: path for name, path in references.items() if path.is_file()}


def _margin_checks(margins: dict, release: Path, built: dict) -> list[dict]:
    checks = []
    for config, wanted in sorted(margins.items()):
        for metric, minimum in sorted(wanted.items()):
            entry = {"config": config, "metric": metric, "kind": "margin", "value": None, "floor": minimum, "ci": None}
            if config not in built:
                checks.append(entry | {"status": "skipped", "why": "config not built"})
                continue
            baseline, references = _shipped(release, config)
            if baseline is None or not references:
                why = "no baseline predictions" if baseline is None else "no reference scorer predictions"
                checks.append(entry | {"status": "FAILED", "why": f"{why} in the release; run cohbench train"})
                continue
            m = paired_margin(config, baseline, references, read_config(release, config, built[config]).splits)
            if m is None or m["ci"] is None:
                checks.append(entry | {"status": "FAILED", "why": "no reference scorer with a defined figure on the test split"})
                continue
            if metric != f"{m['split']}.{m['metric']}":
                checks.append(entry | {"status": "FAILED", "why": f"the margin is measured on the headline, {m['split']}.{m['metric']}"})
                continue
            low = m["ci"][0]
            checks.append(entry | {"status": "passed" if low > minimum else "FAILED", "value": m["difference"], "ci": m["ci"],
                                   "why": f"baseline minus best reference {m['best_reference']}, 95% paired CI over "
                                          f"{m['documents']} documents ({m['samples']} resamples)"})  # fmt: skip
    return checks


def _coverage_checks(scores: dict, margins: dict, not_validated: dict, built) -> list[dict]:
    """Every scored config with a test split is validated by a margin or named with the reason it cannot be
    (`baseline.not_validated`): never left out in silence. A built config without a test split named there (training
    data, judged by what it teaches another config) is listed with its reason too."""
    checks = []
    tested = {c for c, result in scores.items() if "test" in result.get("splits", {})}
    for config in sorted((tested | (set(not_validated) & set(built))) - set(margins)):
        entry = {"config": config, "metric": "test", "kind": "coverage", "value": None, "floor": None}
        if reason := not_validated.get(config):
            checks.append(entry | {"status": "not validated", "why": reason})
        else:
            checks.append(entry | {"status": "FAILED", "why": "labelled, with a test split, but neither a margin "
                                   "(baseline.margin_over_references) nor a reason it cannot be validated (baseline.not_validated)"})
    return checks


def _line(c: dict) -> str:
    if c["kind"] == "coverage":
        return f"{c['status']:<7} {c['config']}: {c['why']}"
    if c["kind"] == "floor":
        head = f"{c['config']} {c['metric']} = {percent(c['value'])} (floor {percent(c['floor'])})"
    else:
        ci = f" [{percent(c['ci'][0], signed=True)}, {percent(c['ci'][1], signed=True)}]" if c["ci"] else ""
        head = (f"{c['config']} {c['metric']} margin = {percent(c['value'], signed=True)}{ci} "
                f"(lower bound needs > {percent(c['floor'], signed=True)})")
    return f"{c['status']:<7} {head}" + (f": {c['why']}" if c["why"] else "")


def check(*, release: Path | None = None, floors: dict | None = None, margins: dict | None = None,
          not_validated: dict | None = None) -> dict:
    release = release or settings.release_dir()
    params = baseline_params() if floors is None or margins is None or not_validated is None else {}
    floors = floors if floors is not None else params.get("floors") or {}
    margins = margins if margins is not None else params.get("margin_over_references") or {}
    not_validated = not_validated if not_validated is not None else params.get("not_validated") or {}
    path = release / "baseline" / "metrics.json"
    if not path.is_file():
        raise BaselineError(f"no baseline metrics at {path}; run `cohbench train` first")
    metrics = json.loads(path.read_text(encoding="utf-8"))
    built = built_configs(release)
    checks = (_floor_checks(floors, metrics["scores"], built) + _margin_checks(margins, release, built)
              + _coverage_checks(metrics["scores"], margins, not_validated, built))
    failed = [c for c in checks if c["status"] == "FAILED"]
    unvalidated = [c["config"] for c in checks if c["status"] == "not validated"]
    counted = [c for c in checks if c["status"] != "not validated"]
    summary = (f"gate {'passed' if not failed else 'FAILED'}: {len(counted) - len(failed)} of {len(counted)} checks cleared or skipped"
               + (f"; not validated: {', '.join(unvalidated)}" if unvalidated else ""))
    result = {"ok": not failed, "checks": checks, "lines": [*map(_line, checks), summary], "data": metrics.get("data")}
    jsonout.write(release / "baseline" / "gate.json", result)
    return result
