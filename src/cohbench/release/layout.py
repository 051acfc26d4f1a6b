"""The release folder's layout, its one writer and its one reader.

A release (and the output of `cohbench corrupt`, laid out the same way) is a Hugging Face dataset folder:

    data/<config>/<split>.parquet   the records, one file per split, rows sorted as their builder gave them
    stats/<config>.json             machine-written: counts per split, the account of upstream records, inputs,
                                    every data file's sha256, and how many records a generator altered
    manifest.json                   every config's files and every shipped file's sha256 (`cohbench index`)
    building/<config>.json          the build state: in an indexed release, the sha256 of a config's stats written since
                                    the last `cohbench index` (removed by it), the record readers check them against
    README.md, cards/, croissant.json, validation/*.json, baseline/   the card and the checks (`cohbench index`,
                                    `validate`, `train`, `gate`)

`write_config` is the one way records reach a release folder (`cohbench build` and `cohbench corrupt` both use it),
so every config has the same stats shape; `built_configs`, `read_config` / `read_table` are the one way the package
reads them back, each file checked against its recorded sha256 first (DuckDB reads the very bytes `data_bytes` has
checked for `cohbench sql`); `built_configs` says the rule. How a file is read and checked is `files`'; the build state,
`build_state`'s."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import jsonout, settings
from ..atomic import atomic_dir, remove_orphans, write_text
from ..errors import ReleaseError
from ..schema import BINARY_LABELS, ERROR_TYPES, GAP_LABELS, split_sort_key
from .build_state import build_state, record_build
from .files import INDEXED, MANIFEST, PLAIN_NAME, checked, lists_data_files, read_json, read_manifest, read_regular, stats_path
from .fingerprint import fingerprint
from .vocabulary import VOCABULARY_KEY, class_label_columns, outside_vocabulary

# What a release ships besides the Parquet files, hashed in the manifest so that `verify` covers it: the card, the
# stats, the validation summaries, the baseline's scores and the predictions of the baseline and of every reference
# scorer (`shipped_predictions`), so a user's scorer is compared with them without re-running them (the manifest is
# written last, by `cohbench index`).
SHIPPED = ("README.md", "cards/*.md", "croissant.json", "stats/*.json", "validation/*.json", "baseline/metrics.json",
           "baseline/metrics.md", "baseline/gate.json", "baseline/predictions/*/*.jsonl")  # fmt: skip


def shipped_predictions(release: Path, scorer: str, config: str) -> Path:
    """Where a release ships scorer `scorer`'s (the baseline's, or a reference scorer's) predictions on `config`."""
    return release / "baseline" / "predictions" / scorer / f"{config}.jsonl"


def data_path(config: str, split: str) -> str:
    """A data file's path inside the release, as the stats, the manifest and the card record it."""
    return f"data/{config}/{split}.parquet"


def shipped_files(release: Path) -> list[Path]:
    return sorted({p for pattern in SHIPPED for p in release.glob(pattern) if p.is_file()})


# --- writing -------------------------------------------------------------------------------------------------


