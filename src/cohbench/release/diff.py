"""`cohbench diff OLD NEW`: how two releases differ, config by config, row by row keyed by `id` (Dolt's table diff).

Both sides are read through the release's one reader (each file checked against its recorded sha256, neither side
ever written). A side that fails those checks (a copy someone edited, a folder that is no release) is said to have
failed, with the reason, and is then compared as found: its Parquet files read without their records, its versions
from the fingerprint of what they hold. The comparison runs in DuckDB: rows added, removed and changed, each named by
id; for changed rows, which fields and in how many rows; label transitions (0 -> 1, 1 -> 0, per label field, element
by element for per-sentence and per-gap labels) with the ids that made them; rows that moved split; row counts,
duplicated and missing (NULL) ids; schema changes, between the sides and between one side's splits; float fields
that differ beyond `fingerprint.FLOAT_DECIMALS` (differences below it are kernel noise, not content, and are counted
apart); the versions and fingerprints on both sides.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..display import percent
from ..errors import ReleaseError
from ..schema import split_sort_key
from .fingerprint import FLOAT_DECIMALS, added_subfields, fingerprint, schema_types
from .files import MANIFEST, read_manifest, read_regular
from .layout import built_configs, read_table
from .load import derived_from
from .versions import provenance

# Fields whose values are labels: their changes are reported as transitions (old value -> new value).
LABEL_FIELDS = ("label", "sentence_labels", "sentence_labels_min2votes", "segment_labels", "segment_labels_min2votes", "gap_labels")
SHOWN_IDS = 5  # ids named per line of the text output; --json lists every one
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def _rounded(expression: str, kind: pa.DataType) -> str:
    """SQL of `expression` with every float inside it rounded to FLOAT_DECIMALS (the precision floats are compared at)."""
    if pa.types.is_floating(kind):
        return f"round({expression}::DOUBLE, {FLOAT_DECIMALS})"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        inner = _rounded("x", kind.value_type)
        return expression if inner == "x" else f"list_transform({expression}, lambda x: {inner})"
    if pa.types.is_struct(kind):
        parts = [(f.name, _rounded(f'{expression}."{f.name}"', f.type)) for f in kind]
        if all(sql == f'{expression}."{name}"' for name, sql in parts):
            return expression
        return "struct_pack(" + ", ".join(f'"{name}" := {sql}' for name, sql in parts) + ")"
    return expression


def _old_subfields(expression: str, old: pa.DataType, rounded: bool = True) -> str:
    """SQL of struct `expression` with only the subfields of struct type `old` (`rounded` as `_rounded` does): a
    struct that gained subfields, compared on what both sides hold."""
    subfield = (lambda f: _rounded(f'{expression}."{f.name}"', f.type)) if rounded else (lambda f: f'{expression}."{f.name}"')
    parts = ", ".join(f'"{f.name}" := {subfield(f)}' for f in old)
    return f"CASE WHEN {expression} IS NULL THEN NULL ELSE struct_pack({parts}) END"


def _has_float(kind: pa.DataType) -> bool:
    return _rounded("x", kind) != "x"


@dataclass(frozen=True)
class Side:
    folder: Path
    failed: str | None  # why the release's checks refused it (then read as found), None when it passed them
    tables: dict[str, dict[str, pa.Table]]  # config -> split -> table
    provenance: dict
    held: list[str]  # every config the release holds, `tables` being those asked for
    sources: dict[str, list[str]] = field(default_factory=dict)  # a `derive` copy -> the configs it was made from


def _read_side(folder: Path, wanted: list[str] | None) -> Side:
    """One side, read through the release's checks; where they refuse it, read as found, saying why."""
    pick = lambda names: [n for n in names if not wanted or n in wanted]  # noqa: E731
    try:
        built = built_configs(folder)
        if not built:
            raise ReleaseError(f"{folder} holds no stats/<config>.json")
        sources = {n: derived_from(built[n]) for n in built if derived_from(built[n])}
        tables = {n: {split: read_table(folder, n, built[n], split) for split in sorted(built[n]["files"], key=split_sort_key)}
                  for n in pick(built)}
        return Side(folder, None, tables, provenance(folder, {n: built[n] for n in tables}), sorted(built), sources)
    except ReleaseError as error:
        failed = str(error)
    configs = sorted(p.name for p in (folder / "data").glob("*") if p.is_dir() and any(p.glob("*.parquet")))
    if not configs:
        raise ReleaseError(f"{folder} is not a cohbench release (no stats/<config>.json, no data/<config>/<split>.parquet); "
                           "give a release folder or a version")
    read = {n: {f.stem: _read_as_found(f) for f in sorted((folder / "data" / n).glob("*.parquet"), key=lambda f: split_sort_key(f.stem))}
            for n in pick(configs)}
    tables = {n: {split: table for split, (table, _) in splits.items()} for n, splits in read.items()}
    found = {n: _found_stats(n, splits) for n, splits in read.items()}
    try:
        return Side(folder, failed, tables, provenance(folder, found), configs)
    except ReleaseError:  # its manifest is what failed
        return Side(folder, failed, tables, provenance(folder, found, recorded=False), configs)


