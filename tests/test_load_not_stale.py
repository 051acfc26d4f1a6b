"""`cohbench.load` and `load_dataset` on the release folder return exactly the bytes `verify` checks: a data file
rebuilt with the same size but flipped labels, or another checkout's data, is what loads next, never rows cached
earlier; a file changed behind the build's back is refused."""

from __future__ import annotations

import os

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cohbench
from cohbench.errors import ReleaseError
from cohbench.release.index import write_index
from release_fixture import plain_record, write_config


def write_storysumm(root, flipped: bool):
    labels = [1, 0, 1, 0, 1, 0]
    records = [plain_record(f"s{i}", 1 - label if flipped else label, [0, 1 - label if flipped else label]) for i, label in enumerate(labels)]
    write_config(root, "storysumm", "storysumm", {"validation": records[:2], "test": records[2:]})
    write_index(root)
    return root


def test_a_same_size_rebuild_with_flipped_labels_is_what_loads(workspace):
    root = write_storysumm(workspace / "release", flipped=False)
    data = root / "data" / "storysumm" / "test.parquet"
    size = data.stat().st_size
    assert cohbench.load("storysumm", split="test")["label"] == [1, 0, 1, 0]
    assert list(datasets.load_dataset(str(root), "storysumm", split="test")["label"]) == [1, 0, 1, 0]
    write_storysumm(root, flipped=True)
    assert data.stat().st_size == size  # the case a size- or mtime-keyed cache misses
    assert cohbench.load("storysumm", split="test")["label"] == [0, 1, 0, 1]
    assert list(datasets.load_dataset(str(root), "storysumm", split="test")["label"]) == [0, 1, 0, 1]


def test_two_checkouts_with_different_data_each_load_their_own(workspace):
    first = write_storysumm(workspace / "a" / "cohbench", flipped=False)
    second = write_storysumm(workspace / "b" / "cohbench", flipped=True)
    for root, labels in ((first, [1, 0, 1, 0]), (second, [0, 1, 0, 1]), (first, [1, 0, 1, 0])):
        assert cohbench.load("storysumm", split="test", release=root)["label"] == labels
        assert list(datasets.load_dataset(str(root), "storysumm", split="test")["label"]) == labels


def test_a_file_changed_behind_the_builds_back_is_refused(workspace):
    root = write_storysumm(workspace / "release", flipped=False)
    cohbench.load("storysumm")
    data = root / "data" / "storysumm" / "test.parquet"
    original = data.read_bytes()
    write_config(workspace / "other", "storysumm", "storysumm", {"test": [plain_record(f"s{i}", 0, [0, 0]) for i in range(2, 6)]})
    data.write_bytes((workspace / "other" / "data" / "storysumm" / "test.parquet").read_bytes())
    with pytest.raises(ReleaseError, match="differs from the sha256 recorded in stats/storysumm.json"):
        cohbench.load("storysumm")
    data.write_bytes(original[: len(original) // 2])
    with pytest.raises(ReleaseError, match="differs from the sha256"):
        cohbench.load("storysumm", split="test")


def test_a_release_loads_by_path_from_any_directory(workspace, monkeypatch):
    root = write_storysumm(workspace / "somewhere" / "cohbench", flipped=False)
    monkeypatch.delenv("COHBENCH_RELEASE")
    monkeypatch.chdir(workspace)
    loaded = cohbench.load("storysumm", release=root)
    assert list(loaded) == ["validation", "test"] and loaded["test"].num_rows == 4
    assert loaded["test"].features["label"].names[:2] == ["ok", "error"]  # ClassLabels survive
    with pytest.raises(ReleaseError, match="has no split 'train'"):
        cohbench.load("storysumm", split="train", release=root)
    with pytest.raises(ReleaseError, match="'dev' is not a cohbench split: every config uses train, validation, test"):
        cohbench.load("storysumm", split="dev", release=root)


def test_load_dataset_refuses_a_file_with_other_rows_than_the_card_but_only_cohbench_load_sees_a_flipped_label(every_protocol):
    # what the README says `load_dataset` detects: each split's row count, from the card's dataset_info
    snac_test = every_protocol / "data" / "snac" / "test.parquet"
    original = snac_test.read_bytes()
    snac_test.write_bytes((every_protocol / "data" / "storysumm" / "test.parquet").read_bytes())
    with pytest.raises(datasets.exceptions.NonMatchingSplitsSizesError):
        datasets.load_dataset(str(every_protocol), "snac", split="test", verification_mode="all_checks")
    snac_test.write_bytes(original)
    # and what it does not: the same rows with a label changed load without complaint; cohbench.load refuses them
    storysumm_test = every_protocol / "data" / "storysumm" / "test.parquet"
    table = pq.read_table(storysumm_test)
    datasets.Dataset(table.set_column(table.schema.get_field_index("label"), "label", pa.array([0, 1, 1, 0, 0], pa.int64()))).to_parquet(str(storysumm_test))
    assert list(datasets.load_dataset(str(every_protocol), "storysumm", split="test", verification_mode="all_checks")["label"])[:2] == [0, 1]
    with pytest.raises(ReleaseError, match="differs from the sha256 recorded in stats/storysumm.json"):
        cohbench.load("storysumm", split="test")
