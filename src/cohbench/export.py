"""A shareable copy of the release (to publish, e.g. push to a dataset hub): Parquet, stats, card and manifest of
the configs whose licence allows it. Research-only configs (Story Cloze, SummEval's news text) stay out unless
`include_research_only`, and the copy's card and manifest list only what it holds."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import settings
from .atomic import atomic_dir
from .errors import ReleaseError
from .release.index import write_index
from .release.layout import built_configs, data_files, stats_path

# The baseline's scores travel with the card; its per-record predictions stay in the working release.
BASELINE_FILES = ("metrics.json", "metrics.md", "gate.json")


def export(target: Path, *, include_research_only: bool = False, release: Path | None = None) -> dict:
    """Write the shareable copy to `target` (which must not exist or be empty); returns what went in and out."""
    release = release or settings.release_dir()
    configs = built_configs(release)
    if not configs:
        raise ReleaseError(f"nothing is built in {release}; run make release (or cohbench build CONFIG) first")
    target = settings.user_output(target)  # never inside the release in use, nor inside any other release
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ReleaseError(f"{target} exists and is not empty; export writes a new folder, choose another or remove it")
    kept = {n: s for n, s in configs.items() if include_research_only or not s["research_only"]}
    left_out = sorted(set(configs) - set(kept))
    with atomic_dir(target) as tmp:
        for name, stats in kept.items():
            for source in data_files(release, name, stats):  # each checked against its stats, as every reader does
                copy = tmp / source.relative_to(release)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, copy)
            stats_path(tmp, name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stats_path(release, name), stats_path(tmp, name))
        for file in BASELINE_FILES:
            if (release / "baseline" / file).is_file():
                (tmp / "baseline").mkdir(exist_ok=True)
                shutil.copyfile(release / "baseline" / file, tmp / "baseline" / file)
        write_index(tmp)
    return {"target": str(target), "configs": sorted(kept), "left_out_research_only": left_out}
