"""Run the suites with great-expectations (1.x, ephemeral context) and turn its results into verdicts.

Data Docs are built from the same ephemeral context into a site folder we name (the default site of an
ephemeral context is a throw-away temporary folder)."""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

from .suites import Table

EXAMPLES = 5  # offending rows named in a failure message


def _context(docs_dir: Path | None):
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    for site in list(context.list_data_docs_sites()):
        context.delete_data_docs_site(site)
    if docs_dir is not None:
        context.add_data_docs_site(
            "cohbench",
            {
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
    return gx, context


def _example(entry: dict, index: list[str], columns: list[str]) -> str:
    if index[:3] == ["statistic", "expected", "actual"]:
        return f"{entry['statistic']}: expected {entry['expected']}, found {entry['actual']}"
    named = " ".join(str(entry[c]) if i == 0 else f"{c}={entry[c]}" for i, c in enumerate(index) if c in entry)
    shown = [f"{c}={entry[c]}" for c in columns if c in entry and c not in index and not isinstance(entry[c], bool)]
    return named + (f" ({', '.join(shown)})" if shown else "")


def _check_result(table: Table, result: dict) -> dict:
    config = result["expectation_config"]
    kwargs, details = config["kwargs"], result.get("result") or {}
    column = kwargs.get("column") or (f"{kwargs['column_A']}/{kwargs['column_B']}" if "column_A" in kwargs else None)
    entries = details.get("partial_unexpected_index_list") or []
    checked = [kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs]
    out = {
        "table": table.name,
        "check": config["meta"]["check"],
        "expectation": config["type"],
        "column": column,
        "success": bool(result["success"]),
        "rows_checked": details.get("element_count"),
        "unexpected": details.get("unexpected_count"),
        "examples": [_example(e, table.index, checked) for e in entries[:EXAMPLES]],
    }
    if result.get("exception_info", {}).get("raised_exception"):
        out["error"] = result["exception_info"]["exception_message"]
    return out


def run(tables: list[Table], docs_dir: Path | None = None) -> list[dict]:
    """Validate every table; one result per expectation. Data Docs go to `docs_dir` when given."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gx, context = _context(docs_dir)
        source = context.data_sources.add_pandas("cohbench")
        results = []
        for table in tables:
            suite = gx.ExpectationSuite(name=table.name, expectations=list(table.expectations))
            suite = context.suites.add(suite)
            batch = source.add_dataframe_asset(table.name).add_batch_definition_whole_dataframe("release")
            definition = context.validation_definitions.add(gx.ValidationDefinition(name=table.name, data=batch, suite=suite))
            outcome = definition.run(
                batch_parameters={"dataframe": table.frame},
                result_format={
                    "result_format": "SUMMARY",
                    "unexpected_index_column_names": table.index,
                    "partial_unexpected_count": 20,
                },
            )
            results += [_check_result(table, r) for r in json.loads(json.dumps(outcome.to_json_dict()))["results"]]
        if docs_dir is not None:
            context.build_data_docs()
    return results
