"""Resolve a corpus's upstream files into the local cache and apply its errata there.

The cache is keyed by URL (raw/HOST/URL-PATH), so a file that several corpora use is stored once; a repaired
file lives at raw/errata/<erratum id>/<file name>."""

from __future__ import annotations

from pathlib import Path


from .. import settings
from ..atomic import atomic_path
from ..display import progress_bar
from ..errors import ErratumError
from .registry import Corpus
from .sources import resolve, sha256_of


def erratum_path(corpus: Corpus, erratum) -> Path:
    return settings.raw_cache_dir() / "errata" / erratum.id / corpus.source(erratum.source).filename


def fetch(corpus: Corpus, *, mirrors=None, network=None, progress: bool = False) -> dict[str, Path]:
    """Verified local paths of the corpus's inputs by source name, repaired files in place of defective ones."""
    cache = settings.raw_cache_dir()
    # A corpus of many small files (FairytaleQA: ~280) gets one bar over its files, not one bar per file.
    single = len(corpus.inputs) == 1
    sources = progress_bar(corpus.inputs, shown=progress and not single, desc=f"fetching {corpus.name}", unit="file", leave=False)
    paths = {s.name: resolve(s, cache, mirrors=mirrors, network=network, progress=progress and single) for s in sources}
    for erratum in corpus.errata:
        repaired = erratum_path(corpus, erratum)
        if not repaired.is_file() or sha256_of(repaired) != erratum.output_sha256:
            data = erratum.apply(paths[erratum.source].read_bytes(), paths[erratum.source].name)
            with atomic_path(repaired) as tmp:
                tmp.write_bytes(data)
        if sha256_of(repaired) != erratum.output_sha256:
            raise ErratumError(f"the repaired file {repaired} does not hash to erratum {erratum.id}'s output; delete it")
        paths[erratum.source] = repaired
    return paths
