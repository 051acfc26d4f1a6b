"""Malformed or unpinned SNaC input stops the build with one clear error naming the file; nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cohbench.release.build import build
from cohbench.corpora import snac
from cohbench.errors import ParseError, SourceError

FIXTURES = Path(__file__).parent / "fixtures" / "snac"


def _nothing_written(workspace: Path) -> bool:
    return not (workspace / "release" / "data").exists() and not (workspace / "release" / "stats").exists()


def test_truncated_json_names_the_file_and_writes_nothing(workspace):
    with pytest.raises(ParseError, match=r"SNaC_data\.json is not valid JSON .* line \d+"):
        build("snac", release=workspace / "release", paths={"snac": FIXTURES / "truncated" / "SNaC_data.json"}, progress=False)
    assert _nothing_written(workspace)


def test_unknown_error_type_names_the_file_and_the_summary(tmp_path):
    data = json.loads((FIXTURES / "SNaC_data.json").read_text())
    data["tripod3"]["1"]["errors"][0]["error_type"] = "PlotE"
    bad = tmp_path / "SNaC_data.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ParseError, match=r"SNaC_data\.json: summary tripod3 unit 1 has error type 'PlotE'"):
        snac.parse({"snac": bad})


def test_missing_unit_names_the_summary(tmp_path):
    data = json.loads((FIXTURES / "SNaC_data.json").read_text())
    del data["book_175b1"]["2"]
    bad = tmp_path / "SNaC_data.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ParseError, match=r"summary book_175b1 has unit keys"):
        snac.parse({"snac": bad})


def test_file_with_wrong_checksum_is_refused_and_never_cached(workspace, monkeypatch):
    mirror = workspace / "mirror"
    target = mirror / snac.SOURCE.relpath
    target.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "SNaC_data.json", target)  # a well-formed file, but not the pinned bytes
    monkeypatch.setenv("COHBENCH_MIRROR", str(mirror))
    with pytest.raises(SourceError, match=rf"SNaC_data\.json from the mirror .* is pinned to {snac.SOURCE.sha256}"):
        build("snac", release=workspace / "release", progress=False)
    assert not any((workspace / "raw").rglob("SNaC_data.json"))
    assert _nothing_written(workspace)
