"""The release gate: the baseline's scores must clear the floors of `params.yaml` (`baseline.floors`) and beat
every untrained reference scorer on the same split by a margin (`baseline.margin_over_references`).

A floor is `config: {metric path: minimum}`, the path going into the config's evaluation result, e.g.
`test.f1` or `test.sentence.auc` (SNaC). Floors of configs the release does not hold are reported as skipped;
a built config without a baseline score, or a metric that is undefined, fails. A margin is `config: {metric
path: margin}`: the baseline's value must exceed the best reference scorer's value at that path by the margin,
so a release whose labels a heuristic can predict as well as the trained model cannot pass, whatever the
floors. The verdict is also written to `<release>/baseline/gate.json` (the release card stage depends on it)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import jsonout, settings
from ..display import percent
from ..release.layout import built_configs
from .data import BaselineError, baseline_params


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


def _margin_checks(margins: dict, scores: dict, references: dict, built: dict) -> list[dict]:
    checks = []
    for config, wanted in sorted(margins.items()):
        for metric, margin in sorted(wanted.items()):
            entry = {"config": config, "metric": metric, "kind": "margin", "value": None}
            if config not in built:
                checks.append(entry | {"status": "skipped", "floor": None, "why": "config not built"})
                continue
            rivals = {name: _lookup(result, metric) for name, result in references.get(config, {}).items()}
            rivals = {name: v for name, v in rivals.items() if v is not None}
            value = _lookup(scores[config], metric) if config in scores else None
            if not rivals or value is None:
                why = "no reference scorer result" if not rivals else "no baseline score"
                checks.append(entry | {"status": "FAILED", "floor": None, "value": value, "why": why})
                continue
            best = max(rivals, key=rivals.get)
            floor = round(rivals[best] + margin, 6)
            checks.append(entry | {"status": "passed" if value >= floor else "FAILED", "floor": floor, "value": value,
                                   "why": f"best reference {best} {percent(rivals[best])} + margin {percent(margin)}"})
    return checks


def _line(c: dict) -> str:
    value, floor = percent(c["value"]), percent(c["floor"])
    return f"{c['status']:<7} {c['config']} {c['metric']} = {value} ({'floor' if c['kind'] == 'floor' else 'needs'} {floor})" + (
        f": {c['why']}" if c["why"] else ""
    )


def check(*, release: Path | None = None, floors: dict | None = None, margins: dict | None = None) -> dict:
    release = release or settings.release_dir()
    params = baseline_params() if floors is None or margins is None else {}
    floors = floors if floors is not None else params.get("floors") or {}
    margins = margins if margins is not None else params.get("margin_over_references") or {}
    path = release / "baseline" / "metrics.json"
    if not path.is_file():
        raise BaselineError(f"no baseline metrics at {path}; run `cohbench train` first")
    metrics = json.loads(path.read_text(encoding="utf-8"))
    built = built_configs(release)
    checks = _floor_checks(floors, metrics["scores"], built) + _margin_checks(margins, metrics["scores"], metrics.get("references", {}), built)
    failed = [c for c in checks if c["status"] == "FAILED"]
    summary = f"gate {'passed' if not failed else 'FAILED'}: {len(checks) - len(failed)} of {len(checks)} checks cleared or skipped"
    result = {"ok": not failed, "checks": checks, "lines": [*map(_line, checks), summary], "data": metrics.get("data")}
    jsonout.write(release / "baseline" / "gate.json", result)
    return result
