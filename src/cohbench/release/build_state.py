"""The build state of an indexed release: `building/<config>.json` records the sha256 of the stats a build wrote since
the last `cohbench index`, which the record readers accept until `index` writes the manifest and removes it
(`layout.built_configs` says the whole rule)."""

from __future__ import annotations

from pathlib import Path

from .. import jsonout
from ..errors import ReleaseError
from .files import BUILDING, INDEXED, MANIFEST, read_json, read_manifest, stats_path


def record_build(release: Path, config: str, stats_sha256: str) -> None:
    """Mark `config` as built since the last index in an indexed release whose manifest records other stats for it,
    before the stats are written (a reader never meets stats nothing records); a rebuild giving the manifest's
    stats clears it. A folder never indexed (a first build, a `corrupt` output) has no record but its stats."""
    if not (release / MANIFEST).exists() and not any((release / name).exists() for name in INDEXED):
        return
    try:
        recorded = read_manifest(release / MANIFEST).get("shipped", {}).get(f"stats/{config}.json")
    except ReleaseError:  # lost or damaged: the build state records this build
        recorded = None
    path = release / BUILDING / f"{config}.json"
    if recorded == stats_sha256:
        path.unlink(missing_ok=True)
        return
    from ..corpora.registry import is_config

    if not is_config(config):
        raise ReleaseError(f"{config!r} is not a registered config, so it cannot be built into the indexed release "
                           f"{release}; write it into a new folder (as `cohbench derive` and `corrupt` do)")
    jsonout.write(path, {"config": config, "stats_sha256": stats_sha256})


def build_state(release: Path) -> dict[str, str]:
    """config -> the sha256 of the stats its build wrote, for every config built since the last `cohbench index`."""
    fix = "rebuild the config with `cohbench build CONFIG`, or delete the file if the release's manifest is current"
    out = {}
    for path in sorted((release / BUILDING).glob("*.json")):
        entry = read_json(path, fix)
        if not (isinstance(entry, dict) and isinstance(entry.get("stats_sha256"), str) and entry.get("config") == path.stem):
            raise ReleaseError(f"{path} is not a cohbench build state (config, stats_sha256); {fix}")
        out[path.stem] = entry["stats_sha256"]
    if out:  # only `cohbench build` leaves a build state, and it builds registered configs only
        from ..corpora.registry import is_config

        if unknown := [config for config in out if not is_config(config)]:
            raise ReleaseError(f"{release / BUILDING / unknown[0]}.json names {unknown[0]!r}, which no corpus declares; only "
                               "`cohbench build` writes a build state, for a registered config: delete the file (and that "
                               "config's stats and data), or restore the release")
    return out


def clear_build_state(release: Path, recorded: dict[str, str]) -> None:
    """Remove the build state the manifest (`recorded`) makes needless: all but what describes stats written since."""
    from ..corpora.sources import sha256_of

    for config, sha256 in build_state(release).items():
        path = stats_path(release, config)
        if recorded.get(f"stats/{config}.json") == sha256 or not path.is_file() or sha256_of(path) != sha256:
            (release / BUILDING / f"{config}.json").unlink(missing_ok=True)
    if (release / BUILDING).is_dir() and not any((release / BUILDING).iterdir()):
        (release / BUILDING).rmdir()


def require_indexed(release: Path) -> None:
    """Refuse a release whose manifest does not record every config it holds (never indexed, or built since)."""
    if not (release / MANIFEST).is_file():
        raise ReleaseError(f"{release} has no {MANIFEST} (it was never indexed); run `cohbench index` first")
    if building := sorted(build_state(release)):
        raise ReleaseError(f"{release} is being built ({BUILDING}/: {', '.join(building)}); run `cohbench index` first")
