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
- `snac_training`: SNaC's detector view, one row per sentence with the preceding summary text as context.

A result leaves as DuckDB shows it: the terminal table is DuckDB's own box, and csv, json and parquet carry as
DuckDB's text the types that Arrow or Python would change (`_TEXT_IN`). A name the result repeats is numbered
(`a`, `a_1`) in every format, since a JSON object or a Parquet file holds a name once.
"""

from __future__ import annotations

import code
import contextlib
import io
import json
import os
import re
import signal
import socket
import sys
import threading
import weakref
from decimal import Decimal
from pathlib import Path

import duckdb

from . import jsonout, settings
from .atomic import atomic_path
from .errors import CohbenchError, ReleaseError
from .release.layout import annotation_of, data_bytes, require_release
from .schema import BINARY_LABELS, CATEGORIES, ERROR_TYPES, GAP_LABELS

LONG_VIEWS = ("records", "spans", "sentences", "ratings", "corruptions", "snac_training")
FORMATS = ("csv", "json", "parquet")
DEFAULT_MEMORY_LIMIT = "4GB"
BATCH_ROWS = 10_000
MAX_QUERY_CHARS = 4_000_000  # a query text read from stdin; more is not a query
MAX_SHOWN_ROWS = 100_000  # rows of a terminal table; --format and --output give every row
_DATA_SCHEMA = "release_data"  # the in-memory tables where there is no memfd; users query the views over them


class QueryError(CohbenchError):
    """A SQL query failed (syntax, unknown view or column, type error)."""


def literal(text: str) -> str:
    """A SQL string literal of `text` (quotes doubled): how generated SQL names a value."""
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _names(values) -> str:
    return "[" + ", ".join(literal(v) for v in values) + "]"


def _parquet(paths: list[Path]) -> str:
    return f"read_parquet([{', '.join(literal(str(p)) for p in paths)}])"


TYPE_NAMES = _names(ERROR_TYPES)
CATEGORY_NAMES = _names(CATEGORIES)
LABEL_NAMES = _names(BINARY_LABELS)  # indexed by label + 1: -1 (no label) gives NULL
GAP_NAMES = _names(GAP_LABELS)

# Each long view reads `records` (its `__SOURCE__`), so it covers whichever configs are built and is empty where
# none applies; `long_view` gives the same rows for one config, reading only that config's rows.
_LONG_VIEW_SQL = {
    "spans": f"""
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
               u.i - 1 AS span_index, s.segment, s.start, s."end", s.first_sentence, s.last_sentence,
               r.sentences[s.first_sentence + 1] AS sentence, s.text,
               s.type AS type_id, {TYPE_NAMES}[s.type + 1] AS type,
               {CATEGORY_NAMES}[s.category + 1] AS category,
               s.votes, s.annotator, s.antecedents, s.resolved, s.resolution
        FROM __SOURCE__ r, UNNEST(r.spans) WITH ORDINALITY AS u(s, i)""",
    "sentences": f"""
        SELECT config, corpus, record_id, split, annotation, doc_id, system, system_name, sentence_index, text, segment,
               sentence_labels[sentence_index + 1] AS label,
               {LABEL_NAMES}[sentence_labels[sentence_index + 1] + 1] AS label_name,
               sentence_labels_min2votes[sentence_index + 1] AS label_min2votes,
               segment_labels[segment + 1] AS segment_label,
               segment_labels_min2votes[segment + 1] AS segment_label_min2votes,
               gap_labels[sentence_index + 1] AS gap_after_label,
               {GAP_NAMES}[gap_labels[sentence_index + 1] + 1] AS gap_after_label_name,
               record_label
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
                   u.i - 1 AS sentence_index, u.text, r.sentence_segments[u.i] AS segment,
                   r.sentence_labels, r.sentence_labels_min2votes, r.segment_labels, r.segment_labels_min2votes,
                   r.gap_labels, r.label AS record_label
            FROM __SOURCE__ r, UNNEST(r.sentences) WITH ORDINALITY AS u(text, i)
        )""",
    "ratings": f"""
        SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system, r.system_name,
               r.system_extractive, g.annotator, g.annotator_type, g.dimension, g.score
        FROM __SOURCE__ r, UNNEST(r.ratings) AS u(g)""",
    "corruptions": f"""
        SELECT config, corpus, record_id, split, annotation, doc_id, label,
               {LABEL_NAMES}[label + 1] AS label_name, generator, seed, source_id,
               position_index, c.positions[position_index + 1] AS position,
               c.inserted_ids[position_index + 1] AS inserted_id,
               c.similarities[position_index + 1] AS similarity,
               c.ranks[position_index + 1] AS rank
        FROM (
            SELECT r.config, r.corpus, r.id AS record_id, r.split, r.annotation, r.doc_id, r.label, r.corruption AS c,
                   r.corruption.generator, r.corruption.seed, r.corruption.source_id,
                   -- a corruption that altered no position still gets one row, so every record is seen
                   UNNEST(CASE WHEN coalesce(len(r.corruption.positions), 0) = 0 THEN [NULL::BIGINT]
                               ELSE range(len(r.corruption.positions)) END) AS position_index
            FROM __SOURCE__ r
            WHERE r.corruption IS NOT NULL
        )""",
    # The same examples as `cohbench.builders.snac.sentence_examples` (the paper's §5 unit): context = the summary's
    # preceding sentences joined by spaces; error_types = coherence types of the spans touching the sentence.
    "snac_training": f"""
        SELECT r.config, r.id || '/' || (u.i - 1) AS id, r.id AS record_id, r.split, r.annotation, r.doc_id, r.system,
               u.i - 1 AS sentence_index, r.sentence_segments[u.i] AS segment,
               array_to_string(list_slice(r.sentences, 1, u.i - 1), ' ') AS context,
               u.sentence, r.sentence_labels[u.i] AS label, {LABEL_NAMES}[r.sentence_labels[u.i] + 1] AS label_name,
               r.sentence_labels_min2votes[u.i] AS label_min2votes,
               coalesce(t.error_types, []) AS error_types
        FROM records r, UNNEST(r.sentences) WITH ORDINALITY AS u(sentence, i)
        LEFT JOIN (
            SELECT record_id, sentence_index,
                   list_transform(list_sort(list_distinct(list(type_id))), lambda t: {TYPE_NAMES}[t + 1]) AS error_types
            FROM (
                SELECT record_id, type_id, UNNEST(range(first_sentence, last_sentence + 1)) AS sentence_index
                FROM spans
                WHERE corpus = 'snac' AND category = 'coherence' AND first_sentence IS NOT NULL AND last_sentence IS NOT NULL
            )
            GROUP BY record_id, sentence_index
        ) t ON t.record_id = r.id AND t.sentence_index = u.i - 1
        WHERE r.corpus = 'snac'""",
}


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(b|bytes?|[kmgt]b?|[kmgt]ib)\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """The bytes of a memory size such as 4GB, 500MB or 1.5GiB (KB, MB, GB, TB count powers of 1000; KiB, MiB,
    GiB, TiB of 1024). Our own parser: DuckDB reads -1 as no limit at all, and 80% as 80 bytes."""
    match = _SIZE.fullmatch(text)
    if match:
        unit = match[2].lower()
        power = 0 if unit.startswith("b") else "kmgt".index(unit[0]) + 1
        size = int(float(match[1]) * (1024 if "i" in unit else 1000) ** power)
        if size > 0:
            return size
    raise ValueError(f"memory limit {text!r} is not a positive size; use e.g. 4GB or 500MB")


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


MIN_MEMORY_LIMIT = 16 * 2**20


def _too_small(memory: int) -> QueryError:
    return QueryError(f"a memory limit of {memory:,} B is too small for DuckDB; give at least a few MB (e.g. 64MB)")


def memory_limit(requested: int | str | None = None) -> int:
    """The bytes a query may use: `requested`, else COHBENCH_SQL_MEMORY, else 4GB; at most the machine's memory
    (a note on stderr says so), since a limit beyond it would not stop a runaway query before the system does."""
    if requested is None:
        try:
            requested = parse_size(os.environ.get("COHBENCH_SQL_MEMORY") or DEFAULT_MEMORY_LIMIT)
        except ValueError as error:
            raise QueryError(f"COHBENCH_SQL_MEMORY: {error}") from None
    elif isinstance(requested, str):
        try:
            requested = parse_size(requested)
        except ValueError as error:
            raise QueryError(str(error)) from None
    if requested < MIN_MEMORY_LIMIT:  # below this DuckDB fails at SET or at its first block, as the process's state has it
        raise _too_small(requested)
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if requested <= machine:
        return requested
    print(f"cohbench: note: a memory limit of {_gib(requested)} is more than this machine's {_gib(machine)}; "
          f"using {_gib(machine)}", file=sys.stderr)
    return machine


@contextlib.contextmanager
def process_memory_bound(memory: int):
    """Within the block, this process may grow by at most `memory` plus as much again (at least 256 MiB), for what
    DuckDB does not count against its limit (one huge string) and for the result being written: its data segment
    (RLIMIT_DATA) is bounded, so an allocation beyond it fails as an out-of-memory error, one line, instead of growing
    until the system stops it. Where /proc or the limit is missing (not Linux), nothing is bounded."""
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as status:
            used = int(re.search(r"^VmData:\s+(\d+) kB", status.read(), re.MULTILINE)[1]) * 1024
    except (ImportError, OSError, TypeError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    bound = min(limit for limit in (used + memory + max(memory, 256 * 2**20), soft, hard) if limit != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_DATA, (bound, hard))
    try:
        yield
    except MemoryError:
        raise QueryError(f"the query needs more memory than the limit of {_gib(memory)} allows (--memory-limit or "
                         "COHBENCH_SQL_MEMORY)") from None
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _tables_named(con: duckdb.DuckDBPyConnection, statement: str | None) -> set[str] | None:
    """The tables a SELECT statement names, from DuckDB's parser (`json_serialize_sql`, which parses and never runs a
    statement; `duckdb.get_table_names` runs some: EXPORT DATABASE writes a folder). None for anything but a SELECT."""
    if statement is None:
        return None
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [statement]).fetchone()[0])
    except duckdb.Error:
        return None
    if tree.get("error"):
        return None
    names, todo = set(), [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                names.add(node.get("table_name"))
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return names


# Long views whose rows come only from records holding that list, counted per split in stats/<config>.json.
_COUNTED_IN_STATS = ("spans", "ratings")


def _needed(built: dict[str, dict], names: set[str] | None) -> list[str]:
    """The configs a statement naming `names` reads, so that a query loads only those: the config views it names, and
    for `spans` or `ratings` the configs whose stats count any (the README's span count needs SNaC and the synthetic
    spans, not the news ratings). Every config when it names another view, or is not a plain SELECT (None)."""
    if not names:
        return list(built)
    wanted = set()
    for name in names:
        if name in built:
            wanted.add(name)
        elif name in _COUNTED_IN_STATS:
            wanted |= {config for config, stats in built.items() if any(s.get(name) for s in stats["splits"].values())}
        else:
            return list(built)
    wanted = wanted or {next(iter(built))}  # the views need one config's columns even where no config has rows
    return [config for config in built if config in wanted]


def configs_read(release: Path | None, statement: str) -> tuple[list[str], dict[str, dict]]:
    """The built configs `statement` reads (`_needed`: every one for a query of another view) and the release's stats."""
    release, built = require_release(release)
    con = duckdb.connect()
    try:
        return _needed(built, _tables_named(con, statement)), built
    finally:
        con.close()


