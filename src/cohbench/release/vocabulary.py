"""The schema's vocabularies checked on a split's table: every ClassLabel value (a text's, a sentence's, a segment's
or a gap's label, a span's type or category; `schema.CLASS_LABELS`) is one of its names' indexes or -1 (no label).

A value outside them is not data with a meaning: a reader would show a span type of -3 as the name at index -3, count
a label of 7 as neither ok nor error, or fail on it. The one writer refuses to write such a table, and the one reader
refuses to read one (a copy whose files and stats were rewritten together passes every sha256 check)."""

from __future__ import annotations

import hashlib
import json

from ..schema import CLASS_LABELS, NO_LABEL

# Names the vocabularies a file was checked against (the `vocabulary` cache's marks hold it): another vocabulary
# checks again.
VOCABULARY_KEY = hashlib.sha256(json.dumps(CLASS_LABELS, sort_keys=True).encode()).hexdigest()[:12]


def class_label_columns() -> list[str]:
    return sorted({path.split(".")[0] for path in CLASS_LABELS})


def _extremes(table, path: str) -> tuple[int, int] | None:
    """The smallest and largest value at a dotted path, every list on the way flattened; None when there is none.
    Array methods and the buffers, not `pyarrow.compute` or `to_numpy` (which import pandas): those imports would
    make a one-line `cohbench sql` several times slower."""
    import pyarrow as pa

    column, *fields = path.split(".")
    low, high = None, None
    for values in table.column(column).chunks:
        for field in [*fields, None]:
            while pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
                values = values.flatten()
            if field is not None:
                values = values.field(field)
        numbers = _valid_integers(values)
        if len(numbers):
            low = numbers.min() if low is None else min(low, numbers.min())
            high = numbers.max() if high is None else max(high, numbers.max())
    return None if low is None else (int(low), int(high))


def outside_vocabulary(table) -> str | None:
    """The first ClassLabel value of `table` (an Arrow table in the schema) outside its names, said in words; None
    when every value is a name's index or -1."""
    for path, names in CLASS_LABELS.items():
        if path.split(".")[0] not in table.column_names or (extremes := _extremes(table, path)) is None:
            continue
        for value in extremes:
            if not NO_LABEL <= value < len(names):
                return f"{path} holds {value}, which is none of {', '.join(f'{i}={n}' for i, n in enumerate(names))} (or -1, no label)"
    return None


def _valid_integers(values):
    """The non-null values of an Arrow integer array, read from its buffers."""
    import numpy as np

    validity, data = values.buffers()[:2]
    numbers = np.frombuffer(data, dtype=f"int{values.type.bit_width}", count=values.offset + len(values))[values.offset :]
    if validity is None or values.null_count == 0:
        return numbers
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little", count=values.offset + len(values))[values.offset :]
    return numbers[bits.astype(bool)]