def _read_as_found(path: Path) -> tuple[pa.Table, str]:
    """A data file as it is, and the sha256 of the bytes read."""
    import pyarrow.parquet as pq

    data = read_regular(path, "compare a readable copy")
    try:
        return pq.read_table(pa.BufferReader(data)), hashlib.sha256(data).hexdigest()
    except (OSError, pa.ArrowException) as error:
        raise ReleaseError(f"{path} cannot be read as Parquet ({str(error).splitlines()[0][:120]}); compare a readable copy") from None


def _found_stats(config: str, read: dict[str, tuple[pa.Table, str]]) -> dict:
    """What `provenance` reads of a config read as found (each split's table and its file's sha256): its records' own
    fingerprint, schema and field hashes and its files' sha256 (so a declared version is named only for the very
    records it declares)."""
    try:
        content = fingerprint({split: table for split, (table, _) in read.items()})
    except (*ARROW_ERRORS, KeyError):  # splits that cannot be joined, no id: no content fingerprint
        return {"fingerprint": None}
    files = {split: {"path": f"data/{config}/{split}.parquet", "rows": table.num_rows, "sha256": sha256}
             for split, (table, sha256) in read.items()}
    return {"fingerprint": content["fingerprint"], "schema": content["schema"], "field_hashes": content["fields"], "files": files}


def _joined(side: str, tables: dict[str, pa.Table]) -> tuple[pa.Table | None, list[str]]:
    """One side's splits as one table, and how their schemas differ from the first split's (an extra field, an id
    of another type); None where they cannot be joined into one table."""
    first, *others = tables
    base, problems = schema_types(tables[first].schema), []
    for split in others:
        types = schema_types(tables[split].schema)
        problems += [f"{side} {split} has {f} {types[f]} where {first} has {base[f] if f in base else 'no such field'}"
                     for f in types if types[f] != base.get(f)]
        problems += [f"{side} {split} has no {f} ({first} has {base[f]})" for f in base if f not in types]
    try:
        return pa.concat_tables(tables.values(), promote_options="permissive"), problems
    except ARROW_ERRORS:
        return None, problems


