"""Upstream files resolve cache -> mirror -> network, and are never used or cached unverified."""

import hashlib

import pytest

from cohbench.errors import SourceError
from cohbench.sources import Source, resolve

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
