"""Config versions bound to content, in the TFDS sense: a version names one fingerprint (`release.fingerprint`).

Each config's version is declared in a reviewed, committed file, `catalog/versions/<config>.json`, beside the
fingerprint, schema and field hashes of the records it stands for. A build records what it made; where that differs
from the declaration, the version must move, and the field hashes say which part:

- major: records or labels changed (a field's values, rows added or removed), or a field was removed or retyped;
- minor: fields were added and every existing field is unchanged (or the config is new: 1.0.0); a struct that gained
  subfields counts as unchanged where its values, the new subfields left out, hash as declared;
- patch: records unchanged (a card or documentation fix); never required by this check.

A built config whose fingerprint is not its declared one carries the version `<declared>+dev.<fingerprint[:8]>`,
so nothing built from changed code is ever shown or cited under a released version. The release's own version is
the package's (`cohbench._version`); CHANGELOG.md says what changed from one to the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import jsonout, settings
from ..errors import ReleaseError
from .fingerprint import added_subfields, fingerprint, type_name

VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def declared(config: str, folder: Path | None = None) -> dict | None:
    """The declaration of `config` (version, fingerprint, schema, field hashes, rows), None where there is none."""
    path = (folder or settings.versions_dir()) / f"{config}.json"
    if not path.is_file():
        return None
    from .files import read_json

    entry = read_json(path, "restore it from the repository")
    if not isinstance(entry, dict) or not VERSION.match(str(entry.get("version"))) or not isinstance(entry.get("field_hashes"), dict):
        raise ReleaseError(f"{path} does not declare a version X.Y.Z with its fingerprint and field hashes; restore it from the repository")
    return entry


@dataclass(frozen=True)
class Verdict:
    config: str
    declared: str | None  # the declared version, None for a config never declared
    built: str  # the version the built records carry (the declared one, or <declared>+dev.<fingerprint>)
    bump: str | None  # None (matches), "minor" or "major"
    next: str | None  # the version to declare
    reasons: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.bump is None

    @property
    def line(self) -> str:
        if self.ok:
            return f"{self.config} {self.built}: its records are the ones version {self.declared} declares"
        why = "; ".join(self.reasons)
        return (f"{self.config}: the built records are not version {self.declared or '(none declared)'} ({why}): declare "
                f"{self.next} ({self.bump}) with `cohbench version --record {self.config}` and describe it in CHANGELOG.md")


def _bumped(version: str, part: str) -> str:
    major, minor, _ = map(int, VERSION.match(version).groups())
    return f"{major + 1}.0.0" if part == "major" else f"{major}.{minor + 1}.0"


FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


def development_version(declared_version: str | None, fingerprint: str | None) -> str:
    """The version of records that are not their declared version: `<declared>+dev.<fingerprint[:8]>`."""
    return f"{declared_version or '0.0.0'}+dev.{(fingerprint or 'unknown')[:8]}"


def is_development(version: str) -> bool:
    """Whether `version` names records no cohbench declared (changed code, a derived copy): never cited, never set
    beside published figures."""
    return "+" in version


def check(config: str, stats: dict, folder: Path | None = None, tables: dict | None = None) -> Verdict:
    """Whether a built config's records (its stats: fingerprint, schema, field hashes, rows) are its declared version,
    and if not, which part of the version must move and why. With the records themselves (`tables`, split -> Arrow
    table, from `records_of`), a struct that gained subfields is told apart from one whose values changed."""
    entry = declared(config, folder)
    fingerprint = stats.get("fingerprint")
    if not (isinstance(fingerprint, str) and FINGERPRINT.match(fingerprint) and isinstance(stats.get("schema"), dict)
            and isinstance(stats.get("field_hashes"), dict)):
        raise ReleaseError(f"stats/{config}.json records no fingerprint, schema and field hashes of its records (built by an older "
                           f"cohbench, or edited); rebuild it with `cohbench build {config}`")
    if entry is None:
        return Verdict(config, None, development_version(None, fingerprint), "minor", "1.0.0", ("a config not declared before",))
    if entry["fingerprint"] == fingerprint:
        return Verdict(config, entry["version"], entry["version"], None, None, ())
    old_schema, new_schema = entry.get("schema") or {}, stats.get("schema") or {}
    removed = sorted(set(old_schema) - set(new_schema))
    retyped = sorted(f for f in set(old_schema) & set(new_schema) if old_schema[f] != new_schema[f])
    old_hashes, new_hashes = entry["field_hashes"], stats.get("field_hashes") or {}
    # A struct that only gained subfields at its end gained fields where its values hash as before (the struct null
    # in every record), or (given the records) hash as declared once the new subfields are left out.
    grown = [f for f in retyped if added_subfields(old_schema[f], new_schema[f])
             and (old_hashes.get(f) == new_hashes.get(f)
                  or tables is not None and _hash_without_new_subfields(tables, f, old_schema[f]) == old_hashes.get(f))]
    retyped = [f for f in retyped if f not in grown]
    added = sorted(set(new_schema) - set(old_schema)) + [f"{f} (+{added_subfields(old_schema[f], new_schema[f])})" for f in grown]
    changed = sorted(f for f in set(old_hashes) & set(new_hashes)
                     if f not in retyped and f not in grown and old_hashes[f] != new_hashes[f])
    rows = {split: f["rows"] for split, f in stats["files"].items()}
    reasons = [f"{what}: {', '.join(names)}" for what, names in
               (("fields removed", removed), ("fields retyped", retyped), ("values changed in", changed), ("fields added", added)) if names]
    if rows != entry.get("rows"):
        reasons.insert(0, f"rows {entry.get('rows')} -> {rows}")
    part = "major" if removed or retyped or changed or rows != entry.get("rows") else "minor"
    return Verdict(config, entry["version"], development_version(entry["version"], fingerprint), part,
                   _bumped(entry["version"], part), tuple(reasons or ["fingerprint differs"]))


def _hash_without_new_subfields(tables: dict, field: str, old_type: str) -> str:
    """The hash `field` (a struct) would have with only the subfields `old_type` names: its declared hash where no
    other value changed."""
    import pyarrow as pa

    pruned = {}
    for split, table in tables.items():
        column = table.column(field).combine_chunks()
        kept = next(k for k in range(column.type.num_fields + 1) if type_name(pa.struct(list(column.type)[:k])) == old_type)
        values = pa.StructArray.from_arrays(column.flatten()[:kept], fields=list(column.type)[:kept], mask=column.is_null())
        pruned[split] = pa.table({"id": table.column("id"), field: values})
    return fingerprint(pruned)["fields"][field]


def records_of(release: Path, config: str, stats: dict) -> dict:
    """The records of a built config (split -> Arrow table, through the one reader, each file checked against the
    stats), once the fingerprint, schema and field hashes the stats record are found to be theirs. Readers take a
    version from the stats' fingerprint, since the stats are checked against the manifest or the build state;
    `cohbench version`, which names and declares versions, recomputes it, so that stats whose records were changed
    behind a kept fingerprint never pass for a declared version."""
    from .layout import read_table

    tables = {split: read_table(release, config, stats, split) for split in stats["files"]}
    content = fingerprint(tables)
    if (content["fingerprint"], content["schema"], content["fields"]) != (stats.get("fingerprint"), stats.get("schema"), stats.get("field_hashes")):
        raise ReleaseError(f"stats/{config}.json records another fingerprint than that of the records it describes (records "
                           f"{content['fingerprint'][:12]}); rebuild it with `cohbench build {config}`")
    return tables


def _files(stats: dict) -> dict:
    return {split: f["sha256"] for split, f in sorted(stats["files"].items())}


def record(config: str, stats: dict, folder: Path | None = None, tables: dict | None = None) -> Verdict:
    """Declare the built records of `config` as its next version (the part the change requires, `check`), with the
    sha256 of the data files that hold them; returns the verdict that was acted on. Nothing is written when the
    records already are the declared version in those very files."""
    verdict, entry = check(config, stats, folder, tables), declared(config, folder)
    if verdict.ok and entry.get("files") == _files(stats):
        return verdict
    rows = {split: f["rows"] for split, f in stats["files"].items()}
    jsonout.write((folder or settings.versions_dir()) / f"{config}.json", {
        "config": config, "version": verdict.built if verdict.ok else verdict.next, "fingerprint": stats["fingerprint"],
        "schema": stats["schema"], "field_hashes": stats["field_hashes"], "rows": rows, "files": _files(stats),
    })
    return verdict


def false_claim(release: Path, config: str, version: str, stats: dict) -> str | None:
    """Why `stats` (checked against their release's manifest or build state) may not carry `version`, or None. A
    version this checkout declares names one fingerprint, and the data files its declaration records hold it: stats
    claiming that version with another fingerprint, or with its fingerprint over other files whose records are not
    that fingerprint (a copy whose data, stats and manifest were rewritten together), are refused."""
    entry = declared(config)
    if entry is None or entry["version"] != version:
        return None
    if stats.get("fingerprint") != entry["fingerprint"]:
        return (f"{config} is said to be version {version}, which this cohbench declares for other records (fingerprint "
                f"{entry['fingerprint'][:12]}, not {str(stats.get('fingerprint'))[:12]})")
    if entry.get("files") != _files(stats):  # other bytes (or a declaration without them): the records must be the fingerprint
        key = (str(Path(release).resolve()), config, tuple(_files(stats).values()))
        if key not in _RECOMPUTED:  # once per process: it reads every record
            try:
                records_of(release, config, stats)
                _RECOMPUTED[key] = None
            except ReleaseError as error:
                _RECOMPUTED[key] = str(error)
        return _RECOMPUTED[key]
    return None


_RECOMPUTED: dict[tuple, str | None] = {}


def matches(version: str, wanted: str) -> bool:
    """Whether `version` is what `wanted` asks for: exactly X.Y.Z, or a pattern with `*` parts (`2.*.*`, TFDS's
    `mnist:3.*.*`). A development version (`+dev...`) matches nothing."""
    if is_development(version):
        return False
    parts, asked = version.split("."), wanted.split(".")
    return len(asked) == 3 and all(a in ("*", p) for a, p in zip(asked, parts))


def provenance(release: Path, configs: dict[str, dict], *, recorded: bool = True) -> dict:
    """Which data a result was computed on: the release version, and each config's version and fingerprint. A
    config's version is the one this checkout declares for exactly its records (`catalog/versions/`), else the one the
    release's own manifest records for them (a release received or restored, used from anywhere), else its
    development version. Every command that reports figures puts this beside them. `recorded` False leaves the
    manifest unread (a damaged one, where `cohbench diff` compares a release as found)."""
    from .._version import __version__
    from .files import MANIFEST, read_manifest

    manifest_file = release / MANIFEST
    manifest = read_manifest(manifest_file) if recorded and manifest_file.is_file() else {"configs": {}}
    out, declared_here = {}, True
    for name, stats in sorted(configs.items()):
        fingerprint = stats.get("fingerprint")
        entry, recorded = declared(name), manifest["configs"].get(name, {})
        if entry and entry["fingerprint"] == fingerprint:
            if problem := false_claim(release, name, entry["version"], stats):
                raise ReleaseError(f"{problem}; restore the release from its source, or rebuild it with `cohbench build {name}`")
            version = entry["version"]
        else:
            declared_here = False
            claimed = recorded.get("version")
            if recorded.get("fingerprint") == fingerprint and fingerprint and claimed and not false_claim(release, name, claimed, stats):
                version = claimed
            else:
                version = development_version(entry and entry["version"], fingerprint)
        out[name] = {"version": version, "fingerprint": fingerprint}
    release_version = __version__ if declared_here else manifest.get("cohbench_version", "unknown")
    return {"release": release_version, "configs": out}
