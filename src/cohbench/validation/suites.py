"""Expectation suites, generated from the schema and from what a config's tables hold.

Each `Table` is one great-expectations suite over one pandas frame of `frames.py`; every expectation carries a
`check` text (what a reader is told when it fails) in its meta. Corpus-specific checks key off fields: a config
with spans gets the span suite, one with ratings the rating suite, one whose notes record cross-source
mismatches the cross-check suite.
"""

from __future__ import annotations

from dataclasses import dataclass

import great_expectations.expectations as gxe
from great_expectations.expectations.row_conditions import Column
import pandas as pd

from ..schema import ANNOTATOR_TYPES, ERROR_TYPES, RESOLUTIONS
from ..schema import SPLIT_CLASSES


@dataclass
class Table:
    name: str  # suite name, "<config>.<table>" or "release.<table>"
    frame: pd.DataFrame
    index: list[str]  # columns that name an offending row in a failure message
    expectations: list


def _meta(check: str) -> dict:
    return {"meta": {"check": check}}


def _where(condition) -> dict:
    return {"row_condition": condition}


def records_table(config: str, corpus: str, frame: pd.DataFrame) -> Table:
    e = [
        gxe.ExpectColumnValuesToNotBeNull(column=column, **_meta(f"required field `{column}` is not null"))
        for column in ("id", "corpus", "config", "split", "doc_id")
    ]
    e += [
        gxe.ExpectColumnValuesToBeUnique(column="id", **_meta("ids are unique")),
        gxe.ExpectColumnValuesToBeInSet(column="config", value_set=[config], **_meta(f"`config` is {config}")),
        gxe.ExpectColumnValuesToBeInSet(column="corpus", value_set=[corpus], **_meta(f"`corpus` is {corpus}")),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=sorted(SPLIT_CLASSES), **_meta("`split` is a known split")),
        gxe.ExpectColumnValuesToBeInSet(column="label", value_set=[-1, 0, 1], **_meta("`label` is -1, 0 or 1")),
        gxe.ExpectColumnValuesToBeInSet(
            column="list_labels_in_set", value_set=[True], **_meta("sentence/segment/gap labels are -1, 0 or 1")
        ),
        gxe.ExpectColumnValuesToBeBetween(column="n_sentences", min_value=1, **_meta("every record has sentences")),
        gxe.ExpectColumnValuesToBeBetween(
            column="n_empty_sentences", min_value=0, max_value=0, **_meta("no sentence is empty")
        ),
    ]
    for labels, count, what in (
        ("n_sentence_labels", "n_sentences", "one sentence label per sentence"),
        ("n_sentence_labels_min2votes", "n_sentences", "one ≥2-vote sentence label per sentence"),
        ("n_gap_labels", "n_gaps", "one gap label per gap (sentences − 1)"),
        ("n_sentence_segments", "n_sentences", "one segment index per sentence"),
        ("n_segment_labels", "n_segments", "one segment label per segment"),
        ("n_segment_labels_min2votes", "n_segments", "one ≥2-vote segment label per segment"),
    ):
        e.append(
            gxe.ExpectColumnPairValuesToBeEqual(column_A=labels, column_B=count, **_where(Column(labels) > 0), **_meta(what))
        )
    e.append(
        gxe.ExpectColumnValuesToBeInSet(
            column="sentence_segments_valid",
            value_set=[True],
            **_where(Column("n_sentence_segments") > 0),
            **_meta("sentence segment indexes point into `segments`, in order"),
        )
    )
    return Table(f"{config}.records", frame, ["id"], e)


def spans_table(config: str, frame: pd.DataFrame) -> Table:
    resolved = _where(Column("resolved") == True)  # noqa: E712 (builds a GX condition)
    e = [
        gxe.ExpectColumnValuesToBeBetween(column="votes", min_value=1, **_meta("span votes ≥ 1")),
        gxe.ExpectColumnValuesToBeInSet(
            column="type", value_set=list(range(len(ERROR_TYPES))), **_meta("span type is a SNaC error type")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="category_matches_type", value_set=[True], **_meta("span category is its type's category")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="resolution", value_set=list(RESOLUTIONS), **_meta("span resolution is unique/ambiguous/failed")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="resolution_agrees", value_set=[True], **_meta("`resolved` agrees with `resolution`")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="segment_in_range",
            value_set=[True],
            **_where(Column("has_segment") == True),  # noqa: E712; synthetic spans locate by sentence only
            **_meta("span segment points into `segments`"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="offsets_in_bounds", value_set=[True], **resolved, **_meta("resolved span offsets lie inside their segment")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="text_matches_offsets",
            value_set=[True],
            **resolved,
            **_meta("resolved span text == segments[segment][start:end]"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="sentences_in_range", value_set=[True], **resolved, **_meta("resolved span sentences point into `sentences`")
        ),
    ]
    return Table(f"{config}.spans", frame, ["span_id"], e)


def ratings_table(config: str, frame: pd.DataFrame) -> Table:
    e = [
        gxe.ExpectColumnValuesToNotBeNull(column="dimension", **_meta("rating dimension is not null")),
        gxe.ExpectColumnValuesToNotBeNull(column="score", **_meta("rating score is not null")),
        gxe.ExpectColumnValuesToBeInSet(
            column="annotator_type", value_set=list(ANNOTATOR_TYPES), **_meta("annotator type is expert/crowd/expert_mean")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="range_declared",
            value_set=[True],
            **_meta("the rating scale of the dimension is declared (params.yaml validation.rating_ranges)"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="score_in_range", value_set=[True], **_where(Column("range_declared") == True), **_meta("rating within its scale")
        ),
    ]
    return Table(f"{config}.ratings", frame, ["rating_id", "dimension", "score"], e)


def stats_table(config: str, frame: pd.DataFrame, expected_path: str) -> Table:
    e = [
        gxe.ExpectColumnPairValuesToBeEqual(
            column_A="expected", column_B="actual", **_meta(f"row counts and label distributions equal {expected_path}")
        )
    ]
    return Table(f"{config}.stats", frame, ["statistic", "expected", "actual"], e)


def cross_checks_table(config: str, frame: pd.DataFrame) -> Table:
    e = [
        gxe.ExpectColumnValuesToBeBetween(
            column="mismatches", min_value=0, max_value=0, **_meta("cross-source checks recorded by the build found no mismatch")
        )
    ]
    return Table(f"{config}.cross_checks", frame, ["check", "mismatches", "examples"], e)


def documents_table(frame: pd.DataFrame) -> Table:
    e = [
        gxe.ExpectColumnValuesToBeBetween(
            column="split_classes",
            min_value=1,
            max_value=1,
            **_meta("no doc_id in two splits (train / dev|val / test), within or across configs"),
        )
    ]
    return Table("release.documents", frame, ["doc_id", "found_in"], e)


def derivations_table(frame: pd.DataFrame) -> Table:
    e = [
        gxe.ExpectColumnValuesToBeInSet(
            column="same_split_class",
            value_set=[True],
            **_meta("every corruption sits in the split of its source and of every inserted sentence"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="other_document",
            value_set=[True],
            **_where(Column("generator") == "discordant_replace"),  # next_sentence_swap reuses its own text
            **_meta("discordant sentences come from another document"),
        ),
    ]
    return Table("release.derivations", frame, ["id", "link", "derived_from"], e)
