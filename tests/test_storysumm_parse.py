"""StorySumm's upstream format, mapped into the schema: polarity, alignment, and defects kept as found."""

import json
import shutil

import pytest

from cohbench.corpora import storysumm
from cohbench.errors import ErratumError, ParseError
from cohbench.schema import ERROR, NO_LABEL, OK

from conftest import FIXTURES

FIXTURE = FIXTURES / "storysumm" / "storysumm.json"


@pytest.fixture(scope="module")
def records():
    return {r["id"]: r for r in storysumm.parse({"storysumm": FIXTURE}).records}


def test_labels_are_flipped_to_one_means_error(records):
    assert records["a1faithful"]["label"] == OK
    assert records["a1faithful"]["sentence_labels"] == [OK, OK]
    assert records["b2unfaithful"]["label"] == ERROR
    assert records["b2unfaithful"]["sentence_labels"] == [ERROR, OK, ERROR]


def test_explanations_are_aligned_to_the_sentences_labelled_unfaithful(records):
    explanations = records["b2unfaithful"]["explanations"]
    assert [(e["sentence"], e["text"]) for e in explanations] == [
        (0, "Bo sails north, not south."),
        (2, "The story never says he stays."),
    ]


def test_record_fields_carry_story_model_and_difficulty(records):
    record = records["b2unfaithful"]
    assert record["doc_id"] == "story-8" and record["split"] == "test"
    assert record["system"] == "gpt-4" and record["system_name"] == "GPT-4"
    assert record["difficulty"] == "easy" and records["a1faithful"]["difficulty"] is None
    assert record["source_text"].startswith("Bo sailed north")


def test_upstream_claude_is_told_apart_as_claude_2_on_val_and_claude_3_on_test(records, tmp_path):
    test = records["c3countmismatch"]  # upstream model "claude", split test
    assert (test["system"], test["system_name"], test["system_upstream"]) == ("claude-3", "Claude-3", "claude")
    assert records["b2unfaithful"]["system_upstream"] is None  # gpt-4 names one model already
    data = json.loads(FIXTURE.read_text())
    data["a1faithful"]["model"] = "claude"  # a val summary
    (tmp_path / "storysumm.json").write_text(json.dumps(data))
    val = {r["id"]: r for r in storysumm.parse({"storysumm": tmp_path / "storysumm.json"}).records}["a1faithful"]
    assert (val["system"], val["system_name"], val["system_upstream"]) == ("claude-2", "Claude-2", "claude")


def test_sentence_label_count_mismatch_is_kept_with_unknown_labels(records):
    record = records["c3countmismatch"]
    assert record["sentence_labels"] == [NO_LABEL] * 3
    assert record["label"] == OK
    assert any(d.startswith("sentence_label_count") for d in record["defects"])


def test_unfaithful_summary_without_sentence_error_is_kept_and_flagged(records):
    record = records["d4nosentence"]
    assert record["label"] == ERROR and record["sentence_labels"] == [OK, OK]
    assert record["explanations"] == [{"sentence": None, "text": "Di walks, she does not run."}]
    assert {d.split(":")[0] for d in record["defects"]} == {"explanation_alignment", "summary_label_without_sentence_error"}


def test_every_upstream_record_is_accounted_for():
    parsed = storysumm.parse({"storysumm": FIXTURE})
    assert parsed.upstream_records == 4 and len(parsed.records) == 4 and not parsed.dropped
    assert parsed.notes["records_with_defects"] == 2


def test_the_upstream_defect_is_a_clear_parse_error_naming_the_file():
    with pytest.raises(ParseError, match=r"storysumm_stray_string\.json is not valid JSON .*line 28"):
        storysumm.parse({"storysumm": FIXTURES / "storysumm" / "storysumm_stray_string.json"})


def test_the_erratum_refuses_a_file_with_the_same_defect_but_another_sha256():
    data = (FIXTURES / "storysumm" / "storysumm_stray_string.json").read_bytes()
    with pytest.raises(ErratumError, match="only at sha256 a5d33036"):
        storysumm.STRAY_STRING.apply(data, "storysumm.json")


def test_a_record_missing_a_field_is_a_clear_error(tmp_path):
    data = json.loads(FIXTURE.read_text())
    del data["b2unfaithful"]["errors"]
    path = tmp_path / "storysumm.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ParseError, match="record b2unfaithful lacks field"):
        storysumm.parse({"storysumm": path})


def test_truncated_json_is_a_clear_error(tmp_path):
    path = tmp_path / "storysumm.json"
    shutil.copy(FIXTURE, path)
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(ParseError, match="is not valid JSON"):
        storysumm.parse({"storysumm": path})
