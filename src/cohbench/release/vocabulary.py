"""The schema's vocabularies checked on a split's table: every ClassLabel value (a text's, a sentence's, a segment's
or a gap's label, a span's type or category; `schema.CLASS_LABELS`) is one of its names' indexes or -1 (no label).

A value outside them is not data with a meaning: a reader would show a span type of -3 as the name at index -3, count
a label of 7 as neither ok nor error, or fail on it. The one writer refuses to write such a table, and the one reader
refuses to read one (a copy whose files and stats were rewritten together passes every sha256 check)."""

from __future__ import annotations

from ..schema import CLASS_LABELS, NO_LABEL


def class_label_columns() -> list[str]:
    return sorted({path.split(".")[0] for path in CLASS_LABELS})


def _values(table, path: str):
    """The values at a dotted path, every list on the way flattened."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column, *fields = path.split(".")
    values = table.column(column)
    for field in [*fields, None]:
        while pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
            values = pc.list_flatten(values)
        if field is not None:
            values = pc.struct_field(values, field)
    return values


def outside_vocabulary(table) -> str | None:
    """The first ClassLabel value of `table` (an Arrow table in the schema) outside its names, said in words; None
    when every value is a name's index or -1."""
    import pyarrow.compute as pc

    for path, names in CLASS_LABELS.items():
        if path.split(".")[0] not in table.column_names:
            continue
        low, high = (v.as_py() for v in pc.min_max(_values(table, path)).values())
        for value in (low, high):
            if value is not None and not NO_LABEL <= value < len(names):
                return f"{path} holds {value}, which is none of {', '.join(f'{i}={n}' for i, n in enumerate(names))} (or -1, no label)"
    return None
