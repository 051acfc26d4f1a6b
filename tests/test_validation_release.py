"""`cohbench validate`: a sound release passes; deliberately broken releases fail, naming the check and records."""

import dataclasses
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cohbench.release.build import build
from cohbench.corpora import storysumm
from cohbench.cli import main
from cohbench.corpora.registry import ConfigSpec
from cohbench.corpora.sources import Source
from cohbench.release import versions
from cohbench.validation import record_expected, validate

from conftest import FIXTURES
from release_fixture import record, rewrite_split, snac_like, write_config

pytestmark = pytest.mark.slow  # each test builds and validates a release


def build_storysumm_fixture(workspace):
    path = FIXTURES / "storysumm" / "storysumm.json"
    data = path.read_bytes()
    source = Source("storysumm", storysumm.SOURCE.url, hashlib.sha256(data).hexdigest(), len(data), "MIT")
    corpus = dataclasses.replace(storysumm.CORPUS, sources=(source,), errata=(), configs=(ConfigSpec("storysumm", "fixture", "summary"),))
    stats = build("storysumm", corpus=corpus, paths={"storysumm": path}, release=workspace / "release", progress=False)
    versions.record("storysumm", stats)  # the fixture's records, declared as a version
    return workspace / "release"


def failures(verdict):
    return {r["check"]: r for r in verdict["results"] if not r["success"]}


def test_a_built_release_passes_against_its_recorded_statistics_and_writes_docs(workspace):
    rel = build_storysumm_fixture(workspace)
    record_expected("storysumm", release=rel, directory=workspace / "expected")
    report = validate(release=rel, expected=workspace / "expected")
    assert report["ok"], report["configs"]["storysumm"]["line"]
    assert report["configs"]["storysumm"]["line"].startswith("storysumm: ok")
    docs = workspace / "validation-docs"  # outside the release: regenerable, timestamped, never shared with it
    assert (docs / "index.html").is_file() and not (rel / "validation/docs").exists()
    assert list((docs / "storysumm/validations").rglob("*.html")) and (docs / "release/index.html").is_file()
    summary = json.loads((rel / "validation/storysumm.json").read_text())
    assert summary["ok"] and summary["records"] == 4


def test_flipped_labels_fail_the_drift_check_with_a_diff(workspace):
    rel = build_storysumm_fixture(workspace)
    record_expected("storysumm", release=rel, directory=workspace / "expected")
    table = pq.read_table(rel / "data/storysumm/test.parquet")
    flipped = pa.array([1 - v for v in table["label"].to_pylist()], type=table.schema.field("label").type)
    rewrite_split(rel, "storysumm", "test", table.set_column(table.schema.get_field_index("label"), "label", flipped))
    report = validate(release=rel, expected=workspace / "expected", docs=False)
    verdict = report["configs"]["storysumm"]
    assert not report["ok"]
    drift = failures(verdict)["row counts and label distributions equal " + str(workspace / "expected/storysumm.json")]
    assert "test.labels.error: expected 2, found 1" in drift["examples"]
    assert "test.labels.ok: expected 1, found 2" in drift["examples"]
    assert "[stats]" in verdict["line"] and "test.labels.error: expected 2, found 1" in verdict["line"]


def test_a_missing_snapshot_fails_and_says_how_to_record_one(workspace):
    rel = build_storysumm_fixture(workspace)
    verdict = validate(release=rel, expected=workspace / "expected", docs=False)["configs"]["storysumm"]
    assert not verdict["ok"] and "--record-expected" in verdict["line"]


def test_a_shifted_span_fails_naming_the_span(workspace):
    rel = workspace / "release"
    good, shifted = snac_like("s1", "book-1"), snac_like("s2", "book-2")
    shifted["spans"][0].update(start=1, end=4)  # "ob " instead of "Bob"
    write_config(rel, "snacish", "snac", {"train": [good], "test": [shifted]})
    record_expected("snacish", release=rel, directory=workspace / "expected")
    verdict = validate(release=rel, expected=workspace / "expected", docs=False)["configs"]["snacish"]
    failed = failures(verdict)
    assert set(failed) == {"resolved span text == segments[segment][start:end]"}
    assert failed["resolved span text == segments[segment][start:end]"]["examples"] == ["s2#0"]
    assert "s2#0" in verdict["line"]


