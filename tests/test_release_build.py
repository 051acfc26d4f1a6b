"""The release pipeline on a fixture corpus: determinism, atomicity, round trip, verification."""

import dataclasses
import hashlib
import json

import pytest
from datasets import load_dataset

from cohbench.release.build import build
from cohbench.release.index import write_index
from cohbench.release.load import load
from cohbench.release.verify import verify
from cohbench.corpora import storysumm
from cohbench.errors import ParseError, RegistryError, ReleaseError
from cohbench.corpora.registry import ConfigSpec
from cohbench.corpora.sources import Source

from conftest import FIXTURES
from release_fixture import record, write_config

FIXTURE = FIXTURES / "storysumm" / "storysumm.json"


def fixture_corpus(path=FIXTURE, expected_splits=None):
    data = path.read_bytes()
    source = Source("storysumm", storysumm.SOURCE.url, hashlib.sha256(data).hexdigest(), len(data), "MIT")
    spec = ConfigSpec("storysumm", "fixture", "summary", expected_splits=expected_splits)
    return dataclasses.replace(storysumm.CORPUS, sources=(source,), errata=(), configs=(spec,))


def build_fixture(workspace, path=FIXTURE, **kwargs):
    """`cohbench build storysumm` on the fixture: the config, then the release's card and manifest."""
    stats = build("storysumm", corpus=fixture_corpus(path, **kwargs), paths={"storysumm": path}, release=workspace / "release",
                  progress=False)
    write_index(workspace / "release")
    return stats


def parquet_bytes(workspace):
    return {p.name: p.read_bytes() for p in sorted((workspace / "release/data/storysumm").glob("*.parquet"))}


def test_building_twice_gives_byte_identical_parquet(workspace):
    build_fixture(workspace)
    first = parquet_bytes(workspace)
    build_fixture(workspace)
    assert parquet_bytes(workspace) == first
    assert set(first) == {"validation.parquet", "test.parquet"}


def test_stats_and_manifest_record_counts_and_checksums(workspace):
    stats = build_fixture(workspace)
    assert stats["files"]["test"]["rows"] == 3 and stats["files"]["validation"]["rows"] == 1
    assert stats["splits"]["test"]["labels"] == {"ok": 1, "error": 2}
    manifest = json.loads((workspace / "release/manifest.json").read_text())
    entry = manifest["configs"]["storysumm"]
    assert entry["files"]["test"]["sha256"] == hashlib.sha256(parquet_bytes(workspace)["test.parquet"]).hexdigest()
    assert entry["inputs"][0]["url"].endswith("/storysumm.json")


def test_a_malformed_input_fails_and_leaves_the_previous_release_untouched(workspace, tmp_path):
    build_fixture(workspace)
    before = parquet_bytes(workspace)
    card = (workspace / "release/README.md").read_text()
    truncated = tmp_path / "storysumm.json"
    truncated.write_bytes(FIXTURE.read_bytes()[:300])
    with pytest.raises(ParseError, match="not valid JSON"):
        build_fixture(workspace, truncated)
    assert parquet_bytes(workspace) == before
    assert (workspace / "release/README.md").read_text() == card
    assert not [p for p in (workspace / "release").rglob("*") if ".tmp" in p.name]


def test_a_split_size_other_than_declared_fails_without_output(workspace):
    with pytest.raises(ReleaseError, match="split sizes"):
        build_fixture(workspace, expected_splits={"validation": 1, "test": 4})
    assert not (workspace / "release/data/storysumm").exists()


def test_load_dataset_round_trip_keeps_classlabel_names(workspace):
    build_fixture(workspace)
    loaded = load_dataset(str(workspace / "release"), "storysumm")
    assert set(loaded) == {"validation", "test"}
    features = loaded["test"].features
    assert features["label"].names == ["ok", "error"]
    assert features["sentence_labels"].feature.names == ["ok", "error"]
    assert features["spans"].feature["type"].names == ["CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE"]
    row = loaded["test"].filter(lambda r: r["id"] == "b2unfaithful")[0]
    assert row["sentence_labels"] == [1, 0, 1]


def test_verify_finds_a_tampered_release_file(workspace):
    build_fixture(workspace)
    assert all(r["ok"] for r in verify(workspace / "release")["files"] if r["kind"] == "release")
    target = workspace / "release/data/storysumm/validation.parquet"
    target.write_bytes(target.read_bytes() + b"\0")
    bad = [r for r in verify(workspace / "release")["files"] if not r["ok"] and r["kind"] == "release"]
    assert [r["path"] for r in bad] == [str(target)]


def test_loading_a_config_that_is_not_built_says_how_to_build_it_and_a_typo_gets_the_closest_name(workspace):
    folder = workspace / "release"
    with pytest.raises(ReleaseError, match="no cohbench release found"):
        load("storysumm", release=folder)
    write_config(folder, "snac", "snac", {"test": [record("a", "d", ["One."])]})
    with pytest.raises(ReleaseError, match="cohbench build storysumm"):
        load("storysumm", release=folder)
    with pytest.raises(RegistryError, match="unknown config .snacc.; did you mean .snac."):
        load("snacc", release=folder)
