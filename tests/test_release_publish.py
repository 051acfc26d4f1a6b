"""Releases you can download: two releases are published to a folder that Python's http.server serves on
127.0.0.1; with every local copy deleted (the checkout, its DVC cache, the release store), each is pulled over HTTP
into a fresh clone that has no tags, verified and diffed. What a remote cannot give is one line saying which."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cohbench._version
from cohbench.cli import main
from cohbench.release.index import write_index
from release_fixture import plain_record, write_config
from test_release_store import _files, _run, build_stage, record_outputs, repo  # noqa: F401  (repo: the fixture, a git + DVC project with a local store)

pytestmark = pytest.mark.slow  # each test publishes a release from a git + DVC repository


def _release(repo: Path, labels: list[int], version: str, monkeypatch, records: list[dict] | None = None) -> dict[str, str]:
    """Build, declare, index and commit a release whose manifest records `version`; no tag (a clone gets none)."""
    monkeypatch.setattr(cohbench._version, "__version__", version)
    records = records or [plain_record("a", 1, labels), plain_record("b", 0, [0, 0])]
    write_config(repo / "cohbench", "timetravel_dsd", "timetravel", {"test": records})
    assert main(["version", "--record"]) == 0
    write_index(repo / "cohbench")
    record_outputs(repo, {"build_timetravel_dsd": build_stage("timetravel_dsd")})
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "commit", "-qm", f"release {version}")
    return _files(repo / "cohbench")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """A folder served over HTTP on 127.0.0.1 by Python's http.server: (folder, its URL)."""
    folder = tmp_path / "published"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _fresh_clone(repo: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-tags", f"file://{repo}", str(where)], check=True, capture_output=True)
    assert _run(where, "git", "tag").strip() == ""
    return where


def test_two_published_releases_come_back_over_http_into_a_fresh_clone_verified_and_diffed(repo, workspace, served, monkeypatch, capsys):
    folder, url = served
    first = _release(repo, [0, 1], "1.0.0", monkeypatch)
    assert main(["push", "--repo", str(repo)]) == 0  # to the builder's own store, as `make release` does
    second = _release(repo, [1, 1], "1.1.0", monkeypatch)
    assert main(["push", "--repo", str(repo)]) == 0
    shutil.rmtree(repo / ".dvc" / "cache")  # publishing takes what the cache lacks from the store
    capsys.readouterr()
    assert main(["publish", str(folder), "--repo", str(repo), "--json"]) == 0
    published = json.loads(capsys.readouterr().out)
    assert sorted(published["releases"]) == ["1.0.0", "1.1.0"] and published["objects_checked"] >= 4

    clone = _fresh_clone(repo, workspace / "clone")
    shutil.rmtree(repo)  # every local copy gone: the checkout with its release and cache, the store
    shutil.rmtree(workspace / "store")
    for version, expected in (("1.0.0", first), ("1.1.0", second)):
        out = workspace / f"pulled-{version}"
        assert main(["pull", version, "--repo", str(clone), "--remote", url, "--out", str(out)]) == 0, capsys.readouterr().err
        assert _files(out) == expected  # byte for byte
        capsys.readouterr()
        assert main(["verify", "--release", str(out), "--quiet"]) == 0
        printed = capsys.readouterr().out.splitlines()
        assert printed[0].endswith("files match their recorded sha256") and not any(line.startswith("ok") for line in printed)
    assert main(["diff", str(workspace / "pulled-1.0.0"), str(workspace / "pulled-1.1.0"), "--json"]) == 1
    change = json.loads(capsys.readouterr().out)["configs"]["timetravel_dsd"]
    assert (change["changed"], change["label_transitions"]) == (1, {"sentence_labels 0 -> 1": 1})

    # the plain DVC command of the README gives the same bytes
    revision = _run(clone, "git", "log", "-1", "--format=%H").strip()
    (workspace / "remote.conf").write_text(f'[remote "public"]\n    url = {url}\n')
    _run(clone, "dvc", "get", ".", "cohbench/data", "--rev", revision, "-o", str(workspace / "plain"), "--config", str(workspace / "remote.conf"),
         "--remote", "public")
    assert _files(workspace / "plain") == {k.removeprefix("data/"): v for k, v in second.items() if k.startswith("data/")}


def _one_line(args: list[str], capsys) -> str:
    assert main(args) == 1, args
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "unexpected" not in err, err
    return err


def test_what_a_remote_cannot_give_is_one_line_saying_which_and_writes_nothing(repo, workspace, served, monkeypatch, capsys):
    folder, url = served
    _release(repo, [0, 1], "1.0.0", monkeypatch)
    assert main(["publish", str(folder), "1.0.0", "--repo", str(repo)]) == 0
    _release(repo, [1, 1], "1.1.0", monkeypatch)  # never published
    clone = _fresh_clone(repo, workspace / "clone")
    out = workspace / "out"
    pull = ["pull", "--repo", str(clone), "--out", str(out)]

    assert "does not hold release 1.1.0" in _one_line([*pull, "1.1.0", "--remote", url], capsys)
    closed = http.server.HTTPServer(("127.0.0.1", 0), _Quiet)  # a port nothing listens on once closed
    port = closed.server_address[1]
    closed.server_close()
    assert "cannot be reached" in _one_line([*pull, "1.0.0", "--remote", f"http://127.0.0.1:{port}/"], capsys)
    objects = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".dir"))
    objects[0].write_bytes(objects[0].read_bytes()[:-1] + b"!")  # same size, one byte changed
    err = _one_line([*pull, "1.0.0", "--remote", url], capsys)
    assert "gave a damaged copy of v1.0.0" in err and str(workspace / "out.") not in err, err
    assert not out.exists() and not list(workspace.glob(".out.*"))

    store = workspace / "store"  # the local store: a FIFO in place of an object is refused at once, not read
    shutil.copytree(folder, store)
    fifo = store / objects[0].relative_to(folder)
    fifo.unlink()
    os.mkfifo(fifo)
    started = time.monotonic()
    assert "is not a regular file" in _one_line([*pull, "1.0.0", "--remote", str(store)], capsys)
    assert time.monotonic() - started < 30 and not list(workspace.glob(".out.*"))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="mounting a small filesystem needs root")
