"""Release validation: great-expectations suites per config, plus release-wide leakage checks.

`validate()` reads the release's Parquet files, derives the tables of `frames.py`, runs the suites of
`suites.py` with great-expectations and returns one verdict per config. Expected statistics are the reviewed,
committed snapshots `<validation.expected of params.yaml>/<config>.json`, by default `catalog/expected/`
(written by `record_expected`, i.e. `cohbench validate CONFIG --record-expected`); any drift of row counts or label distributions fails with the
differing statistics named; a config whose records are not the version `catalog/versions/<config>.json`
declares fails, with the part of the version that must move (`release.versions`). Results: `<release>/validation/<config>.json` and `release.json`; great-expectations'
HTML Data Docs go outside the release (`settings.validation_docs_dir()`, default the release's `validation-docs` cache: `.cache/validation-docs/` of the project's own): they
are regenerable and carry the time of their run, so they are never shared, pushed or exported with it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import jsonout, settings
from ..atomic import atomic_dir, remove_orphans, write_text
from ..errors import ReleaseError
from ..release import versions
from ..release.layout import ConfigData, built_configs, read_config
from . import frames


def expected_dir() -> Path:
    """The snapshots that match the release's parameters: subset-sized runs (CI) keep their own."""
    folder = (settings.params().get("validation") or {}).get("expected")
    return settings.project_root() / folder if folder else settings.catalog_dir() / "expected"


def _expected_path(config: str, directory: Path | None) -> Path:
    return (directory or expected_dir()) / f"{config}.json"


def _rating_ranges(config: str) -> dict:
    return ((settings.params().get("validation") or {}).get("rating_ranges") or {}).get(config) or {}


def _release_configs(release: Path) -> dict[str, ConfigData]:
    built = built_configs(release)
    if not built:
        raise ReleaseError(f"no config is built in {release}; run `cohbench build CONFIG` first")
    return {name: read_config(release, name, stats) for name, stats in built.items()}


def record_expected(config: str, *, release: Path | None = None, directory: Path | None = None) -> Path:
    """Snapshot the statistics of a built config as its expected statistics (review the diff, then commit it)."""
    release = release or settings.release_dir()
    built = built_configs(release)
    if config not in built:
        raise ReleaseError(f"config {config!r} is not built in {release}; run `cohbench build {config}`")
    data = read_config(release, config, built[config])
    path = _expected_path(config, directory)
    jsonout.write(path, {"config": config, "splits": frames.actual_stats(data)})
    return path


def _config_tables(data: ConfigData, expected_file: Path) -> list[suites.Table]:
    from . import suites  # great-expectations: the [validate] extra; frames serve `evaluate` without it

    tables = [suites.records_table(data.name, data.stats["corpus"], frames.records_frame(data))]
    spans = frames.spans_frame(data)
    if len(spans):
        tables.append(suites.spans_table(data.name, spans))
    ratings = frames.ratings_frame(data, _rating_ranges(data.name))
    if len(ratings):
        tables.append(suites.ratings_table(data.name, ratings))
    expected = json.loads(expected_file.read_text(encoding="utf-8"))["splits"] if expected_file.is_file() else None
    shown = expected_file.relative_to(settings.project_root()) if expected_file.is_relative_to(settings.project_root()) else expected_file
    tables.append(suites.stats_table(data.name, frames.stats_frame(data.name, frames.actual_stats(data), expected), str(shown)))
    cross = frames.cross_checks_frame(data.stats.get("notes"))
    if len(cross):
        tables.append(suites.cross_checks_table(data.name, cross))
    return tables