def write_config(release: Path, config: str, splits: Mapping[str, object], described: dict,
                 row_group: int | None = None) -> dict:
    """Write one config: its splits (`datasets.Dataset`s in the schema, in the order their rows should keep) as
    Parquet, all or nothing, then its stats: `described` (who made it and how: corpus, licence, the account of
    upstream records, inputs, notes, ...) with the counts of each split, each file's sha256 and how many records a
    corruption generator altered. `row_group` fixes the rows per Parquet row group (default: `datasets`' own
    choice, one group for a release-sized split). The stats also hold the records' content fingerprint, schema and
    field hashes (`release.fingerprint`), which the config's declared version must match. Returns the stats."""
    from ..corpora.sources import sha256_of  # here: a reader of the release (`cohbench sql`) need not import the downloader

    files, per_split, tables = {}, {}, {}
    remove_leftovers(release)
    with atomic_dir(release / "data" / config) as tmp:
        for split in sorted(splits, key=split_sort_key):
            dataset = splits[split]
            if wrong := outside_vocabulary(dataset.data.table):
                raise ReleaseError(f"refusing to write {config}'s {split} split: {wrong}")
            target = tmp / f"{split}.parquet"
            dataset.to_parquet(str(target), batch_size=row_group)
            tables[split] = table = dataset.data.table
            files[split] = {"path": data_path(config, split), "sha256": sha256_of(target), "rows": table.num_rows,
                            "bytes": target.stat().st_size}
            per_split[split] = split_stats(table)
    content = fingerprint(tables)
    stats = {**described, "config": config, "splits": per_split, "files": files,
             "records_altered": sum(t.num_rows - t.column("corruption").null_count for t in tables.values()),
             "fingerprint": content["fingerprint"], "schema": content["schema"], "field_hashes": content["fields"]}
    record_build(release, config, hashlib.sha256((text := jsonout.document(stats)).encode()).hexdigest())
    write_text(stats_path(release, config), text)
    return stats


def remove_leftovers(release: Path) -> list[Path]:
    """Delete what killed writers left in the release folder (temporary files and folders of dead processes)."""
    folders = [release, *(p for p in release.iterdir() if p.is_dir() and not p.is_symlink())] if release.is_dir() else []
    return [path for folder in folders for path in remove_orphans(folder)]


def annotation_of(stats: dict) -> str:
    """`synthetic` when a corruption generator made any record of the config (its unaltered records are labelled by
    the same recipe, not by a person), else `human`: what the card, Croissant and the SQL views' `annotation` say."""
    return "synthetic" if stats["records_altered"] else "human"


def split_stats(table) -> dict:
    """Counts of one split (an Arrow table in the schema) that a reader of the card, and a drift check, care about;
    counted by DuckDB, which reads the table where it lies (a large split is never turned into Python rows)."""
    import duckdb

    con = duckdb.connect()
    con.register("split", table)

    def values(column: str) -> dict:
        """value -> count over a list column's entries (a scalar column when it is not a list)."""
        return dict(con.execute(f"SELECT v, count(*) FROM (SELECT unnest({column}) AS v FROM split) "
                                "WHERE v IS NOT NULL GROUP BY v").fetchall())

    rows, documents, sentences, spans, ratings, defects, *labels = con.execute(
        """SELECT count(*), count(DISTINCT doc_id), coalesce(sum(len(sentences)), 0), coalesce(sum(len(spans)), 0),
                  coalesce(sum(len(ratings)), 0), count(*) FILTER (WHERE len(defects) > 0),
                  count(*) FILTER (WHERE label = 0), count(*) FILTER (WHERE label = 1), count(*) FILTER (WHERE label = -1)
           FROM split""").fetchall()[0]
    out = {
        "rows": rows,
        "documents": documents,
        "labels": _named(dict(zip((0, 1, -1), labels)), BINARY_LABELS),
        "sentences": int(sentences),
        "sentence_labels": _named(values("sentence_labels"), BINARY_LABELS),
        "gap_labels": _named(values("gap_labels"), GAP_LABELS),
        "spans": int(spans),
        "span_types": _named(values("list_transform(spans, lambda s: s.type)"), ERROR_TYPES),
        "ratings": int(ratings),
        "records_with_defects": defects,
    }
    con.close()
    return out


def _named(counts: dict, names) -> dict:
    out = {name: counts.get(i, 0) for i, name in enumerate(names)}
    if counts.get(-1):
        out["no_label"] = counts[-1]
    return out


# --- reading -------------------------------------------------------------------------------------------------

# What the card, croissant and the manifest read of a config's stats, as every release since 0.2.0 writes it
# (`write_config`); the fingerprint, schema and field hashes are checked where they are read (`versions`)
STATS_FIELDS = {"corpus": str, "licence": str, "research_only": bool, "inputs": list, "errata": list, "dropped": dict,
                "notes": dict, "splits": dict, "records_altered": int}


