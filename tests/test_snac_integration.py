"""SNaC built from the real pinned file in the mirror: exact upstream totals, traceable spans, leak-free splits,
byte-identical rebuilds and a loadable release."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import built_from_mirror
from corpus_case import FIXTURES, CorpusCase, Opening, expected_splits

import cohbench
from cohbench.release.build import build
from cohbench.corpora import snac
from cohbench.schema import sentence_examples
from cohbench.schema import ERROR_TYPES

pytestmark = pytest.mark.integration

# (summary, segment, span) -> how many entries; the 3 spans that are not substrings of their segment
NOT_SUBSTRINGS = {
    ("book_175b7", 14, "her."): 1,
    ("book_175b140", 30, "IV. 2. 17 note: Anon. should be Aonn."): 2,  # as GramE and as SceneE
}
# Goyal et al. (2022) §5: "We split SNAC into train (4.2k), dev (230) and test (1.8k) examples" (sentences)
PAPER_SENTENCES = {"train": 4200, "validation": 230, "test": 1800}
EMPTY_SCENE_SPANS = {("book_6b12", 12), ("book_175b36", 27), ("book_6b86", 15), ("book_6b36", 30), ("book_6b168", 10)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # module-scoped: build once from the mirror (and once more for the determinism check) for all checks below
    with built_from_mirror(tmp_path_factory, "snac") as (root, stats):
        yield root, stats, cohbench.load("snac")


@pytest.fixture(scope="module")
def from_mirror(built):
    return "snac", built[1]["splits"]


def _summary(key: str, book: str, system: str, first: str, last_segment: str) -> dict:
    """What SNaC_data.json says of summary `key`: its first unit opens with `first` and its last with `last_segment`;
    every one checked here has error spans (label 1). The split is the parser's (the file has none)."""
    return {"id": key, "doc_id": book, "system": system, "label": 1, "sentences[0]": Opening(first),
            "segments[0]": Opening(first), "segments[-1]": Opening(last_segment)}


class TestSnac(CorpusCase):
    CORPUS = "snac"
    FIXTURE_PATHS = {"snac": FIXTURES / "snac/SNaC_data.json"}
    SPOT_CHECKS = {"snac": {  # splits in id order: book_175b* < book_6b* < tripod*
        "train": {
            0: _summary("book_175b0", "book-0", "book_175b", "Johnnie, a determined 19 year old girl, works at the cotton mill",
                        "Gray waits for Johnnie at her home"),
            9: _summary("book_175b15", "book-15", "book_175b", "The author attempts to explain and defend the Utilitarian",
                        "The considerations presented resolve the only real"),
            -1: _summary("tripod8", "movie-8", "tripod", "Carly and J.R. have a heart - to - heart",
                         "She tells him to kiss her before he wakes up."),
        },
        "validation": {
            0: _summary("book_175b140", "book-140", "book_175b", "Aegeon, a merchant from Syracusa, is condemned to death",
                        'Note IV. line 111: "Where" should be "Wear."'),
            -1: _summary("tripod5", "movie-5", "tripod", "Claire's parents take her to the high school",
                         "Carl and Mrs. B. arrive at the school"),
        },
        "test": {
            0: _summary("book_175b124", "book-124", "book_175b", "Ferdinand, the Calabrian duke, asks the Duchess",
                        "Delio says that they should use this opportunity"),
            9: _summary("book_175b29", "book-29", "book_175b", "Shawn hears a strange man groaning in the distance",
                        "Shawn goes up to Pegeen, saying it's a miracle"),
            -1: _summary("tripod9", "movie-9", "tripod", "Trevor's first day of school is underway.",
                         "She says she'll help him any way she can."),
        },
    }}

    @pytest.fixture
    def records_from_mirror(self, built):
        loaded = built[2]
        return {"snac": {split: list(loaded[split]) for split in loaded}}


def rows(built):
    ds = built[2]
    return [row for split in ds for row in ds[split]]


