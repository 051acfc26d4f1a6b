"""A config's content fingerprint: what its version stands for, independent of the Parquet writer's bytes.

Records are put in a canonical order (split in the vocabulary's order, then id) and each field's column is encoded
as canonical JSON, floats rounded to `FLOAT_DECIMALS` (the one precision at which cohbench compares floats: below it,
a value is kernel noise, not content). Each field gets its own hash, so a change can be told apart: a field added
(records otherwise unchanged: a minor version) from a field whose values changed (a major one). The fingerprint is
the hash of the schema and the field hashes.
"""

from __future__ import annotations

import hashlib
import json
import math

from ..schema import FLOAT_DECIMALS, split_sort_key
FIELD_HASH_LENGTH = 16  # hex digits of a field's hash: enough to tell versions apart, short enough to review


def canonical(value):
    """`value` with every float rounded to FLOAT_DECIMALS (-0.0 as 0.0; NaN and infinities named, JSON has none)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return round(value, FLOAT_DECIMALS) + 0.0
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _holds_floats(kind) -> bool:
    """Whether values of Arrow type `kind` can hold a float anywhere (a float field, or one in a list or struct)."""
    import pyarrow as pa

    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _holds_floats(kind.value_type)
    if pa.types.is_struct(kind):
        return any(_holds_floats(field.type) for field in kind)
    if pa.types.is_map(kind):
        return _holds_floats(kind.key_type) or _holds_floats(kind.item_type)
    return pa.types.is_union(kind) or pa.types.is_dictionary(kind) and _holds_floats(kind.value_type)


def type_name(kind) -> str:
    """An Arrow type as text, the same whatever a writer named a list's items (Parquet renames them `element`)."""
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{type_name(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "struct<" + ", ".join(f"{field.name}: {type_name(field.type)}" for field in kind) + ">"
    return str(kind)


def added_subfields(old: str, new: str) -> str | None:
    """The subfields struct type `new` appends to struct type `old` (both as `type_name` writes them), as text
    (`replaced: list<string>`); None where `new` is not `old` with subfields appended."""
    if old.startswith("struct<") and new.startswith(old[:-1] + ", ") and new.endswith(">"):
        return new[len(old) + 1 : -1]
    return None


def schema_types(schema) -> dict[str, str]:
    """Field name -> Arrow type, the form the versions record and `cohbench diff` compares."""
    return {field.name: type_name(field.type) for field in schema}


def fingerprint(tables: dict) -> dict:
    """The fingerprint of a config's splits (split -> Arrow table in the schema): `fingerprint` (64 hex digits),
    `schema` (field -> type), `fields` (field -> hash of its values in canonical order) and `rows` per split."""
    import pyarrow as pa

    splits = sorted(tables, key=split_sort_key)
    table = pa.concat_tables([tables[s] for s in splits]) if splits else None
    keys = [(split_sort_key(split), record_id is not None, "" if record_id is None else str(record_id))  # a missing id: first
            for split in splits for record_id in tables[split].column("id").to_pylist()]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    fields = {}
    for name in table.column_names if table is not None else []:
        values = table.column(name).to_pylist()
        ordered = [values[i] for i in order]
        # canonical() changes floats only: a field without one is its own canonical form (2x faster to fingerprint)
        fields[name] = _digest(canonical(ordered) if _holds_floats(table.schema.field(name).type) else ordered)[:FIELD_HASH_LENGTH]
    schema = schema_types(table.schema) if table is not None else {}
    return {"fingerprint": _digest({"schema": schema, "fields": fields}), "schema": schema, "fields": fields,
            "rows": {split: tables[split].num_rows for split in splits}}
