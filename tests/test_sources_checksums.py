"""Checksum tables: a file is declared by a row (name, url, licence); `register_checksums` pins its size and sha256
from the file it finds, and only a fully pinned table yields sources."""

import hashlib
import shutil
from pathlib import Path

import pytest

from cohbench.corpora import CHECKSUMS, pinned
from cohbench.cli import main
from cohbench.errors import SourceError
from cohbench.corpora.sources import read_table, register_checksums, resolve

FIXTURE = Path(__file__).parent / "fixtures/fairytaleqa/story_meta.csv"
URL = "https://raw.githubusercontent.com/owner/repo/0123abcd/story_meta.csv"
HEADER = "name\turl\tsize\tsha256\tlicence\n"


@pytest.fixture
def declared(tmp_path):
    """A table declaring one file, not yet registered, and a mirror holding that file."""
    mirror = tmp_path / "mirror"
    (mirror / "raw.githubusercontent.com/owner/repo/0123abcd").mkdir(parents=True)
    shutil.copyfile(FIXTURE, mirror / "raw.githubusercontent.com/owner/repo/0123abcd/story_meta.csv")
    table = tmp_path / "demo.tsv"
    table.write_text(HEADER + f"story_meta\t{URL}\t\t\tApache-2.0\n")
    return table, mirror


def test_a_declared_but_unregistered_file_is_refused_with_the_command_that_pins_it(declared):
    table, _ = declared
    with pytest.raises(SourceError, match="cohbench fetch --register-checksums demo"):
        read_table(table)


def test_registering_pins_the_size_and_sha256_of_the_file_found_in_the_mirror(declared, tmp_path):
    table, mirror = declared
    assert register_checksums(table, cache_dir=tmp_path / "raw", mirrors=[mirror], network=False) == [URL]
    (source,) = read_table(table)
    assert (source.name, source.url, source.licence) == ("story_meta", URL, "Apache-2.0")
    assert source.sha256 == hashlib.sha256(FIXTURE.read_bytes()).hexdigest() and source.size == FIXTURE.stat().st_size
    cached = resolve(source, tmp_path / "raw", mirrors=[mirror], network=False)
    assert cached == tmp_path / "raw/raw.githubusercontent.com/owner/repo/0123abcd/story_meta.csv"
    assert register_checksums(table, cache_dir=tmp_path / "raw", mirrors=[mirror], network=False) == []


def test_a_changed_upstream_file_is_re_pinned_and_a_missing_one_leaves_the_table_alone(declared, tmp_path):
    table, mirror = declared
    register_checksums(table, cache_dir=tmp_path / "raw", mirrors=[mirror], network=False)
    (mirror / "raw.githubusercontent.com/owner/repo/0123abcd/story_meta.csv").write_bytes(b"filename,split\n")
    assert register_checksums(table, cache_dir=tmp_path / "raw", mirrors=[mirror], network=False) == [URL]
    assert read_table(table)[0].sha256 == hashlib.sha256(b"filename,split\n").hexdigest()
    pinned_text = table.read_text()
    table.write_text(pinned_text + f"other\t{URL.replace('story_meta', 'other')}\t\t\tMIT\n")
    with pytest.raises(SourceError, match="other.csv is in no mirror"):
        register_checksums(table, cache_dir=tmp_path / "raw", mirrors=[mirror], network=False)
    assert table.read_text() == pinned_text + f"other\t{URL.replace('story_meta', 'other')}\t\t\tMIT\n"


def test_every_shipped_table_is_fully_pinned_and_a_shared_file_is_pinned_once():
    urls = [source.url for table in sorted(CHECKSUMS.glob("*.tsv")) for source in read_table(table)]
    assert len(urls) == len(set(urls))
    assert "timetravel_dev" in pinned("timetravel")


def test_cli_refuses_a_corpus_without_a_checksum_table(capsys):
    assert main(["fetch", "--register-checksums", "no_such_corpus"]) == 1
    assert "no checksum table for 'no_such_corpus'" in capsys.readouterr().err
