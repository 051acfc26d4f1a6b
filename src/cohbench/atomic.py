"""Write files and folders so that readers see the old version or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from .errors import CohbenchError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _prefix(target: Path) -> str:
    """Temporary names carry the writer's process id, so that `remove_orphans` can tell a dead writer's leftovers."""
    return f".{target.name}.{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# what `_prefix` and tempfile make: ".NAME.PID.RANDOM.tmp", RANDOM 8 of tempfile's characters
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[a-z0-9_]{8}\.tmp")


def remove_orphans(folder: Path, of: str | None = None) -> list[Path]:
    """Delete the temporary files and folders that killed writers left in `folder` (those of live processes stay);
    with `of`, only those of a writer of `of`: in a user's folder (where `pull --out` writes) nothing else is ours."""
    removed = []
    for path in folder.glob(".*.tmp") if folder.is_dir() else []:
        leftover = _LEFTOVER.fullmatch(path.name)
        if leftover is None or of is not None and leftover["name"] != of or _alive(int(leftover["pid"])):
            continue
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _refuse_unless(target: Path, is_kind, kind: str) -> None:
    """A rename replaces whatever `target` is: never a device node, FIFO, socket or folder where a file was asked for."""
    try:
        mode = target.stat().st_mode  # follows a link: a link to /dev/null is /dev/null
    except FileNotFoundError:
        return
    except OSError as error:
        raise CohbenchError(f"refusing to write {target}: it cannot be inspected ({error.strerror})") from None
    if not is_kind(mode):
        raise CohbenchError(f"refusing to write {target}: it exists and is not a {kind}; choose a new path or a {kind}")


def refuse_unless_file(target: Path) -> None:
    """Refuse now what `atomic_path(target)` would refuse when it comes to write: for a command that computes for
    minutes before it writes."""
    _refuse_unless(target, stat.S_ISREG, "regular file")


@contextlib.contextmanager
def atomic_path(target: Path):
    """Yield a temporary path beside `target`; rename it onto `target` only if the block succeeds, and only when
    `target` is new or a regular file."""
    _refuse_unless(target, stat.S_ISREG, "regular file")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(target), suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes files private; releases are meant to be read
        _refuse_unless(target, stat.S_ISREG, "regular file")  # again: it may have appeared while the block ran
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def atomic_dir(target: Path):
    """Yield an empty temporary folder beside `target`; swap it in for `target` only if the block succeeds, and only
    when `target` is new or a folder."""
    _refuse_unless(target, stat.S_ISDIR, "folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(target), suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        # the old version (a folder, or a link to one) is parked inside a folder no one else holds (a fixed `.NAME.old`
        # was a user's to lose), not named `.tmp`: a writer killed between the two renames leaves it for a person to
        # find, not for `remove_orphans`
        park = Path(tempfile.mkdtemp(prefix=_prefix(target), suffix=".old", dir=target.parent))
        try:
            if target.exists() or target.is_symlink():
                os.replace(target, park / target.name)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(park, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