def read_stats(path: Path) -> dict:
    """A config's stats file, checked where the release's readers rely on it (its data files lie in data/)."""
    fix = f"rebuild it with `cohbench build {path.stem}` (or restore it from the release)"
    stats = read_json(path, fix)
    if not isinstance(stats, dict) or not lists_data_files(stats.get("files"), path.stem):
        raise ReleaseError(f"{path} does not list the config's data files (path under data/{path.stem}/, sha256, rows); {fix}")
    wrong = [key for key, kind in STATS_FIELDS.items() if not isinstance(stats.get(key), kind)]
    if wrong:
        raise ReleaseError(f"{path} lacks {', '.join(wrong)} (or holds another kind of value) as a config's stats record; {fix}")
    return stats


def release_manifest(release: Path) -> dict | None:
    """The release's manifest, None for a release never indexed; refused when invalid, or missing from a release
    that was indexed (it holds a file of INDEXED)."""
    path = release / MANIFEST
    if path.is_file():
        return read_manifest(path)
    fix = "restore it from the release, or rewrite it with `cohbench index`"
    if path.exists() or path.is_symlink():
        raise ReleaseError(f"{path} is not a regular file; {fix}")
    indexed = [name for name in INDEXED if (release / name).exists()]
    if indexed:
        raise ReleaseError(f"{path} is missing although {release / indexed[0]} shows the release was indexed; {fix}")
    return None


def built_configs(release: Path | None = None, *, recorded: bool = True) -> dict[str, dict]:
    """Every config built in the release: name -> stats, checked as every reader relies on them.

    The rule: in an indexed release, each stats file is checked against the sha256 the manifest records for it
    (`shipped`), or, for a config built since the last `cohbench index`, the one its build state records
    (`building/<config>.json`, which the writer leaves and `index` removes); a stats file neither records is refused,
    as is a config the manifest lists whose stats are missing. File times are never trusted. The data files are
    checked against the stats when read (`read_table`, `data_bytes`, `checked_data`). A folder with no manifest and no file only
    `cohbench index` writes (INDEXED) was never indexed (a first build, a `corrupt` output): its stats are its only
    record. One that holds such a file lost its manifest, and is refused, as is an invalid manifest. `recorded`
    False is `cohbench index`'s reading: a lost manifest is rewritten from the stats as they are, and a config whose
    stats were removed is no longer built."""
    release = release or settings.release_dir()
    manifest = release_manifest(release) if recorded else (read_manifest(release / MANIFEST) if (release / MANIFEST).is_file() else None)
    if manifest is not None and recorded:  # `index` drops a config no longer built
        for name in manifest["configs"]:
            if not stats_path(release, name).exists():  # one that is not a regular file is refused as such below
                raise ReleaseError(f"{stats_path(release, name)} is missing although {MANIFEST} lists {name}; restore it "
                                   f"from the release, or rebuild with `cohbench build {name}`")
    if not (release / "stats").is_dir():
        return {}
    building = build_state(release) if manifest is not None else {}
    out = {}
    for path in sorted((release / "stats").glob("*.json")):
        if manifest is not None:
            checked(path, manifest.get("shipped", {}).get(f"stats/{path.name}"), MANIFEST,
                    f"restore it from the release, or rebuild with `cohbench build {path.stem}`", or_built=building.get(path.stem))
        out[path.stem] = read_stats(path)
    return out


def require_release(release: Path | None = None) -> tuple[Path, dict[str, dict]]:
    """The release folder (`release`, else `settings.release_dir()`) and its built configs; an error naming every
    place looked when there is none."""
    folder = Path(release).resolve() if release else settings.release_dir()
    built = built_configs(folder)
    if not built:
        raise ReleaseError(settings.no_release_message(release))
    return folder, built


