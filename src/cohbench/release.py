"""The release folder: Parquet per config and split, machine-written stats, a manifest and the dataset card.

Layout (Hugging Face dataset folder, loadable with `load_dataset(<folder>, <config>)`):
    README.md                       card with YAML `configs:` and `dataset_info`, rendered by `write_index`
    cards/<corpus>.md               each built corpus's whole card (README.md shows its summary)
    manifest.json                   version, every Parquet file's sha256 and rows, raw inputs, errata
    croissant.json                  the same release in Croissant 1.0 (MLCommons) metadata
    stats/<config>.json             machine-written counts of one config
    data/<config>/<split>.parquet

`read_config` is the one reader of a built config for the package's own code (records and Arrow tables per
split); `load` is the Hugging Face view of the same files for users.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import settings
from ._version import __version__
from .atomic import atomic_dir, write_text
from .card import card_markdown, corpus_card
from .croissant import croissant
from .errors import ReleaseError
from .registry import corpora, corpus_of, lookup
from .schema import BINARY_LABELS, ERROR_TYPES, GAP_LABELS, SPLITS, split_sort_key
from .sources import sha256_of

# `datasets` (and the builder that needs it) is imported where it is used: reading the stats of a release
# (`cohbench sql`, `list`, `evaluate`) should not pay its half-second import.


def _label_counts(values, names) -> dict:
    counts = Counter(values)
    out = {name: counts.get(i, 0) for i, name in enumerate(names)}
    if counts.get(-1):
        out["no_label"] = counts[-1]
    return out


def _flat(column) -> list:
    return [value for row in column for value in row]


def split_stats(ds) -> dict:
    """Counts of one split that a reader of the card, and a drift check, care about."""
    spans = _flat(ds["spans"])
    return {
        "rows": ds.num_rows,
        "documents": len(set(ds["doc_id"])),
        "labels": _label_counts(ds["label"], BINARY_LABELS),
        "sentences": sum(len(s) for s in ds["sentences"]),
        "sentence_labels": _label_counts(_flat(ds["sentence_labels"]), BINARY_LABELS),
        "gap_labels": _label_counts(_flat(ds["gap_labels"]), GAP_LABELS),
        "spans": len(spans),
        "span_types": _label_counts([span["type"] for span in spans], ERROR_TYPES),
        "ratings": sum(len(r) for r in ds["ratings"]),
        "records_with_defects": sum(1 for d in ds["defects"] if d),
    }


def stats_path(release: Path, config: str) -> Path:
    return release / "stats" / f"{config}.json"


def _json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def build(
    config: str, *, corpus=None, release: Path | None = None, paths=None, progress: bool = True, index: bool = True
) -> dict:
    """Build one config into the release folder and return its stats. Nothing is replaced unless all succeeds.

    `corpus` defaults to the registered owner of `config`; `paths` to the verified files `fetch` resolves."""
    import datasets

    from .fetch import fetch
    from .hf_builder import builder_for

    release = release or settings.release_dir()
    corpus = corpus or corpus_of(config)
    spec = corpus.config(config)
    if not progress:
        datasets.disable_progress_bars()
    paths = {name: str(path) for name, path in (paths or fetch(corpus, progress=progress)).items()}
    options = spec.options.from_params(settings.params()) if spec.options else None
    with tempfile.TemporaryDirectory(prefix="cohbench-hf-") as cache:
        builder = builder_for(corpus)(config_name=config, cache_dir=cache, paths=paths, options=options)
        try:
            builder.download_and_prepare(verification_mode="basic_checks")
        except datasets.exceptions.NonMatchingSplitsSizesError as error:
            raise ReleaseError(f"{config} did not build the split sizes its corpus declares ({error}); nothing was written") from None
        splits = builder.as_dataset()
        account = builder.account
        files, per_split = {}, {}
        with atomic_dir(release / "data" / config) as tmp:
            for split in sorted(splits, key=split_sort_key):
                target = tmp / f"{split}.parquet"
                splits[split].to_parquet(str(target))
                files[split] = {
                    "path": f"data/{config}/{split}.parquet",
                    "sha256": sha256_of(target),
                    "rows": splits[split].num_rows,
                    "bytes": target.stat().st_size,
                }
                per_split[split] = split_stats(splits[split])
    stats = {
        "config": config,
        "corpus": corpus.name,
        "version": corpus.version,
        "licence": corpus.licence,
        "research_only": spec.research_only,
        **account,
        "splits": per_split,
        "files": files,
        "inputs": [
            {"name": s.name, "url": s.url, "sha256": s.sha256, "bytes": s.size, "licence": s.licence}
            for s in corpus.sources
        ],
        "errata": [e.manifest_entry() for e in corpus.errata],
    }
    write_text(stats_path(release, config), _json(stats))
    if index:
        write_index(release)
    return stats


def built_configs(release: Path | None = None) -> dict[str, dict]:
    release = release or settings.release_dir()
    stats_dir = release / "stats"
    if not stats_dir.is_dir():
        return {}
    return {p.stem: _read_stats(p) for p in sorted(stats_dir.glob("*.json"))}


def _read_stats(path: Path) -> dict:
    """A config's stats file, checked where the release's readers rely on it (its data files lie in data/)."""
    fix = f"rebuild it with `cohbench build {path.stem}` (or restore it from the release)"
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReleaseError(f"{path} is not valid JSON ({getattr(error, 'msg', None) or error.reason}); {fix}") from None
    files = stats.get("files") if isinstance(stats, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str) and isinstance(f.get("rows"), int)
        and Path(f["path"]).parts[:2] == ("data", path.stem) and ".." not in Path(f["path"]).parts
        for f in files.values()
    ):  # fmt: skip
        raise ReleaseError(f"{path} does not list the config's data files (path under data/{path.stem}/, sha256, rows); {fix}")
    return stats


def require_release(release: Path | None = None) -> tuple[Path, dict[str, dict]]:
    """The release folder (`release`, else `settings.release_dir()`) and its built configs; an error naming every
    place looked when there is none."""
    folder = Path(release).resolve() if release else settings.release_dir()
    built = built_configs(folder)
    if not built:
        raise ReleaseError(settings.no_release_message(release))
    return folder, built


def require_built(config: str, release: Path | None = None) -> tuple[Path, dict]:
    """The release folder and the stats of one built config; on a typo, the closest config name."""
    folder, built = require_release(release)
    if config in built:
        return folder, built[config]
    corpus_of(config)  # an unknown name: the closest one
    raise ReleaseError(f"config {config!r} is not built in {folder}; run `cohbench build {config}`")


@dataclass(frozen=True)
class ConfigData:
    """One built config: its build stats, its records per split (plain Python rows) and the Arrow tables."""

    name: str
    stats: dict
    splits: dict[str, list[dict]]
    tables: dict[str, "pyarrow.Table"] | None = None

    def records(self):
        for rows in self.splits.values():
            yield from rows


def read_config(release: Path | None, name: str, stats: dict | None = None) -> ConfigData:
    """Read a built config's Parquet files once, splits in the vocabulary's order (`schema.SPLITS`). `stats`
    defaults to the config's stats file (`require_built`: a config that is not built is an error naming the fix)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if stats is None:
        release, stats = require_built(name, release)
    release = release or settings.release_dir()

    splits, tables = {}, {}
    for split in sorted(stats["files"], key=split_sort_key):
        path = release / stats["files"][split]["path"]
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            raise ReleaseError(f"{path} cannot be read as Parquet ({str(error).splitlines()[0][:120]}); "
                               f"run `cohbench verify`, then `cohbench build {name}`") from None
        tables[split] = table
        splits[split] = table.to_pylist()
    return ConfigData(name=name, stats=stats, splits=splits, tables=tables)


