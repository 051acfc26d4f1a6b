"""The spaCy pipeline the entity-based generators need: tagger (for PROPN) and NER, loaded once, lazily.
Sentence splitting is not done here: texts arrive already split by `cohbench.text`."""

from __future__ import annotations

import functools

from ..text import load_pipeline


@functools.lru_cache(maxsize=1)
def ner_pipeline():
    return load_pipeline(exclude=["parser", "lemmatizer", "senter"])


def analyse(sentences: list[str], batch_size: int = 256) -> list:
    """spaCy Docs of `sentences` (one per sentence)."""
    return list(ner_pipeline().pipe(sentences, batch_size=batch_size))
