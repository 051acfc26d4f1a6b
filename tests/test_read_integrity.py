"""Every command and Python entry point that reads a config checks what it reads: a data file that differs from the
sha256 its stats record (one label flipped, another config's file), stats that differ from the manifest or are
missing, a missing or invalid manifest are refused in one line naming the file and the fix, exit 1. Stats are always
checked against a record, never skipped for their file times: the manifest's, or for a config built since the last
`cohbench index` (readable for the pipeline's next steps) the build state its build left in building/."""

from __future__ import annotations

import hashlib
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
from cohbench.release.layout import write_config as write_records
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


def restat(release, config: str, field: str, value) -> None:
    """The issue's attack: one value of the first test record changed at the file's size, its new sha256 written into
    the config's stats (which are then newer than the manifest, as after every `make release`)."""
    path = release / "data" / config / "test.parquet"
    table = pq.read_table(path)
    values = table.column(field).to_pylist()
    values[0] = value
    index = table.schema.get_field_index(field)
    datasets.Dataset(table.set_column(index, field, pa.array(values, table.schema.field(index).type))).to_parquet(str(path))
    stats_file = release / "stats" / f"{config}.json"
    stats = json.loads(stats_file.read_text())
    stats["files"]["test"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    stats_file.write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")


TAMPERED = {"storysumm": ("label", 0), "snac": ("sentence_labels", [1, 1, 1]), "timetravel_dsd": ("sentence_labels", [1, 1, 1]),
            "timetravel_msd": ("gap_labels", [1, 0, 1]), "summeval": ("system", "M9")}  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS)
def test_a_tampered_value_with_restated_stats_in_any_config_is_refused_by_every_reader_and_never_indexed(every_protocol, tmp_path,
                                                                                                       capsys, config):
    restat(every_protocol, config, *TAMPERED[config])
    stats_file, manifest = every_protocol / "stats" / f"{config}.json", every_protocol / "manifest.json"
    assert stats_file.stat().st_mtime_ns >= manifest.stat().st_mtime_ns  # file times prove nothing
    named = (f"stats/{config}.json", "differs from the sha256 recorded in manifest.json")
    board = ["leaderboard", "--config", config, "--bootstrap", "10", "--output", str(tmp_path / "board")]
    for argv in [*readers(tmp_path, config, evaluate=True), board, ["index"]]:
        assert_refused(argv, capsys, *named)
    assert_python_refuses(config, *named)
    assert not (tmp_path / "export").exists() and not (tmp_path / "board").exists()
    assert json.loads(manifest.read_text())["shipped"][f"stats/{config}.json"] != hashlib.sha256(stats_file.read_bytes()).hexdigest()


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