def _verdict(name: str, results: list[dict], rows: int | None) -> dict:
    failed = [r for r in results if not r["success"]]
    what = f"{len(results)} checks" + (f" on {rows} records" if rows is not None else "")
    if not failed:
        line = f"{name}: ok — {what} passed"
    else:
        parts = []
        for r in failed:
            table = r["table"].split(".", 1)[1]
            count = f"{r['unexpected']} of {r['rows_checked']} rows" if r["unexpected"] is not None else r.get("error", "failed")
            parts.append(f"[{table}] {r['check']}: {count}" + (f" ({'; '.join(r['examples'])})" if r["examples"] else ""))
        line = f"{name}: FAILED {len(failed)} of {what} — " + " | ".join(parts)
    return {"ok": not failed, "line": line, "checks": len(results), "failed": len(failed), "records": rows, "results": results}


def validate(
    configs: list[str] | None = None,
    *,
    release: Path | None = None,
    expected: Path | None = None,
    docs: bool = True,
) -> dict:
    """Validate `configs` (default: every built config) and the release-wide leakage checks.

    Returns {"ok", "configs": {name: verdict}, "release": verdict}; each verdict has a one-line `line`."""
    from . import gx, suites

    release = release or settings.release_dir()
    everything = _release_configs(release)
    names = configs or sorted(everything)
    missing = [n for n in names if n not in everything]
    if missing:
        raise ReleaseError(f"config(s) {', '.join(missing)} not built in {release}; built: {', '.join(sorted(everything))}")
    tables = []
    for name in names:
        tables += _config_tables(everything[name], _expected_path(name, expected))
    # Leakage is a property of the whole release: documents are compared across every built config.
    release_tables = [suites.documents_table(frames.documents_frame(list(everything.values())))]
    derivations = frames.derivations_frame(list(everything.values()))
    if len(derivations):
        release_tables.append(suites.derivations_table(derivations))
    out_dir = release / "validation"
    docs_root = settings.validation_docs_dir(release)
    remove_orphans(docs_root)
    remove_orphans(out_dir)
    # One Data Docs site per config validated (and one for the release-wide checks), each replaced whole: validating
    # some configs leaves the other configs' docs as they were.
    results = []
    for name, group in [*((n, [t for t in tables if t.name.split(".", 1)[0] == n]) for n in names), ("release", release_tables)]:
        if docs:
            with atomic_dir(docs_root / name) as docs_dir:
                results += gx.run(group, docs_dir)
        else:
            results += gx.run(group)
            shutil.rmtree(docs_root / name, ignore_errors=True)  # never leave Data Docs of an older run beside new verdicts
    if docs_root.is_dir():
        write_text(docs_root / "index.html", _docs_index(docs_root))
    results += [_version_result(everything[name]) for name in names]
    report = _report(names, everything, results)
    for name in names:
        jsonout.write(out_dir / f"{name}.json", report["configs"][name])
    jsonout.write(out_dir / "release.json", report["release"])
    return report


def _version_result(data: ConfigData) -> dict:
    """The config's records against its declared version (`catalog/versions/`), as one more check of its verdict."""
    verdict = versions.check(data.name, data.stats, tables=data.tables)  # the part to move, as `cohbench version` says
    return {"table": f"{data.name}.version", "check": f"records are version {verdict.declared or '(undeclared)'}",
            "success": verdict.ok, "unexpected": None, "rows_checked": None, "error": verdict.line,
            "examples": [], "bump": verdict.bump, "next_version": verdict.next}


def _docs_index(docs_root: Path) -> str:
    sites = sorted(p.name for p in docs_root.iterdir() if (p / "index.html").is_file())
    links = "".join(f'<li><a href="{name}/index.html">{name}</a></li>' for name in sites)
    return f"<!doctype html><title>cohbench validation</title><h1>Data Docs</h1><ul>{links}</ul>\n"


def _report(names, everything, results) -> dict:
    by_table = {}
    for r in results:
        by_table.setdefault(r["table"].split(".", 1)[0], []).append(r)
    configs = {name: _verdict(name, by_table.get(name, []), sum(len(rows) for rows in everything[name].splits.values())) for name in names}
    release = _verdict(f"release ({len(everything)} config(s), leakage)", by_table.get("release", []), None)
    return {"ok": all(v["ok"] for v in configs.values()) and release["ok"], "configs": configs, "release": release}
