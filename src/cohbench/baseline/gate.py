"""The release gate: the baseline's scores must clear the floors of `params.yaml` (`baseline.floors`).

A floor is `config: {metric path: minimum}`, the path going into the config's evaluation result, e.g.
`test.f1` or `test.sentence.auc` (SNaC). Floors of configs the release does not hold are reported as skipped;
a built config without a baseline score, or a metric that is undefined, fails. The verdict is also written to
`<release>/baseline/gate.json` (the release card stage depends on it)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import settings
from ..atomic import write_text
from ..release import built_configs
from . import BaselineError, baseline_params


def _lookup(result: dict, path: str):
    node = result["splits"]
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def check(*, release: Path | None = None, floors: dict | None = None) -> dict:
    release = release or settings.release_dir()
    floors = floors if floors is not None else baseline_params().get("floors") or {}
    path = release / "baseline" / "metrics.json"
    if not path.is_file():
        raise BaselineError(f"no baseline metrics at {path}; run `cohbench train` first")
    scores = json.loads(path.read_text(encoding="utf-8"))["scores"]
    built = built_configs(release)
    checks = []
    for config, minimums in sorted(floors.items()):
        for metric, floor in sorted(minimums.items()):
            entry = {"config": config, "metric": metric, "floor": floor}
            if config not in built:
                checks.append(entry | {"status": "skipped", "value": None, "why": "config not built"})
                continue
            value = _lookup(scores[config], metric) if config in scores else None
            ok = value is not None and value >= floor
            why = "no baseline score" if config not in scores else ("undefined" if value is None else None)
            checks.append(entry | {"status": "passed" if ok else "FAILED", "value": value, "why": why})
    failed = [c for c in checks if c["status"] == "FAILED"]
    lines = [
        f"{c['status']:<7} {c['config']} {c['metric']} = "
        + ("-" if c["value"] is None else f"{c['value']:.3f}")
        + f" (floor {c['floor']})"
        + (f": {c['why']}" if c["why"] else "")
        for c in checks
    ]
    summary = f"gate {'passed' if not failed else 'FAILED'}: {len(checks) - len(failed)} of {len(checks)} floors cleared or skipped"
    result = {"ok": not failed, "checks": checks, "lines": [*lines, summary]}
    write_text(release / "baseline" / "gate.json", json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result