def _compare(con, old: pa.Table, new: pa.Table, grown: set[str], renamed: bool = False) -> dict:
    """`grown`: the struct fields that gained subfields (`diff`), compared on the old ones. `renamed`: the sides are one
    config under two names (a `derive` copy), so `config` differs in every row by design."""
    con.register("old_rows", old)
    con.register("new_rows", new)
    old_types, new_types = {f.name: f.type for f in old.schema}, {f.name: f.type for f in new.schema}
    common = [name for name in new_types if name in old_types and (old_types[name] == new_types[name] or name in grown)
              and name != "id" and not (renamed and name == "config")]
    ids = lambda sql: [row[0] for row in con.execute(sql).fetchall()]  # noqa: E731
    out = {"rows": {"old": old.num_rows, "new": new.num_rows},
           "null_ids": {side: con.execute(f"SELECT count(*) FROM {side}_rows WHERE id IS NULL").fetchall()[0][0] for side in ("old", "new")},
           "duplicate_ids": {side: ids(f"SELECT id FROM {side}_rows WHERE id IS NOT NULL GROUP BY id HAVING count(*) > 1 ORDER BY id")
                             for side in ("old", "new")}}
    named = {"added": ids("SELECT DISTINCT id FROM new_rows WHERE id IS NOT NULL EXCEPT SELECT id FROM old_rows ORDER BY id"),
             "removed": ids("SELECT DISTINCT id FROM old_rows WHERE id IS NOT NULL EXCEPT SELECT id FROM new_rows ORDER BY id")}
    joined = "FROM old_rows o JOIN new_rows n USING (id)"
    rounded = {name: (_old_subfields(f'o."{name}"', old_types[name]), _old_subfields(f'n."{name}"', old_types[name])) if name in grown
               else (_rounded(f'o."{name}"', new_types[name]), _rounded(f'n."{name}"', new_types[name])) for name in common}
    # one pass over the join: per field, rows that differ at the declared precision and (floats) rows that differ only below it
    counts = [f"count(*) FILTER (WHERE {a} IS DISTINCT FROM {b})" for a, b in rounded.values()]
    raw = {name: (_old_subfields(f'o."{name}"', old_types[name], rounded=False), _old_subfields(f'n."{name}"', old_types[name], rounded=False))
           if name in grown else (f'o."{name}"', f'n."{name}"') for name in common}
    counts += [f'count(*) FILTER (WHERE {raw[name][0]} IS DISTINCT FROM {raw[name][1]} AND {rounded[name][0]} IS NOT DISTINCT FROM {rounded[name][1]})'
               for name in common if _has_float(new_types[name])]
    anywhere = " OR ".join(f"{a} IS DISTINCT FROM {b}" for a, b in rounded.values()) or "false"
    *per_field, changed = con.execute(f"SELECT {', '.join([*counts, f'count(*) FILTER (WHERE {anywhere})'])} {joined}").fetchall()[0]
    named["changed"] = ids(f"SELECT DISTINCT id {joined} WHERE {anywhere} ORDER BY id")
    differs, below = per_field[:len(common)], iter(per_field[len(common):])
    changed_fields = {name: n for name, n in zip(common, differs) if n}
    float_noise = {name: n for name in common if _has_float(new_types[name]) for n in [next(below)] if n}
    out.update(added=len(named["added"]), removed=len(named["removed"]), changed=changed, ids=named)
    out["changed_fields"] = changed_fields
    out["floats_beyond_precision"] = {n: changed_fields[n] for n in changed_fields if _has_float(new_types[n])}
    out["float_noise_within_precision"] = float_noise
    out["moved_split"] = {f"{a} -> {b}": n for a, b, n in con.execute(
        f"SELECT o.split, n.split, count(*) {joined} WHERE o.split IS DISTINCT FROM n.split GROUP BY ALL ORDER BY ALL").fetchall()}
    transitions, transition_ids = {}, {}
    for name in (f for f in LABEL_FIELDS if f in common):
        if pa.types.is_list(new_types[name]):
            rows = con.execute(
                f"""SELECT old_value, new_value, count(*), list(DISTINCT id ORDER BY id) FROM (
                        SELECT id, unnest(o."{name}") AS old_value, unnest(n."{name}") AS new_value {joined}
                        WHERE len(o."{name}") = len(n."{name}") AND o."{name}" IS DISTINCT FROM n."{name}")
                    WHERE old_value IS DISTINCT FROM new_value GROUP BY ALL ORDER BY ALL""").fetchall()
            relabelled = ids(f'SELECT DISTINCT id {joined} WHERE len(o."{name}") IS DISTINCT FROM len(n."{name}") ORDER BY id')
            if relabelled:
                key = f"{name} (rows whose number of units changed)"
                transitions[key], transition_ids[key] = len(relabelled), relabelled
        else:
            rows = con.execute(f'SELECT o."{name}", n."{name}", count(*), list(DISTINCT id ORDER BY id) {joined} '
                               f'WHERE o."{name}" IS DISTINCT FROM n."{name}" GROUP BY ALL ORDER BY ALL').fetchall()
        for a, b, n, which in rows:
            transitions[f"{name} {a} -> {b}"], transition_ids[f"{name} {a} -> {b}"] = n, which
    out["label_transitions"], out["label_transition_ids"] = transitions, transition_ids
    return out


def _release_version(folder: Path, provenance: dict) -> str:
    """The version a release folder's manifest records; provenance names the checkout's version for a release of
    unchanged configs, which would label an older release restored from the store as this one."""
    try:
        return read_manifest(folder / MANIFEST).get("cohbench_version", provenance["release"])
    except ReleaseError:  # none, or a damaged one (a side compared as found)
        return provenance["release"]