def test_a_pull_onto_a_full_disk_says_so_before_copying(repo, workspace, monkeypatch, capsys):
    noise = [plain_record(f"r{i}", 0, [0]) | {"sentences": [os.urandom(200).hex()]} for i in range(600)]  # incompressible
    _release(repo, [], "1.0.0", monkeypatch, records=noise)  # data larger than the filesystem below
    assert main(["push", "--repo", str(repo)]) == 0
    small = workspace / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(small)], capture_output=True).returncode != 0:
        pytest.skip("this machine does not allow mounting a tmpfs")
    try:
        err = _one_line(["pull", "1.0.0", "--repo", str(repo), "--out", str(small / "out")], capsys)
        assert "not enough space for" in err and "MB free" in err, err
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_terminated_pull_leaves_no_temporary_folder_and_a_killed_one_is_cleaned_by_the_next(repo, workspace, monkeypatch):
    """The remote answers the listings at once and then stalls on every file, so that the pull is
    caught while it copies."""
    _release(repo, [0, 1], "1.0.0", monkeypatch)
    assert main(["push", "--repo", str(repo)]) == 0
    store = workspace / "store"

    class Stalling(_Quiet):
        def do_GET(self):
            if self.path.endswith(".dir"):
                return super().do_GET()
            time.sleep(60)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Stalling, directory=str(store)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "cohbench.cli", "pull", "1.0.0", "--repo", str(repo), "--remote", url, "--out", str(workspace / "out")]
    try:
        for sent, status in ((signal.SIGTERM, 130), (signal.SIGKILL, -9)):
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while not list(workspace.glob(".out.*.tmp/manifest.json")) and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.2)
            assert list(workspace.glob(".out.*.tmp/manifest.json")), f"the pull never began copying: {process.poll()}"
            process.send_signal(sent)
            _, err = process.communicate(timeout=30)
            assert process.returncode == status, err
            left = list(workspace.glob(".out.*.tmp"))
            assert left == [] if sent == signal.SIGTERM else len(left) == 1, left
    finally:
        server.shutdown()
        server.server_close()
    users = workspace / ".photos.2023.backup.tmp"  # the user's own, beside the folder pulled into: never ours to clean
    (users / "img.txt").parent.mkdir()
    (users / "img.txt").write_text("kept")
    assert main(["pull", "1.0.0", "--repo", str(repo), "--out", str(workspace / "out")]) == 0  # from the store itself
    assert list(workspace.glob(".out.*")) == [] and (workspace / "out" / "manifest.json").is_file()
    assert (users / "img.txt").read_text() == "kept"


def test_publishing_again_sends_anew_an_object_the_folder_holds_damaged(repo, workspace, monkeypatch, capsys):
    folder = workspace / "published"
    _release(repo, [0, 1], "1.0.0", monkeypatch)
    assert main(["publish", str(folder), "--repo", str(repo)]) == 0
    objects = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    listing, member = next(p for p in objects if p.name.endswith(".dir")), next(p for p in objects if not p.name.endswith(".dir"))
    for damaged in (listing, member):  # the same size, one byte changed: DVC's push would skip both as present
        damaged.write_bytes(objects[damaged][:-1] + b"!")
    capsys.readouterr()
    assert main(["publish", str(folder), "--repo", str(repo), "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert len(result["damaged_replaced"]) == 2 and result["objects_checked"] == len(objects)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == objects
