"""`cohbench derive`: a changed copy of a config, made by one SQL query over the release's views (rows kept by a
WHERE, fields changed by `SELECT * REPLACE (...)`), written into a new folder laid out like a release by the release's
one writer and indexed (card, croissant.json, manifest.json), so that `verify`, `sql`, `evaluate`, `load` and `show`
read it as they read a release. Its stats name the query and the version and fingerprint of every config it read;
its version is a development version (`0.0.0+dev.<fingerprint>`), never one of the release's."""

from __future__ import annotations

from pathlib import Path

from . import settings, sql
from .atomic import atomic_dir
from .display import datasets_bars
from .errors import CohbenchError
from .release.layout import require_release
from .release.versions import provenance
from .schema import SPLITS


def derive(name: str, query: str, out: Path, release: Path | None = None) -> dict:
    """Write the rows `query` returns as config `name` into the new folder `out`; returns its stats' summary."""
    import datasets
    import pyarrow as pa
    import pyarrow.compute as pc

    from .release.index import write_index
    from .release.layout import write_config
    from .schema import ARROW_SCHEMA, FEATURES

    refusal = sql.config_name_refusal(name)
    if refusal:
        raise CohbenchError(f"{name!r} {refusal}")
    target = settings.user_output(out, release)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise CohbenchError(f"{out} exists and is not empty; derive into a new or empty folder")
    folder, _ = require_release(release)
    sources, built = sql.configs_read(folder, query)  # the configs the query reads (every one, for a query of a long view)
    sources = sorted(sources)
    table = sql.query(query, sql.db(folder, statement=query))
    missing = [f for f in ARROW_SCHEMA.names if f not in table.column_names]
    if missing:
        raise CohbenchError(f"the query must return every field of the schema (SELECT *, or SELECT * REPLACE (...) to change one); "
                            f"missing: {', '.join(missing)}")
    try:
        table = table.select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise CohbenchError(f"the query's columns do not fit the schema ({str(error).splitlines()[0][:200]})") from None
    present = _checked_splits(table)
    table = table.set_column(ARROW_SCHEMA.names.index("config"), "config", pa.repeat(pa.scalar(name, pa.string()), table.num_rows))
    read = provenance(folder, {c: built[c] for c in sources})
    described = {
        "corpus": built[sources[0]]["corpus"] if len({built[c]["corpus"] for c in sources}) == 1 else "derived",
        "licence": "; ".join(sorted({str(built[c].get("licence", "")) for c in sources})),
        "research_only": any(built[c].get("research_only") for c in sources),
        "upstream_records": table.num_rows, "built_records": table.num_rows, "dropped": {}, "errata": [],
        "inputs": [], "notes": {"derived_from": {"release": read["release"], "configs": read["configs"], "query": query}},
    }  # fmt: skip
    splits = {}
    for split in present:
        rows = table.filter(pc.equal(table.column("split"), split))
        rows = rows.take(pc.sort_indices(rows, [("id", "ascending")]))  # the order a build writes
        splits[split] = datasets.Dataset(rows.cast(FEATURES.arrow_schema))
    with atomic_dir(target) as tmp, datasets_bars(shown=True):  # HF's Parquet bar on a terminal, not in a log
        stats = write_config(tmp, name, splits, described)
        write_index(tmp)
    return {"path": str(target), "config": name, "rows": {s: f["rows"] for s, f in stats["files"].items()},
            "fingerprint": stats["fingerprint"], "derived_from": read["configs"]}


def _checked_splits(table) -> list[str]:
    """The splits the query's rows hold, in the vocabulary's order, once the rows are found fit to write."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        raise CohbenchError("the query returned no rows; nothing to write")
    ids, splits = table.column("id"), table.column("split")
    if ids.null_count or splits.null_count:
        raise CohbenchError("every row needs an id and a split; the query returned nulls")
    if pc.count_distinct(ids).as_py() != table.num_rows:
        raise CohbenchError("ids must be unique; the query returned the same id twice (a join or UNION ALL?)")
    sentences = pc.fill_null(pc.list_value_length(table.column("sentences")), 0)  # no sentences: no labels either
    for field, units in (("sentence_labels", sentences), ("sentence_labels_min2votes", sentences),
                         ("gap_labels", pc.max_element_wise(pc.subtract(sentences, 1), 0))):
        given = pc.fill_null(pc.list_value_length(table.column(field)), 0)
        if not pc.all(pc.or_(pc.equal(given, 0), pc.equal(given, units))).as_py():  # a reader pairs them one by one
            raise CohbenchError(f"every row's {field} must give one label per {'gap between sentences' if field == 'gap_labels' else 'sentence'} "
                                "(or none); the query returned rows where they disagree with its sentences")
    present = set(pc.unique(splits).to_pylist())  # no Python string per row
    unknown = sorted(present - set(SPLITS))
    if unknown:
        raise CohbenchError(f"split {unknown[0]!r} is not one of {', '.join(SPLITS)}")
    return sorted(present, key=SPLITS.index)
