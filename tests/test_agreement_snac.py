"""SNaC agreement reconstructed from merged vote counts, checked against a toy summary whose per-annotator marks
are known, and on the real file (integration)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from cohbench import sql
from cohbench.errors import CohbenchError
from cohbench.schema import CATEGORIES, COHERENCE_ERROR_TYPES, ERROR_TYPES
from cohbench.statistics import error_spans, spans_sql, statistics
from cohbench.statistics.kind import fetch
from release_fixture import write_release
from snac_toy import toy_records, true_token_matrix, write_toy_release


@pytest.fixture
def toy(tmp_path):
    return sql.db(write_toy_release(tmp_path / "release"))


def token_level(con, boundaries: str = "as_marked") -> dict:
    return error_spans.token_levels(con, "snac", [boundaries])[boundaries]


@pytest.mark.parametrize("error_type", ["CharE", "RefE", "SceneE", "GramE"])
def test_token_alpha_from_votes_equals_alpha_from_the_annotators_marks(toy, error_type):
    truth = true_token_matrix(error_type)
    result = token_level(toy)["by_type"][error_type]
    assert result["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=truth, level_of_measurement="nominal"), abs=1e-12)
    marked_by = np.nansum(truth, axis=0)
    assert result["units"] == truth.shape[1]
    assert result["marked_units"] == int((marked_by >= 1).sum())
    assert result["two_agree_pct"] == pytest.approx(100 * (marked_by >= 2).sum() / (marked_by >= 1).sum())


def test_two_agree_counts_tokens_marked_by_at_least_two(toy):
    # RefE as marked: "Her" (1 annotator), "husband's" and "suicide" (2), "the" and "farm." (1): 2 of 5 tokens
    refe = token_level(toy)["by_type"]["RefE"]
    assert (refe["marked_units"], refe["units_marked_by_two_or_more"]) == (5, 2)
    assert refe["two_agree_pct"] == pytest.approx(40.0)


def test_boundary_normalisation_merges_overlapping_spans_to_their_union(toy):
    # "Her husband's suicide" and "husband's suicide" overlap: their union carries both votes, so "Her" counts 2
    union = token_level(toy, "overlap_union")["by_type"]["RefE"]
    assert (union["marked_units"], union["units_marked_by_two_or_more"]) == (5, 3)
    assert union["two_agree_pct"] == pytest.approx(60.0)
    # merging by sentence also joins spans that share a sentence but no character (none do here for RefE)
    by_sentence = token_level(toy, "sentence_union")["by_type"]["RefE"]
    assert by_sentence["two_agree_pct"] == pytest.approx(60.0)


def test_coders_are_three_or_the_summarys_largest_vote(toy):
    stats = error_spans.compute(toy, "snac")
    assert stats["summaries_by_coders"] == {3: 1, 4: 1}


def test_sentence_level_bounds_bracket_the_true_annotator_count(toy):
    rows = fetch(toy, spans_sql.unit_histogram_sql("snac", "sentence"))
    # Truth in the 3-coder summary: "Gabriel leases ..." 3 annotators (one span, 3 votes); "He meets Bathsheba at
    # the farm." 2 (Bathsheba 2 votes + the farm 1 vote, both a3's): sum says 3, max says 2; "Her husband's
    # suicide ..." 2 (two 1-vote spans): sum 2, max 1; "Troy returns ..." 3 (SceneE 2 votes + Troy 1): sum 3, max 2.
    coherence_3_coders = sorted((c_sum, c_max, n) for cat, coders, c_sum, c_max, n in rows if cat == "coherence" and coders == 3)
    assert coherence_3_coders == [(2, 1, 1), (3, 2, 2), (3, 3, 1)]
    level = error_spans.unit_agreement(toy, "snac", "sentence")["coherence"]
    assert level["sum"]["units"] == level["max"]["units"] == 7  # every sentence of both summaries is a unit


def test_a_span_without_a_vote_count_is_left_out_and_counted_not_taken_as_every_annotators(tmp_path):
    records = toy_records()
    # a GramE mark no one counted the votes of, alone in its category on "Anna sings at the club.": taken for every
    # annotator's, it made the sentence a unanimous language error
    anna = next(span for span in records[1]["spans"] if span["first_sentence"] == 0)
    records[1]["spans"].append(dict(anna, type=ERROR_TYPES.index("GramE"), category=CATEGORIES.index("language"), votes=None))
    before = sql.db(write_toy_release(tmp_path / "before"))
    after = sql.db(write_release(tmp_path / "after", {"snac": ("snac", {"train": records[:1], "test": records[1:]})}))
    assert token_level(after)["by_type"]["GramE"] == token_level(before)["by_type"]["GramE"]
    assert error_spans.unit_agreement(after, "snac", "sentence") == error_spans.unit_agreement(before, "snac", "sentence")
    left_before, left_after = (error_spans.compute(con, "snac")["spans_left_out"] for con in (before, after))
    assert {level: left_after[level] - left_before[level] for level in left_after} == {"token_level": 1, "sentence_level": 1, "segment_level": 1}


def test_unknown_boundary_rule_is_a_clear_error(toy):
    with pytest.raises(CohbenchError, match="unknown span boundaries"):
        token_level(toy, "nearest")


@pytest.mark.integration
def test_real_snac_token_agreement_is_close_to_the_papers_crowd_figures(mirror, workspace):
    from cohbench.release.build import build

    build("snac", progress=False)
    stats = statistics("snac", sql.db())
    token = stats["token_level"]["as_marked"]["by_type"]
    for name in COHERENCE_ERROR_TYPES:  # SNaC Table 5, crowd, as catalog/published.yaml gives it
        paper = error_spans.paper_figure("snac", "Table 5", "token", name)
        assert token[name]["alpha"] == pytest.approx(paper["alpha"], abs=0.03)
        assert token[name]["two_agree_pct"] == pytest.approx(paper["two_agree_pct"], abs=3)
    assert stats["summaries_by_coders"] == {3: 141, 4: 9}


@pytest.mark.parametrize("text", ["Alice met Bob.", "  Alice  met\tBob \n", "", "x", "Ünïcode “quoted” text…", " a"])
def test_prefix_token_counts_in_sql_follow_the_token_definition(text):
    import re

    import duckdb

    con = duckdb.connect()
    counted = con.execute(
        f"SELECT n, {spans_sql._prefix_token_count_sql('t', 'n', spans_sql._plain_text_sql('t'))} "
        "FROM (SELECT ? AS t), range(0, ?) AS r(n) ORDER BY n",
        [text, len(text) + 1],
    ).fetchall()
    assert counted == [(n, len(re.findall(spans_sql.TOKEN_PATTERN, text[:n]))) for n in range(len(text) + 1)]
