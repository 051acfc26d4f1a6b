"""Every command and Python entry point that reads a config checks what it reads: a data file that differs from the
sha256 its stats record (one label flipped, another config's file), stats that differ from the manifest or are
missing, a missing or invalid manifest are refused in one line naming the file and the fix, exit 1. A config built
since the last `cohbench index` stays readable for the pipeline's next steps."""

from __future__ import annotations

import json
import os
import shutil

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cohbench
from cohbench import sql
from cohbench.cli import main
from cohbench.errors import ReleaseError
from cohbench.release.index import write_index
from release_fixture import plain_record, write_config

CONFIGS = ("storysumm", "snac", "timetravel_dsd", "timetravel_msd", "summeval")  # the every_protocol release


def flip_label(release, config: str) -> None:
    """Rewrite a config's test file as its writer writes it, with the first record's label changed."""
    path = release / "data" / config / "test.parquet"
    table = pq.read_table(path)
    labels = table.column("label").to_pylist()
    labels[0] = {0: 1, 1: 0, -1: 0}[labels[0]]
    index = table.schema.get_field_index("label")
    datasets.Dataset(table.set_column(index, "label", pa.array(labels, table.schema.field(index).type))).to_parquet(str(path))


def readers(tmp_path, config: str, evaluate: bool) -> list[list[str]]:
    """Commands that read `config`, and with `evaluate` `evaluate storysumm` (with predictions of its records)."""
    out = [["sql", f'SELECT label FROM "{config}"'], ["sql", "SELECT count(*) FROM records"], ["agreement", config],
           ["report", "--output", str(tmp_path / "report")], ["validate", "--no-docs"], ["export", str(tmp_path / "export")]]  # fmt: skip
    if evaluate:
        predictions = tmp_path / "p.jsonl"
        predictions.write_text("".join(json.dumps({"id": f"s{i}", "label": i % 2}) + "\n" for i in range(1, 10)))
        out.append(["evaluate", "storysumm", "--predictions", str(predictions)])
    return out


def assert_refused(argv, capsys, *named: str) -> None:
    assert main(argv) == 1, argv
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after any progress line (validate's)
    assert err.startswith("cohbench: error: ") and "failed unexpectedly" not in err, (argv, err)
    assert all(name in err for name in named), (argv, err)


def assert_python_refuses(config: str, *named: str) -> None:
    for read in (lambda: cohbench.load(config), lambda: sql.db(statement=f'SELECT * FROM "{config}"')):
        with pytest.raises(ReleaseError) as refused:
            read()
        assert "\n" not in str(refused.value) and all(name in str(refused.value) for name in named), str(refused.value)


@pytest.mark.parametrize("config", CONFIGS)
def test_a_flipped_label_in_any_config_is_refused_by_every_reader(every_protocol, tmp_path, capsys, config):
    assert cohbench.load(config, split="test").num_rows  # read once: a later change is still caught in this process
    flip_label(every_protocol, config)
    named = (f"data/{config}/test.parquet", f"stats/{config}.json", "cohbench verify")
    for argv in readers(tmp_path, config, evaluate=config == "storysumm"):
        assert_refused(argv, capsys, *named[:1] if argv[0] == "export" else named)  # export words its own check
    assert_python_refuses(config, *named)
    assert not (tmp_path / "export").exists() and not (tmp_path / "report").exists()


def test_the_storysumm_flip_keeps_the_files_size(every_protocol):
    # the case: a same-size change, which a check by size or mtime (the HF cache's) misses
    path = every_protocol / "data" / "storysumm" / "test.parquet"
    size = path.stat().st_size
    flip_label(every_protocol, "storysumm")
    assert path.stat().st_size == size


def replace_snac_test_by_storysumms(release) -> None:
    shutil.copyfile(release / "data" / "storysumm" / "test.parquet", release / "data" / "snac" / "test.parquet")


def delete_snac_stats(release) -> None:
    (release / "stats" / "snac.json").unlink()


def edit_snac_stats_in_the_past(release) -> None:
    """Stats changed after the release was indexed, with their time set back: not a config built since the index."""
    path, manifest = release / "stats" / "snac.json", release / "manifest.json"
    stats = json.loads(path.read_text())
    stats["files"]["test"]["sha256"] = "0" * 64
    path.write_text(json.dumps(stats))
    os.utime(path, ns=(manifest.stat().st_atime_ns, manifest.stat().st_mtime_ns - 10**9))


def delete_manifest(release) -> None:
    (release / "manifest.json").unlink()


def invalidate_manifest(release) -> None:
    (release / "manifest.json").write_text("{not json")


DAMAGES = {
    "snac's test file replaced by storysumm's": (replace_snac_test_by_storysumms, ("data/snac/test.parquet", "stats/snac.json")),
    "snac's stats deleted": (delete_snac_stats, ("stats/snac.json", "manifest.json lists snac")),
    "snac's stats edited": (edit_snac_stats_in_the_past, ("stats/snac.json", "differs from the sha256 recorded in manifest.json")),
    "manifest deleted": (delete_manifest, ("manifest.json is missing", "cohbench index")),
    "manifest invalid": (invalidate_manifest, ("manifest.json is not valid JSON",)),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_release_is_refused_by_every_reader(every_protocol, tmp_path, capsys, damage):
    do, named = DAMAGES[damage]
    do(every_protocol)
    file_only = damage == "snac's test file replaced by storysumm's"  # a storysumm reader needs no snac file
    for argv in readers(tmp_path, "snac", evaluate=not file_only):
        assert_refused(argv, capsys, *named[:1] if argv[0] == "export" else named)
    assert_python_refuses("storysumm" if "manifest" in damage else "snac", *named)


def test_a_config_built_since_the_last_index_is_read_on_its_own_stats(every_protocol, capsys):
    # as dvc.yaml runs it: `cohbench build CONFIG --no-index`, then report/validate/train, then `cohbench index`
    write_config(every_protocol, "storysumm", "storysumm", {"test": [plain_record(f"t{i}", i % 2, [0, i % 2]) for i in range(3)]})
    assert cohbench.load("storysumm", split="test")["id"] == ["t0", "t1", "t2"]
    assert main(["sql", "SELECT count(*) AS n FROM storysumm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["n"] in (3, "3")
    assert main(["verify"]) == 1  # until the index records it
    flip_label(every_protocol, "storysumm")  # its data are still checked against its own stats
    with pytest.raises(ReleaseError, match="differs from the sha256 recorded in stats/storysumm.json"):
        cohbench.load("storysumm")


def test_a_release_never_indexed_is_readable_and_one_indexed_is_not_without_its_manifest(workspace):
    release = write_config(workspace / "release", "storysumm", "storysumm", {"test": [plain_record("a", 1, [0, 1])]})
    assert cohbench.load("storysumm", split="test")["id"] == ["a"]  # a build in progress: no manifest yet
    write_index(release)
    (release / "manifest.json").unlink()
    with pytest.raises(ReleaseError, match="manifest.json is missing although .*README.md shows the release was indexed"):
        cohbench.load("storysumm")
    write_index(release)  # the fix it names
    assert cohbench.load("storysumm", split="test")["id"] == ["a"]
