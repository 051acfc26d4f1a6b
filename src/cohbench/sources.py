"""Upstream files, pinned by URL and sha256, resolved from the local cache, a mirror folder or the network.

A file is never used before its sha256 is verified, and a file that fails verification is never written
into the cache. Mirror folders are laid out as HOST/URL-PATH, like ../shared/data/mirror.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tqdm import tqdm

from . import settings
from .atomic import atomic_path
from .errors import SourceError

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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(source: Source, where: str, actual: str, advice: str) -> SourceError:
    return SourceError(
        f"{source.filename} from {where} has sha256 {actual}, but {source.url} is pinned to {source.sha256}; {advice}"
    )


def _copy_verified(source: Source, reader, target: Path, where: str, progress: bool) -> None:
    """Stream `reader` into `target` while hashing; the file appears only if the hash matches."""
    digest = hashlib.sha256()
    with atomic_path(target) as tmp, open(tmp, "wb") as out, tqdm(
        total=source.size, unit="B", unit_scale=True, desc=source.filename, disable=not progress, leave=False
    ) as bar:
        while chunk := reader.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            bar.update(len(chunk))
        out.close()
        if digest.hexdigest() != source.sha256:
            raise _mismatch(source, where, digest.hexdigest(), "nothing was written; replace the file with the pinned version")


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


def copy_file(source: Path, target: Path) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)
