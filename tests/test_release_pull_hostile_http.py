"""`pull` from a hostile HTTP server: a listing padded to 200,000 entries, an endless object, a byte a second, a
server that goes silent and a gzip bomb are each refused in one line, within seconds, with nothing written. A folder
written as a file:// URL is a folder; a SIGKILLed command takes its DVC child with it."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cohbench.cli import main
from cohbench.release import http_remote
from test_release_publish import _Quiet, _release
from test_release_store import _files, repo  # noqa: F401  (repo: the fixture, a git + DVC project with a local store)

pytestmark = pytest.mark.slow  # each test publishes a release from a git + DVC repository

pytestmark = pytest.mark.slow  # each test publishes a release from a git + DVC repository


@pytest.fixture
def published(repo, workspace, monkeypatch, tmp_path):
    """Release 1.0.0 published to a folder: (the repository, the folder, the files the release holds)."""
    expected = _release(repo, [0, 1], "1.0.0", monkeypatch)
    folder = tmp_path / "published"
    assert main(["publish", str(folder), "1.0.0", "--repo", str(repo)]) == 0
    return repo, folder, expected


def _serving(folder: Path, hostile):
    """Serve `folder`, with every GET of an object for which hostile(handler, path) returns True answered by it."""
    requests = []

    class Handler(_Quiet):
        def do_GET(self):
            requests.append(self.path)
            if not hostile(self, folder / self.path.lstrip("/")):
                super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/", requests


def _refused(repo: Path, url: str, workspace: Path, capsys) -> tuple[str, float]:
    out = workspace / "out"
    started = time.monotonic()
    assert main(["pull", "1.0.0", "--repo", str(repo), "--remote", url, "--out", str(out)]) == 1
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "unexpected" not in err, err
    assert not out.exists() and not list(workspace.glob(".out.*")), "a refused pull wrote something"
    return err, took


def _is_file_object(path: Path) -> bool:
    return path.is_file() and not path.name.endswith(".dir")


def _send(handler, body: bytes, **headers) -> None:
    handler.send_response(200)
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    try:
        handler.wfile.write(body)
    except OSError:
        pass  # the client hung up, as it should


def test_a_padded_listing_is_refused_before_any_file_it_names_is_asked_for(published, workspace, capsys):
    """200,000 entries pass the size a listing may have; 20,000 fit it and fail its md5."""
    repo, folder, _ = published
    listing = next(p for p in folder.rglob("*.dir"))
    honest = json.loads(listing.read_bytes())
    for entries, said in ((200_000, "sent more than the 4,194,304 bytes"), (20_000, "does not match its md5")):
        padded = json.dumps(honest + [{"md5": f"{i:032x}", "relpath": f"x{i}.parquet"} for i in range(entries)]).encode()
        server, url, requests = _serving(folder, lambda h, p: p == listing and _send(h, padded) is None)
        try:
            err, took = _refused(repo, url, workspace, capsys)
        finally:
            server.shutdown()
        assert said in err and "1.0.0" in err, err
        assert len(requests) == 1 and took < 30, (len(requests), took)  # the listing only: no GET per padded entry


def test_an_endless_object_is_cut_at_the_size_the_release_records(published, workspace, capsys):
    repo, folder, _ = published

    def endless(handler, path):
        if not _is_file_object(path):
            return False
        handler.send_response(200)
        handler.end_headers()
        try:
            for _ in range(100_000):  # 6.4 GB unless the client hangs up
                handler.wfile.write(b"\0" * 65536)
        except OSError:
            pass
        return True

    server, url, _ = _serving(folder, endless)
    try:
        err, took = _refused(repo, url, workspace, capsys)
    finally:
        server.shutdown()
    assert "sent more than the" in err and "bytes release 1.0.0 records for data/" in err, err
    assert took < 30, took


def test_a_byte_a_second_and_silence_are_refused_after_the_timeout(published, workspace, monkeypatch, capsys):
    repo, folder, _ = published
    monkeypatch.setattr(http_remote, "TIMEOUT", 2)

    def dripping(handler, path):
        if not _is_file_object(path):
            return False
        handler.send_response(200)
        handler.send_header("Content-Length", str(path.stat().st_size))
        handler.end_headers()
        try:
            for byte in path.read_bytes():
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(0.25)
        except OSError:
            pass
        return True

    def silent(handler, path):
        if _is_file_object(path):
            time.sleep(30)
            return True
        return False

    for hostile, said in ((dripping, "too slowly"), (silent, "stopped sending")):
        server, url, _ = _serving(folder, hostile)
        try:
            err, took = _refused(repo, url, workspace, capsys)
        finally:
            server.shutdown()
        assert said in err and "of release 1.0.0" in err, err
        assert took < 20, (said, took)


def test_a_gzip_bomb_is_refused_without_inflating_it(published, workspace, capsys):
    repo, folder, _ = published
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MB of zeros in about 64 kB

    server, url, _ = _serving(folder, lambda h, p: _is_file_object(p) and _send(h, bomb, Content_Encoding="gzip") is None)
    try:
        err, took = _refused(repo, url, workspace, capsys)
    finally:
        server.shutdown()
    assert "compressed (gzip)" in err, err
    assert took < 30, took


def test_a_store_folder_written_as_a_file_url_is_published_to_and_pulled_from(published, workspace, tmp_path, capsys):
    repo, folder, expected = published
    again = tmp_path / "as url"
    assert main(["publish", again.as_uri(), "1.0.0", "--repo", str(repo)]) == 0
    assert sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file()) == \
        sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    out = workspace / "out"
    assert main(["pull", "1.0.0", "--repo", str(repo), "--remote", again.as_uri(), "--out", str(out)]) == 0, capsys.readouterr().err
    assert _files(out) == expected


def test_a_killed_command_takes_its_dvc_child_with_it(repo, tmp_path):
    """A child started through the store's runner (DVC's Python, as pull and publish start it) dies with cohbench."""
    pid_file = tmp_path / "child.pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    parent = ("import sys; from pathlib import Path; from cohbench.release.store import _run; "
              f"_run(Path({str(repo)!r}), 'python', '-c', {child!r}, what='sleeping')")
    process = subprocess.Popen([sys.executable, "-c", parent], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        grandchild = int(pid_file.read_text())
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{grandchild}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return  # killed, not yet reaped by its new parent
        time.sleep(0.1)
    os.kill(grandchild, signal.SIGKILL)
    pytest.fail("the DVC child outlived the command that started it")