def test_a_config_built_since_the_last_index_is_read_through_its_build_state_until_the_index(every_protocol, tmp_path, capsys):
    # as dvc.yaml runs it: `cohbench build CONFIG --no-index`, then report/validate/train, then `cohbench index`
    write_config(every_protocol, "storysumm", "storysumm", {"test": [plain_record(f"t{i}", i % 2, [0, i % 2]) for i in range(3)]})
    state = json.loads((every_protocol / "building" / "storysumm.json").read_text())
    assert state["stats_sha256"] == hashlib.sha256((every_protocol / "stats" / "storysumm.json").read_bytes()).hexdigest()
    assert cohbench.load("storysumm", split="test")["id"] == ["t0", "t1", "t2"]
    assert main(["sql", "SELECT count(*) AS n FROM storysumm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["n"] in (3, "3")
    assert main(["verify"]) == 1 and "storysumm was built since the last `cohbench index`" in capsys.readouterr().out
    assert_refused(["export", str(tmp_path / "export")], capsys, "is being built", "storysumm", "cohbench index")
    restat(every_protocol, "storysumm", "label", 1)  # the stats of a config being built are checked against its build state
    assert_python_refuses("storysumm", "stats/storysumm.json", "differs from the sha256 recorded in manifest.json and from its build state's (building/storysumm.json)")
    write_config(every_protocol, "storysumm", "storysumm", {"test": [plain_record(f"t{i}", i % 2, [0, i % 2]) for i in range(3)]})
    write_index(every_protocol)
    assert not (every_protocol / "building").exists()  # the index recorded it: the release is whole again
    assert main(["verify"]) == 0
    flip_label(every_protocol, "storysumm")  # its data are still checked against its own stats
    with pytest.raises(ReleaseError, match="differs from the sha256 recorded in stats/storysumm.json"):
        cohbench.load("storysumm")


def test_a_rebuild_that_gives_the_indexed_stats_again_leaves_no_build_state(every_protocol):
    data = cohbench.load("timetravel_msd")
    stats = json.loads((every_protocol / "stats" / "timetravel_msd.json").read_text())
    described = {k: v for k, v in stats.items() if k not in ("config", "splits", "files", "records_altered", "fingerprint", "schema", "field_hashes")}
    before = (every_protocol / "stats" / "timetravel_msd.json").read_bytes()
    write_records(every_protocol, "timetravel_msd", dict(data), described)
    assert (every_protocol / "stats" / "timetravel_msd.json").read_bytes() == before
    assert not (every_protocol / "building").exists()


def test_a_release_never_indexed_is_readable_and_one_indexed_is_not_without_its_manifest(workspace):
    release = write_config(workspace / "release", "storysumm", "storysumm", {"test": [plain_record("a", 1, [0, 1])]})
    assert cohbench.load("storysumm", split="test")["id"] == ["a"]  # a build in progress: no manifest yet
    write_index(release)
    (release / "manifest.json").unlink()
    with pytest.raises(ReleaseError, match="manifest.json is missing although .*README.md shows the release was indexed"):
        cohbench.load("storysumm")
    write_index(release)  # the fix it names
    assert cohbench.load("storysumm", split="test")["id"] == ["a"]


def test_the_build_state_of_a_build_killed_before_its_stats_is_cleared_by_the_index(every_protocol, capsys):
    (every_protocol / "building").mkdir()
    (every_protocol / "building" / "snac.json").write_text(json.dumps({"config": "snac", "stats_sha256": "0" * 64}))
    assert cohbench.load("snac", split="test").num_rows == 2  # the stats in place are the manifest's
    assert main(["verify"]) == 1 and "snac was built since the last `cohbench index`" in capsys.readouterr().out
    write_index(every_protocol)
    assert not (every_protocol / "building").exists() and main(["verify"]) == 0


def test_a_config_only_a_forged_build_state_names_is_refused_by_every_reader_and_the_writer(every_protocol, tmp_path, capsys):
    """Only `cohbench build` leaves a build state, and only for a registered config: a copy of storysumm under a name
    no corpus declares, with its stats and a build state forged for it, is never served as a view or a config."""
    shutil.copytree(every_protocol / "data" / "storysumm", every_protocol / "data" / "evil")
    stats = (every_protocol / "stats" / "storysumm.json").read_text().replace('"data/storysumm/', '"data/evil/')
    (every_protocol / "stats" / "evil.json").write_text(stats)
    (every_protocol / "building").mkdir()
    (every_protocol / "building" / "evil.json").write_text(json.dumps({"config": "evil", "stats_sha256": hashlib.sha256(stats.encode()).hexdigest()}))
    for argv in (["sql", 'SELECT count(*) FROM "evil"'], ["sql", "SELECT 1"], ["list"], ["verify"], ["index"]):
        assert_refused(argv, capsys, "building/evil.json", "no corpus declares")
    assert_python_refuses("storysumm", "building/evil.json")
    shutil.rmtree(every_protocol / "building")
    with pytest.raises(ReleaseError, match="'evil' is not a registered config, so it cannot be built into the indexed release"):
        write_config(every_protocol, "evil", "storysumm", {"test": [plain_record("a", 1, [0, 1])]})