def diff(old: Path, new: Path, configs: list[str] | None = None) -> dict:
    """How release `new` differs from release `old` (two release folders), per config; `configs` narrows it. A side
    that fails the release's checks is compared as found, its `failed` saying why."""
    import duckdb

    new_side = _read_side(Path(new), configs)
    # `--config` naming a derive copy reads the config it was made from on the old side too
    wanted = configs and sorted(set(configs) | {s for n in configs for s in new_side.sources.get(n, [])})
    sides = {"old": _read_side(Path(old), wanted), "new": new_side}
    olds, news = sides["old"].tables, sides["new"].tables
    # a config derived under a new name is compared with the one config it was made from, where only the old side has it
    counterpart = {n: sources[0] for n, sources in sides["new"].sources.items()
                   if n not in olds and len(sources) == 1 and sources[0] in olds and sources[0] not in news}
    names = sorted(set(news) | (set(olds) - set(counterpart.values())))
    if news and set(news) == set(sides["new"].sources):  # a derive output holds its copies alone: nothing else was removed
        names = sorted(news)
    unknown = [c for c in configs or [] if c not in set(olds) | set(news)]
    if unknown:
        held = sorted(set(sides["old"].held) | set(sides["new"].held))
        raise ReleaseError(f"config {unknown[0]!r} is in neither release; configs: {', '.join(held)}")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    result = {role: {"release": _release_version(side.folder, side.provenance), "path": str(side.folder), "failed": side.failed}
              for role, side in sides.items()} | {"configs": {}}
    for name in names:
        named = {"old": counterpart.get(name, name), "new": name}
        entry = {role: ({"version": side.provenance["configs"][named[role]]["version"],
                         "fingerprint": side.provenance["configs"][named[role]]["fingerprint"]}
                        if named[role] in side.tables else None) for role, side in sides.items()}
        if name in counterpart:
            entry["compared_with"] = counterpart[name]
        if entry["old"] is None or entry["new"] is None:
            entry["status"] = "added" if entry["old"] is None else "removed"
            result["configs"][name] = entry
            continue
        (old_table, old_problems), (new_table, new_problems) = (_joined(role, sides[role].tables[named[role]]) for role in ("old", "new"))
        entry["split_schemas"] = old_problems + new_problems
        unjoinable = [role for role, table in (("old", old_table), ("new", new_table)) if table is None]
        keyless = [role for role, table in (("old", old_table), ("new", new_table)) if table is not None and
                   schema_types(table.schema).get("id") != "string"]
        if unjoinable or keyless:
            entry["not_compared"] = "; ".join(
                [f"the {role} release's splits of {name} cannot be joined into one table" for role in unjoinable] +
                [f"the {role} release's {name} has no string `id`, which keys a cohbench config's rows" for role in keyless])
            entry["status"] = "changed"
            result["configs"][name] = entry
            continue
        old_types, new_types = schema_types(old_table.schema), schema_types(new_table.schema)
        both = sorted(f for f in set(old_types) & set(new_types) if old_types[f] != new_types[f])
        grown = {f: extra for f in both if (extra := added_subfields(old_types[f], new_types[f]))}  # compared on the old subfields
        entry["schema"] = {
            "added": sorted(set(new_types) - set(old_types)) + [f"{f} (+{extra})" for f, extra in grown.items()],
            "removed": sorted(set(old_types) - set(new_types)),
            "retyped": {f: f"{old_types[f]} -> {new_types[f]}" for f in both if f not in grown},
        }
        entry.update(_compare(con, old_table, new_table, set(grown), renamed=name in counterpart))
        different = (entry["added"] or entry["removed"] or entry["changed"] or any(entry["schema"].values()) or entry["split_schemas"]
                     or entry["rows"]["old"] != entry["rows"]["new"] or entry["null_ids"]["old"] != entry["null_ids"]["new"]
                     or entry["duplicate_ids"]["old"] != entry["duplicate_ids"]["new"])
        entry["status"] = "changed" if different else "equal"
        result["configs"][name] = entry
    result["equal"] = all(c["status"] == "equal" for c in result["configs"].values())
    return result


def _schema_line(schema: dict) -> str:
    parts = [f"{what} {', '.join(names) if isinstance(names, list) else ', '.join(f'{k} ({v})' for k, v in names.items())}"
             for what, names in schema.items() if names]
    return "; ".join(parts)


def _counts(mapping: dict) -> str:
    return ", ".join(f"{key} {n}" for key, n in mapping.items()) or "-"


def _named(ids: list) -> str:
    shown = ", ".join(map(str, ids[:SHOWN_IDS]))
    return f"{shown}, and {len(ids) - SHOWN_IDS} more (--json lists all)" if len(ids) > SHOWN_IDS else shown