def db(release: Path | None = None, *, memory: int | str | None = None, statement: str | None = None) -> duckdb.DuckDBPyConnection:
    """A sandboxed in-memory DuckDB connection with a view per built config and the long views over them; with
    `statement`, only what that statement reads (the views of the configs it names, when it names only those)."""
    release, built = require_release(release)
    con = duckdb.connect()
    try:
        configs = _needed(built, _tables_named(con, statement))
        clash = sorted(set(configs) & set(LONG_VIEWS))
        if clash:
            raise ReleaseError(f"config {clash[0]!r} has the name of a SQL view; rename the config")
        con.execute("SET enable_progress_bar = false")  # long statistics queries would draw bars over the output
        con.execute("SET TimeZone = 'UTC'")  # times with a zone are shown alike on every machine
        for config, source in _sources(con, release, {config: built[config] for config in configs}).items():
            annotation = literal(annotation_of(built[config]))
            try:
                con.execute(f"CREATE VIEW {_ident(config)} AS SELECT *, {annotation} AS annotation FROM {source}")
            except duckdb.Error as error:
                raise ReleaseError(f"{config}'s Parquet files cannot be read ({_one_line(error, con)}); run `cohbench verify`") from None
        union = " UNION ALL ".join(f"SELECT * FROM {_ident(config)}" for config in configs)
        con.execute(f"CREATE VIEW records AS {union}")
        for name, body in _LONG_VIEW_SQL.items():
            con.execute(f"CREATE VIEW {name} AS {body.replace('__SOURCE__', 'records')}")
        _lock(con, memory_limit(memory))
    except BaseException:
        con.close()
        raise
    return con


