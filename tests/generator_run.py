"""Running one registered generator over a list of records, as the tests do (the package runs generators only
through recipes)."""

from __future__ import annotations

from cohbench.corruptions.registry import GENERATORS, to_columns, to_records


def corrupt(name: str, records: list[dict], *, seed: int, **params) -> list[dict]:
    """Generator `name` over `records` as one batch."""
    return to_records(GENERATORS[name](to_columns(records), seed=seed, **params)) if records else []
