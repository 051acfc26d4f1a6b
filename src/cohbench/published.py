"""The published figures cohbench compares with, declared once in `catalog/published.yaml` with the conditions each
was measured under (paper, table, split, training-set size, whether the paper's test labels were checked by people),
one comparability note per config, and per paper and config how its figures compare with cohbench's (each figure is
flagged same data and split, same data and other split, or other data)."""

from __future__ import annotations

import functools

from . import settings


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    import yaml

    return yaml.safe_load(settings.catalog_file("published.yaml").read_text(encoding="utf-8"))


FLAGS = ("same data and split", "same data, other split", "other data")


def figures(config: str, split: str = "test") -> list[dict]:
    """The published figures on `config`, each with how it compares with cohbench's figure on `split`:
    `comparability` (one of FLAGS) and `differs` (what else differs, as catalog/published.yaml declares it)."""
    return [f | _compared(f, split) for f in _table()["figures"] if f["config"] == config]


def _compared(figure: dict, split: str) -> dict:
    declared = [c for c in _table()["comparability"] if (c["paper"], c["config"]) == (figure["paper"], figure["config"])]
    if len(declared) != 1 or declared[0].get("data") not in ("same", "other") or declared[0].get("split") not in ("same", "other"):
        raise ValueError(f"catalog/published.yaml must declare the comparability of {figure['paper']} on {figure['config']} "
                         "once, with data and split each same or other")
    (entry,) = declared
    if entry["data"] == "other":
        flag = FLAGS[2]
    else:
        flag = FLAGS[0] if entry["split"] == "same" and figure["split"] == split else FLAGS[1]
    return {"comparability": flag, "differs": entry["differs"] or None}


def agreement(config: str) -> list[dict]:
    """The papers' agreement figures on `config` (Krippendorff's alpha, two-agree %), which the statistics report
    sets beside cohbench's."""
    return [f for f in _table()["agreement"] if f["config"] == config]


def note(config: str) -> str | None:
    return _table()["notes"].get(config)


def first(config: str, metric: str) -> dict | None:
    """The first published figure of `metric` on `config` that the paper gives (the table's order puts the model
    closest to cohbench's baseline first), with its comparability."""
    return next((f for f in figures(config) if f["metric"] == metric and f["value"] is not None), None)


def paper_metric(config: str, split: str) -> tuple[str, list[dict]] | None:
    """The metric the papers report on `config`'s `split` (that of its first figure with a value, in the table's
    order), and every published figure of it there: what a leaderboard cell sets beside the protocol's headline."""
    given = [f for f in figures(config, split) if f["value"] is not None and f["split"] == split]
    if not given:
        return None
    metric = given[0]["metric"]
    return metric, [f for f in given if f["metric"] == metric]
