"""cohbench: corpora and tools for evaluating coherence and faithfulness of narrative summaries."""

from ._version import __version__


def load(config: str, split: str | None = None, release=None, version: str | None = None):
    """Load a built config (works from any working directory, offline). The release folder is `release`, else
    COHBENCH_RELEASE, else the first of ./cohbench of a checkout, ./cohbench, ~/.local/share/cohbench that holds one.
    `version` (X.Y.Z or a pattern such as `2.*.*`) refuses a config of any other version."""
    from .release.load import load as _load

    return _load(config, split=split, release=release, version=version)


def to_pandas(dataset):
    """One loaded split (`load(config, split)`) as a pandas DataFrame with labels, span types and categories as their
    names, None for no label (`Dataset.to_pandas()` gives the integers)."""
    from .release.load import to_pandas as _to_pandas

    return _to_pandas(dataset)


def build(config: str, *, progress: bool = True) -> dict:
    """Build one config from its pinned upstream files into the release folder, then rewrite the release's card and
    manifest; returns its stats."""
    from .release.build import build as _build
    from .release.index import write_index

    stats = _build(config, progress=progress)
    write_index()
    return stats


def fetch(name: str, *, progress: bool = True) -> dict:
    """Resolve and verify the upstream files of a corpus or config; returns local paths by source name."""
    from .corpora.fetch import fetch as _fetch
    from .corpora.registry import lookup

    return _fetch(lookup(name), progress=progress)


def list_configs() -> list[dict]:
    """Every config with its version, licence and built row counts (`cohbench list`)."""
    from .release.load import list_configs as _list

    return _list()


def verify() -> dict:
    """Re-hash every raw and release file against its recorded sha256 (`cohbench verify`): {"ok", "files": one
    result per file, "not_checked": what was left out and why}."""
    from .release.verify import verify as _verify

    return _verify()


def validate(configs: list[str] | None = None, *, docs: bool = True) -> dict:
    """Check the release with great-expectations (`cohbench validate`); one verdict per config and the
    release-wide leakage verdict, each with a one-line `line`."""
    from .validation import validate as _validate

    return _validate(configs, docs=docs)


def evaluate(config: str, predictions, *, split: str | None = None, threshold: float | None = None, release=None,
             samples: int = 1000, seed: int = 0) -> dict:
    """Score predictions (JSONL path or dicts keyed by release id) with the config's protocol (`cohbench evaluate`);
    each split's headline metric carries a 95% CI from `samples` seeded resamples of its documents."""
    from .evaluation import evaluate as _evaluate

    return _evaluate(config, predictions, split=split, threshold=threshold, release=release, samples=samples, seed=seed)


def leaderboard(scorers: list[str] | None = None, *, configs: list[str] | None = None, samples: int = 1000, seed: int = 0,
                strict: bool = False, output=None, release=None) -> dict:
    """Scorers (reference names, "baseline", prediction folders, "module:function") on every config they apply to,
    with 95% CIs, the paired difference from the best reference and the published figures (`cohbench leaderboard`)."""
    from .leaderboards.board import leaderboard as _leaderboard

    return _leaderboard(scorers, configs=configs, samples=samples, seed=seed, strict=strict, output=output, release=release)


def train() -> dict:
    """Train and score the bundled baseline on the release (`cohbench train`); returns its metrics."""
    from .baseline import train as _train

    return _train()


def gate() -> dict:
    """Check the baseline's scores against the floors of params.yaml (`cohbench gate`)."""
    from .baseline.gate import check

    return check()


def db(release=None):
    """A DuckDB connection with views over the release's Parquet files (`cohbench sql`; catalog/SQL.md)."""
    from .sql import db as _db
    from .statistics import declared_views

    return _db(release, declared=declared_views)


def agreement_statistics(config: str) -> dict:
    """Agreement and distribution statistics of one built config (`cohbench agreement CONFIG`)."""
    from .statistics import statistics

    return statistics(config)


def statistics_report(output=None) -> dict:
    """Write the statistics report (JSON, Markdown, plots) to `output` or catalog/stats (`cohbench report`)."""
    from .statistics.report import report

    return report(output)
