"""Registered corruption generators: seeded, pure functions over records in the one schema.

    from cohbench.corruptions import GENERATORS
    out = GENERATORS["remove_sentences"].over_records(records, seed=13, k=1)    # records: list of dicts
    dataset.map(GENERATORS["remove_sentences"], batched=True, fn_kwargs={"seed": 13, "k": 1})  # dict of lists

Generators: shuffle, repetition, ne_bigram (SNaC App. B); remove_sentences (MSD) and discordant_replace (DSD)
(Cai et al. §3); entity_first_mention and next_sentence_swap (SNaC §5.1); goyal_coref and goyal_next_sentence
(Goyal et al. §5.1 as written); contradiction, unintroduced_reference and scene_jump (SNaC's InconE, RefE, SceneE).
"""

from __future__ import annotations

from . import dsd, goyal, msd, character_and_scene, snac_errors, surface  # noqa: F401  (modules register their generators)
from ..errors import CorruptionError
from .registry import GENERATORS, generator, record_rng


__all__ = ["GENERATORS", "CorruptionError", "generator", "record_rng"]
