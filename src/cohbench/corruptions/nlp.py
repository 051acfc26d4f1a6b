"""The spaCy pipeline the entity-based generators need: tagger (for PROPN) and NER, loaded once, lazily.
Sentence splitting is not done here: texts arrive already split by `cohbench.text`."""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..text import load_pipeline, pipe


@functools.lru_cache(maxsize=1)
def ner_pipeline():
    return load_pipeline(exclude=["parser", "lemmatizer", "senter"])


def analyse(texts: list[str], extract: Callable, batch_size: int = 256) -> list:
    """`extract(doc)` of each text's spaCy Doc, in order (a module-level function: long lists are analysed by
    worker processes, `text.pipe`, which send back what it extracts rather than whole Docs)."""
    return pipe(ner_pipeline, texts, extract, batch_size)


def per_sentence(records: list[dict], extract: Callable) -> list[list]:
    """`extract(doc)` of every sentence of every record, grouped by record: one pass of the pipeline over them all."""
    flat = [s for r in records for s in r["sentences"]]
    found = iter(analyse(flat, extract) if flat else [])
    return [[next(found) for _ in r["sentences"]] for r in records]
