"""`cohbench.load` and `load_dataset` on the release folder return exactly the bytes `verify` checks: a data file
rebuilt with the same size but flipped labels, or another checkout's data, is what loads next, never rows cached
earlier; a file changed behind the build's back is refused."""

from __future__ import annotations

import os

import datasets
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
