"""`cohbench build`: one config from its pinned upstream files into the release folder.

The `datasets` builder of the config's corpus (`hf_builder.builder_for`) runs the corpus's `parse` on verified local
files with the config's typed options, and `layout.write_config` writes what it yields, all or nothing, with the
account of every upstream record (built, or dropped by reason). A corpus that declares held-out narratives (the
leakage policy, `Corpus.held_out_texts`) has their fingerprints recorded in the stats as well: the one place they
are computed from the upstream files, so that `cohbench corrupt` checks for test-split overlap without them.
Sentence splits are kept in the release's `sentences` cache (`text.cached_splits`) and what the encoder makes in its
`embeddings` cache (`embedding_store`), both outside it (`settings.cache_dir`: the project's `.cache/` for its own
release, the user's cache for any other): the configs made from the same narratives, each built in its own
process, split them and encode their sentences once, and the train stage reads the vectors of every sentence they
encoded."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import settings
from ..display import datasets_bars
from ..corpora import HELD_OUT_FINGERPRINT, held_out_fingerprints
from ..errors import ReleaseError
from ..embedding_store import kept_embeddings
from ..text import cached_splits
from .layout import write_config
from ..corpora.registry import corpus_of



def build(config: str, *, corpus=None, release: Path | None = None, paths=None, progress: bool = True) -> dict:
    """Build one config into the release folder and return its stats (the card and manifest are `cohbench index`'s).
    Nothing is replaced unless all succeeds.

    `corpus` defaults to the registered owner of `config`; `paths` to the verified files `fetch` resolves."""
    import datasets

    from ..corpora.fetch import fetch
    from .hf_builder import builder_for

    release = release or settings.release_dir()
    corpus = corpus or corpus_of(config)
    spec = corpus.config(config)
    paths = {name: str(path) for name, path in (paths or fetch(corpus, progress=progress)).items()}
    options = spec.generator_options()
    with tempfile.TemporaryDirectory(prefix="cohbench-hf-") as cache, datasets_bars(progress), \
            cached_splits(settings.cache_dir("sentences", release)), \
            kept_embeddings(settings.cache_dir("embeddings", release)):
        builder = builder_for(corpus)(config_name=config, cache_dir=cache, paths=paths, options=options)
        try:
            builder.download_and_prepare(verification_mode="basic_checks")
        except datasets.exceptions.NonMatchingSplitsSizesError as error:
            raise ReleaseError(f"{config} did not build the split sizes its corpus declares ({error}); nothing was written") from None
        described = {
            "corpus": corpus.name,
            "licence": corpus.licence,
            "research_only": spec.research_only,
            **builder.account,
            "inputs": [{"name": s.name, "url": s.url, "sha256": s.sha256, "bytes": s.size, "licence": s.licence}
                       for s in corpus.inputs],
            "errata": [e.manifest_entry() for e in corpus.errata],
        }
        if corpus.held_out_texts:
            described["held_out"] = {"method": HELD_OUT_FINGERPRINT,
                                     "fingerprints": held_out_fingerprints(corpus, {name: Path(path) for name, path in paths.items()})}
        return write_config(release, config, builder.as_dataset(), described)