def test_totals_match_the_verified_upstream_counts(built):
    records = rows(built)
    spans = [span for r in records for span in r["spans"]]
    assert len(records) == sum(expected_splits("snac").values())
    assert Counter(r["system"] for r in records) == {"book_175b": 55, "book_6b": 55, "tripod": 40}
    assert Counter(r["system_name"] for r in records) == {"BOOK-175B": 55, "BOOK-6B": 55, "MOVIE-BART": 40}
    assert sum(len(r["segments"]) for r in records) == 2466
    assert len(spans) == 5645 and sum(s["votes"] for s in spans) == 8785
    assert Counter(ERROR_TYPES[s["type"]] for s in spans) == {
        "CharE": 1722, "SceneE": 1286, "RefE": 1146, "CorefE": 590, "GramE": 414, "InconE": 367, "RepE": 120,
    }
    assert Counter(s["votes"] for s in spans) == {1: 3483, 2: 1205, 3: 936, 4: 21}
    assert sum(1 for s in spans if s["antecedents"]) == 489
    assert sum(1 for r in records for i in range(len(r["segments"])) if not any(s["segment"] == i for s in r["spans"])) == 372
    _, stats, _ = built
    assert stats["upstream_records"] == stats["built_records"] == len(records) and stats["dropped"] == {}


def test_every_resolved_span_is_its_text_and_only_the_known_defects_are_unresolved(built):
    unresolved = Counter()
    for r in rows(built):
        for s in r["spans"]:
            if s["resolved"]:
                assert r["segments"][s["segment"]][s["start"] : s["end"]] == s["text"]
                assert r["sentence_segments"][s["first_sentence"]] == r["sentence_segments"][s["last_sentence"]] == s["segment"]
            else:
                assert s["resolution"] == "failed" and s["start"] is None and s["end"] is None
                unresolved[(r["id"], s["segment"], s["text"])] += 1
    assert {key: n for key, n in unresolved.items() if key[2]} == NOT_SUBSTRINGS
    assert {(i, seg) for i, seg, text in unresolved if not text} == EMPTY_SCENE_SPANS
    assert sum(unresolved.values()) == 8


def test_resolution_statistics_reach_the_card(built):
    root, stats, _ = built
    resolution = stats["notes"]["resolution"]
    assert resolution["unique"] + resolution["ambiguous"] + resolution["failed"] == 5645
    assert resolution["failed"] == 8
    card = (root / "release" / "README.md").read_text()
    whole = (root / "release" / "cards" / "snac.md").read_text()  # the card's details ship beside README.md
    assert "## snac (`snac`)" in card and "(cards/snac.md)" in card and "### Span resolution" in whole  # counts: stats/snac.json


def test_sentences_tile_their_segments(built):
    records = rows(built)
    assert 6000 < sum(len(r["sentences"]) for r in records) < 6600  # the paper's crowd part: 2.2k + 2.2k + 1.8k
    for r in records:
        for index, segment in enumerate(r["segments"]):
            own = [s for s, seg in zip(r["sentences"], r["sentence_segments"]) if seg == index]
            assert "".join("".join(own).split()) == "".join(segment.split())


def test_no_book_or_movie_is_in_two_splits(built):
    ds = built[2]
    owner = {}
    for split in ds:
        for doc_id in ds[split]["doc_id"]:
            assert owner.setdefault(doc_id, split) == split
    assert len(owner) == 92  # 52 books (55 indices, 3 duplicated) + 40 movies
    assert {split: ds[split].num_rows for split in ds} == expected_splits("snac")


def test_summaries_merged_into_one_book_are_the_same_book(built):
    by_doc = {}
    for r in rows(built):
        by_doc.setdefault(r["doc_id"], []).append(" ".join(r["segments"]))
    for doc_id, protagonist in {"book-13": "Benedick", "book-18": "Cleopatra", "book-19": "Timon"}.items():
        assert len(by_doc[doc_id]) == 4 and all(protagonist in text for text in by_doc[doc_id])


def test_split_sentence_counts_are_close_to_the_paper(built):
    ds = built[2]
    for split, paper in PAPER_SENTENCES.items():
        assert abs(sum(len(s) for s in ds[split]["sentences"]) - paper) <= 0.1 * paper


def test_rebuild_is_byte_identical(built, tmp_path):
    _, stats, _ = built
    again = build("snac", release=tmp_path / "again", progress=False)
    assert {s: f["sha256"] for s, f in again["files"].items()} == {s: f["sha256"] for s, f in stats["files"].items()}


def test_loaded_release_keeps_class_label_names(built):
    features = built[2]["test"].features
    assert features["spans"].feature["type"].names == list(ERROR_TYPES)
    assert features["spans"].feature["category"].names == ["coherence", "language"]
    assert features["sentence_labels"].feature.names == ["ok", "error"]


def test_training_view_gives_one_example_per_test_sentence(built):
    test = built[2]["test"]
    examples = [e for row in test for e in sentence_examples(row)]
    assert len(examples) == sum(len(s) for s in test["sentences"])
    assert sum(e["label"] for e in examples) == sum(sum(l) for l in test["sentence_labels"])
