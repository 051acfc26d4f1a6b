"""A damaged release file is refused by every reader in one line naming it, before it is read: a FIFO (which would
block a reader), a link to /dev/zero (which would never end), JSON nested past the recursion limit or holding a
5000-digit integer in the manifest or a stats file. Never a hang, a memory blow-up, a raw RecursionError or ValueError,
nor "failed unexpectedly". Each reader runs under an alarm and a memory limit, so a regression fails instead of
hanging the suite or exhausting the machine."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
from pathlib import Path

import pytest

import cohbench
from cohbench.cli import main
from cohbench.errors import ReleaseError

DEEP = "[" * 100_000 + "]" * 100_000


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so that the CLI's one-line guard cannot turn a hang into an exit 1."""


@contextlib.contextmanager
def bounded(seconds: int = 60, extra_memory: int = 1 << 30):
    """At most `seconds` and `extra_memory` bytes of address space beyond what the test process already holds."""
    size = int(re.search(r"VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Hung(f"still running after {seconds} s")))
    resource.setrlimit(resource.RLIMIT_AS, (size + extra_memory, hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def link_to_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def never_indexed(damage):
    """`damage` to a stats file of a folder never indexed (a `corrupt` output): in an indexed release the manifest's
    sha256 refuses any changed stats before they are parsed."""
    def do(path: Path) -> None:
        for name in ("manifest.json", "README.md", "croissant.json"):
            (path.parents[1] / name).unlink()
        damage(path)
    return do


def huge_integer(path: Path) -> None:
    text = path.read_text()
    path.write_text(re.sub(r'"rows": \d+', '"rows": ' + "9" * 5000, text, count=1))


DATA, STATS, MANIFEST = "data/storysumm/test.parquet", "stats/storysumm.json", "manifest.json"
DAMAGES = {
    "a FIFO for a data file": (DATA, fifo, "is not a regular file"),
    "a data file linked to /dev/zero": (DATA, link_to_dev_zero, "is not a regular file"),
    "a FIFO for a stats file": (STATS, fifo, "is not a regular file"),
    "a stats file linked to /dev/zero": (STATS, link_to_dev_zero, "is not a regular file"),
    "a FIFO for the manifest": (MANIFEST, fifo, "is not a regular file"),
    "a manifest linked to /dev/zero": (MANIFEST, link_to_dev_zero, "is not a regular file"),
    "a deeply nested manifest": (MANIFEST, lambda p: p.write_text(DEEP), "nested too deeply"),
    "a deeply nested stats file": (STATS, never_indexed(lambda p: p.write_text(DEEP)), "nested too deeply"),
    "a 5000-digit integer in the manifest": (MANIFEST, huge_integer, "an integer of 5000 digits"),
    "a 5000-digit integer in a stats file": (STATS, never_indexed(huge_integer), "an integer of 5000 digits"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_release_file_is_one_line_for_every_reader_without_hanging(every_protocol, capsys, damage):
    relpath, do, reason = DAMAGES[damage]
    do(every_protocol / relpath)
    commands = [["sql", "SELECT count(*) FROM storysumm"]]  # every reader goes through the same checks (test_read_integrity)
    if relpath != DATA:
        commands.append(["list"])  # `list` reads the manifest and the stats, never a data file
    for argv in commands:
        with bounded():
            assert main(argv) == 1, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("cohbench: error: ") and "\n" not in err and "failed unexpectedly" not in err, (argv, err)
        assert relpath in err and reason in err, (argv, err)
    with bounded(), pytest.raises(ReleaseError) as refused:
        cohbench.load("storysumm")
    assert relpath in str(refused.value) and reason in str(refused.value) and "\n" not in str(refused.value)

