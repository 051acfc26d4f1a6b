"""The sandbox a query runs in: the release's checked Parquet bytes as sealed in-memory copies, the only paths DuckDB
may open, then file access, extensions and configuration locked; a memory limit on DuckDB and a bound on the process;
Ctrl-C that stops a running query."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import threading
import weakref
from pathlib import Path

import duckdb

from ..errors import ReleaseError
from ..release.layout import data_bytes
from ..errors import QueryError
from .errors import one_line
from .views import literal, names_list, quoted


DEFAULT_MEMORY_LIMIT = "4GB"
_DATA_SCHEMA = "release_data"  # the in-memory tables where there is no memfd; users query the views over them


def _parquet(paths: list[Path]) -> str:
    return f"read_parquet([{', '.join(literal(str(p)) for p in paths)}])"


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(b|bytes?|[kmgt]b?|[kmgt]ib)\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """The bytes of a memory size such as 4GB, 500MB or 1.5GiB (KB, MB, GB, TB count powers of 1000; KiB, MiB,
    GiB, TiB of 1024). Our own parser: DuckDB reads -1 as no limit at all, and 80% as 80 bytes."""
    match = _SIZE.fullmatch(text)
    if match:
        unit = match[2].lower()
        power = 0 if unit.startswith("b") else "kmgt".index(unit[0]) + 1
        size = float(match[1]) * (1024 if "i" in unit else 1000) ** power
        if 1 <= size < 2**63:  # a size with hundreds of digits is no machine's (and as a float, infinite)
            return int(size)
    raise ValueError(f"memory limit {text!r} is not a positive size a machine could have; use e.g. 4GB or 500MB")


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


def sealed_sources(con: duckdb.DuckDBPyConnection, release: Path, built: dict[str, dict]) -> dict[str, str]:
    """What each config's view reads: its checked Parquet bytes, as sealed memfd copies that are the only paths
    DuckDB may open (closed with the connection); without memfd, an in-memory table holding its records."""
    if not (hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")):
        con.execute(f"CREATE SCHEMA {_DATA_SCHEMA}")
        for config, stats in built.items():
            data_bytes(release, config, stats)  # the check; DuckDB reads the files by path below
            paths = [release / entry["path"] for entry in stats["files"].values()]
            try:
                con.execute(f"CREATE TABLE {_DATA_SCHEMA}.{quoted(config)} AS SELECT * FROM {_parquet(paths)}")
            except duckdb.Error as error:
                raise ReleaseError(f"{config}'s Parquet files cannot be read ({one_line(error, con)}); run `cohbench verify`") from None
        return {config: f"{_DATA_SCHEMA}.{quoted(config)}" for config in built}
    descriptors: list[int] = []
    weakref.finalize(con, _close_all, descriptors)
    sources = {config: _parquet([_sealed_copy(data, f"{config}-{split}", descriptors)
                                 for split, data in data_bytes(release, config, stats).items()])
               for config, stats in built.items()}  # fmt: skip
    con.execute(f"SET allowed_paths = {names_list(f'/proc/self/fd/{fd}' for fd in descriptors)}")
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


def lock(con: duckdb.DuckDBPyConnection, memory: int) -> None:
    try:
        con.execute(f"SET memory_limit = '{memory}B'")
    except duckdb.Error:
        raise _too_small(memory) from None
    con.execute("SET temp_directory = ''")  # no spilling: a query over the limit fails instead of writing files
    con.execute("SET autoinstall_known_extensions = false")  # nothing is downloaded or loaded on demand
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")  # no files but the allowed copies, no ATTACH, no extensions
    con.execute("SET lock_configuration = true")  # and no statement can turn that back on


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