def test_list_lengths_votes_and_duplicate_ids_are_named(workspace):
    rel = workspace / "release"
    short = snac_like("s1", "book-1")
    short["sentence_labels"] = [0, 1]  # three sentences
    unvoted = snac_like("s2", "book-2")
    unvoted["spans"][0]["votes"] = 0
    gaps = record("g1", "story-1", ["A.", "B.", "C."], gap_labels=[0, 1, 0])  # 3 sentences -> 2 gaps
    twin = record("g1", "story-2", ["A.", "B."], gap_labels=[1])
    write_config(rel, "mixed", "snac", {"test": [short, unvoted, gaps, twin]})
    record_expected("mixed", release=rel, directory=workspace / "expected")
    failed = failures(validate(release=rel, expected=workspace / "expected", docs=False)["configs"]["mixed"])
    assert failed["one sentence label per sentence"]["examples"] == ["s1 (n_sentence_labels=2, n_sentences=3)"]
    assert failed["one gap label per gap (sentences − 1)"]["examples"] == ["g1 (n_gap_labels=3, n_gaps=2)"]
    assert failed["span votes ≥ 1"]["examples"] == ["s2#0 (votes=0)"]
    assert failed["ids are unique"]["unexpected"] == 2


def test_a_document_in_train_of_one_config_and_test_of_another_is_a_leak(workspace):
    rel = workspace / "release"
    write_config(rel, "timetravel_msd", "timetravel", {"train": [record("a", "roc-7", ["A.", "B."], gap_labels=[0])]})
    write_config(rel, "cloze_dsd", "storycloze", {"test": [record("b", "roc-7", ["A.", "C."], sentence_labels=[0, 1])]})
    for config in ("timetravel_msd", "cloze_dsd"):
        record_expected(config, release=rel, directory=workspace / "expected")
    report = validate(release=rel, expected=workspace / "expected", docs=False)
    assert report["configs"]["timetravel_msd"]["ok"] and report["configs"]["cloze_dsd"]["ok"]
    assert not report["ok"] and not report["release"]["ok"]
    assert "roc-7 found_in=cloze_dsd:test, timetravel_msd:train" in report["release"]["line"]


def test_a_corruption_in_train_derived_from_a_test_record_is_a_leak(workspace):
    rel = workspace / "release"
    source = record("story-1/orig", "story-1", ["A.", "B.", "C."], sentence_labels=[0, 0, 0])
    corrupted = record("story-1/dsd", "story-1-copy", ["A.", "X.", "C."], sentence_labels=[0, 1, 0])
    corrupted["corruption"] = {"generator": "discordant_replace", "seed": 1, "source_id": "story-1/orig", "positions": [1],
                               "inserted_ids": ["story-9#2"], "similarities": [0.1], "ranks": [3]}  # fmt: skip
    write_config(rel, "dsd", "timetravel", {"train": [corrupted], "test": [source]})
    record_expected("dsd", release=rel, directory=workspace / "expected")
    line = validate(release=rel, expected=workspace / "expected", docs=False)["release"]["line"]
    assert "every corruption sits in the split of its source and of every inserted sentence" in line
    assert "dsd/story-1/dsd link=source derived_from=story-1/orig (test)" in line


