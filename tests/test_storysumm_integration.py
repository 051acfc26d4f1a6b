"""StorySumm built from the real pinned file in the mirror, through the CLI a user runs."""

import json

import pytest
from conftest import built_from_mirror
from corpus_case import FIXTURES, CorpusCase, Opening, expected_splits

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


def _summary(key: str, story: int, unfaithful: bool, difficulty: str | None, errors: list[int], first: str, story_opening: str) -> dict:
    """An entry of storysumm.json: its key, `story-id`, `label` (1 faithful), `difficulty` ("" for faithful ones), its
    `errors` (1 consistent, 0 not), the opening of its first summary sentence and of its story; the schema flips the
    labels (1 = error)."""
    return {"id": key, "doc_id": f"story-{story}", "label": int(unfaithful), "difficulty": difficulty,
            "sentence_labels": [1 - flag for flag in errors], "sentences[0]": Opening(first), "source_text": Opening(story_opening)}


class TestStorySumm(CorpusCase):
    CORPUS = "storysumm"
    FIXTURE_PATHS = {"storysumm": FIXTURES / "storysumm/storysumm.json"}
    SPOT_CHECKS = {"storysumm": {  # in key order, split by the entries' own `split` ("val" is validation)
        "validation": {
            0: _summary("0b08649def5b4a13aa68f784227fc004", 3, True, "easy", [0, 1, 0, 1, 1, 0, 1],
                        "A man is abducted from his car while drinking a soda", "I could still taste the gas station coke"),
            9: _summary("26ac9c7c262c4be3be8846dd0a2f084c", 10, True, "hard", [1, 1, 0, 0, 1, 1, 1, 1],
                        "The story is narrated from the perspective of one of three women", "Have you watched that new series?"),
            -1: _summary("e37c62ee9b62445287a21b99c8b62b1f", 9, True, "easy", [1, 1, 1, 0],
                         "The protagonist hates going to cemeteries", "I hate going to cemeteries."),
        },
        "test": {
            0: _summary("73409150676328394731077b01", 12, False, None, [1, 1, 1, 1],
                        "The story follows the reflections of an observer from another planet", "[I wish I were a human.]"),
            9: _summary("7340915067632839473i9mo1w", 21, True, "easy", [1, 1, 0],
                        "Twin siblings, Lance and the narrator, are suspicious", "My twin brother Lance and I never really liked"),
            -1: _summary("8167058533589479ypukwu", 32, False, None, [1] * 10,
                         "In this story, an elderly painter named Cosmo sits atop a hill", "Crooked fingers shakily grasped a paint brush."),
        },
    }}

    @pytest.fixture
    def records_from_mirror(self, built):
        loaded = cohbench.load("storysumm")
        return {"storysumm": {split: list(loaded[split]) for split in loaded}}


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
    from cohbench.corpora.fetch import fetch
    from cohbench.release.hf_builder import builder_for
    from cohbench.corpora.registry import lookup

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
