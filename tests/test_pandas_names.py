"""A pandas user sees labels, span types and categories by name, the names `cohbench sql` gives them, not the
integers `Dataset.to_pandas()` keeps (with the names only in the Parquet metadata)."""

from __future__ import annotations

import pytest

import cohbench
from cohbench.errors import ReleaseError
from cohbench.release.index import write_index
from snac_toy import write_toy_release


@pytest.fixture
def release(workspace):
    root = write_toy_release(workspace / "release")
    write_index(root)
    return root


def test_span_types_categories_and_labels_are_the_names_sql_shows(release):
    test = cohbench.load("snac", "test")
    frame = cohbench.to_pandas(test)
    assert list(frame.columns) == test.column_names and len(frame) == test.num_rows
    con = cohbench.db()
    spans = con.sql("SELECT record_id, span_index, type, category FROM spans WHERE config = 'snac' AND split = 'test' "
                    "ORDER BY record_id, span_index").fetchall()
    shown = sorted((row.id, n, span["type"], span["category"]) for row in frame.itertuples() for n, span in enumerate(row.spans))
    assert shown == spans and any(types == "CharE" for _, _, types, _ in shown)
    labels = con.sql("SELECT record_id, sentence_index, label_name FROM sentences WHERE config = 'snac' AND split = 'test' "
                     "ORDER BY record_id, sentence_index").fetchall()
    assert sorted((row.id, n, label) for row in frame.itertuples() for n, label in enumerate(row.sentence_labels)) == labels
    assert set(frame["label"]) <= {"ok", "error", None}
    # the integers are untouched in the dataset itself
    assert all(isinstance(span["type"], int) for record in test for span in record["spans"])


def test_a_dataset_dict_is_refused_in_one_line(release):
    with pytest.raises(ReleaseError, match="to_pandas takes one split, as load\\(config, split\\) gives it, not DatasetDict"):
        cohbench.to_pandas(cohbench.load("snac"))