def list_configs(release: Path | None = None) -> list[dict]:
    """Every registered config with its version, licence and, where built, row counts per split."""
    built = built_configs(release)
    rows = []
    for corpus in corpora().values():
        for spec in corpus.configs:
            files = built.get(spec.name, {}).get("files", {})
            rows.append(
                {
                    "config": spec.name,
                    "corpus": corpus.name,
                    "version": corpus.version,
                    "licence": corpus.licence + (" (research only)" if spec.research_only else ""),
                    "built": bool(files),
                    "rows": {split: f["rows"] for split, f in files.items()},
                }
            )
    return rows


# What the release ships besides the Parquet files, hashed in the manifest so that `verify` covers it: the card,
# the stats, the validation summaries and the baseline's scores (the manifest is written last, by `cohbench index`).
SHIPPED = ("README.md", "cards/*.md", "croissant.json", "stats/*.json", "validation/*.json", "baseline/metrics.json", "baseline/metrics.md", "baseline/gate.json")


def shipped_files(release: Path) -> list[Path]:
    return sorted({p for pattern in SHIPPED for p in release.glob(pattern) if p.is_file()})


def manifest(configs: dict[str, dict], shipped: dict[str, str] | None = None) -> dict:
    return {
        "cohbench_version": __version__,
        "configs": {
            name: {
                "corpus": s["corpus"],
                "version": s["version"],
                "licence": s["licence"],
                "research_only": s["research_only"],
                "files": s["files"],
                "inputs": s["inputs"],
                "errata": s["errata"],
            }
            for name, s in configs.items()
        },
        "shipped": shipped or {},
    }


