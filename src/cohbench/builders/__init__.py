"""One module per corpus. Each calls `cohbench.registry.register` at import; every module in this package is
discovered, so adding a corpus is adding a module. A corpus's upstream files are pinned in its checksum table,
`checksums/<corpus>.tsv` (name, url, size, sha256, licence), read with `pinned`."""

from __future__ import annotations

from pathlib import Path

from ..sources import Source, read_table

CHECKSUMS = Path(__file__).with_name("checksums")


def checksum_table(corpus: str) -> Path:
    return CHECKSUMS / f"{corpus}.tsv"


def pinned(corpus: str) -> dict[str, Source]:
    """The sources of `corpus`'s checksum table by name, in the table's order."""
    return {source.name: source for source in read_table(checksum_table(corpus))}
