"""Commands that read a release's records: SQL over its views, a changed copy from one query (derive), a static
viewer (show), and the agreement and distribution statistics (agreement, report)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import CohbenchError
from .command import argument, command, emit, output_file, release_of

MAX_QUERY_CHARS = 4_000_000  # a query text read from stdin; more is not a query
MAX_SHOWN_ROWS = 100_000  # rows of a terminal table; --format and --output give every row


def _memory_size(text: str) -> int:
    from ..sql import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _row_count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of rows")
    if int(text) > MAX_SHOWN_ROWS:
        raise argparse.ArgumentTypeError(f"{text} rows is more than a terminal table shows (at most {MAX_SHOWN_ROWS:,}); "
                                         "--format csv|json or --output gives every row")
    return int(text)


@command("sql", "run SQL over the release views (catalog/SQL.md); without a query, an interactive prompt",
         argument("query", nargs="?", help="one SQL statement (read from stdin when piped)"),
         argument("--format", choices=("csv", "json", "parquet"), help="output format (default: a table on the terminal)"),
         argument("--output", help="write the result to this file instead of stdout"),
         argument("--max-rows", type=_row_count, default=40, help="rows shown in the terminal table (default 40)"),
         argument("--memory-limit", type=_memory_size, help="DuckDB memory limit for the query, e.g. 8GB; the process "
                  "may grow by the limit plus as much again (default: COHBENCH_SQL_MEMORY or 4GB; at most the machine's memory)"))
def cmd_sql(args) -> int:
    from .. import sql
    from . import sql_terminal

    statement = args.query
    if statement is None and not sys.stdin.isatty():
        statement = _stdin_query(MAX_QUERY_CHARS)
    if args.format == "parquet" and not args.output:
        raise CohbenchError("--format parquet needs --output FILE")
    if args.output:  # refused before the release is loaded
        output_file("--output", args.output, args)
        fmt = args.format or Path(args.output).suffix[1:].lower()
        if fmt not in sql.FORMATS:
            raise CohbenchError(f"--output {args.output}: cannot tell the format from {'.' + fmt if fmt else 'a name without a suffix'}; "
                                f"end it in .{', .'.join(sql.FORMATS)} or give --format")
    memory = sql.memory_limit(args.memory_limit)
    with sql.interruptible():  # Ctrl-C while the views are made stops after them, as 130
        con = sql.db(release_of(args), memory=memory, statement=statement, declared=_declared_views)
    with sql.process_memory_bound(memory):
        if statement is None:
            sql_terminal.shell(con, args.max_rows)
            return 0
        with sql.interruptible(con):
            if args.output:
                rows = sql.write(statement, args.output, fmt, con)
                print(f"wrote {rows} rows to {args.output} ({fmt})", file=sys.stderr)
            elif args.json or args.format == "json":
                sql.stream_to(statement, sys.stdout.buffer, "json", con)
            elif args.format == "csv":
                sql.stream_to(statement, sys.stdout.buffer, "csv", con)
            else:
                print(sql_terminal.table(statement, con, args.max_rows), end="")
    return 0


def _declared_views() -> dict[str, str]:
    """The statistics kinds' views (`snac_training`), imported only for a query that may read one."""
    from ..statistics import declared_views

    return declared_views()


def _stdin_query(bound: int) -> str:
    """The query piped to `cohbench sql`, read no further than `bound` characters (`< /dev/zero` never ends)."""
    try:
        text = sys.stdin.read(bound + 1)
        text.encode("utf-8")  # some locales read undecodable bytes as surrogates
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise CohbenchError("the query on stdin is not UTF-8 text") from None
    if len(text) > bound:
        raise CohbenchError(f"the query on stdin is longer than {bound:,} characters; pipe one SQL statement")
    return text


@command("derive", "write a changed copy of a config, from one SQL query, into a new folder laid out like a release (indexed, verifiable)",
         argument("name", help="the new config's name (lowercase letters, digits, _)"),
         argument("query", help="SELECT * FROM CONFIG WHERE ... (or SELECT * REPLACE (expr AS field) ...): every schema field, one row per record"),
         argument("--out", required=True, help="a new or empty folder outside the release"))
def cmd_derive(args) -> int:
    from ..derive import derive

    result = derive(args.name, args.query, Path(args.out), release_of(args))
    rows = ", ".join(f"{split} {n}" for split, n in result["rows"].items())
    emit(args, result, [f"wrote {result['config']} ({rows}) to {result['path']}, indexed; check it with `cohbench verify --release "
                         f"{result['path']}`, query it with `cohbench sql --release {result['path']}`"])
    return 0


@command("show", "write a static HTML site to browse and filter a release's (or a corrupt output's) records, spans highlighted",
         argument("--out", required=True, help="a new or empty folder outside the release"),
         argument("--config", action="append", help="only this config (repeatable; default: every built config)"))
def cmd_show(args) -> int:
    from ..viewer.site import write_site

    result = write_site(Path(args.out), release_of(args), configs=args.config)
    emit(args, result, [f"wrote the viewer of {len(result['configs'])} config(s) to {result['path']}; open {result['path']}/index.html in a browser"])
    return 0


@command("agreement", "agreement and distribution statistics of one built config",
         argument("config"))
def cmd_agreement(args) -> int:
    from ..statistics import statistics
    from ..statistics.report import config_markdown

    stats = statistics(args.config, release=release_of(args))
    emit(args, stats, config_markdown(stats))
    return 0


@command("report", "write the statistics report (JSON, Markdown, plots) to catalog/stats",
         argument("--output", help="folder to write to (default catalog/stats)"))
def cmd_report(args) -> int:
    from ..statistics.report import report

    out = report(args.output, release_of(args))
    emit(args, out, [f"wrote the statistics report of {len(out)} config(s) ({', '.join(out)}) to {args.output or 'catalog/stats'}"])
    return 0


COMMANDS = (cmd_sql, cmd_derive, cmd_show, cmd_agreement, cmd_report)