def test_a_confounder_from_another_split_or_the_same_story_is_named(workspace):
    rel = workspace / "release"

    def dsd(doc, inserted):
        r = record(f"{doc}:dsd", doc, ["A.", "X.", "C."], sentence_labels=[0, 1, 0])
        r["corruption"] = {"generator": "discordant_replace", "seed": 1, "source_id": doc, "positions": [1],
                           "inserted_ids": [f"{inserted}#s2"], "similarities": [0.1], "ranks": [1]}  # fmt: skip
        return r

    write_config(rel, "dsd", "timetravel", {"train": [dsd("t1", "t2"), dsd("t2", "e1"), dsd("t3", "t3")], "test": [dsd("e1", "e2"), dsd("e2", "e1")]})
    record_expected("dsd", release=rel, directory=workspace / "expected")
    failed = failures(validate(release=rel, expected=workspace / "expected", docs=False)["release"])
    assert failed["every corruption sits in the split of its source and of every inserted sentence"]["examples"] == [
        "dsd/t2:dsd link=inserted derived_from=e1 (test)"
    ]
    assert failed["discordant sentences come from another document"]["examples"] == ["dsd/t3:dsd link=inserted derived_from=t3 (train)"]


def test_cross_source_mismatches_recorded_by_the_build_fail(workspace):
    rel = workspace / "release"
    notes = {"expert_mean_crosscheck": {"mismatched_ids": ["d1/M8", "d2/M9"], "records_compared": 3, "records_mismatched": 2}}
    write_config(rel, "summ", "summeval", {"test": [record("d1/M8", "d1", ["A."])]}, notes=notes)
    record_expected("summ", release=rel, directory=workspace / "expected")
    verdict = validate(release=rel, expected=workspace / "expected", docs=False)["configs"]["summ"]
    assert not verdict["ok"]
    assert 'expert_mean_crosscheck.mismatched_ids mismatches=2 examples=["d1/M8", "d2/M9"]' in verdict["line"]
    assert "expert_mean_crosscheck.records_mismatched mismatches=2" in verdict["line"]


def test_cli_prints_one_verdict_per_config_and_exits_non_zero(workspace, capsys, monkeypatch):
    rel = workspace / "release"
    write_config(rel, "one", "snac", {"test": [snac_like("s1", "b1")]})
    assert main(["validate", "--no-docs"]) == 1  # no snapshot recorded in catalog/expected for "one"
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("one: FAILED") and lines[1].startswith("release (1 config(s), leakage): ok")
    assert main(["validate", "nope"]) == 1
    assert "nope not built" in capsys.readouterr().err


def two_config_release(workspace):
    rel = workspace / "release"
    write_config(rel, "snac", "snac", {"test": [snac_like("n1", "b1"), snac_like("n2", "b2")]})
    write_config(rel, "storysumm", "storysumm", {"test": [record("s1", "story-1", ["One."], label=1)]})
    for config in ("snac", "storysumm"):
        record_expected(config, release=rel, directory=workspace / "expected")
    return rel


def test_validating_one_config_rewrites_only_its_own_docs_and_summary(workspace):
    rel, docs = two_config_release(workspace), workspace / "validation-docs"
    validate(release=rel, expected=workspace / "expected")
    snac_docs = sorted(p.relative_to(docs) for p in (docs / "snac").rglob("*"))
    snac_summary = (rel / "validation/snac.json").read_bytes()
    validate(["storysumm"], release=rel, expected=workspace / "expected")
    assert sorted(p.relative_to(docs) for p in (docs / "snac").rglob("*")) == snac_docs
    validate(["storysumm"], release=rel, expected=workspace / "expected", docs=False)
    assert snac_docs and (docs / "snac/index.html").is_file() and not (docs / "storysumm").exists()
    assert (rel / "validation/snac.json").read_bytes() == snac_summary
    assert "snac/index.html" in (docs / "index.html").read_text()


def test_a_killed_validates_temporary_folders_are_cleaned_and_a_running_ones_kept(workspace):
    import os
    import subprocess
    import sys

    rel, docs = two_config_release(workspace), workspace / "validation-docs"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    orphan, running = docs / f".snac.{dead}.x1y2z3ab.tmp", docs / f".storysumm.{os.getpid()}.a1b2c3cd.tmp"  # as tempfile names them
    for folder in (orphan, running):
        (folder / "validations").mkdir(parents=True)
    validate(["snac"], release=rel, expected=workspace / "expected")
    assert not orphan.exists() and running.exists()
