"""SNaC span strings become offsets by the documented rule, and no span is ever lost (fixture in upstream format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cohbench.corpora import snac
from cohbench.schema import ERROR_TYPES

FIXTURE = Path(__file__).parent / "fixtures" / "snac" / "SNaC_data.json"


@pytest.fixture(scope="module")
def parsed():
    return snac.parse({"snac": FIXTURE})


@pytest.fixture(scope="module")
def records(parsed):
    return {record["id"]: record for record in parsed.records}


def spans_of(record, segment, text, error_type):
    return [s for s in record["spans"] if s["segment"] == segment and s["text"] == text and ERROR_TYPES[s["type"]] == error_type]


def test_every_resolved_span_is_its_text_in_its_segment(records):
    for record in records.values():
        for span in record["spans"]:
            if span["resolved"]:
                assert record["segments"][span["segment"]][span["start"] : span["end"]] == span["text"]


def test_every_upstream_error_is_kept_in_order(records):
    data = json.loads(FIXTURE.read_text())
    assert sorted(data) == sorted(records)
    for key, summary in data.items():
        upstream = [(int(u), e["span"], e["error_type"], e["votes"]) for u, unit in summary.items() for e in unit["errors"]]
        built = [(s["segment"], s["text"], ERROR_TYPES[s["type"]], s["votes"]) for s in records[key]["spans"]]
        assert built == upstream


def test_char_error_resolves_to_first_mention_and_is_marked_ambiguous(records):
    (anna,) = spans_of(records["book_175b1"], 0, "Anna", "CharE")
    assert (anna["start"], anna["resolution"]) == (0, "ambiguous")


def test_identical_entries_take_distinct_occurrences_in_text_order(records):
    record = records["book_175b1"]
    first, second = spans_of(record, 0, "Tom", "CharE")
    assert (first["votes"], second["votes"]) == (3, 1)
    assert first["start"] < second["start"]
    assert (first["first_sentence"], second["first_sentence"]) == (1, 2)


def test_repetition_resolves_to_the_later_occurrence(records):
    record = records["book_175b1"]
    (repeat,) = spans_of(record, 2, "walks home", "RepE")
    text = record["segments"][2]
    assert repeat["start"] == text.rindex("walks home") != text.index("walks home")
    assert repeat["antecedents"] == ["walks home"]  # upstream key `antecedants`


def test_inconsistency_resolves_after_its_antecedent_not_inside_it(records):
    record = records["book_175b1"]
    (incon,) = spans_of(record, 2, "tired", "InconE")
    text = record["segments"][2]
    assert incon["start"] > text.index("Tom is tired") + len("Tom is tired")
    assert record["sentences"][incon["first_sentence"]].startswith("He says he is not tired")


def test_short_span_matches_whole_words_only(records):
    record = records["book_175b1"]
    (pronoun,) = spans_of(record, 2, "he", "CorefE")
    text = record["segments"][2]
    assert text.index("he") < pronoun["start"]  # the first raw "he" is inside "the"
    assert text[pronoun["start"] - 1] == " " and text[pronoun["end"]] == " "
    assert pronoun["resolution"] == "unique"


def test_span_crossing_a_sentence_boundary_covers_both_sentences(records):
    record = records["book_175b1"]
    (scene,) = spans_of(record, 3, "She runs to the lighthouse. She hides there until dawn.", "SceneE")
    assert (scene["first_sentence"], scene["last_sentence"]) == (8, 9)
    assert record["sentence_segments"][8:10] == [3, 3]
    assert record["sentence_labels"][8:10] == [1, 1]


def test_non_substring_and_empty_spans_are_kept_unresolved_and_listed_as_defects(records):
    (missing,) = spans_of(records["book_175b1"], 4, "her.", "CorefE")
    (empty,) = spans_of(records["book_6b1"], 1, "", "SceneE")
    for span in (missing, empty):
        assert (span["resolved"], span["resolution"], span["start"], span["end"]) == (False, "failed", None, None)
    # both segments have one sentence, so that sentence is the only place the span can be
    assert missing["first_sentence"] == missing["last_sentence"] == 10
    assert empty["first_sentence"] == empty["last_sentence"] == 2
    assert any("'her.' (CorefE) is not a substring" in d for d in records["book_175b1"]["defects"])
    assert any("(SceneE) is empty" in d for d in records["book_6b1"]["defects"])


def test_partial_word_span_is_located_exactly_and_listed_as_defect(records):
    record = records["book_6b1"]
    (cut,) = spans_of(record, 0, "olt offers", "RefE")
    assert cut["resolved"] and record["segments"][0][cut["start"] : cut["end"]] == "olt offers"
    assert any(d.startswith("partial_word_span: segment 0") for d in record["defects"])


def test_resolution_counts_reach_the_card(parsed):
    resolution = parsed.notes["resolution"]
    assert (resolution["unique"], resolution["ambiguous"], resolution["failed"]) == (11, 5, 2)  # book_6b13's two language spans are unique
    assert (resolution["failed_not_a_substring"], resolution["failed_empty_span"]) == (1, 1)
    assert resolution["spans_crossing_sentence_boundaries"] == 1


def test_sentences_concatenate_back_to_their_segments(records):
    for record in records.values():
        for index, segment in enumerate(record["segments"]):
            own = [s for s, seg in zip(record["sentences"], record["sentence_segments"]) if seg == index]
            assert "".join("".join(own).split()) == "".join(segment.split())
