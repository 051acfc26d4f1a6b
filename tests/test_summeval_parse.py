"""SummEval's two upstream copies joined into the schema: ratings per annotator or expert mean, DAMO's text preferred,
the expert-mean cross-check, and the untrusted pickle that may hold only plain data."""

import os
import pickle
import shutil

import pytest

from cohbench.corpora import summeval
from cohbench.errors import ParseError

from conftest import FIXTURES

FIXTURE = FIXTURES / "summeval"


def fixture_paths(folder=FIXTURE) -> dict:
    return {
        "damo_M8": folder / "M8_outputs_annotations.jsonl",
        "damo_M22": folder / "M22_outputs_annotations.jsonl",
        "bartscore": folder / "data.pkl",
    }


@pytest.fixture(scope="module")
def parsed():
    return summeval.parse(fixture_paths())


@pytest.fixture(scope="module")
def records(parsed):
    return {r["id"]: r for r in parsed.records}


@pytest.fixture
def copy(tmp_path):
    for path in fixture_paths().values():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def _edit_pickle(folder, edit):
    data = summeval.load_pickle(folder / "data.pkl")
    edit(data)
    with open(folder / "data.pkl", "wb") as handle:
        pickle.dump(data, handle, protocol=2)


def test_every_summary_of_either_copy_becomes_one_record(parsed, records):
    assert sorted(records) == [
        f"{doc}/{system}" for doc in ("cnn-test-bbbb", "dm-test-aaaa") for system in ("M0", "M22", "M8")
    ]
    assert parsed.upstream_records == 6 and not parsed.dropped
    assert parsed.notes["records_with_annotator_ratings"] == 4 and parsed.notes["records_with_expert_mean_only"] == 2
    assert {r["split"] for r in records.values()} == {"test"}


def test_damo_records_carry_every_annotator_by_list_position(records):
    ratings = records["dm-test-aaaa/M8"]["ratings"]
    assert len(ratings) == 8 * 4
    coherence = {r["annotator"]: r["score"] for r in ratings if r["dimension"] == "coherence"}
    assert coherence == {"expert_1": 2, "expert_2": 1, "expert_3": 3, "crowd_1": 5, "crowd_2": 4, "crowd_3": 3, "crowd_4": 5, "crowd_5": 2}
    assert {r["annotator_type"] for r in ratings if r["annotator"].startswith("crowd")} == {"crowd"}


def test_extractive_systems_have_the_expert_mean_marked_as_such(records):
    record = records["dm-test-aaaa/M0"]
    assert [(r["annotator"], r["annotator_type"], r["dimension"]) for r in record["ratings"]] == [
        ("expert_mean", "expert_mean", d) for d in summeval.DIMENSIONS
    ]
    assert record["ratings"][0]["score"] == pytest.approx(14 / 3)
    assert record["system_name"] == "LEAD-3" and record["system_extractive"] is True


def test_damo_text_is_preferred_and_bartscore_text_is_marked(records):
    damo = records["dm-test-aaaa/M8"]
    assert damo["text_variant"] is None
    assert damo["sentences"] == ["ann lee sailed to oslo on monday .", "she met the mayor there ."]
    assert damo["system_extractive"] is False and damo["system_name"] == "Pointer-Generator"
    bart_only = records["cnn-test-bbbb/M0"]
    assert bart_only["text_variant"] == summeval.BARTSCORE_TEXT
    assert " ".join(bart_only["sentences"]).startswith("-lrb- cnn -rrb- the city opened")


def test_articles_and_references_come_from_the_untokenised_copy_for_every_system(records):
    for system in ("M0", "M8", "M22"):
        record = records[f"cnn-test-bbbb/{system}"]
        assert record["source_text"] == "(CNN) The city opened a new bridge. Traffic fell by half. Residents cheered."
        assert len(record["references"]) == 11 and record["references"][0] == "A new bridge halved traffic. Reference 1."
    assert records["cnn-test-bbbb/M0"]["doc_id"] == "cnn-test-bbbb"


def test_the_crosscheck_passes_on_agreeing_copies(parsed):
    assert parsed.notes["expert_mean_crosscheck"] == {"records_compared": 4, "records_mismatched": 0, "mismatched_ids": []}
    assert parsed.notes["records_with_defects"] == 0


