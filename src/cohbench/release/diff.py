"""`cohbench diff OLD NEW`: how two releases differ, config by config, row by row keyed by `id` (Dolt's table diff).

Both sides are read through the release's one reader (each file checked against its recorded sha256, neither side
ever written) and compared in DuckDB: rows added, removed and changed; for changed rows, which fields and in how many
rows; label transitions (0 -> 1, 1 -> 0, per label field, element by element for per-sentence and per-gap labels);
rows that moved split; schema changes; float fields that differ beyond `fingerprint.FLOAT_DECIMALS` (differences
below it are kernel noise, not content, and are counted apart); the versions and fingerprints on both sides.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ..display import percent
from ..errors import ReleaseError
from .fingerprint import FLOAT_DECIMALS, schema_types
from .layout import MANIFEST, built_configs, read_manifest, read_table
from .versions import provenance

# Fields whose values are labels: their changes are reported as transitions (old value -> new value).
LABEL_FIELDS = ("label", "sentence_labels", "sentence_labels_min2votes", "segment_labels", "segment_labels_min2votes", "gap_labels")


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


def _has_float(kind: pa.DataType) -> bool:
    return _rounded("x", kind) != "x"


def _config_tables(release: Path, config: str, stats: dict) -> pa.Table | None:
    tables = [read_table(release, config, stats, split) for split in stats["files"]]
    return pa.concat_tables(tables) if tables else None


def _compare(con, old: pa.Table, new: pa.Table) -> dict:
    con.register("old_rows", old)
    con.register("new_rows", new)
    old_types, new_types = {f.name: f.type for f in old.schema}, {f.name: f.type for f in new.schema}
    common = [name for name in new_types if name in old_types and old_types[name] == new_types[name] and name != "id"]
    one = lambda sql: con.execute(sql).fetchall()[0][0]  # noqa: E731
    out = {
        "rows": {"old": old.num_rows, "new": new.num_rows},
        "added": one("SELECT count(*) FROM new_rows WHERE id NOT IN (SELECT id FROM old_rows)"),
        "removed": one("SELECT count(*) FROM old_rows WHERE id NOT IN (SELECT id FROM new_rows)"),
    }
    joined = "FROM old_rows o JOIN new_rows n USING (id)"
    rounded = {name: (_rounded(f'o."{name}"', new_types[name]), _rounded(f'n."{name}"', new_types[name])) for name in common}
    # one pass over the join: per field, rows that differ at the declared precision and (floats) rows that differ only below it
    counts = [f"count(*) FILTER (WHERE {a} IS DISTINCT FROM {b})" for a, b in rounded.values()]
    counts += [f'count(*) FILTER (WHERE o."{name}" IS DISTINCT FROM n."{name}" AND {rounded[name][0]} IS NOT DISTINCT FROM {rounded[name][1]})'
               for name in common if _has_float(new_types[name])]
    anywhere = " OR ".join(f"{a} IS DISTINCT FROM {b}" for a, b in rounded.values()) or "false"
    *per_field, changed = con.execute(f"SELECT {', '.join([*counts, f'count(*) FILTER (WHERE {anywhere})'])} {joined}").fetchall()[0]
    differs, below = per_field[:len(common)], iter(per_field[len(common):])
    changed_fields = {name: n for name, n in zip(common, differs) if n}
    float_noise = {name: n for name in common if _has_float(new_types[name]) for n in [next(below)] if n}
    out["changed"] = changed
    out["changed_fields"] = changed_fields
    out["floats_beyond_precision"] = {n: changed_fields[n] for n in changed_fields if _has_float(new_types[n])}
    out["float_noise_within_precision"] = float_noise
    out["moved_split"] = {f"{a} -> {b}": n for a, b, n in con.execute(
        f"SELECT o.split, n.split, count(*) {joined} WHERE o.split IS DISTINCT FROM n.split GROUP BY ALL ORDER BY ALL").fetchall()}
    transitions = {}
    for name in (f for f in LABEL_FIELDS if f in common):
        if pa.types.is_list(new_types[name]):
            rows = con.execute(
                f"""SELECT old_value, new_value, count(*) FROM (
                        SELECT unnest(o."{name}") AS old_value, unnest(n."{name}") AS new_value {joined}
                        WHERE len(o."{name}") = len(n."{name}") AND o."{name}" IS DISTINCT FROM n."{name}")
                    WHERE old_value IS DISTINCT FROM new_value GROUP BY ALL ORDER BY ALL""").fetchall()
            relabelled = one(f'SELECT count(*) {joined} WHERE len(o."{name}") IS DISTINCT FROM len(n."{name}")')
            if relabelled:
                transitions[f"{name} (rows whose number of units changed)"] = relabelled
        else:
            rows = con.execute(f'SELECT o."{name}", n."{name}", count(*) {joined} WHERE o."{name}" IS DISTINCT FROM n."{name}" '
                               "GROUP BY ALL ORDER BY ALL").fetchall()
        transitions.update({f"{name} {a} -> {b}": n for a, b, n in rows})
    out["label_transitions"] = transitions
    return out


def _release_version(folder: Path, provenance: dict) -> str:
    """The version a release folder's manifest records; provenance names the checkout's version for a release of
    unchanged configs, which would label an older release restored from the store as this one."""
    manifest = Path(folder) / MANIFEST
    return read_manifest(manifest).get("cohbench_version", provenance["release"]) if manifest.is_file() else provenance["release"]


def diff(old: Path, new: Path, configs: list[str] | None = None) -> dict:
    """How release `new` differs from release `old` (two release folders), per config; `configs` narrows it."""
    import duckdb

    sides = {}
    for role, folder in (("old", old), ("new", new)):
        built = built_configs(Path(folder))
        if not built:
            raise ReleaseError(f"{folder} is not a cohbench release (no stats/<config>.json); give a release folder or a version")
        sides[role] = (Path(folder), built, provenance(Path(folder), built))
    names = sorted(set(sides["old"][1]) | set(sides["new"][1]))
    if configs:
        unknown = [c for c in configs if c not in names]
        if unknown:
            raise ReleaseError(f"config {unknown[0]!r} is in neither release; configs: {', '.join(names)}")
        names = configs
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    result = {"old": {"release": _release_version(old, sides["old"][2]), "path": str(old)},
              "new": {"release": _release_version(new, sides["new"][2]), "path": str(new)}, "configs": {}}
    for name in names:
        entry = {side: ({"version": sides[side][2]["configs"][name]["version"], "fingerprint": sides[side][2]["configs"][name]["fingerprint"]}
                        if name in sides[side][1] else None) for side in ("old", "new")}
        if entry["old"] is None or entry["new"] is None:
            entry["status"] = "added" if entry["old"] is None else "removed"
            result["configs"][name] = entry
            continue
        tables = {side: _config_tables(sides[side][0], name, sides[side][1][name]) for side in ("old", "new")}
        old_types, new_types = schema_types(tables["old"].schema), schema_types(tables["new"].schema)
        if old_types.get("id") != "string" or new_types.get("id") != "string":
            raise ReleaseError(f"{name} cannot be compared row by row: a cohbench config is keyed by a string `id`, and the "
                               f"{'old' if old_types.get('id') != 'string' else 'new'} release's {name} has none")
        entry["schema"] = {
            "added": sorted(set(new_types) - set(old_types)),
            "removed": sorted(set(old_types) - set(new_types)),
            "retyped": {f: f"{old_types[f]} -> {new_types[f]}" for f in sorted(set(old_types) & set(new_types)) if old_types[f] != new_types[f]},
        }
        entry.update(_compare(con, tables["old"], tables["new"]))
        different = (entry["added"] or entry["removed"] or entry["changed"] or any(entry["schema"].values()))
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


def text_lines(result: dict) -> list[str]:
    """The diff as a table for the terminal: one row per config, then the details of each changed one."""
    lines = [f"cohbench {result['old']['release']} ({result['old']['path']}) -> {result['new']['release']} ({result['new']['path']})",
             f"{'config':<22} {'old version':<22} {'new version':<22} {'rows old -> new':<20} {'added':>6} {'removed':>7} {'changed':>8}"]
    for name, c in result["configs"].items():
        versions = [(c[side] or {}).get("version", "-") for side in ("old", "new")]
        if c["status"] in ("added", "removed"):
            lines.append(f"{name:<22} {versions[0]:<22} {versions[1]:<22} config {c['status']}")
            continue
        rows = f"{c['rows']['old']} -> {c['rows']['new']}"
        lines.append(f"{name:<22} {versions[0]:<22} {versions[1]:<22} {rows:<20} {c['added']:>6} {c['removed']:>7} {c['changed']:>8}")
    for name, c in result["configs"].items():
        if c["status"] != "changed":
            continue
        lines.append(f"{name}:")
        if any(c["schema"].values()):
            lines.append(f"  schema: {_schema_line(c['schema'])}")
        if c["changed_fields"]:
            total = max(c["rows"]["old"], 1)
            lines.append("  fields changed (rows): " + ", ".join(f"{f} {n} ({percent(n / total)}%)" for f, n in c["changed_fields"].items()))
        for key, title in (("label_transitions", "label transitions"), ("moved_split", "moved split"),
                           ("floats_beyond_precision", f"floats beyond 1e-{FLOAT_DECIMALS} (rows)"),
                           ("float_noise_within_precision", f"float differences within 1e-{FLOAT_DECIMALS}, not content (rows)")):
            if c[key]:
                lines.append(f"  {title}: {_counts(c[key])}")
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
        if c["status"] in ("added", "removed"):
            lines.append(f"| `{name}` | {version} | config {c['status']} | | | | | | |")
            continue
        fields = ", ".join(f"{f} {n}" for f, n in c["changed_fields"].items()) or "-"
        labels = ", ".join(f"{k} {n}" for k, n in c["label_transitions"].items()) or "-"
        lines.append(f"| `{name}` | {version} | {c['rows']['old']} -> {c['rows']['new']} | {c['added']} | {c['removed']} "
                     f"| {c['changed']} | {fields} | {labels} | {_schema_line(c['schema']) or '-'} |")
    moved = {name: c["moved_split"] for name, c in result["configs"].items() if c.get("moved_split")}
    if moved:
        lines += ["", "Rows that moved split: " + "; ".join(f"`{name}` {_counts(m)}" for name, m in moved.items()) + "."]
    return "\n".join(lines) + "\n"
