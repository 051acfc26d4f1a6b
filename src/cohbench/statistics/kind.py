"""A statistics kind: what one kind of annotation is measured by, declared once (`declare(Kind(...))`): its
computation (which holds its SQL), its Markdown, its plots, the assumptions it rests on and the published figures it
stands beside. A config names its kind in the registry (`ConfigSpec.statistics`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..corpora import registry
from ..names import Registry
from ..sql import rows as query_rows

GENERIC = "generic"  # the kind of a config the registry does not know: it needs only the schema


@dataclass(frozen=True)
class Plot:
    name: str  # the file is <config>_<name>.png
    draw: Callable[[dict, object], None]  # (statistics, path)
    needs: str | None = None  # drawn only where the statistics hold rows under this key


@dataclass(frozen=True)
class Kind:
    name: str
    compute: Callable[[object, str], dict]  # (connection, config) -> the config's statistics
    markdown: Callable[[dict], list[str]]  # statistics -> the report's lines for the config
    plots: tuple[Plot, ...] = ()
    assumptions: tuple[str, ...] = ()  # what the statistics assume, stated once (the report prints them)
    # views the kind adds to the release's SQL (`cohbench sql`): name -> a function giving its SQL over the release views
    views: Mapping[str, Callable[[], str]] = field(default_factory=dict)


KINDS: Registry[Kind] = Registry("statistics kind")


def declare(kind: Kind) -> Kind:
    return KINDS.register(kind.name, kind)


def declared_views() -> dict[str, str]:
    """The views every kind declares, by name, for `sql.db(declared=...)`."""
    return {name: sql() for kind in KINDS.values() for name, sql in kind.views.items()}


def kind_of(config: str) -> Kind:
    """The kind a config declares (`ConfigSpec.statistics`); a config the registry does not know (a release built
    by other code) gets the generic one."""
    return KINDS[registry.spec(config).statistics if registry.is_config(config) else GENERIC]


def fetch(con, sql: str) -> list[tuple]:
    """The rows of one statistics query, as tuples."""
    return query_rows(sql, con)[1]


def rows(con, sql: str) -> list[dict]:
    """The rows of one statistics query, as dicts by column name."""
    columns, values = query_rows(sql, con)
    return [dict(zip(columns, row)) for row in values]