def test_a_planted_expert_mean_mismatch_is_counted_with_its_id(copy):
    def plant(data):
        data["cnn-test-bbbb"]["sys_summs"]["M22"]["scores"]["fluency"] = 5.0  # experts: 5, 4, 5 -> 14/3

    _edit_pickle(copy, plant)
    parsed = summeval.parse(fixture_paths(copy))
    check = parsed.notes["expert_mean_crosscheck"]
    assert check == {"records_compared": 4, "records_mismatched": 1, "mismatched_ids": ["cnn-test-bbbb/M22"]}
    record = next(r for r in parsed.records if r["id"] == "cnn-test-bbbb/M22")
    assert record["defects"] == ["expert_mean_mismatch: fluency mean of experts 4.6667, BARTScore 5.0000"]
    assert parsed.notes["defects"] == {"expert_mean_mismatch": 1}


def test_an_unknown_system_is_dropped_with_a_counted_reason(copy):
    def add(data):
        data["dm-test-aaaa"]["sys_summs"]["M99"] = dict(data["dm-test-aaaa"]["sys_summs"]["M0"])

    _edit_pickle(copy, add)
    parsed = summeval.parse(fixture_paths(copy))
    assert parsed.upstream_records == 7 and len(parsed.records) == 6
    assert parsed.dropped == {"system M99 is not one of SummEval's 16 annotated systems": 1}


class _RunsCode:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _EvalsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (eval, (f"open({str(self.marker)!r}, 'w')",))


@pytest.mark.parametrize("payload", [_RunsCode, _EvalsCode])
def test_a_malicious_pickle_is_refused_and_runs_nothing(tmp_path, payload):
    marker = tmp_path / "pwned"
    argument = f"touch {marker}" if payload is _RunsCode else marker
    for protocol in (0, 2, 5):
        path = tmp_path / "data.pkl"
        path.write_bytes(pickle.dumps({"dm-test-aaaa": payload(argument)}, protocol=protocol))
        with pytest.raises(ParseError, match=r"data\.pkl asks to load the Python object .*refused and nothing was executed"):
            summeval.load_bartscore(path)
        assert not marker.exists()
    pickle.loads(path.read_bytes())  # the payload is live: an ordinary unpickler runs it
    assert marker.exists()


def test_a_truncated_pickle_is_a_clear_error(tmp_path):
    path = tmp_path / "data.pkl"
    path.write_bytes((FIXTURE / "data.pkl").read_bytes()[:700])
    with pytest.raises(ParseError, match=r"data\.pkl is not a readable pickle .*truncated"):
        summeval.load_bartscore(path)


def test_a_pickle_of_the_wrong_shape_is_a_clear_error(tmp_path):
    path = tmp_path / "data.pkl"
    path.write_bytes(pickle.dumps({"dm-test-aaaa": {"src": "x", "ref_summs": [], "sys_summs": {"M0": {"sys_summ": "y", "scores": {"coherence": 9}}}}}))
    with pytest.raises(ParseError, match=r"data\.pkl: document 'dm-test-aaaa', system 'M0', must score coherence"):
        summeval.load_bartscore(path)


def test_a_malformed_damo_line_names_file_and_line(copy):
    path = copy / "M8_outputs_annotations.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:80] + "\n")
    with pytest.raises(ParseError, match=r"M8_outputs_annotations\.jsonl line 2 is not valid JSON"):
        summeval.parse(fixture_paths(copy))


def test_a_damo_record_of_another_system_is_a_clear_error(copy):
    path = copy / "M8_outputs_annotations.jsonl"
    path.write_text(path.read_text().replace('"model_id": "M8"', '"model_id": "M9"', 1))
    with pytest.raises(ParseError, match=r"has model_id 'M9', but the file holds M8"):
        summeval.parse(fixture_paths(copy))


def test_the_pinned_sources_cover_the_twelve_abstractive_systems_and_the_pickle():
    names = [s.name for s in summeval.CORPUS.sources]
    assert names[-1] == "bartscore" and len(names) == 13
    assert {n.removeprefix("damo_") for n in names[:-1]} == set(summeval.SYSTEM_NAMES) - summeval.EXTRACTIVE