def _sources(con: duckdb.DuckDBPyConnection, release: Path, built: dict[str, dict]) -> dict[str, str]:
    """What each config's view reads: its checked Parquet bytes, as sealed memfd copies that are the only paths
    DuckDB may open (closed with the connection); without memfd, an in-memory table holding its records."""
    if not (hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")):
        con.execute(f"CREATE SCHEMA {_DATA_SCHEMA}")
        for config, stats in built.items():
            data_bytes(release, config, stats)  # the check; DuckDB reads the files by path below
            paths = [release / entry["path"] for entry in stats["files"].values()]
            try:
                con.execute(f"CREATE TABLE {_DATA_SCHEMA}.{_ident(config)} AS SELECT * FROM {_parquet(paths)}")
            except duckdb.Error as error:
                raise ReleaseError(f"{config}'s Parquet files cannot be read ({_one_line(error, con)}); run `cohbench verify`") from None
        return {config: f"{_DATA_SCHEMA}.{_ident(config)}" for config in built}
    descriptors: list[int] = []
    weakref.finalize(con, _close_all, descriptors)
    sources = {config: _parquet([_sealed_copy(data, f"{config}-{split}", descriptors)
                                 for split, data in data_bytes(release, config, stats).items()])
               for config, stats in built.items()}  # fmt: skip
    con.execute(f"SET allowed_paths = {_names(f'/proc/self/fd/{fd}' for fd in descriptors)}")
    return sources


def _sealed_copy(data: bytes, name: str, descriptors: list[int]) -> str:
    """A memfd holding `data`, sealed so that nothing can write, grow or shrink it; the path DuckDB opens it by."""
    import fcntl

    fd = os.memfd_create(f"cohbench-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    descriptors.append(fd)
    with open(fd, "wb", closefd=False) as sink:
        sink.write(data)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return f"/proc/self/fd/{fd}"


def _close_all(descriptors: list[int]) -> None:
    for fd in descriptors:
        os.close(fd)


def _lock(con: duckdb.DuckDBPyConnection, memory: int) -> None:
    try:
        con.execute(f"SET memory_limit = '{memory}B'")
    except duckdb.Error:
        raise _too_small(memory) from None
    con.execute("SET temp_directory = ''")  # no spilling: a query over the limit fails instead of writing files
    con.execute("SET autoinstall_known_extensions = false")  # nothing is downloaded or loaded on demand
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")  # no files but the allowed copies, no ATTACH, no extensions
    con.execute("SET lock_configuration = true")  # and no statement can turn that back on


def long_view(name: str, config: str) -> str:
    """A long view (spans, sentences, ratings, corruptions) of one config, as a parenthesised relation to select
    from: the same rows as `SELECT * FROM <name> WHERE config = ...`, without reading the other configs' rows."""
    if name not in ("spans", "sentences", "ratings", "corruptions"):
        raise QueryError(f"no per-config form of view {name!r}")
    return f"({_LONG_VIEW_SQL[name].replace('__SOURCE__', view_reference(config))})"


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]


def config_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The per-config views of a connection made by `db` (every view that is not a long view)."""
    return [name for name in views(con) if name not in LONG_VIEWS]


def _one_line(error: duckdb.Error, con: duckdb.DuckDBPyConnection) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = lines[0] if lines else type(error).__name__
    hint = next((line for line in lines[1:] if line.startswith("Did you mean")), None)
    if hint and "pg_" not in hint and "duckdb_" not in hint:  # DuckDB suggests its own catalog tables otherwise
        message += " " + hint
    if isinstance(error, duckdb.CatalogException):
        message += f" (views: {', '.join(views(con))})"
    if isinstance(error, duckdb.OutOfMemoryException):
        message += " (the limit is --memory-limit or COHBENCH_SQL_MEMORY)"
    near = re.search(r'syntax error at or near "(\w+)"', message)
    if near and near[1].lower() in _reserved_columns(con):
        message += f' ({near[1]} is a reserved word in SQL: quote the column name, "{near[1]}")'
    return message


def _reserved_columns(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Column names of the views that SQL reserves (`references`, `end`), which a query must quote."""
    return {name for (name,) in con.execute(
        "SELECT DISTINCT c.column_name FROM duckdb_columns() c JOIN duckdb_keywords() k ON lower(c.column_name) = k.keyword_name "
        "WHERE k.keyword_category = 'reserved'").fetchall()}  # fmt: skip


def _statement(sql: str) -> str:
    statement = sql.strip().rstrip(";").strip()
    if not statement:
        raise QueryError("the query is empty; give one SQL statement, e.g. SELECT count(*) FROM records")
    return statement


@contextlib.contextmanager
def interruptible(*cons: duckdb.DuckDBPyConnection):
    """Ctrl-C interrupts the queries running on `cons` and ends the block with KeyboardInterrupt.

    Python runs a signal handler only between bytecodes of the main thread, which a long DuckDB call may not reach
    for minutes; so the C-level handler's wake-up byte wakes a watchdog thread instead, which interrupts the
    connections until the block ends (an interrupt stops only the statement running at that moment, and the next
    batch of a streamed result is a new one)."""
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: None)  # the watchdog acts; Python code just goes on
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    previous_fd = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
    fired, done = threading.Event(), threading.Event()

    def watch():
        while not done.is_set():
            if signal.SIGINT not in receiver.recv(64):
                continue  # another signal's byte, or the block ending
            fired.set()
            while not done.wait(0.05):
                for con in cons:
                    con.interrupt()

    watchdog = threading.Thread(target=watch, name="cohbench-sql-interrupt", daemon=True)
    watchdog.start()
    try:
        yield
    except (duckdb.Error, QueryError) as error:
        if fired.is_set() or isinstance(error, duckdb.InterruptException):
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous)
        done.set()
        sender.send(b"\0")
        watchdog.join()
        receiver.close()
        sender.close()
    if fired.is_set():  # Ctrl-C while Python code ran: stop all the same
        raise KeyboardInterrupt


