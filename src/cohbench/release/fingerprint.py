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


def _canonical_array(array):
    """Arrow `array` with every float in the canonical form `canonical` gives it, computed with numpy (the walk in
    Python over a corrupted config's structs was a third of its fingerprint); None where a float may need
    `canonical` itself: not finite, 1e6 or more in size, within 1e-4 of a rounding tie at FLOAT_DECIMALS, or of a
    kind other than float32/64 or not known to hold none (a decimal, a map, a list view, an extension). Elsewhere the two agree: x * 10**FLOAT_DECIMALS is
    then off by under 1e-6 at most, so its nearest integer k is that of the exact x, and Python's round (correctly
    rounded) and k / 10**FLOAT_DECIMALS (one IEEE division) both give the double nearest the decimal k."""
    import numpy as np
    import pyarrow as pa

    kind = array.type
    if _without_floats(kind):
        return array
    mask = array.is_null() if array.null_count else None
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        x = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        with np.errstate(all="ignore"):
            scaled = x * 10.0**FLOAT_DECIMALS
            tie_distance = np.abs(np.abs(scaled - np.floor(scaled)) - 0.5)
            if not (np.isfinite(x).all() and (np.abs(x) < 1e6).all() and (tie_distance > 1e-4).all()):
                return None
        return pa.array(np.rint(scaled) / 10.0**FLOAT_DECIMALS + 0.0, mask=None if mask is None else mask.to_numpy(zero_copy_only=False))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        offsets = array.offsets.to_numpy()
        values = _canonical_array(array.values.slice(offsets[0], offsets[-1] - offsets[0]))
        if values is None:
            return None
        lists = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return lists.from_arrays(pa.array(offsets - offsets[0], type=array.offsets.type), values, mask=mask)
    if pa.types.is_struct(kind):
        children = [_canonical_array(child) for child in array.flatten()]
        if any(child is None for child in children):
            return None
        return pa.StructArray.from_arrays(children, names=[field.name for field in kind], mask=mask)
    return None


def _without_floats(kind) -> bool:
    """Whether values of Arrow type `kind` are known to hold no float: a string, a number that is not one, a flag, a
    time, or a list or struct of those. Any other type is given to `canonical` as it is."""
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _without_floats(kind.value_type)
    if pa.types.is_struct(kind):
        return all(_without_floats(field.type) for field in kind)
    return any(test(kind) for test in (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                                       pa.types.is_boolean, pa.types.is_null, pa.types.is_binary, pa.types.is_temporal))


def _canonical_values(column) -> list:
    """A column's values in canonical form, as `canonical(column.to_pylist())` gives them."""
    chunks = [_canonical_array(chunk) for chunk in column.chunks]
    if any(chunk is None for chunk in chunks):
        return canonical(column.to_pylist())
    return [value for chunk in chunks for value in chunk.to_pylist()]


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


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
        column = table.column(name)
        # canonical() changes floats only: a field without one is its own canonical form (2x faster to fingerprint)
        values = column.to_pylist() if _without_floats(column.type) else _canonical_values(column)
        fields[name] = _digest([values[i] for i in order])[:FIELD_HASH_LENGTH]
    schema = schema_types(table.schema) if table is not None else {}
    return {"fingerprint": _digest({"schema": schema, "fields": fields}), "schema": schema, "fields": fields,
            "rows": {split: tables[split].num_rows for split in splits}}
