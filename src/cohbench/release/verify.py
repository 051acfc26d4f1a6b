"""`cohbench verify`: every raw input and every release file re-hashed against the sha256 recorded for it."""

from __future__ import annotations

from pathlib import Path

from .. import settings
from .layout import MANIFEST, built_configs, read_manifest, shipped_files, stats_path
from ..registry import lookup
from ..sources import sha256_of


def verify(release: Path | None = None) -> list[dict]:
    """Re-hash every raw input and every release file against the recorded sha256; one result per file."""
    import pyarrow.parquet as pq

    from ..errors import ReleaseError
    from ..fetch import erratum_path

    release = release or settings.release_dir()
    manifest_file = release / MANIFEST
    if not manifest_file.is_file():
        raise ReleaseError(f"no release manifest at {manifest_file}; build a config first (cohbench build CONFIG)")
    recorded = read_manifest(manifest_file)
    results = []

    def check(kind, path: Path, expected: str, what: str):
        if not path.is_file():
            results.append({"kind": kind, "path": str(path), "ok": False, "problem": f"missing; {what}"})
            return
        actual = sha256_of(path)
        results.append(
            {"kind": kind, "path": str(path), "ok": actual == expected, "problem": None if actual == expected else f"sha256 {actual}, expected {expected}"}
        )

    for name, entry in recorded["configs"].items():
        corpus = lookup(entry["corpus"])
        for source in corpus.sources:
            check("raw", settings.raw_cache_dir() / source.relpath, source.sha256, f"run cohbench fetch {name}")
        for erratum in corpus.errata:
            check("erratum", erratum_path(corpus, erratum), erratum.output_sha256, f"run cohbench fetch {name}")
        for split, f in entry["files"].items():
            check("release", release / f["path"], f["sha256"], f"run cohbench build {name}")
            if results[-1]["ok"] and pq.ParquetFile(release / f["path"]).metadata.num_rows != f["rows"]:
                results[-1].update(ok=False, problem=f"row count differs from the manifest's {f['rows']}")
    for relpath, sha256 in recorded.get("shipped", {}).items():
        kind = relpath.split("/")[0] if "/" in relpath else "card"
        check(kind, release / relpath, sha256, "restore it from the release, or rebuild and run `cohbench index`")
    if "shipped" not in recorded:
        results.append({"kind": "manifest", "path": str(manifest_file), "ok": False,
                        "problem": "records no sha256 of the card, stats and summaries (an older manifest); run `cohbench index`"})
    recorded_paths = set(recorded.get("shipped", {}))
    for path in shipped_files(release) if "shipped" in recorded else []:
        if path.relative_to(release).as_posix() not in recorded_paths:
            results.append({"kind": "unrecorded", "path": str(path), "ok": False, "problem": "not in the manifest; run `cohbench index` if it belongs to the release"})
    stats = built_configs(release)
    for name, entry in recorded["configs"].items():
        if name in stats and stats[name].get("files") != entry["files"]:
            results.append({"kind": "stats", "path": str(stats_path(release, name)), "ok": False, "problem": "lists other files than the manifest; run `cohbench index`"})
    return results
