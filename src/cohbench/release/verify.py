"""`cohbench verify`: every file of a release re-hashed against the sha256 its manifest records, and every file in
the release folder accounted for.

The release's own files (data, stats, card, summaries, scores) are always checked. The upstream files it was built
from are checked where a raw cache is at hand (a checkout that fetched them); a release received without one (pulled,
exported, copied) is verified on its own files, and the result says what it did not check. A file in the release
folder that the release does not record (something written there by mistake, or the leftover of an interrupted
write) fails verification.
"""

from __future__ import annotations

from pathlib import Path

from .. import settings
from ..errors import ReleaseError
from ..sources import sha256_of
from .layout import MANIFEST, built_configs, read_manifest, stats_path

# Files a release folder may hold that its manifest does not hash: the manifest itself, and git's own files.
UNRECORDED_BY_DESIGN = (MANIFEST, ".gitignore")


def verify(release: Path | None = None, *, raw: bool | None = None) -> dict:
    """{"ok", "files": one result per file, "not_checked": what was left out and why}. `raw` checks the upstream
    files (default: where a raw cache exists)."""
    import pyarrow.parquet as pq

    from ..fetch import erratum_path
    from ..registry import lookup

    release = Path(release or settings.release_dir())
    manifest_file = release / MANIFEST
    if not manifest_file.is_file():
        raise ReleaseError(f"no release manifest at {manifest_file}; build a config first (cohbench build CONFIG), or give the folder of a release")
    recorded = read_manifest(manifest_file)
    raw = settings.raw_cache_dir().is_dir() if raw is None else raw
    results, not_checked = [], []

    def check(kind, path: Path, expected: str, what: str):
        if not path.is_file():
            results.append({"kind": kind, "path": str(path), "ok": False, "problem": f"missing; {what}"})
            return
        actual = sha256_of(path)
        results.append(
            {"kind": kind, "path": str(path), "ok": actual == expected, "problem": None if actual == expected else f"sha256 {actual}, expected {expected}"}
        )

    upstream = 0
    for name, entry in recorded["configs"].items():
        if raw:
            corpus = lookup(entry["corpus"])
            for source in corpus.sources:
                check("raw", settings.raw_cache_dir() / source.relpath, source.sha256, f"run cohbench fetch {name}")
            for erratum in corpus.errata:
                check("erratum", erratum_path(corpus, erratum), erratum.output_sha256, f"run cohbench fetch {name}")
        else:
            upstream += len(entry.get("inputs") or [])
        for split, f in entry["files"].items():
            check("release", release / f["path"], f["sha256"], f"run cohbench build {name}, or restore the release")
            if results[-1]["ok"] and pq.ParquetFile(release / f["path"]).metadata.num_rows != f["rows"]:
                results[-1].update(ok=False, problem=f"row count differs from the manifest's {f['rows']}")
    if upstream:
        not_checked.append(f"{upstream} upstream input file(s): there is no raw cache at {settings.raw_cache_dir()} (a release "
                           "received on its own); the manifest records each one's URL and sha256, and `cohbench fetch` checks them")
    for relpath, sha256 in recorded.get("shipped", {}).items():
        kind = relpath.split("/")[0] if "/" in relpath else "card"
        check(kind, release / relpath, sha256, "restore it from the release, or rebuild and run `cohbench index`")
    if "shipped" not in recorded:
        results.append({"kind": "manifest", "path": str(manifest_file), "ok": False,
                        "problem": "records no sha256 of the card, stats and summaries (an older manifest); run `cohbench index`"})
    known = {f["path"] for entry in recorded["configs"].values() for f in entry["files"].values()} | set(recorded.get("shipped", {}))
    for path in sorted(p for p in release.rglob("*") if p.is_file() or p.is_symlink() or not p.is_dir()):
        relative = path.relative_to(release)
        if relative.as_posix() in known or relative.name in UNRECORDED_BY_DESIGN:
            continue
        leftover = any(part.startswith(".") and part.endswith(".tmp") for part in relative.parts)
        problem = ("the leftover of an interrupted write; the next build or `cohbench index` removes it" if leftover
                   else "not a file of this release (the manifest does not record it); remove it, or run `cohbench index` if it belongs")
        results.append({"kind": "leftover" if leftover else "unrecorded", "path": str(path), "ok": False, "problem": problem})
    stats = built_configs(release)
    for name, entry in recorded["configs"].items():
        if name in stats and stats[name].get("files") != entry["files"]:
            results.append({"kind": "stats", "path": str(stats_path(release, name)), "ok": False, "problem": "lists other files than the manifest; run `cohbench index`"})
    return {"ok": all(r["ok"] for r in results), "files": results, "not_checked": not_checked}

