"""Agreement and distribution statistics of the release, counted in SQL (DuckDB over the release views); Python only
turns the counts into Krippendorff's α (`alpha`) and percentages. Each kind of annotation is one declaration
(`kind.Kind`: its computation and SQL, Markdown, plots, assumptions, published figures) in a module named after it;
a config names its kind in the registry (`ConfigSpec.statistics`). `report` assembles them into the statistics
report."""

from __future__ import annotations

from pathlib import Path

from ..corpora import registry
from ..errors import CohbenchError
from ..release.layout import require_built
from ..release.versions import provenance
from ..sql import config_views, db, view_reference, views
# every kind declares itself at import, in the order the report states their assumptions
from . import error_spans, expert_ratings, summary_labels, generic  # noqa: F401  (isort: skip)
from .kind import declared_views, fetch, kind_of  # noqa: F401  (declared_views: for sql.db, once every kind is declared)


def corpus_of_view(con, config: str) -> str:
    found = fetch(con, f"SELECT DISTINCT corpus FROM {view_reference(config)}")
    if len(found) != 1:
        raise CohbenchError(f"config {config!r} holds records of {len(found)} corpora; expected one")
    return found[0][0]


def statistics(config: str, con=None, release: Path | None = None) -> dict:
    """Every statistic of one built config of the release (what `cohbench agreement CONFIG` prints), with the data
    they were computed on (`data`: release and config version, fingerprint)."""
    con = con or db(release)
    if config not in views(con):
        registry.spec(config)  # an unknown name: the closest registered one
        raise CohbenchError(f"config {config!r} is not built in the release; run `cohbench build {config}`")
    folder, stats = require_built(config, release)
    data = provenance(folder, {config: stats})
    corpus = corpus_of_view(con, config)
    return {"corpus": corpus, "data": {"release": data["release"], **data["configs"][config]}} | kind_of(config).compute(con, config)


def release_statistics(con=None, release: Path | None = None) -> dict:
    """`statistics` for every config built in the release."""
    con = con or db(release)
    return {config: statistics(config, con, release) for config in config_views(con)}
