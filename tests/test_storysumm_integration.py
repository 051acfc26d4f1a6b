"""StorySumm built from the real pinned file in the mirror, through the CLI a user runs."""

import json

import pytest
from conftest import built_from_mirror
from corpus_case import CorpusCase, expected_splits

import cohbench
from cohbench.cli import main
from cohbench.release.versions import declared


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # module-scoped: build once from the mirror for all checks below
    with built_from_mirror(tmp_path_factory, "storysumm") as (root, stats):
        yield root, stats


@pytest.fixture(scope="module")
def from_mirror(built):
    return "storysumm", built[1]["splits"]


class TestStorySumm(CorpusCase):
    CORPUS = "storysumm"


def test_the_built_corpus_has_the_verified_counts(built):
    _, stats = built
    assert stats["upstream_records"] == stats["built_records"] == sum(expected_splits("storysumm").values())
    assert stats["notes"]["stories"] == 32
    assert stats["notes"]["by_difficulty"] == {"easy": 20, "hard": 40, "none (faithful)": 36}
    assert stats["notes"]["records_with_defects"] == 2


def test_the_erratum_is_applied_and_recorded(built):
    _, stats = built
    assert [e["id"] for e in stats["errata"]] == ["storysumm-stray-string-line-1455"]
    card = (built[0] / "release/README.md").read_text()
    assert "storysumm-stray-string-line-1455" in card and "config_name: storysumm" in card


def test_splits_do_not_share_stories(built):
    ds = cohbench.load("storysumm")
    assert not set(ds["validation"]["doc_id"]) & set(ds["test"]["doc_id"])
    assert {split: len(ds[split]) for split in ds} == expected_splits("storysumm")


def test_cli_list_reports_versions_licences_and_rows(built, capsys):
    assert main(["list", "--json"]) == 0
    rows = {r["config"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["storysumm"]["rows"] == expected_splits("storysumm")
    assert rows["storysumm"]["licence"] == "MIT" and rows["storysumm"]["version"] == declared("storysumm")["version"]  # its records are the declared ones


def test_cli_verify_passes_then_fails_on_a_tampered_raw_file(built, capsys):
    assert main(["verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and {r["kind"] for r in report["files"]} == {"raw", "erratum", "release", "card", "cards", "stats"}
    raw = next(p for p in (built[0] / "raw").rglob("storysumm.json") if "errata" not in p.parts)
    original = raw.read_bytes()
    raw.write_bytes(original[:-10])
    try:
        assert main(["verify"]) == 1
        assert "FAILED  raw" in capsys.readouterr().out
    finally:
        raw.write_bytes(original)


def test_cli_fetch_is_idempotent_and_reports_paths(built, capsys):
    raw = built[0] / "raw"

    def cache():  # every cached file's bytes and identity: a file rewritten in place or replaced shows here
        return {p.relative_to(raw): (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(raw.rglob("*")) if p.is_file()}

    before = cache()
    assert main(["fetch", "storysumm", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["storysumm"]
    assert main(["fetch", "storysumm", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)["storysumm"]
    assert first == second and cache() == before  # the build already fetched: nothing is fetched or written again
    assert first["storysumm"].endswith("errata/storysumm-stray-string-line-1455/storysumm.json")


def test_the_corpus_builder_works_directly_with_hf_caching(built, tmp_path):
    from cohbench.fetch import fetch
    from cohbench.release.hf_builder import builder_for
    from cohbench.registry import lookup

    corpus = lookup("storysumm")
    builder = builder_for(corpus)(config_name="storysumm", cache_dir=str(tmp_path / "hf"), paths=fetch(corpus))
    builder.download_and_prepare()
    splits = builder.as_dataset()
    assert {name: len(ds) for name, ds in splits.items()} == expected_splits("storysumm")
    assert splits["test"].features["label"].names == ["ok", "error"]


def test_load_dataset_by_the_folder_name_from_its_parent(built, monkeypatch):
    from datasets import load_dataset

    root = built[0]
    (root / "cohbench").symlink_to(root / "release", target_is_directory=True)
    monkeypatch.chdir(root)
    loaded = load_dataset("cohbench", "storysumm")
    assert {split: loaded[split].num_rows for split in loaded} == expected_splits("storysumm")
