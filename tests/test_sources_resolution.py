"""Upstream files resolve cache -> mirror -> network, and are never used or cached unverified."""

import hashlib

import pytest

from cohbench.errors import SourceError
from cohbench.corpora.sources import Source, resolve

CONTENT = b'{"hello": "world"}\n'


def _source(content=CONTENT):
    return Source(
        name="demo",
        url="https://raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json",
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        licence="MIT",
    )


def _mirror_with(tmp_path, content):
    mirror = tmp_path / "mirror"
    target = mirror / "raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(content)
    return mirror


def test_a_mirror_copy_is_verified_and_cached_under_host_and_url_path(tmp_path):
    mirror = _mirror_with(tmp_path, CONTENT)
    path = resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False)
    assert path == tmp_path / "cache/raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json"
    assert path.read_bytes() == CONTENT


def test_the_cache_is_used_before_the_mirror(tmp_path):
    mirror = _mirror_with(tmp_path, CONTENT)
    first = resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False)
    (mirror / "raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json").unlink()
    assert resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False) == first


def test_a_checksum_mismatch_names_both_hashes_and_writes_nothing(tmp_path):
    mirror = _mirror_with(tmp_path, b"tampered\n")
    with pytest.raises(SourceError) as error:
        resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False)
    message = str(error.value)
    assert hashlib.sha256(b"tampered\n").hexdigest() in message and _source().sha256 in message
    assert "demo.json" in message
    assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*"))


def test_a_corrupted_cache_file_is_an_error_not_silently_used(tmp_path):
    mirror = _mirror_with(tmp_path, CONTENT)
    path = resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False)
    path.write_bytes(b"bit rot\n")
    with pytest.raises(SourceError, match="delete the cached file"):
        resolve(_source(), tmp_path / "cache", mirrors=[mirror], network=False)


def test_a_missing_file_error_lists_the_file_its_url_and_where_to_put_it(tmp_path):
    with pytest.raises(SourceError) as error:
        resolve(_source(), tmp_path / "cache", mirrors=[tmp_path / "empty-mirror"], network=False)
    message = str(error.value)
    assert "demo.json" in message
    assert "https://raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json" in message
    assert "<mirror>/raw.githubusercontent.com/owner/repo/0123abcd/data/demo.json" in message
    assert "network is disabled" in message


@pytest.fixture
def http_server(tmp_path):
    """A loopback HTTP server serving tmp_path/www, standing in for the upstream host."""
    import functools
    import http.server
    import threading

    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_network_is_tried_last_and_its_download_verified(http_server, tmp_path):
    root, base = http_server
    (root / "demo.json").write_bytes(CONTENT)
    source = Source("demo", f"{base}/demo.json", hashlib.sha256(CONTENT).hexdigest(), len(CONTENT), "MIT")
    path = resolve(source, tmp_path / "cache", mirrors=[], network=True)
    assert path.read_bytes() == CONTENT and path.parts[-2:] == (f"127.0.0.1:{base.rsplit(':', 1)[1]}", "demo.json")


def test_a_tampered_download_is_rejected_and_not_cached(http_server, tmp_path):
    root, base = http_server
    (root / "demo.json").write_bytes(b"tampered\n")
    source = Source("demo", f"{base}/demo.json", hashlib.sha256(CONTENT).hexdigest(), len(CONTENT), "MIT")
    with pytest.raises(SourceError, match="nothing was written"):
        resolve(source, tmp_path / "cache", mirrors=[], network=True)
    assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*"))


def test_an_unreachable_host_is_reported_with_where_to_put_the_file(http_server, tmp_path):
    _, base = http_server
    source = Source("demo", f"{base}/absent.json", hashlib.sha256(CONTENT).hexdigest(), len(CONTENT), "MIT")
    with pytest.raises(SourceError, match=r"downloading it failed .*<mirror>/127\.0\.0\.1"):
        resolve(source, tmp_path / "cache", mirrors=[], network=True)


def test_a_bad_first_mirror_falls_back_to_a_good_second_one(tmp_path):
    bad = _mirror_with(tmp_path / "first", b"tampered\n")
    good = _mirror_with(tmp_path / "second", CONTENT)
    path = resolve(_source(), tmp_path / "cache", mirrors=[bad, good], network=False)
    assert path.read_bytes() == CONTENT


def test_when_every_mirror_is_bad_the_error_names_the_first_and_counts_the_rest(tmp_path):
    mirrors = [_mirror_with(tmp_path / name, b"tampered %s\n" % name.encode()) for name in ("a", "b")]
    with pytest.raises(SourceError, match=r"a/mirror/.*demo.json.*\(1 other copy/copies differ too\)"):
        resolve(_source(), tmp_path / "cache", mirrors=mirrors, network=False)
    assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*"))
