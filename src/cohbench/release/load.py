"""The release as users see it: `cohbench list` and `cohbench.load`, a built config as Hugging Face `datasets`
read straight from the release's Parquet files (through the one reader, which checks every file first)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ReleaseError
from .layout import built_configs, read_table, require_built
from ..registry import corpora, spec
from ..schema import SPLITS, split_sort_key


def list_configs(release: Path | None = None) -> list[dict]:
    """Every registered config with its version, licence and, where built, row counts per split."""
    built = built_configs(release)
    rows = []
    for corpus in corpora().values():
        for config in corpus.configs:
            files = built.get(config.name, {}).get("files", {})
            rows.append(
                {
                    "config": config.name,
                    "corpus": corpus.name,
                    "version": corpus.version,
                    "licence": corpus.licence + (" (research only)" if config.research_only else ""),
                    "built": bool(files),
                    "rows": {split: f["rows"] for split, f in files.items()},
                }
            )
    return rows


def load(config: str, split: str | None = None, release: Path | None = None):
    """A built config as a `datasets.DatasetDict` (one split: a `Dataset`) read straight from the release's Parquet
    files (`release`, else `settings.release_dir()`), from any working directory, in memory, with no cache."""
    import datasets

    if split is not None and split not in SPLITS:
        raise ReleaseError(f"{split!r} is not a cohbench split: every config uses {', '.join(SPLITS)} (upstream names are in the card)")
    spec(config)  # an unknown name: the closest registered one
    folder, stats = require_built(config, release)
    files = stats["files"]
    unknown = sorted(set(files) - set(SPLITS))
    if unknown:
        raise ReleaseError(f"{config} was built with split names {', '.join(unknown)} that are no longer used; run `cohbench build {config}`")
    if split is not None and split not in files:
        raise ReleaseError(f"{config} has no split {split!r}; its splits: {', '.join(files)}")
    out = {name: datasets.Dataset(read_table(folder, config, stats, name))
           for name in ([split] if split else sorted(files, key=split_sort_key))}
    return out[split] if split else datasets.DatasetDict(out)
