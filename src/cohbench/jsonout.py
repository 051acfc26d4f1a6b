"""JSON for people and programs: NaN and infinities are not JSON, so they are written as null."""

from __future__ import annotations

import json
import math


def finite(value):
    """`value` with every NaN or infinite float replaced by None (where a figure is undefined, it is null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value, **options) -> str:
    return json.dumps(finite(value), allow_nan=False, ensure_ascii=False, default=str, **options)


def document(value) -> str:
    """A JSON file's text: indented, keys sorted (files diff well and never depend on insertion order)."""
    return dumps(value, indent=2, sort_keys=True) + "\n"


def write(path, value) -> None:
    """Write `value` as a JSON file, atomically."""
    from .atomic import write_text

    write_text(path, document(value))
