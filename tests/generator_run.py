"""Running one registered generator over a list of records, as the tests do (the package runs generators only
through recipes)."""

from __future__ import annotations

from cohbench.corruptions.registry import GENERATORS
from cohbench.schema import empty_record


def corrupt(name: str, records: list[dict], *, seed: int, **params) -> list[dict]:
    """Generator `name` over `records` as one batch, as the recipes call it (`datasets.Dataset.map` takes its
    columnar form, `GENERATORS[name]` itself)."""
    return GENERATORS[name].over_records(records, seed=seed, **params)


def narrative(record_id: str, sentences) -> dict:
    """A coherent train-split record of `sentences`, its own document."""
    r = empty_record()
    r.update(id=record_id, corpus="x", config="x", split="train", doc_id=record_id, sentences=list(sentences))
    return r
