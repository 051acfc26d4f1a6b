"""Registered corruption generators: seeded, pure functions over columnar batches of records in the one schema.

    from cohbench import corruptions
    out = corruptions.get("remove_sentences")(batch, seed=13, k=1)       # batch: dict of lists
    ds = corruptions.apply("shuffle", dataset, seed=13, num_proc=2)      # a datasets.Dataset

Generators: shuffle, repetition, ne_bigram (SNaC App. B); remove_sentences (MSD) and discordant_replace (DSD)
(Cai et al. §3); entity_first_mention and next_sentence_swap (SNaC §5.1).
"""

from __future__ import annotations

from . import dsd, goyal, msd, character_and_scene, surface  # noqa: F401  (modules register their generators)
from .registry import CorruptionError, generator, get, names, record_rng, to_columns, to_records


def apply(name: str, dataset, *, seed: int, num_proc: int | None = None, **params):
    """Run generator `name` over a `datasets.Dataset` in the schema with `Dataset.map(batched=True)`."""
    from ..schema import FEATURES

    return dataset.map(
        get(name), batched=True, fn_kwargs={"seed": seed, **params}, remove_columns=dataset.column_names,
        features=FEATURES, num_proc=num_proc, desc=name,
    )


def corrupt(name: str, records: list[dict], *, seed: int, **params) -> list[dict]:
    """Run generator `name` over a list of records (one batch)."""
    return to_records(get(name)(to_columns(records), seed=seed, **params)) if records else []


__all__ = ["CorruptionError", "apply", "corrupt", "generator", "get", "names", "record_rng"]
