"""Where a release's own files lie (the manifest, a config's stats, the build state) and how any of its files is read:
a regular file only, its JSON within the one parser's bounds, its bytes checked against the sha256 that records it.
Everything that reads a release reads through here (`layout`, `build_state`, `verify`, `export`, ...)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from .. import jsonlines
from ..errors import ReleaseError

MANIFEST = "manifest.json"
# A config's or corpus's name becomes a file name (data/<config>/, stats/<config>.json, cards/<corpus>.md) and a SQL
# view's: a lowercase identifier of at most 64 characters, so that no name can reach outside its folder (or be
# longer than a file name may be).
PLAIN_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
BUILDING = "building"  # the build state: building/<config>.json, one per config built since the last `cohbench index`
INDEXED = ("README.md", "croissant.json")  # written by `cohbench index` with the manifest, never by a build

_VERIFIED: dict[tuple, str] = {}  # (path, size, mtime) -> sha256 already checked in this process


def read_regular(path: Path, fix: str) -> bytes:
    """`path`'s bytes, refused in one line unless it is a regular file (followed through links): a FIFO would block
    a reader, a device such as /dev/zero never end. Checked before it is opened, and again on what was opened."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ReleaseError(f"{path} is not a regular file (a FIFO, device, socket or folder); {fix}")
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ReleaseError(f"{path} is missing; {fix}") from None
    except OSError as error:
        raise ReleaseError(f"{path} cannot be read ({error.strerror}); {fix}") from None
    with open(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ReleaseError(f"{path} is not a regular file (a FIFO, device, socket or folder); {fix}")
        return handle.read()


def read_text(path: Path, fix: str) -> str:
    """A release's text file (`read_regular`), refused in one line naming it and `fix` unless it is UTF-8."""
    try:
        return read_regular(path, fix).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReleaseError(f"{path} is not UTF-8 text (byte {error.start}); {fix}") from None


def read_json(path: Path, fix: str):
    """A release's JSON file (manifest, stats, build state): a regular file of UTF-8 JSON (`read_text`) within the one
    JSON parser's bounds (`jsonlines.parse`: no NaN, no integer past 64 bits, no nesting past the recursion limit);
    anything else is refused in one line naming the file and `fix`."""
    text = read_text(path, fix)
    try:
        return jsonlines.parse(text)
    except ValueError as error:
        raise ReleaseError(f"{path} is not valid JSON ({error}); {fix}") from None


def checked(path: Path, sha256: str | None, recorded_in: str, fix: str, *, or_built: str | None = None,
            content: Callable[[bytes, str], None] | None = None) -> bytes | None:
    """`path`'s bytes, checked against `sha256` as `recorded_in` records it (None: it records none), or against
    `or_built`, the build state's record of a config built since (`building/`); None when this process already
    checked this very file (same path, size and mtime). A missing, non-regular or different file is refused in one
    line naming it and `fix`. `content` checks the bytes further, given them and their sha256 (raising to refuse
    them), before the file counts as checked."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise ReleaseError(f"{path} is missing although {recorded_in} records it; {fix}") from None
    accepted = {sha256, or_built} - {None}
    if not accepted:
        raise ReleaseError(f"{path} is not recorded in {recorded_in}; {fix}")
    key = (str(path.resolve()), status.st_size, status.st_mtime_ns)
    if _VERIFIED.get(key) in accepted:
        return None
    data = read_regular(path, fix)
    actual = hashlib.sha256(data).hexdigest()
    if actual not in accepted:
        since = f" and from its build state's ({BUILDING}/{path.stem}.json)" if or_built else ""
        raise ReleaseError(f"{path} differs from the sha256 recorded in {recorded_in}{since}; {fix}")
    if content is not None:
        content(data, actual)
    _VERIFIED[key] = actual
    return data


def stats_path(release: Path, config: str) -> Path:
    return release / "stats" / f"{config}.json"


def _inside(relpath) -> bool:
    """Whether `relpath` is a path inside the release: relative, and never up a folder."""
    return isinstance(relpath, str) and relpath != "" and not Path(relpath).is_absolute() and ".." not in Path(relpath).parts


def lists_data_files(files, config: str) -> bool:
    """Whether `files` (a stats file's or the manifest's) lists `config`'s data files as every reader relies on: per
    split its path under data/<config>/, sha256 and rows."""
    return isinstance(files, dict) and all(
        isinstance(f, dict) and _inside(f.get("path")) and Path(f["path"]).parts[:2] == ("data", config)
        and isinstance(f.get("sha256"), str) and isinstance(f.get("rows"), int) and not isinstance(f["rows"], bool)
        for f in files.values()
    )  # fmt: skip


def read_manifest(path: Path) -> dict:
    """A release's manifest, checked for what its readers rely on: configs by plain names with their corpus, data files
    (`lists_data_files`) and list of inputs, and shipped files inside the release, each with its sha256."""
    fix = "restore it from the release, or delete it and run `cohbench index` to rewrite it"
    recorded = read_json(path, fix)
    configs = recorded.get("configs") if isinstance(recorded, dict) else None
    shipped = recorded.get("shipped", {}) if isinstance(recorded, dict) else None
    if not isinstance(configs, dict) or not isinstance(shipped, dict) or not all(
        isinstance(name, str) and PLAIN_NAME.fullmatch(name) and isinstance(e, dict) and isinstance(e.get("corpus"), str)
        and lists_data_files(e.get("files"), name) and isinstance(e.get("inputs", []), list)
        for name, e in configs.items()
    ) or not all(_inside(relpath) and isinstance(sha256, str) for relpath, sha256 in shipped.items()):  # fmt: skip
        raise ReleaseError(f"{path} is not a cohbench manifest (configs by plain names with corpus, inputs and data files "
                           f"under data/<config>/, shipped files inside the release); {fix}")
    return recorded
