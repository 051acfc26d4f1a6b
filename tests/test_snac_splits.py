"""SNaC splits: a book's summaries (both GPT-3 systems, duplicate indices) share one leakage unit and one split;
the assignment is deterministic and approaches the paper's sentence shares."""

from __future__ import annotations

from pathlib import Path

from cohbench.corpora import snac

FIXTURE = Path(__file__).parent / "fixtures" / "snac" / "SNaC_data.json"
# Goyal et al. (2022) §5: "We split SNAC into train (4.2k), dev (230) and test (1.8k) examples" (sentences)
PAPER_SENTENCES = {"train": 4200, "validation": 230, "test": 1800}


def test_both_systems_and_duplicate_indices_of_a_book_share_a_leakage_unit():
    assert snac.doc_id_of("book_175b1") == snac.doc_id_of("book_6b1") == "book-1"
    assert snac.doc_id_of("book_175b86") == snac.doc_id_of("book_6b13") == "book-13"
    assert snac.doc_id_of("book_6b59") == "book-18" and snac.doc_id_of("book_175b91") == "book-19"
    assert snac.doc_id_of("tripod3") == "movie-3" != snac.doc_id_of("book_175b3")


def test_summaries_of_one_book_land_in_one_split():
    records = {r["id"]: r for r in snac.parse({"snac": FIXTURE}).records}
    assert records["book_175b1"]["split"] == records["book_6b1"]["split"]
    assert records["book_175b86"]["doc_id"] == "book-13"


def _units(n_books=60, n_movies=40):
    units = {f"book-{i}": ("book", 20 + (i * 7) % 13) for i in range(n_books)}
    units.update({f"movie-{i}": ("movie", 12 + (i * 5) % 9) for i in range(n_movies)})
    return units


def test_split_assignment_is_deterministic_and_complete():
    units = _units()
    first = snac.assign_splits(units)
    assert first == snac.assign_splits(dict(reversed(list(units.items()))))
    assert set(first) == set(units) and set(first.values()) == {"train", "validation", "test"}


def test_split_sizes_approach_the_paper_shares_in_each_stratum():
    units = _units()
    splits = snac.assign_splits(units)
    total = sum(PAPER_SENTENCES.values())
    for stratum in ("book", "movie"):
        size = sum(n for s, n in units.values() if s == stratum)
        largest = max(n for s, n in units.values() if s == stratum)
        for split in ("validation", "test"):
            got = sum(n for u, (s, n) in units.items() if s == stratum and splits[u] == split)
            assert abs(got - size * PAPER_SENTENCES[split] / total) <= largest / 2