def require_built(config: str, release: Path | None = None) -> tuple[Path, dict]:
    """The release folder and the stats of one built config; on a typo, the closest built config."""
    folder, built = require_release(release)
    if config in built:
        return folder, built[config]
    close = difflib.get_close_matches(config, list(built), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ReleaseError(f"config {config!r} is not built in {folder}; {hint}built: {', '.join(built)} "
                       f"(a registered config is built with `cohbench build {config}`)")


def _data_fix(config: str) -> str:
    return f"run `cohbench verify`, then rebuild with `cohbench build {config}` (or restore the release)"


def checked_data(release: Path, config: str, entry: dict) -> bytes | None:
    """A data file's bytes (`entry`: its stats' record), checked against its sha256 and the schema's vocabularies
    (`vocabulary`); None when this process already checked this very file (`files.checked`). Bytes that passed the
    vocabulary check once are marked in the `vocabulary` cache, so a later process skips parsing them (and importing
    pyarrow, which would double the time of a one-line `cohbench sql`)."""
    path = release / entry["path"]

    def in_vocabulary(data: bytes, sha256: str) -> None:
        passed = settings.cache_dir("vocabulary", release) / f"{sha256}-{VOCABULARY_KEY}"
        if passed.is_file():
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(pa.BufferReader(data))  # not pq.read_table: its dataset layer costs 2 s of imports
            table = parquet.read(columns=[c for c in class_label_columns() if c in parquet.schema_arrow.names])
        except (OSError, pa.ArrowException) as error:
            raise _unreadable(path, error, config) from None
        if wrong := outside_vocabulary(table):
            raise ReleaseError(f"{path}: {wrong}, though its stats record its sha256; {_data_fix(config)}")
        try:
            write_text(passed, "")
        except OSError:  # a cache that cannot be written only costs the check next time
            pass

    return checked(path, entry["sha256"], f"stats/{config}.json", _data_fix(config), content=in_vocabulary)


def data_bytes(release: Path, config: str, stats: dict) -> dict[str, bytes]:
    """A built config's data files' bytes by split, each checked against its stats; the bytes checked are the bytes
    returned (unless this process already checked that very file, as `checked` says), so a file changed after the
    check is never what is read (`cohbench sql` hands these bytes to DuckDB)."""
    out = {}
    for split, entry in stats["files"].items():
        data = checked_data(release, config, entry)
        out[split] = read_regular(release / entry["path"], _data_fix(config)) if data is None else data
    return out


def read_table(release: Path, config: str, stats: dict, split: str, columns: list[str] | None = None):
    """One split of a built config as an Arrow table (features from the Parquet metadata). The file is checked
    against the sha256 its stats record before it is read, once per file per process, and the bytes checked are the
    bytes read: what the package computes from is exactly what `cohbench verify` checks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = release / stats["files"][split]["path"]
    try:
        data = checked_data(release, config, stats["files"][split])
        return pq.read_table(str(path) if data is None else pa.BufferReader(data), columns=columns)
    except (OSError, pa.ArrowException) as error:
        raise _unreadable(path, error, config) from None


def _unreadable(path: Path, error: Exception, config: str) -> ReleaseError:
    return ReleaseError(f"{path} cannot be read as Parquet ({str(error).splitlines()[0][:120]}); {_data_fix(config)}")


@dataclass(frozen=True)
class ConfigData:
    """One built config: its build stats, its records per split (plain Python rows) and the Arrow tables."""

    name: str
    stats: dict
    splits: dict[str, list[dict]]
    tables: dict[str, object]

    def records(self) -> Iterator[dict]:
        for rows in self.splits.values():
            yield from rows


def read_config(release: Path | None, name: str, stats: dict | None = None) -> ConfigData:
    """Read a built config's Parquet files once, splits in the vocabulary's order (`schema.SPLITS`). `stats`
    defaults to the config's stats file (a config that is not built is an error naming the fix)."""
    if stats is None:
        release, stats = require_built(name, release)
    release = release or settings.release_dir()
    tables = {split: read_table(release, name, stats, split) for split in sorted(stats["files"], key=split_sort_key)}
    return ConfigData(name=name, stats=stats, splits={s: t.to_pylist() for s, t in tables.items()}, tables=tables)


