"""Leaderboard results on disk: one JSON file per scorer, in a folder named by the release's version and the sha256
of its manifest, so results of different releases (or of a release rebuilt with other data) never mix. The folder is
the user's (`--output`) or the release's leaderboard cache (`settings.cache_dir`: the project's `.cache/leaderboard/`
for its own release, else the user's cache), never inside a release."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .. import jsonout, settings
from ..release.files import MANIFEST


def identity(release: Path, manifest: dict) -> dict:
    digest = hashlib.sha256((release / MANIFEST).read_bytes()).hexdigest()
    return {"version": manifest.get("cohbench_version"), "manifest_sha256": digest, "folder": str(release)}


def folder(output: Path | None, release: Path) -> Path:
    """Where results go; a path inside a release (`release`, or any other) is refused (`settings.user_output`)
    before any work."""
    return settings.user_output(output, release) if output else settings.cache_dir("leaderboard", release)


def _file_name(scorer: str) -> str:
    """A scorer's name (a reference, a folder path, module:function) as one safe file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", scorer).strip("_") or "scorer"


def write(result: dict, target: Path) -> list[str]:
    """One file per scorer: its figures on every config with the config's version and fingerprint, the release it
    was measured on and the bootstrap settings."""
    keyed = target / f"{result['release']['version']}-{result['release']['manifest_sha256'][:16]}"
    written = []
    for scorer in result["scorers"]:
        path = keyed / f"{_file_name(scorer)}.json"
        jsonout.write(path, {
            "scorer": scorer, "release": result["release"], "split": result["split"], "samples": result["samples"],
            "seed": result["seed"], "macro": result["macro"][scorer],
            "configs": {c: {"version": e["version"], "fingerprint": e["fingerprint"], "metric": e["metric"],
                            "best_reference": e["best_reference"], **e["scores"][scorer]}
                        for c, e in result["configs"].items() if scorer in e["scores"]},
            "skipped": [s for s in result["skipped"] if s["scorer"] == scorer],
        })  # fmt: skip
        written.append(str(path))
    return written