def _relation(sql: str, con: duckdb.DuckDBPyConnection):
    statement = _statement(sql)
    try:
        count = len(con.extract_statements(statement))  # parsed, not run
        if count > 1:  # DuckDB would run every one and return only the last one's rows
            raise QueryError(f"give one SQL statement; this query has {count} (separated by ';')")
        return con.sql(statement)
    except duckdb.InterruptException:
        raise
    except duckdb.Error as error:
        raise QueryError(_one_line(error, con)) from None


# The DuckDB types whose values a format would change, carried as DuckDB's text instead. Arrow hands over an unsigned
# 128-bit integer as -1, a time's zone dropped and bits as bytes (every format but the terminal table goes through
# Arrow); pyarrow's CSV writer and Python's JSON have no form for an interval, bytes, an integer beyond 128 bits or an
# infinite date, and Python none for dates beyond the year 9999 (dates and times are therefore all text there).
_LOST_IN_ARROW = frozenset({"bit", "uhugeint", "time with time zone"})
_TEXT_IN = {
    "table": frozenset(),
    "parquet": _LOST_IN_ARROW,
    "csv": _LOST_IN_ARROW | {"interval", "blob", "bignum", "date", "time", "time_ns", "timestamp", "timestamp_s",
                             "timestamp_ms", "timestamp_ns", "timestamp with time zone"},
}  # fmt: skip
_TEXT_IN["json"] = _TEXT_IN["csv"]


