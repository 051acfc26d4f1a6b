"""How figures are shown to people, the same in every table: a proportion (accuracy, P/R/F1, AUC, rates; kept as
fractions in JSON) as a percentage with one decimal, a coefficient (κ, τ, α) with three decimals, "-" where a figure
is undefined; how what a user gave is named in an error line (an id from their file, a path that is no file); and
how long work shows its progress (`progress_bar`)."""

from __future__ import annotations

import contextlib
import os
import stat
import sys


def percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def coefficient(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


SHOWN_CHARS = 80  # of a value a user gave, repeated in a message: enough to recognise it, never the whole of a huge one


def escaped(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` (an id from a user's file, say) as a message may repeat it: its first `limit` characters (then "...",
    so a 200 MB id is not a 200 MB line), every character that is not printable written as its escape (a newline as
    \\n, the ESC of a terminal colour code as \\x1b), so that it can neither break an error line nor drive the
    terminal; letters of any script stay as they are."""
    text = str(text)
    cut = text[:limit]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut) + ("..." if len(text) > limit else "")


def not_a_file(path) -> str | None:
    """Why `path` cannot be read as a file a user gave ("does not exist", "is a folder", "is a FIFO (a pipe), not a
    regular file", ...), or None when it is a regular file (through symlinks). The caller says what to give instead."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:  # a path through a file, a name too long, no permission
        return f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder"
    kinds = {stat.S_ISFIFO: "a FIFO (a pipe)", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket"}
    kind = next((name for test, name in kinds.items() if test(mode)), "something else")
    return f"is {kind}, not a regular file"


LOG_INTERVAL_S = 30  # in a log, a line of progress at most this often, and none for work shorter than this


class _LogLines:
    """tqdm's output made whole lines for a log: a terminal's carriage returns would pile every refresh onto one line
    of the log, and its clearing of a finished bar would leave blank ones."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        for line in text.replace("\r", "\n").split("\n"):
            if line.strip():
                self.stream.write(line.rstrip() + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(iterable=None, *, shown: bool, **options):
    """A tqdm progress bar on stderr for long work (`shown`: the command's progress switch): a bar on a terminal; in
    a log (stderr is not a terminal, as under `make release > log`) a plain line every `LOG_INTERVAL_S` of work
    that lasts longer."""
    from tqdm import tqdm

    if not shown:
        return tqdm(iterable, disable=True, **options)
    if sys.stderr.isatty():
        return tqdm(iterable, file=sys.stderr, **options)
    # maxinterval: tqdm's monitor thread would otherwise print a bar idle for 10 s again, with its count of then
    return tqdm(iterable, file=_LogLines(sys.stderr), delay=LOG_INTERVAL_S, mininterval=LOG_INTERVAL_S,
                maxinterval=float("inf"), ascii=True, **options | {"dynamic_ncols": False})


@contextlib.contextmanager
def datasets_bars(shown: bool):
    """HF datasets' own bars (a split generated, a Parquet file written) within the block only where `progress_bar`
    would draw a bar; restored after, for a caller in the same process."""
    import datasets

    enabled = datasets.is_progress_bar_enabled()
    if not shown or not sys.stderr.isatty():
        datasets.disable_progress_bars()
    try:
        yield
    finally:
        if enabled:
            datasets.enable_progress_bars()
