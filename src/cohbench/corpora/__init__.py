"""The corpora wing: the one declaration of each corpus and config (`registry`), their upstream files pinned and
fetched (`sources`, `errata`, `fetch`), and one module (or package) per corpus, which calls `registry.register` at
import. Every module here is imported when the registry is first asked, so adding a corpus is adding a module and its
checksum table beside it, `<corpus>.tsv` (name, url, size, sha256, licence), read with `pinned`."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from .. import jsonlines
from ..errors import ParseError
from .sources import Source, read_table
from ..text import normalise

CHECKSUMS = Path(__file__).parent  # each corpus's table beside its module


def checksum_table(corpus: str) -> Path:
    return CHECKSUMS / f"{corpus}.tsv"


def pinned(corpus: str) -> dict[str, Source]:
    """The sources of `corpus`'s checksum table by name, in the table's order."""
    return {source.name: source for source in read_table(checksum_table(corpus))}


def json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of every non-blank line of a JSON-lines upstream file; a line that is not JSON is a
    ParseError naming the file and line (the file is truncated or corrupt)."""
    return jsonlines.read(path, ParseError, "the file is truncated or corrupt: fetch the pinned file again")


def held_out(corpora, paths) -> dict[str, set[str]]:
    """The normalised texts of each corpus's held-out narratives (`Corpus.held_out_texts`), by corpus name: what
    training data must not hold. `paths(corpus)` gives a corpus's verified input files."""
    return {corpus.name: {normalise(text) for text in corpus.held_out_texts(paths(corpus))}
            for corpus in corpora if corpus.held_out_texts}


# 64 bits: a user corpus of 80M stories checked against the ~11k held-out texts expects ~5e-5 false drops in all.
HELD_OUT_FINGERPRINT = "sha256 of the normalised text (cohbench.text.normalise, UTF-8), first 16 hex digits"


def text_fingerprint(normalised: str) -> str:
    """A normalised text's fingerprint (HELD_OUT_FINGERPRINT): how a held-out story is recorded and recognised."""
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:16]


def held_out_fingerprints(corpus, paths) -> list[str]:
    """The sorted fingerprints of one corpus's held-out narratives (`Corpus.held_out_texts` over its verified files
    `paths`): what a build records in the config's stats, so that `cohbench corrupt` checks a user's stories without
    the upstream files."""
    return sorted({text_fingerprint(normalise(text)) for text in corpus.held_out_texts(paths)})