def _as_text(kind, text: frozenset) -> str | None:
    """`kind` as a SQL type with each type in `text` made VARCHAR, inside lists, structs, maps and unions too; None
    where nothing changes."""
    if kind.id in text:
        return "VARCHAR"
    if kind.id not in ("list", "array", "struct", "map", "union"):
        return None
    if kind.id in ("list", "array"):
        child = _as_text(kind.children[0][1], text)
        return None if child is None else f"{child}[]" if kind.id == "list" else f"{child}[{kind.children[1][1]}]"
    fields = [(name, child, _as_text(child, text)) for name, child in kind.children if kind.id != "union" or name]
    if all(new is None for _, _, new in fields):
        return None
    if kind.id == "map":
        return f"MAP({', '.join(str(new or child) for _, child, new in fields)})"
    return f"{kind.id.upper()}({', '.join(f'{_ident(name)} {new or child}' for name, child, new in fields)})"


def _distinct(names: list[str]) -> list[str]:
    """The names with each repeat numbered (`a`, `a_1`, `a_1_1`), compared without case, as DuckDB compares them."""
    taken, out = set(), []
    for name in names:
        new, n = name, 0
        while new.lower() in taken:
            n += 1
            new = f"{name}_{n}"
        taken.add(new.lower())
        out.append(new)
    return out


