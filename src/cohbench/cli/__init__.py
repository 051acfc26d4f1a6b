"""`cohbench` command line. Errors are one line on stderr and a non-zero exit; figures go to stdout,
as JSON with --json; progress goes to stderr."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
from pathlib import Path

from .._version import __version__
from ..errors import CohbenchError
from . import baseline, corpora, corrupt, evaluate, queries, releases

GROUPS = (corpora, releases, queries, evaluate, baseline, corrupt)  # each module's COMMANDS, in the order help lists them


def parser(argv=None) -> argparse.ArgumentParser:
    """The parser of every command; only the command `argv` names gets its arguments (some take long to make)."""
    top = argparse.ArgumentParser(prog="cohbench", description=__doc__, epilog=EXIT_CODES)
    top.add_argument("--version", action="version", version=f"cohbench {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    named = next((word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")), None)
    for group in GROUPS:
        for command in group.COMMANDS:
            command.add_to(sub, with_arguments=command.name == named)
    return top


EXIT_CODES = """exit status: 0 success; 1 an error (one line on stderr says what and what to do); 2 a usage error
(unknown command or option); 130 interrupted (Ctrl-C); 141 the reader of the output went away (| head)"""


def main(argv=None) -> int:
    args = parser(argv).parse_args(argv)
    if args.trains:
        from .. import numerics  # only training commands pay for its imports (multiprocessing)

        numerics.pin_for_training()
    try:
        with _terminated_as_interrupted():
            return args.func(args)
    except CohbenchError as error:
        print(f"cohbench: error: {error}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as error:
        module = (error.name or "").split(".")[0]
        extra = _extra_providing(module)
        if extra is None:
            return _unexpected(args)
        print(f"cohbench: error: `cohbench {args.command}` needs {module}, which the [{extra}] extra installs: "
              f"pip install 'cohbench[{extra}]' torch==2.13.0", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cohbench: interrupted", file=sys.stderr)
        return 130
    except MemoryError:  # a derive of 10 million rows, a query's result: what was written is cleaned up on the way out
        print(f"cohbench: error: `cohbench {args.command}` ran out of memory; give it less to hold (a query narrowed with "
              "WHERE or LIMIT, a smaller input) or run it where there is more memory", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (`cohbench fetch x | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # the machine said no: a read-only folder, a full disk, /proc, a missing directory
        where = f" {error.filename}" if error.filename else ""
        print(f"cohbench: error: cannot use{where}: {error.strerror or error}", file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001  (the guard of last resort: one line, the traceback to a file)
        return _unexpected(args)


@contextlib.contextmanager
def _terminated_as_interrupted():
    """SIGTERM ends a command as Ctrl-C does, through the clean-up of what it was writing (temporary files and folders
    of `export`, `derive`, `show`, `pull`, ...); SIGKILL cannot be caught: the next writer beside them removes those."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _unexpected(args) -> int:
    """One line for a bug, with the full traceback written to a log file outside the release."""
    import tempfile
    import time
    import traceback

    error = sys.exc_info()[1]
    log = Path(os.environ.get("COHBENCH_LOGS") or Path(tempfile.gettempdir()) / "cohbench-logs")
    try:
        log.mkdir(parents=True, exist_ok=True)
        path = log / f"traceback-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        path.write_text(f"cohbench {__version__} {' '.join(sys.argv)}\n\n{traceback.format_exc()}", encoding="utf-8")
        where = f"the full traceback is in {path}"
    except OSError:
        where = "the traceback could not be written (set COHBENCH_LOGS to a writable folder)"
    summary = f"{type(error).__name__}: {error}".splitlines()[0][:200]
    print(f"cohbench: error: `cohbench {args.command}` failed unexpectedly ({summary}); {where}; please report it", file=sys.stderr)
    return 1


DISTRIBUTION_OF = {"sklearn": "scikit_learn"}  # modules an extra installs under another name than the module's


def _extra_providing(module: str) -> str | None:
    """The smallest extra of cohbench's own metadata whose distribution provides `module`, if any: [validate] rather
    than [pipeline], which holds every extra (build backends list extras in their own order), never [test]."""
    from collections import Counter
    from importlib import metadata

    try:
        requirements = metadata.requires("cohbench") or []
    except metadata.PackageNotFoundError:
        return None
    sizes, providing = Counter(), set()
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        distribution = re.split(r"[\s=<>!~\[(]", name.strip(), maxsplit=1)[0]
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", marker)
        if extra and extra.group(1) != "test":
            sizes[extra.group(1)] += 1
            if distribution.lower().replace("-", "_") == DISTRIBUTION_OF.get(module, module):
                providing.add(extra.group(1))
    return min(providing, key=lambda e: (sizes[e], e), default=None)


def console() -> None:
    """The `cohbench` command: `main`, Python's exit handlers, then the end of the process without the interpreter's
    teardown. A native thread pool torn down at exit (DuckDB's or Arrow's: "terminate called without an active
    exception") aborted a finished `evaluate` on Python 3.13 once in three test runs, its output already written."""
    import atexit

    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away after the last write
            code = 141 if stream is sys.stdout else code
        except OSError:
            code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)
