"""`cohbench diff OLD NEW`: a copy of a release with one label flipped in one config and one row removed from another
is reported as exactly those two changes, each naming its ids, the same releases as equal, and neither side is ever
written. Duplicated and missing ids, row counts and splits of different schemas are differences, floats are compared
at the declared precision, and a side that fails the release's checks is named, then compared as found."""

from __future__ import annotations

import hashlib
import json
import shutil

import datasets
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cohbench.cli import main
from cohbench.release.diff import diff, markdown
from cohbench.release.layout import read_config
from release_fixture import rewrite_split


def _hashes(folder) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _changed_copy(release, target):
    shutil.copytree(release, target)
    dsd = read_config(target, "timetravel_dsd").tables["test"]
    labels = dsd.column("sentence_labels").to_pylist()
    labels[0] = [0, 1, 1]  # d3: a second sentence marked as an error
    rewrite_split(target, "timetravel_dsd", "test", dsd.set_column(dsd.schema.get_field_index("sentence_labels"), "sentence_labels",
                                                                   pa.array(labels, type=dsd.schema.field("sentence_labels").type)))
    summaries = read_config(target, "storysumm").tables["test"]
    rewrite_split(target, "storysumm", "test", summaries.filter(pc.not_equal(summaries["id"], "s7")))
    return target