def _shaped(relation, fmt: str):
    """The relation as `fmt` writes it: distinct column names (a note on stderr names the renamed ones) and the
    types of `_TEXT_IN[fmt]` as DuckDB's text."""
    names = _distinct(relation.columns)
    renamed = [f"{new} ({old})" for old, new in zip(relation.columns, names) if new != old]
    if renamed:
        print(f"cohbench: note: the result repeats column names; written as {', '.join(renamed)}", file=sys.stderr)
    casts = [_as_text(kind, _TEXT_IN[fmt]) for kind in relation.types]
    if not renamed and not any(casts):
        return relation
    return relation.project(", ".join(f"{f'CAST(#{i} AS {cast})' if cast else f'#{i}'} AS {_ident(name)}"
                                      for i, (name, cast) in enumerate(zip(names, casts), 1)))  # fmt: skip


def _batches(relation, con: duckdb.DuckDBPyConnection, rows: int = BATCH_ROWS):
    """The relation's rows as Arrow record batches, computed as they are read. A failure while the stream runs (an
    interrupt, memory) reaches pyarrow as its own error: it becomes a one-line `QueryError` too."""
    import pyarrow as pa

    try:
        reader = relation.to_arrow_reader(rows)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            yield batch
    except duckdb.InterruptException:
        raise
    except (duckdb.Error, pa.ArrowException, OSError) as error:
        raise QueryError(_one_line(error, con)) from None


def query(sql: str, con: duckdb.DuckDBPyConnection | None = None):
    """Run one SQL statement; returns a pyarrow Table. Errors become one-line `QueryError`s."""
    import pyarrow as pa

    con = con or db()
    relation = _relation(sql, con)
    try:
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.InterruptException:
        raise
    except duckdb.Error as error:
        raise QueryError(_one_line(error, con)) from None


