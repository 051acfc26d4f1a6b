"""The objects of a release in a DVC store: each DVC output of the release and, for a folder, each
file its listing names, by its path in the release. What `pull` checks a store folder for before asking DVC
(`check_folder`: every object there, each a regular file) and what `publish` checks a published folder with
(`check_md5`), so that a missing or damaged object is named by the file of the release it holds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import ReleaseError


def object_path(folder: str, md5: str) -> str:
    return f"{folder.rstrip('/')}/files/md5/{md5[:2]}/{md5[2:]}"


def objects(outputs: dict[str, dict], listing) -> list[tuple[str, str]]:
    """Every object of the release as (its path in the release, its md5): each output, then a folder's files as its
    listing (read by `listing(output, md5)`, [] when it is not there) names them."""
    found = []
    for output, entry in outputs.items():
        found.append((output, entry["md5"]))
        if entry["md5"].endswith(".dir"):
            found += [(f"{output}/{m['relpath']}", m["md5"]) for m in listing(output, entry["md5"])]
    return found


def in_folder(folder: str, outputs: dict[str, dict], version: str, where: str) -> list[tuple[str, str, Path]]:
    """Every object of the release in the DVC store (or cache) `folder`: (its path in the release, md5, its file there)."""
    def listing(output, md5):
        path = Path(object_path(folder, md5))
        return listing_of(path.read_bytes()[:64 << 20] if path.is_file() else None, output, version, where, str(path))

    return [(what, md5, Path(object_path(folder, md5))) for what, md5 in objects(outputs, listing)]


def check_folder(url: str, outputs: dict[str, dict], version: str) -> None:
    """One line saying which, before DVC is asked: the store folder `url` does not exist, lacks an object of the
    release, or holds one that is not a regular file (a FIFO would hang the copy)."""
    if not Path(url).is_dir():
        raise ReleaseError(f"the release store {url} does not exist; give the remote that holds the release with --remote URL")
    for what, _, path in in_folder(url, outputs, version, f"the release store {url}"):
        if not path.exists():
            raise ReleaseError(f"the release store {url} does not hold release {version} ({what} is missing); "
                               "push it there with `cohbench push` or `cohbench publish`")
        if not path.is_file():
            raise ReleaseError(f"the release store {url} holds a damaged object for {what} of release {version} "
                               f"({path} is not a regular file)")


def listing_of(data: bytes | None, output: str, version: str, where: str, shown: str) -> list[dict]:
    """A folder's DVC listing (a JSON list of {md5, relpath}), refused in one line when it is not one."""
    if data is None:
        return []  # not there: the caller says so
    try:
        members = json.loads(data)
        if isinstance(members, list) and all(isinstance(m, dict) and isinstance(m.get("md5"), str)
                                             and isinstance(m.get("relpath"), str) for m in members):
            return members
    except (ValueError, RecursionError):
        pass
    raise ReleaseError(f"{where} holds a damaged object for {output} of release {version} ({shown} is not a DVC listing)")


def _md5_of(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def remove_damaged(url: str, whole: list[tuple[str, str, Path]]) -> list[str]:
    """Delete the copies in the folder `url` of the objects `whole` (`in_folder` of a store that holds them intact)
    whose bytes differ from the md5 they are named by, so that a push sends them again (DVC skips an object that is
    there, damaged or not); returns what they held."""
    removed = []
    for what, md5, _ in whole:
        path = Path(object_path(url, md5))
        if path.is_file() and _md5_of(path) != md5.removesuffix(".dir"):
            path.unlink()
            removed.append(what)
    return removed


def check_md5(url: str, outputs: dict[str, dict], version: str) -> int:
    """Every object of the releases' outputs in the folder `url` against the md5 it is named by."""
    count = 0
    for what, md5, path in in_folder(url, outputs, version, f"the published copy in {url}"):
        if (actual := _md5_of(path)) != md5.removesuffix(".dir"):
            raise ReleaseError(f"the published copy of {what} of release {version} in {url} is damaged (md5 {actual}); "
                               f"publish it again (`cohbench publish {url} {version}`)")
        count += 1
    return count
