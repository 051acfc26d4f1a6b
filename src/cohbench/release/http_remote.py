"""A release's objects from an HTTP remote, with bounds a hostile server cannot stretch.

DVC's HTTP client follows a listing of any length, reads an object for as long as the server sends, waits on a byte a
second and inflates whatever the server compressed (and remembers a hostile listing in its site cache). Here each
object is asked for by the md5 the release records and is refused, in one line naming it, when it is larger than the
size the release records, arrives slower than a floor rate, comes compressed, or does not hash to its md5. A folder's
listing is checked against its md5 before any file it names is asked for, so a listing can only name the release's
own files. Nothing is cached outside the folder being filled."""

from __future__ import annotations

import hashlib
import posixpath
import queue
import threading
import time
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from ..errors import ReleaseError
from .store_objects import listing_of, object_path

LISTING_LIMIT = 4 << 20  # bytes: a release's folder listing is a few kB
TIMEOUT = 30  # seconds a connection, or one read, may wait
MIN_RATE = 32 << 10  # bytes/s an object must average once it has taken TIMEOUT seconds
WORKERS = 8


def download(url: str, outputs: dict[str, dict], version: str, target: Path) -> int:
    """Every object of `outputs` (by path in the release: dvc.lock's md5 and size) from `url` into `target`, each
    checked against its md5 before it is written. Returns the bytes received (the objects and their listings)."""
    def fetch_output(item: tuple[str, dict]) -> tuple[int, list[tuple[str, str, int]]]:
        output, entry = item
        md5, size = entry["md5"], _recorded_size(entry, output, version)
        if not md5.endswith(".dir"):
            return _write(target / output, _get(url, output, md5, size, version)), []
        data = _get(url, output, md5, LISTING_LIMIT, version)
        members = listing_of(data, output, version, f"the remote {url}", object_path(url, md5))
        return len(data), [(_member_path(output, m["relpath"], version, url), m["md5"], size) for m in members]

    fetched = _parallel(fetch_output, list(outputs.items()))
    files = [member for _, members in fetched for member in members]
    received = _parallel(lambda member: _write(target / member[0], _get(url, *member, version)), files)
    return sum(n for n, _ in fetched) + sum(received)


def _recorded_size(entry: dict, output: str, version: str) -> int:
    size = entry.get("size")
    if not isinstance(size, int) or size < 0:
        raise ReleaseError(f"release {version} records no size for {output} (dvc.lock); it cannot be pulled over HTTP "
                           "with a bound, so pull it from a folder or another DVC remote")
    return size


def _member_path(output: str, relpath: str, version: str, url: str) -> str:
    """A listing's path, inside its output (the listing matched its md5, so this guards against a damaged release)."""
    clean = posixpath.normpath(relpath)
    if relpath.startswith("/") or clean.startswith("..") or clean in (".", ""):
        raise ReleaseError(f"the remote {url} lists a file outside {output} of release {version} ({relpath!r})")
    return f"{output}/{clean}"


def _get(url: str, what: str, md5: str, limit: int, version: str) -> bytes:
    """The object named `md5`, at most `limit` bytes, at MIN_RATE or faster, uncompressed and matching its md5."""
    where = f"the remote {url}"
    request = Request(object_path(url, md5), headers={"Accept-Encoding": "identity"})
    started = time.monotonic()
    try:
        with urlopen(request, timeout=TIMEOUT) as response:
            encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
            if encoding != "identity":
                raise ReleaseError(f"{where} sent {what} of release {version} compressed ({encoding[:40]}); a DVC store "
                                   "serves its objects as they are: serve the folder without compression")
            chunks, size = [], 0
            while block := response.read1(min(1 << 20, limit + 1 - size)):
                size += len(block)
                if size > limit:
                    raise ReleaseError(f"{where} sent more than the {limit:,} bytes release {version} records for {what}; "
                                       "the remote's copy is damaged: publish it there again")
                elapsed = time.monotonic() - started
                if elapsed > TIMEOUT and size / elapsed < MIN_RATE:
                    raise ReleaseError(f"{where} sends {what} of release {version} too slowly ({size / elapsed:,.0f} bytes/s "
                                       f"after {elapsed:.0f} s; at least {MIN_RATE:,} expected); try again, or another remote")
                chunks.append(block)
    except HTTPError as error:
        if error.code == 404:
            raise ReleaseError(f"{where} does not hold release {version} ({what} is missing); "
                               "publish it there with `cohbench publish`") from None
        raise ReleaseError(f"{where} refused {what} of release {version} (HTTP {error.code})") from None
    except TimeoutError:
        raise ReleaseError(f"{where} stopped sending {what} of release {version} (nothing for {TIMEOUT} s); try again, "
                           "or another remote") from None
    except (URLError, OSError) as error:
        raise ReleaseError(f"{where} cannot be reached ({getattr(error, 'reason', error)})") from None
    data = b"".join(chunks)
    if hashlib.md5(data).hexdigest() != md5.removesuffix(".dir"):
        raise ReleaseError(f"{where} gave a damaged copy of v{version}: {what} does not match its md5 {md5}; the remote's "
                           f"copy is damaged: publish {version} there again (`cohbench publish TARGET {version}`)")
    return data


def _write(path: Path, data: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.write_bytes(data)


def _parallel(work, items: list) -> list:
    """`work` over `items` on WORKERS daemon threads, in order; the first error is raised. Daemon threads, so that
    Ctrl-C or SIGTERM ends the pull at once, not after a stalled read's timeout."""
    tasks: queue.Queue = queue.Queue()
    for index, item in enumerate(items):
        tasks.put((index, item))
    done: queue.Queue = queue.Queue()
    stop = threading.Event()

    def worker():
        while not stop.is_set():
            try:
                index, item = tasks.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((index, work(item), None))
            except BaseException as error:  # handed to the caller, which raises it
                done.put((index, None, error))

    for _ in range(min(WORKERS, len(items))):
        threading.Thread(target=worker, daemon=True).start()
    results = [None] * len(items)
    try:
        for _ in items:
            index, result, error = done.get()
            if error is not None:
                raise error
            results[index] = result
    finally:
        stop.set()
    return results
