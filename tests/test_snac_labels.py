"""SNaC spans project to sentence/segment coherence labels (language errors never count), and the paper's
per-sentence training view (preceding summary as context) follows from a record."""

from __future__ import annotations

from pathlib import Path

import pytest

from cohbench.corpora import snac
from cohbench.schema import sentence_examples

FIXTURE = Path(__file__).parent / "fixtures" / "snac" / "SNaC_data.json"


@pytest.fixture(scope="module")
def records():
    return {record["id"]: record for record in snac.parse({"snac": FIXTURE}).records}


def test_segment_without_errors_is_coherent(records):
    record = records["book_175b1"]
    assert record["segment_labels"][1] == 0
    assert [record["sentence_labels"][i] for i, seg in enumerate(record["sentence_segments"]) if seg == 1] == [0, 0]


def test_language_errors_alone_do_not_make_a_sentence_incoherent(records):
    record = records["book_175b1"]
    # segment 4 has only a GramE and an (unresolved) CorefE; segment 2's first sentence has none at all
    assert record["segment_labels"][4] == 0 and record["sentence_labels"][10] == 0
    assert {snac.ERROR_TYPES[s["type"]] for s in record["spans"] if s["segment"] == 4} == {"GramE", "CorefE"}


def test_min2votes_labels_count_only_spans_marked_twice(records):
    record = records["book_175b1"]
    # sentence 0: CharE "Anna" (1 vote); sentence 1: CharE "Tom" (3 votes); sentence 2: CharE "Tom" (1 vote)
    assert record["sentence_labels"][:3] == [1, 1, 1]
    assert record["sentence_labels_min2votes"][:3] == [0, 1, 0]
    movie = records["tripod3"]
    assert (movie["segment_labels"], movie["segment_labels_min2votes"]) == ([1, 1], [1, 0])


def test_unresolved_coherence_span_labels_its_segment(records):
    record = records["book_6b1"]  # segment 1 holds only an empty SceneE span with 2 votes
    assert record["segment_labels"][1] == record["segment_labels_min2votes"][1] == 1
    assert record["sentence_labels"][2] == 1


def test_summary_label_is_any_coherence_error(records):
    assert {rid: record["label"] for rid, record in records.items()} == {
        "book_175b1": 1, "book_6b1": 1, "book_175b86": 1, "tripod3": 1,
        "tripod5": 0,  # no error at all
        "book_6b13": 0,  # language errors only (GramE, CorefE)
    }


@pytest.mark.parametrize("record_id", ["tripod5", "book_6b13"])
def test_a_summary_without_coherence_errors_is_coherent_at_every_level(records, record_id):
    record = records[record_id]
    assert len(record["sentences"]) >= 2 and len(record["segment_labels"]) >= 1
    for field in ("sentence_labels", "sentence_labels_min2votes"):
        assert record[field] == [0] * len(record["sentences"])
    for field in ("segment_labels", "segment_labels_min2votes"):
        assert record[field] == [0] * len(record["segments"])
    assert all(not example["error_types"] for example in sentence_examples(record))


def test_training_view_context_is_every_preceding_sentence(records):
    record = records["book_175b1"]
    examples = sentence_examples(record)
    assert [e["sentence"] for e in examples] == record["sentences"]
    assert examples[0]["context"] == ""
    assert examples[3]["context"] == " ".join(record["sentences"][:3])
    assert examples[6]["id"] == "book_175b1/6" and examples[6]["segment"] == 2


def test_training_view_labels_match_the_projections(records):
    for record in records.values():
        for min_votes, field in ((1, "sentence_labels"), (2, "sentence_labels_min2votes")):
            assert [e["label"] for e in sentence_examples(record, min_votes)] == record[field]


def test_training_view_lists_coherence_types_and_spans_only(records):
    examples = sentence_examples(records["book_175b1"])
    assert examples[1]["error_types"] == ["CharE", "RefE"]
    assert {(s["type"], s["text"]) for s in examples[1]["error_spans"]} == {("CharE", "Tom"), ("RefE", "the harbour")}
    assert examples[6]["error_types"] == ["InconE"]  # the RepE and CorefE in that sentence are language errors
    assert sentence_examples(records["book_175b1"], min_votes=2)[0]["error_types"] == []


def test_training_view_reads_encoded_rows_like_parsed_records(records):
    record = records["tripod3"]
    as_names = dict(record, spans=[dict(s, type=snac.ERROR_TYPES[s["type"]]) for s in record["spans"]])
    assert sentence_examples(as_names) == sentence_examples(record)
