"""Upstream files, pinned by URL and sha256, resolved from the local cache, a mirror folder or the network.

A file is never used before its sha256 is verified, and a file that fails verification is never written
into the cache. Mirror folders and the cache are laid out as HOST/URL-PATH, like ../shared/data/mirror, so a
file that several corpora use is stored once.

Pins are data: a checksum table (TSV: name, url, size, sha256, licence) per corpus, read by `read_table`.
A new file is declared by a row with its name, URL and licence; `register_checksums` fills in its size and
sha256 from the file it finds (`cohbench fetch --register-checksums CORPUS`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit


from .. import settings
from ..atomic import atomic_path, write_text
from ..display import progress_bar
from ..errors import SourceError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Source:
    """One upstream file: its real URL at a pinned commit, and what it must hash to."""

    name: str
    url: str
    sha256: str
    size: int
    licence: str

    @property
    def relpath(self) -> Path:
        """HOST/URL-PATH, the layout of mirror folders and of the local cache."""
        parts = urlsplit(self.url)
        return Path(parts.netloc) / unquote(parts.path).lstrip("/")

    @property
    def filename(self) -> str:
        return self.relpath.name


def stream_sha256(reader, write=None) -> str:
    """The sha256 of everything `reader` yields, read in chunks; `write(chunk)` receives each chunk on its way."""
    digest = hashlib.sha256()
    while chunk := reader.read(_CHUNK):
        digest.update(chunk)
        if write:
            write(chunk)
    return digest.hexdigest()


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return stream_sha256(handle)


def _mismatch(source: Source, where: str, actual: str, advice: str) -> SourceError:
    return SourceError(
        f"{source.filename} from {where} has sha256 {actual}, but {source.url} is pinned to {source.sha256}; {advice}"
    )


def _copy_verified(source: Source, reader, target: Path, where: str, progress: bool) -> None:
    """Stream `reader` into `target` while hashing; the file appears only if the hash matches."""
    with atomic_path(target) as tmp, open(tmp, "wb") as out, progress_bar(
        shown=progress, total=source.size, unit="B", unit_scale=True, desc=source.filename, leave=False
    ) as bar:
        actual = stream_sha256(reader, lambda chunk: (out.write(chunk), bar.update(len(chunk))))
        out.close()
        if actual != source.sha256:
            raise _mismatch(source, where, actual, "nothing was written; replace the file with the pinned version")


def resolve(source: Source, cache_dir: Path, *, mirrors=None, network=None, progress: bool = False) -> Path:
    """Return a local, verified path to `source`, copying it into `cache_dir` on first use."""
    mirrors = settings.mirror_dirs() if mirrors is None else mirrors
    network = settings.network_allowed() if network is None else network
    cached = cache_dir / source.relpath
    if cached.is_file():
        actual = sha256_of(cached)
        if actual != source.sha256:
            raise _mismatch(source, f"the cache ({cached})", actual, "delete the cached file and fetch again")
        return cached
    mismatches = []  # a bad copy in one place does not stop the search: the next mirror, or the network, may be good
    for mirror in mirrors:
        candidate = mirror / source.relpath
        if candidate.is_file():
            try:
                with open(candidate, "rb") as reader:
                    _copy_verified(source, reader, cached, f"the mirror ({candidate})", progress)
                return cached
            except SourceError as error:
                mismatches.append(error)
    network_error = "the network is disabled (COHBENCH_NETWORK=0)"
    if network:
        try:
            with urllib.request.urlopen(source.url, timeout=60) as response:
                _copy_verified(source, response, cached, source.url, progress)
            return cached
        except SourceError as error:
            mismatches.append(error)
        except (urllib.error.URLError, OSError) as error:
            network_error = f"downloading it failed ({getattr(error, 'reason', error)})"
    if mismatches:
        others = f" ({len(mismatches) - 1} other copy/copies differ too)" if len(mismatches) > 1 else ""
        raise SourceError(f"{mismatches[0]}{others}")
    searched = ", ".join(str(m) for m in mirrors) or "no mirror configured (set COHBENCH_MIRROR)"
    raise SourceError(
        f"{source.filename} was not found in the cache or any mirror ({searched}) and {network_error}; "
        f"put the file from {source.url} at <mirror>/{source.relpath.as_posix()}"
    )


TABLE_COLUMNS = ("name", "url", "size", "sha256", "licence")


def read_table(table: Path) -> tuple[Source, ...]:
    """The sources a checksum table declares, in its order. A row without size or sha256 is declared but not
    yet registered: it is refused here, with the command that registers it."""
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows or tuple(rows[0]) != TABLE_COLUMNS:
        raise SourceError(f"{table} must be a TSV with the header {' '.join(TABLE_COLUMNS)}")
    unlicensed = [row["url"] for row in rows if not row["licence"]]
    if unlicensed:
        raise SourceError(f"{table.name} declares {unlicensed[0]} without a licence; state the upstream licence in its row")
    unregistered = [row["url"] for row in rows if not row["sha256"] or not row["size"]]
    if unregistered:
        raise SourceError(f"{table.name} declares {unregistered[0]} without size and sha256; run "
                          f"`cohbench fetch --register-checksums {table.stem}` with the file in a mirror")
    return tuple(Source(row["name"], row["url"], row["sha256"], int(row["size"]), row["licence"]) for row in rows)


def _write_table(table: Path, rows: list[dict]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, TABLE_COLUMNS, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(table, out.getvalue())


def _find_unverified(url: str, cache_dir: Path, mirrors, network: bool, scratch: Path) -> Path:
    relpath = Source("", url, "", 0, "").relpath
    for folder in (*mirrors, cache_dir):  # a mirror first: the cache holds the bytes of the old pin
        if (folder / relpath).is_file():
            return folder / relpath
    if network:
        target = scratch / relpath.name
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out, _CHUNK)
            return target
        except (urllib.error.URLError, OSError) as error:
            raise SourceError(f"downloading {url} failed ({getattr(error, 'reason', error)}); put the file in a mirror") from None
    raise SourceError(f"{relpath.name} is in no mirror and the network is disabled; put the file from {url} "
                      f"at <mirror>/{relpath.as_posix()}")


def register_checksums(table: Path, *, cache_dir: Path | None = None, mirrors=None, network=None) -> list[str]:
    """Fill in (or refresh) size and sha256 of every row of `table` from the file at its URL (cache, mirror,
    then network). Returns the URLs whose pins changed. The table is rewritten only when all files were found."""
    cache_dir = settings.raw_cache_dir() if cache_dir is None else cache_dir
    mirrors = settings.mirror_dirs() if mirrors is None else mirrors
    network = settings.network_allowed() if network is None else network
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    changed = []
    with tempfile.TemporaryDirectory(prefix="cohbench-register-") as scratch:
        for row in rows:
            path = _find_unverified(row["url"], cache_dir, mirrors, network, Path(scratch))
            pin = {"sha256": sha256_of(path), "size": str(path.stat().st_size)}
            if (row["sha256"], row["size"]) != (pin["sha256"], pin["size"]):
                changed.append(row["url"])
                row.update(pin)
    _write_table(table, rows)
    return changed