def _details(c: dict) -> list[str]:
    """The lines under a changed config: what changed, each with the ids that changed it."""
    lines = [f"  schema differs between splits: {'; '.join(c['split_schemas'])}"] if c.get("split_schemas") else []
    if "not_compared" in c:
        return lines + [f"  not compared row by row: {c['not_compared']}"]
    if any(c["schema"].values()):
        lines.append(f"  schema: {_schema_line(c['schema'])}")
    for key in ("added", "removed", "changed"):
        if c["ids"][key]:
            lines.append(f"  {key} ({len(c['ids'][key])}): {_named(c['ids'][key])}")
    for what, by_side in (("duplicated ids", c["duplicate_ids"]), ("rows without an id", c["null_ids"])):
        if any(by_side.values()):
            lines.append(f"  {what}: " + "; ".join(f"{side} {_named(v) if isinstance(v, list) else v}" for side, v in by_side.items() if v))
    if c["changed_fields"]:
        total = max(c["rows"]["old"], 1)
        lines.append("  fields changed (rows): " + ", ".join(f"{f} {n} ({percent(n / total)}%)" for f, n in c["changed_fields"].items()))
    if c["label_transitions"]:
        lines.append("  label transitions: " + ", ".join(f"{k} {n} ({_named(c['label_transition_ids'][k])})" for k, n in c["label_transitions"].items()))
    for key, title in (("moved_split", "moved split"), ("floats_beyond_precision", f"floats beyond 1e-{FLOAT_DECIMALS} (rows)"),
                       ("float_noise_within_precision", f"float differences within 1e-{FLOAT_DECIMALS}, not content (rows)")):
        if c[key]:
            lines.append(f"  {title}: {_counts(c[key])}")
    return lines


def text_lines(result: dict) -> list[str]:
    """The diff as a table for the terminal: one row per config, then the details of each changed one."""
    lines = [f"cohbench {result['old']['release']} ({result['old']['path']}) -> {result['new']['release']} ({result['new']['path']})"]
    lines += [f"the {role} side failed the release's checks, so it is compared as found: {result[role]['failed']}"
              for role in ("old", "new") if result[role].get("failed")]
    shown = {name: f"{c['compared_with']} -> {name}" if "compared_with" in c else name for name, c in result["configs"].items()}
    w = max([22, *map(len, shown.values())])
    lines.append(f"{'config':<{w}} {'old version':<22} {'new version':<22} {'rows old -> new':<20} {'added':>6} {'removed':>7} {'changed':>8}")
    for name, c in result["configs"].items():
        versions = [(c[side] or {}).get("version", "-") for side in ("old", "new")]
        if c["status"] in ("added", "removed") or "not_compared" in c:
            lines.append(f"{shown[name]:<{w}} {versions[0]:<22} {versions[1]:<22} " + (f"config {c['status']}" if c["status"] != "changed" else "not compared"))
            continue
        rows = f"{c['rows']['old']} -> {c['rows']['new']}"
        lines.append(f"{shown[name]:<{w}} {versions[0]:<22} {versions[1]:<22} {rows:<20} {c['added']:>6} {c['removed']:>7} {c['changed']:>8}")
    for name, c in result["configs"].items():
        if c["status"] == "changed":
            lines += [f"{shown[name]}:", *_details(c)]
    lines.append("no difference" if result["equal"] else
                 f"{sum(c['status'] != 'equal' for c in result['configs'].values())} of {len(result['configs'])} config(s) differ")
    return lines


def markdown(result: dict) -> str:
    """The diff as a changelog section's summary (CHANGELOG.md explains it in words)."""
    lines = [f"Generated by `cohbench diff` from cohbench {result['old']['release']} to {result['new']['release']}.", "",
             "| config | version | rows | added | removed | changed | fields changed (rows) | labels | schema |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, c in result["configs"].items():
        old, new = ((c[side] or {}).get("version", "-") for side in ("old", "new"))
        version = old if old == new else f"{old} -> {new}"
        name = f"{c['compared_with']}` -> `{name}" if "compared_with" in c else name
        if c["status"] in ("added", "removed") or "not_compared" in c:
            lines.append(f"| `{name}` | {version} | {c.get('not_compared') or 'config ' + c['status']} | | | | | | |")
            continue
        fields = ", ".join(f"{f} {n}" for f, n in c["changed_fields"].items()) or "-"
        labels = ", ".join(f"{k} {n}" for k, n in c["label_transitions"].items()) or "-"
        lines.append(f"| `{name}` | {version} | {c['rows']['old']} -> {c['rows']['new']} | {c['added']} | {c['removed']} "
                     f"| {c['changed']} | {fields} | {labels} | {'; '.join(filter(None, [_schema_line(c['schema']), *c['split_schemas']])) or '-'} |")
    moved = {name: c["moved_split"] for name, c in result["configs"].items() if c.get("moved_split")}
    if moved:
        lines += ["", "Rows that moved split: " + "; ".join(f"`{name}` {_counts(m)}" for name, m in moved.items()) + "."]
    return "\n".join(lines) + "\n"