def test_a_flipped_label_and_a_removed_row_are_exactly_the_changes_reported(every_protocol, tmp_path, capsys):
    copy = _changed_copy(every_protocol, tmp_path / "copy")
    before = (_hashes(every_protocol), _hashes(copy))
    result = diff(every_protocol, copy)
    assert before == (_hashes(every_protocol), _hashes(copy))  # neither side written
    changed = {name: c for name, c in result["configs"].items() if c["status"] != "equal"}
    assert set(changed) == {"timetravel_dsd", "storysumm"} and not result["equal"]
    dsd, summaries = changed["timetravel_dsd"], changed["storysumm"]
    assert (dsd["added"], dsd["removed"], dsd["changed"]) == (0, 0, 1)
    assert dsd["changed_fields"] == {"sentence_labels": 1}
    assert dsd["label_transitions"] == {"sentence_labels 0 -> 1": 1}
    assert dsd["label_transition_ids"] == {"sentence_labels 0 -> 1": ["d3"]} and dsd["ids"] == {"added": [], "removed": [], "changed": ["d3"]}
    assert summaries["ids"] == {"added": [], "removed": ["s7"], "changed": []}
    assert dsd["old"]["version"] == "1.0.0" and dsd["new"]["version"] == "1.0.0+dev." + dsd["new"]["fingerprint"][:8]
    assert (summaries["added"], summaries["removed"], summaries["changed"], summaries["rows"]) == (0, 1, 0, {"old": 9, "new": 8})
    assert not any(summaries["schema"].values()) and not summaries["moved_split"]

    assert main(["diff", str(every_protocol), str(copy)]) == 1
    out = capsys.readouterr().out
    assert "sentence_labels 0 -> 1 1 (d3)" in out and "removed (1): s7" in out and "2 of 5 config(s) differ" in out
    assert main(["diff", str(every_protocol), str(copy), "--markdown"]) == 1
    assert "| `storysumm` |" in capsys.readouterr().out
    assert main(["diff", str(every_protocol), str(copy), "--config", "snac", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["equal"]


def test_a_release_equals_its_copy(every_protocol, tmp_path, capsys):
    shutil.copytree(every_protocol, tmp_path / "same")
    assert main(["diff", str(every_protocol), str(tmp_path / "same")]) == 0
    assert capsys.readouterr().out.rstrip().endswith("no difference")


def test_moved_splits_and_floats_are_told_apart_from_noise(every_protocol, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(every_protocol, copy)
    table = read_config(copy, "timetravel_msd").tables["validation"]
    moved = table.set_column(table.schema.get_field_index("split"), "split", pa.array(["test"] * table.num_rows))
    rewrite_split(copy, "timetravel_msd", "validation", moved)
    result = diff(every_protocol, copy, ["timetravel_msd"])["configs"]["timetravel_msd"]
    assert result["moved_split"] == {"validation -> test": 2} and result["changed_fields"] == {"split": 2}
    assert markdown({"old": {"release": "a"}, "new": {"release": "b"}, "configs": {"timetravel_msd": result}}).count("| `timetravel_msd` |") == 1

    ratings = read_config(copy, "summeval").tables["test"]
    rows = ratings.to_pylist()
    rows[0]["ratings"][0]["score"] += 2e-6  # kernel noise, below the declared precision (float32 keeps it)
    rows[1]["ratings"][0]["score"] += 0.5  # content
    rewrite_split(copy, "summeval", "test", pa.Table.from_pylist(rows, schema=ratings.schema))
    result = diff(every_protocol, copy, ["summeval"])["configs"]["summeval"]
    assert rows[0]["ratings"][0]["score"] != ratings.to_pylist()[0]["ratings"][0]["score"]
    assert result["floats_beyond_precision"] == {"ratings": 1} and result["float_noise_within_precision"] == {"ratings": 1}
    assert result["ids"]["changed"] == [rows[1]["id"]]


def _with_test_rows(release, config: str, change) -> None:
    table = read_config(release, config).tables["test"]
    rewrite_split(release, config, "test", change(table))


def test_a_duplicated_row_and_a_null_id_are_differences_named_by_id(every_protocol, tmp_path, capsys):
    copy = shutil.copytree(every_protocol, tmp_path / "copy")
    _with_test_rows(copy, "storysumm", lambda t: pa.concat_tables([t, t.slice(0, 1)]))  # s5 twice: 6 rows against 5
    _with_test_rows(copy, "timetravel_dsd", lambda t: t.set_column(0, "id", pa.array([None, *t.column("id").to_pylist()[1:]], pa.string())))
    result = diff(every_protocol, copy)["configs"]
    summaries, dsd = result["storysumm"], result["timetravel_dsd"]
    assert summaries["status"] == "changed" and summaries["duplicate_ids"] == {"old": [], "new": ["s5"]}
    assert summaries["rows"]["new"] == summaries["rows"]["old"] + 1 and summaries["changed"] == 0
    assert dsd["status"] == "changed" and dsd["null_ids"] == {"old": 0, "new": 1} and dsd["ids"]["removed"] == ["d3"]
    assert main(["diff", str(every_protocol), str(copy)]) == 1
    out = capsys.readouterr().out
    assert "duplicated ids: new s5" in out and "rows without an id: new 1" in out and "removed (1): d3" in out


def test_splits_of_different_schemas_are_reported_not_a_crash(every_protocol, tmp_path, capsys):
    copy = shutil.copytree(every_protocol, tmp_path / "copy")
    test = copy / "data" / "storysumm" / "test.parquet"
    table = pq.read_table(test)
    pq.write_table(table.append_column("extra", pa.array([1] * table.num_rows)), test)
    dsd = copy / "data" / "timetravel_dsd" / "test.parquet"
    table = pq.read_table(dsd)
    pq.write_table(table.set_column(0, "id", pa.array(range(table.num_rows))), dsd)
    result = diff(every_protocol, copy)
    assert "differs from the sha256 recorded in stats/" in result["new"]["failed"] and result["old"]["failed"] is None
    summaries, ids = result["configs"]["storysumm"], result["configs"]["timetravel_dsd"]
    assert summaries["status"] == "changed" and summaries["split_schemas"] == ["new test has extra int64 where validation has no such field"]
    assert ids["status"] == "changed" and "cannot be joined" in ids["not_compared"]
    assert ids["split_schemas"] == ["new test has id int64 where validation has string"]
    assert main(["diff", str(every_protocol), str(copy)]) == 1
    out = capsys.readouterr().out
    assert "the new side failed the release's checks, so it is compared as found" in out and "not compared row by row" in out


def test_a_copy_that_fails_its_checks_is_named_then_diffed(every_protocol, tmp_path, capsys):
    copy = shutil.copytree(every_protocol, tmp_path / "copy")
    path = copy / "data" / "storysumm" / "test.parquet"
    table = pq.read_table(path)
    labels = table.column("label").to_pylist()
    pq.write_table(table.set_column(table.schema.get_field_index("label"), "label", pa.array([1 - labels[0], *labels[1:]], table.schema.field("label").type)), path)
    assert main(["diff", str(every_protocol), str(copy), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["new"]["failed"].startswith(f"{path} differs from the sha256 recorded in stats/storysumm.json")
    assert result["configs"]["storysumm"]["label_transition_ids"] == {f"label {labels[0]} -> {1 - labels[0]}": ["s5"]}
    assert result["configs"]["storysumm"]["new"]["version"].startswith("1.0.0+dev.")  # named from what it holds
    assert main(["diff", str(copy), str(copy)]) == 1  # equal content, but neither side passed its checks
    assert "no difference" in capsys.readouterr().out
    broken = shutil.copytree(every_protocol, tmp_path / "broken")
    (broken / "manifest.json").write_text("{not json")
    result = diff(every_protocol, broken)
    assert "manifest.json is not valid JSON" in result["new"]["failed"] and result["equal"]


def test_bad_sides_are_one_line(every_protocol, tmp_path, capsys):
    for args, message in [
        ([str(tmp_path), str(every_protocol)], "is not a cohbench release"),
        (["not-a-version", str(every_protocol)], "is neither a release folder nor a version"),
        ([str(every_protocol), str(every_protocol), "--config", "nope"], "config 'nope' is in neither release; configs: snac, "),
    ]:
        assert main(["diff", *args]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_each_side_is_labelled_with_the_version_its_manifest_records(every_protocol, tmp_path):
    # an older release of unchanged configs, restored from the store, is that release, not this checkout's version
    older = shutil.copytree(every_protocol, tmp_path / "older")
    manifest = json.loads((older / "manifest.json").read_text())
    (older / "manifest.json").write_text(json.dumps(manifest | {"cohbench_version": "0.0.1"}))
    result = diff(older, every_protocol)
    assert (result["old"]["release"], result["new"]["release"]) == ("0.0.1", manifest["cohbench_version"])
    assert markdown(result).startswith("Generated by `cohbench diff` from cohbench 0.0.1 to ")


def test_a_struct_that_gained_a_subfield_is_compared_on_the_subfields_both_sides_hold(every_protocol, tmp_path):
    """0.4 -> 0.5: `corruption` gained `replaced`. The rows are compared on the old subfields, so a changed seed is
    a change and the added values alone are not."""
    from cohbench.release.layout import write_config

    old, new = (shutil.copytree(every_protocol, tmp_path / name) for name in ("old", "new"))
    data = read_config(old, "timetravel_dsd")
    schema = data.tables["test"].schema
    older = pa.struct([f for f in schema.field("corruption").type if f.name != "replaced"])
    older_schema = pa.schema([f.with_type(older) if f.name == "corruption" else f for f in schema])
    described = {k: v for k, v in data.stats.items() if k not in ("config", "splits", "files", "records_altered")}
    changed = data.splits["test"][1]["id"]

    def corrupted(row, seed, **replaced):
        return dict(row, corruption={"generator": "discordant_replace", "seed": seed, "source_id": row["id"], "positions": [1],
                                     "inserted_ids": ["x#s1"], "similarities": [0.25], "ranks": [1], **replaced})

    for side, kind, make in ((old, older_schema, lambda r: corrupted(r, 1)),
                             (new, schema, lambda r: corrupted(r, 2 if r["id"] == changed else 1, replaced=["Was."]))):
        write_config(side, "timetravel_dsd", {split: datasets.Dataset(pa.Table.from_pylist([make(r) for r in rows], schema=kind))
                                              for split, rows in data.splits.items()}, described)
    result = diff(old, new, ["timetravel_dsd"])["configs"]["timetravel_dsd"]
    assert result["schema"] == {"added": ["corruption (+replaced: list<string>)"], "removed": [], "retyped": {}}
    assert result["changed_fields"] == {"corruption": 1} and result["ids"]["changed"] == [changed]
    assert result["float_noise_within_precision"] == {}  # the added values are not float noise either
