"""The release as users see it: `cohbench list` and `cohbench.load`, a built config as Hugging Face `datasets`
read straight from the release's Parquet files (through the one reader, which checks every file first)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ReleaseError
from .. import settings
from .layout import built_configs, read_table, require_built
from .store import releases_with
from .versions import declared, is_development, matches, provenance
from ..corpora.registry import corpora, spec
from ..schema import SPLITS, named, split_sort_key


def derived_from(stats: dict) -> list[str]:
    """The configs a `cohbench derive` copy was made from (its stats' notes), none for a built config."""
    return sorted(((stats.get("notes") or {}).get("derived_from") or {}).get("configs") or {})


def list_configs(release: Path | None = None) -> list[dict]:
    """Every registered config with its version (where built, the version of its records; else the declared one),
    licence and, where built, row counts per split; then every config built under another name (a `derive` copy),
    with the configs it was made from. A folder holding only such copies lists them alone."""
    release = release or settings.release_dir()
    built = built_configs(release)
    data = provenance(release, built)["configs"]
    registered = {config.name: (corpus, config) for corpus in corpora().values() for config in corpus.configs}
    rows = []
    for name, (corpus, config) in registered.items():
        files = built.get(name, {}).get("files", {})
        rows.append({"config": name, "corpus": corpus.name,
                     "version": data[name]["version"] if name in data else (declared(name) or {}).get("version", "-"),
                     "licence": corpus.licence + (" (research only)" if config.research_only else ""),
                     "built": bool(files), "rows": {split: f["rows"] for split, f in files.items()}})
    others = [name for name in built if name not in registered]
    if others and not set(built) & set(registered):  # a derive output: the registry's configs were never meant to be in it
        rows = []
    for name in others:
        stats = built[name]
        rows.append({"config": name, "corpus": stats.get("corpus", "-"), "version": data[name]["version"],
                     "licence": str(stats.get("licence") or "-"), "built": True,
                     "rows": {split: stats["files"][split]["rows"] for split in sorted(stats["files"], key=split_sort_key)},
                     "derived_from": derived_from(stats)})
    return rows


def load(config: str, split: str | None = None, release: Path | None = None, version: str | None = None):
    """A built config as a `datasets.DatasetDict` (one split: a `Dataset`) read straight from the release's Parquet
    files (`release`, else `settings.release_dir()`), from any working directory, in memory, with no cache. Each split's
    `info.version` is the config's version; `version` (X.Y.Z, or a pattern such as `2.*.*`) refuses any other."""
    import datasets

    for name, value, kinds, what in (("config", config, (str,), "a config name"), ("split", split, (str, type(None)), "a split name"),
                                     ("release", release, (str, os.PathLike, type(None)), "a folder"),
                                     ("version", version, (str, type(None)), "X.Y.Z or a pattern such as '2.*.*'")):
        if not isinstance(value, kinds):
            raise ReleaseError(f"load's {name} must be {what} (a string{', or a path' if name == 'release' else ''}), not {value!r}"[:300])
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
    data = provenance(folder, {config: stats})
    found = data["configs"][config]["version"]
    if version is not None and not matches(found, version):
        holders = releases_with(config, version) if "*" not in version else []
        where = (f"`cohbench pull {holders[-1]}` restores cohbench {holders[-1]}, which has it" if holders else
                 "`git tag` lists the releases, and CHANGELOG.md says which one has it; `cohbench pull VERSION` restores one")
        raise ReleaseError(f"{config} in {folder} is version {found} (cohbench {data['release']}), not {version}; {where}")
    # A development version (records not yet declared) has no X.Y.Z to show: its info carries none.
    info = datasets.DatasetInfo(version=None if is_development(found) else found,
                                description=f"{config} {found}, cohbench {data['release']} (records {data['configs'][config]['fingerprint']})")
    out = {name: datasets.Dataset(read_table(folder, config, stats, name), info=info.copy())
           for name in ([split] if split else sorted(files, key=split_sort_key))}
    return out[split] if split else datasets.DatasetDict(out)


def to_pandas(dataset):
    """One loaded split (`load(config, split)`) as a pandas DataFrame whose labels, span types and categories are
    names (`schema.named`), as `cohbench sql` shows them; `Dataset.to_pandas()` gives their integers."""
    import datasets
    import pandas as pd

    if not isinstance(dataset, datasets.Dataset):
        raise ReleaseError(f"to_pandas takes one split, as load(config, split) gives it, not {type(dataset).__name__}")
    return pd.DataFrame([named(record) for record in dataset], columns=dataset.column_names)