def write_index(release: Path | None = None) -> None:
    """Render README.md, cards/, croissant.json and manifest.json from every config built into the release folder;
    the manifest, written last, records the sha256 of every shipped file (`SHIPPED`), the card included."""
    from .sources import sha256_of

    release = release or settings.release_dir()
    configs = built_configs(release)
    write_text(release / "croissant.json", _json(croissant(configs, release)))
    with atomic_dir(release / "cards") as cards:  # the whole folder, so that a corpus no longer built leaves no card
        for corpus in sorted({stats["corpus"] for stats in configs.values()}):
            if card := corpus_card(corpus):
                write_text(cards / f"{corpus}.md", card[1])
    card = card_markdown(configs, release)
    baseline = release / "baseline" / "metrics.md"  # written by `cohbench train` (the release gate)
    if baseline.is_file():
        card += "\n" + baseline.read_text(encoding="utf-8")
    write_text(release / "README.md", card)
    shipped = {p.relative_to(release).as_posix(): sha256_of(p) for p in shipped_files(release)}
    write_text(release / "manifest.json", _json(manifest(configs, shipped)))


def _read_manifest(path: Path) -> dict:
    fix = "restore it from the release, or rewrite it with `cohbench index`"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReleaseError(f"{path} is not valid JSON ({getattr(error, 'msg', None) or error.reason}); {fix}") from None
    configs = recorded.get("configs") if isinstance(recorded, dict) else None
    if not isinstance(configs, dict) or not isinstance(recorded.get("shipped", {}), dict) or not all(
        isinstance(e, dict) and isinstance(e.get("corpus"), str) and isinstance(e.get("files"), dict)
        and all(isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str) for f in e["files"].values())
        for e in configs.values()
    ):  # fmt: skip
        raise ReleaseError(f"{path} is not a cohbench manifest (configs with corpus and files); {fix}")
    return recorded


def verify(release: Path | None = None) -> list[dict]:
    """Re-hash every raw input and every release file against the recorded sha256; one result per file."""
    import pyarrow.parquet as pq

    from .fetch import erratum_path

    release = release or settings.release_dir()
    manifest_file = release / "manifest.json"
    if not manifest_file.is_file():
        raise ReleaseError(f"no release manifest at {manifest_file}; build a config first (cohbench build CONFIG)")
    recorded = _read_manifest(manifest_file)
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


def load(config: str, split: str | None = None, release: Path | None = None):
    """A built config as a `datasets.DatasetDict` (one split: a `Dataset`) read straight from the release's Parquet
    files (`release`, else `settings.release_dir()`), from any working directory. No cache: every file is first
    checked against the sha256 its build recorded, so what loads is exactly what `cohbench verify` checks."""
    import datasets
    import pyarrow.parquet as pq

    from .sources import sha256_of

    if split is not None and split not in SPLITS:
        raise ReleaseError(f"{split!r} is not a cohbench split: every config uses {', '.join(SPLITS)} (upstream names are in the card)")
    folder, stats = require_built(config, release)
    files = stats["files"]
    unknown = sorted(set(files) - set(SPLITS))
    if unknown:
        raise ReleaseError(f"{config} was built with split names {', '.join(unknown)} that are no longer used; run `cohbench build {config}`")
    if split is not None and split not in files:
        raise ReleaseError(f"{config} has no split {split!r}; its splits: {', '.join(files)}")
    out = {}
    for name in [split] if split else sorted(files, key=split_sort_key):
        path = folder / files[name]["path"]
        if not path.is_file() or sha256_of(path) != files[name]["sha256"]:
            raise ReleaseError(f"{path} is missing or differs from the sha256 its build recorded (stats/{config}.json); run `cohbench verify`, then `cohbench build {config}`")
        out[name] = datasets.Dataset(pq.read_table(path))  # features from the Parquet metadata, in memory
    return out[split] if split else datasets.DatasetDict(out)