"""`cohbench verify`: every file of a release re-hashed against the sha256 its manifest records, and every file in
the release folder accounted for.

The release's own files (data, stats, card, summaries, scores) are always checked. The upstream files a corpus was
built from are checked where the raw cache holds any of them (a checkout that fetched the corpus: then every one of
them must be there and match); a release received without the cache (pulled, exported, copied) is verified on its
own files, and the result says what it did not check. A file in the release
folder that the release does not record (something written there by mistake, or the leftover of an interrupted
write) fails verification, as does a config built since the last `cohbench index` (the build state, `building/`):
its stats are not yet the release's.
"""

from __future__ import annotations

from pathlib import Path

from .. import settings
from ..errors import ReleaseError
from ..corpora.sources import sha256_of
from . import versions
from .build_state import build_state
from .files import BUILDING, MANIFEST, read_manifest, stats_path
from .layout import read_stats

# Files a release folder may hold that its manifest does not hash: the manifest itself, and git's own files.
UNRECORDED_BY_DESIGN = (MANIFEST, ".gitignore")


def verify(release: Path | None = None, *, raw: bool | None = None) -> dict:
    """{"ok", "files": one result per file, "not_checked": what was left out and why}. `raw` checks the upstream
    files of every corpus (True), of none (False), or of each corpus the raw cache holds any of (default)."""
    import pyarrow.parquet as pq

    from ..corpora.fetch import erratum_path
    from ..corpora.registry import corpora

    release = Path(release or settings.release_dir())
    manifest_file = release / MANIFEST
    if not manifest_file.is_file():
        raise ReleaseError(f"no release manifest at {manifest_file}; build a config first (cohbench build CONFIG), or give the folder of a release")
    recorded = read_manifest(manifest_file)
    results, not_checked = [], []

    def check(kind, path: Path, expected: str, what: str):
        if not path.is_file():
            results.append({"kind": kind, "path": str(path), "ok": False, "problem": f"missing; {what}"})
            return
        actual = sha256_of(path)
        results.append(
            {"kind": kind, "path": str(path), "ok": actual == expected, "problem": None if actual == expected else f"sha256 {actual}, expected {expected}"}
        )

    cache, fetched, upstream = settings.raw_cache_dir(), set(), set()
    for name, entry in recorded["configs"].items():
        corpus = corpora().get(entry["corpus"])  # None: a corpus this version does not know (its inputs are not checked)
        if corpus is not None and (raw or raw is None and any((cache / s.relpath).is_file() for s in corpus.inputs)):
            if corpus.name not in fetched:  # a corpus's files once, however many of its configs the release holds
                fetched.add(corpus.name)
                for source in corpus.inputs:
                    check("raw", cache / source.relpath, source.sha256, f"run cohbench fetch {name}")
                for erratum in corpus.errata:
                    check("erratum", erratum_path(corpus, erratum), erratum.output_sha256, f"run cohbench fetch {name}")
        else:
            # a `corrupt` output's inputs are its user's files (no URL): nothing upstream to fetch
            upstream |= {i["url"] for i in entry.get("inputs") or [] if isinstance(i, dict) and "url" in i}
        for split, f in entry["files"].items():
            check("release", release / f["path"], f["sha256"], f"run cohbench build {name}, or restore the release")
            if results[-1]["ok"] and pq.ParquetFile(release / f["path"]).metadata.num_rows != f["rows"]:
                results[-1].update(ok=False, problem=f"row count differs from the manifest's {f['rows']}")
    if upstream:
        not_checked.append(f"{len(upstream)} upstream input file(s) of corpora the raw cache {cache} does not hold (a release "
                           "received on its own); the manifest records each one's URL and sha256, and `cohbench fetch` checks them")
    for relpath, sha256 in recorded.get("shipped", {}).items():
        kind = relpath.split("/")[0] if "/" in relpath else "card"
        check(kind, release / relpath, sha256, "restore it from the release, or rebuild and run `cohbench index`")
    for name in recorded["configs"] if "shipped" in recorded else ():  # the stats file its card, version and views read
        if f"stats/{name}.json" not in recorded["shipped"]:
            results.append({"kind": "stats", "path": str(stats_path(release, name)), "ok": False,
                            "problem": "the manifest records no sha256 of this config's stats file; restore the release, or run `cohbench index`"})
    if "shipped" not in recorded:
        results.append({"kind": "manifest", "path": str(manifest_file), "ok": False,
                        "problem": "records no sha256 of the card, stats and summaries (an older manifest); run `cohbench index`"})
    for config in build_state(release):
        results.append({"kind": "building", "path": str(release / BUILDING / f"{config}.json"), "ok": False,
                        "problem": f"{config} was built since the last `cohbench index`; run `cohbench index` to record it"})
    known = {f["path"] for entry in recorded["configs"].values() for f in entry["files"].values()} | set(recorded.get("shipped", {}))
    for path in sorted(p for p in release.rglob("*") if p.is_file() or p.is_symlink() or not p.is_dir()):
        relative = path.relative_to(release)
        if relative.as_posix() in known or relative.name in UNRECORDED_BY_DESIGN or (
                relative.parent.as_posix() == BUILDING and relative.suffix == ".json"):
            continue
        leftover = any(part.startswith(".") and part.endswith(".tmp") for part in relative.parts)
        problem = ("the leftover of an interrupted write; the next build or `cohbench index` removes it" if leftover
                   else "not a file of this release (the manifest does not record it); remove it, or run `cohbench index` if it belongs")
        results.append({"kind": "leftover" if leftover else "unrecorded", "path": str(path), "ok": False, "problem": problem})
    stats = {name: read_stats(stats_path(release, name)) for name in recorded["configs"] if stats_path(release, name).is_file()}
    for name, entry in recorded["configs"].items():
        if name in stats and stats[name]["files"] != entry["files"]:
            results.append({"kind": "stats", "path": str(stats_path(release, name)), "ok": False, "problem": "lists other files than the manifest; run `cohbench index`"})
        elif name in stats and (problem := versions.false_claim(release, name, str(entry.get("version")), stats[name])):
            results.append({"kind": "version", "path": str(stats_path(release, name)), "ok": False,
                            "problem": f"{problem}; restore the release from its source, or rebuild it"})
    return {"ok": all(r["ok"] for r in results), "files": results, "not_checked": not_checked}