def rows(sql: str, con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple]]:
    """Column names and rows of one statement, as Python values the way DuckDB gives them (a HUGEINT stays an int):
    for the statistics' own queries. Errors become one-line `QueryError`s."""
    relation = _relation(sql, con)
    try:
        return relation.columns, relation.fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error as error:
        raise QueryError(_one_line(error, con)) from None


def write(sql: str, output: Path, fmt: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Write a query's result to `output` as csv, json (an array of objects) or parquet; returns the row count.
    `output` may not lie inside the release. The sandbox cannot write, so csv and json are written as on stdout, and
    parquet streams, batch by batch, into a second connection that runs only this fixed COPY."""
    if fmt not in FORMATS:
        raise QueryError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    output = settings.user_output(output)
    con = con or db()
    relation = _relation(sql, con)
    if relation is None:
        raise QueryError("the statement returns no rows to write; give a SELECT")
    relation = _shaped(relation, fmt)
    if fmt != "parquet":
        if fmt == "csv":
            _refuse_nested_in_csv(relation)
        with atomic_path(output) as tmp, open(tmp, "wb") as sink, interruptible(con):
            return _write_rows(_batches(relation, con), sink, fmt)
    writer = duckdb.connect()
    writer.execute("SET enable_progress_bar = false")
    with atomic_path(output) as tmp, interruptible(con, writer):
        try:
            writer.register("result", relation.to_arrow_reader(BATCH_ROWS))
            (rows,) = writer.execute(f"COPY (SELECT * FROM result) TO {literal(str(tmp))} (FORMAT parquet)").fetchone()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as error:
            raise QueryError(_one_line(error, con)) from None
    return rows


def stream_to(sql: str, sink, fmt: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Write a query's result to a binary stream (stdout) as csv or json, batch by batch; returns the row count."""
    con = con or db()
    relation = _relation(sql, con)
    if relation is None:
        raise QueryError("the statement returns no rows to write; give a SELECT")
    relation = _shaped(relation, fmt)
    if fmt == "csv":
        _refuse_nested_in_csv(relation)
    return _write_rows(_batches(relation, con), sink, fmt)


def _refuse_nested_in_csv(relation) -> None:
    """CSV has no lists or structs: pyarrow refuses them, and DuckDB's COPY writes text that no reader parses back."""
    nested = [name for name, kind in zip(relation.columns, relation.types) if kind.id in ("list", "array", "struct", "map", "union")]
    if nested:
        raise QueryError(f"CSV cannot hold the list or struct column(s) {', '.join(nested)}; use --format parquet or json, "
                         "or turn them into text in the query (e.g. array_to_string(col, '|'))")


def _holds_decimals(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_decimal(kind) or any(_holds_decimals(kind.field(i).type) for i in range(kind.num_fields))


def _numbers(value):
    """`value` with its Decimals as JSON numbers (DuckDB's sum() is a HUGEINT or DECIMAL, which reach Python as
    Decimal and `jsonout` would write as strings): whole ones as ints, exactly; the others as floats."""
    if isinstance(value, Decimal):
        return int(value) if value.as_tuple().exponent >= 0 else float(value)
    if isinstance(value, dict):
        return {key: _numbers(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numbers(v) for v in value]
    return value


def _write_rows(batches, sink, fmt: str) -> int:
    """Record batches to a binary stream as csv, or as json: an array of objects with NaN and infinities as null."""
    import pyarrow.csv

    rows, writer = 0, None
    if fmt == "json":
        sink.write(b"[")
    for batch in batches:
        if fmt == "json":
            decimals = any(_holds_decimals(field.type) for field in batch.schema)
            for row in batch.to_pylist():
                row = _numbers(row) if decimals else row
                sink.write(((",\n  " if rows else "\n  ") + jsonout.dumps(row)).encode("utf-8"))
                rows += 1
            continue
        if writer is None:
            writer = pyarrow.csv.CSVWriter(sink, batch.schema)
        writer.write_batch(batch)
        rows += batch.num_rows
    if fmt == "json":
        sink.write(b"\n]\n" if rows else b"]\n")
    elif writer is not None:
        writer.close()
    sink.flush()
    return rows


CELL_CHARS = 1000  # longest value drawn in a terminal table: DuckDB's box takes ~0.1 s per million characters


def table(sql: str, con: duckdb.DuckDBPyConnection, max_rows: int = 40) -> str:
    """A text table for the terminal (DuckDB's own box) of a statement's first `max_rows` rows, saying when there
    are more: the statement runs once, holding no more than `max_rows` + 1 rows. Values longer than CELL_CHARS are cut,
    as text, and the table says so."""
    relation = _relation(sql, con)
    if relation is None:
        return "(no result)\n"  # a statement such as CHECKPOINT
    try:
        held = _shaped(relation, "table").limit(max_rows + 1).materialize()
        ((count, *lengths),) = held.aggregate(", ".join(
            ["count(*)", *(f"coalesce(max(length(CAST({_ident(name)} AS VARCHAR))), 0)" for name in held.columns)])).fetchall()  # fmt: skip
        long = [name for name, length in zip(held.columns, lengths) if length > CELL_CHARS]
        cells = [f"CASE WHEN length(CAST({_ident(name)} AS VARCHAR)) > {CELL_CHARS} THEN left(CAST({_ident(name)} AS VARCHAR), "
                 f"{CELL_CHARS - 1}) || '…' ELSE CAST({_ident(name)} AS VARCHAR) END AS {_ident(name)}"
                 if name in long else _ident(name) for name in held.columns]  # fmt: skip
        box = io.StringIO()
        with contextlib.redirect_stdout(box):  # show() is the public form of the box that takes a row count
            held.limit(max_rows).project(", ".join(cells)).show(max_rows=max_rows)
    except duckdb.InterruptException:
        raise
    except duckdb.Error as error:
        raise QueryError(_one_line(error, con)) from None
    notes = [f"(first {max_rows} rows shown)"] if count > max_rows else []
    if long:
        notes.append(f"(values over {CELL_CHARS} characters cut for display in {', '.join(long)}; --output or --format gives them whole)")
    return box.getvalue().rstrip("\n") + "\n" + "".join(note + "\n" for note in notes)


class _Shell(code.InteractiveConsole):
    """A small SQL prompt: statements end with `;`; `.views` lists the views; `.quit` or Ctrl-D leaves."""

    def __init__(self, con, max_rows: int = 40):
        super().__init__()
        self.con, self.max_rows = con, max_rows

    def runsource(self, source, filename="<input>", symbol="single"):
        text = source.strip()
        if text in (".quit", ".exit"):
            raise SystemExit
        if text == ".views":
            print("\n".join(views(self.con)))
            return False
        if text and not text.endswith(";"):
            return True  # wait for the rest of the statement
        if text:
            try:
                with interruptible(self.con):
                    print(table(text, self.con, self.max_rows), end="")
            except QueryError as error:
                print(f"error: {error}")
            except KeyboardInterrupt:
                print("interrupted")
        return False


def shell(con: duckdb.DuckDBPyConnection | None = None, max_rows: int = 40) -> None:
    """Interactive SQL prompt over the release views (there is no DuckDB CLI in the environment)."""
    con = con or db()
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    banner = f"cohbench SQL (DuckDB {duckdb.__version__}); views: {', '.join(views(con))}\nend statements with ';', .views lists views, .quit leaves"
    sys.ps1, sys.ps2 = "sql> ", "...> "
    try:
        _Shell(con, max_rows).interact(banner=banner, exitmsg="")
    except SystemExit:
        pass


def view_reference(name: str) -> str:
    """A config's view in generated SQL: always quoted, so that hyphens and SQL keywords in config names are safe."""
    return _ident(name)
