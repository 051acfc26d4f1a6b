"""SQL over the release: a sandboxed, in-memory DuckDB connection with views over the release's records.

The connection is a sandbox: DuckDB reads each Parquet file from a sealed in-memory copy of the bytes checked against
the stats (a Linux memfd that nothing can write once sealed, not even root), allowed as the only paths it may open;
then file access, extensions and configuration are locked, so a query can read the release and nothing else and write
nowhere (`--output` is written by cohbench from the streamed result, not by DuckDB). The copies matter: DuckDB's
allowed paths would let a query overwrite the files it may read. Without memfd (not Linux) the records are copied
into in-memory tables instead. A memory limit (`COHBENCH_SQL_MEMORY`, default 4GB, at most the machine's memory)
bounds every query, with no spilling to disk; `process_memory_bound` also bounds `cohbench sql`'s whole process,
since DuckDB does not count every value against its limit (repeat('x', 2147483647) is one 2 GB string).

Views (documented with example queries in `catalog/SQL.md`):
- one per built config, named like the config (`"name"` quoting where it has a hyphen), one row per record;
- `records`: every built config together (they share one schema);
- `spans`, `sentences`, `ratings`, `corruptions`: the nested lists unnested into long tables, ClassLabel ints
  decoded to names (span type and category; `label_name` beside each 0/1 label);
- every view has `annotation`: `human` (annotators' labels) or `synthetic` (a config made by a corruption generator),
  so that a count never mixes the two unasked;
- the views a statistics kind declares (`db(declared=...)`), such as `snac_training`, SNaC's detector view: one row
  per sentence with the preceding summary text as context.

A result leaves as DuckDB shows it: csv, json and parquet carry as DuckDB's text the types that Arrow or Python would
change (`results._TEXT_IN`; the terminal table, DuckDB's own box, and the interactive prompt are the CLI's). A name
the result repeats is numbered (`a`, `a_1`) in every format, since a JSON object or a Parquet file holds a name once.

The package: `views` (the views' SQL), `connection` (`db`: the views over what a statement reads), `sandbox` (the
sealed copies, the locks, the memory bounds, Ctrl-C), `results` (a result out of the sandbox), `csv_text` (CSV in the
bytes pyarrow's writer wrote, without importing pyarrow), `errors` (the one place a DuckDB error becomes a one-line
`QueryError`).
"""

from __future__ import annotations

from ..errors import QueryError
from .connection import config_views, configs_read, db
from .errors import one_line, query_errors
from .results import FORMATS, query, relation_of, rows, shaped, stream_to, write
from .sandbox import interruptible, memory_limit, parse_size, process_memory_bound
from .views import LONG_VIEWS, config_name_refusal, literal, long_view, quoted, view_reference, views

__all__ = ["FORMATS", "LONG_VIEWS", "QueryError", "config_views", "configs_read", "db", "interruptible", "literal", "long_view",
           "memory_limit", "one_line", "parse_size", "process_memory_bound", "query", "query_errors", "quoted", "relation_of",
           "rows", "shaped", "stream_to", "view_reference", "views", "write"]
