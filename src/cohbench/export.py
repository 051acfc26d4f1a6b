"""A shareable copy of the release (to publish, e.g. push to a dataset hub): Parquet, stats, card and manifest of
the configs whose licence allows it. Research-only configs (Story Cloze, SummEval's news text) stay out unless
`include_research_only`, and the copy's card and manifest list only what it holds. Only an indexed release is
exported, every file checked against the record of the release (data against stats, stats against the manifest), so
the copy's fresh manifest never records what its source's did not."""

from __future__ import annotations

from pathlib import Path

from . import settings
from .atomic import atomic_dir
from .errors import ReleaseError
from .release.index import write_index
from .release.build_state import require_indexed
from .release.files import MANIFEST, checked, read_manifest, read_regular, stats_path
from .release.layout import built_configs, checked_data

# The baseline's scores travel with the card; its per-record predictions stay in the working release.
BASELINE_FILES = ("metrics.json", "metrics.md", "gate.json")


def export(target: Path, *, include_research_only: bool = False, release: Path | None = None) -> dict:
    """Write the shareable copy to `target` (which must not exist or be empty); returns what went in and out."""
    release = release or settings.release_dir()
    configs = built_configs(release)
    if not configs:
        raise ReleaseError(f"nothing is built in {release}; run make release (or cohbench build CONFIG) first")
    require_indexed(release)
    target = settings.user_output(target, release)  # never inside the release in use, nor inside any other release
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ReleaseError(f"{target} exists and is not empty; export writes a new folder, choose another or remove it")
    kept = {n: s for n, s in configs.items() if include_research_only or not s["research_only"]}
    left_out = sorted(set(configs) - set(kept))
    shipped = read_manifest(release / MANIFEST).get("shipped", {})
    with atomic_dir(target) as tmp:
        for name, stats in kept.items():
            fix = f"run `cohbench verify`, then rebuild with `cohbench build {name}` (or restore the release)"
            for entry in stats["files"].values():  # each checked against its stats, as every reader does
                _write(tmp / entry["path"], checked_data(release, name, entry), release / entry["path"], fix)
            _copy(stats_path(release, name), stats_path(tmp, name), shipped.get(f"stats/{name}.json"), MANIFEST, fix)
        for file in BASELINE_FILES:
            if (release / "baseline" / file).is_file():
                _copy(release / "baseline" / file, tmp / "baseline" / file, shipped.get(f"baseline/{file}"), MANIFEST,
                      "restore it from the release, or run `cohbench index` if `cohbench train` or `gate` remade it")
        write_index(tmp)
    return {"target": str(target), "configs": sorted(kept), "left_out_research_only": left_out}


def _copy(source: Path, target: Path, sha256: str | None, recorded_in: str, fix: str) -> None:
    """Copy the bytes of `source` that were checked against the sha256 `recorded_in` records."""
    _write(target, checked(source, sha256, recorded_in, fix), source, fix)


def _write(target: Path, data: bytes | None, source: Path, fix: str) -> None:
    """`data`, the checked bytes of `source` (None: this process checked that very file before), at `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(read_regular(source, fix) if data is None else data)
