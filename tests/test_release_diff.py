"""`cohbench diff OLD NEW`: a copy of a release with one label flipped in one config and one row removed from another
is reported as exactly those two changes, the same releases as equal, and neither side is ever written."""

from __future__ import annotations

import hashlib
import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc

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
    assert dsd["old"]["version"] == "1.0.0" and dsd["new"]["version"] == "1.0.0+dev." + dsd["new"]["fingerprint"][:8]
    assert (summaries["added"], summaries["removed"], summaries["changed"], summaries["rows"]) == (0, 1, 0, {"old": 9, "new": 8})
    assert not any(summaries["schema"].values()) and not summaries["moved_split"]

    assert main(["diff", str(every_protocol), str(copy)]) == 1
    out = capsys.readouterr().out
    assert "sentence_labels 0 -> 1 1" in out and "2 of 5 config(s) differ" in out
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


def test_bad_sides_are_one_line(every_protocol, tmp_path, capsys):
    for args, message in [
        ([str(tmp_path), str(every_protocol)], "is not a cohbench release"),
        (["not-a-version", str(every_protocol)], "is neither a release folder nor a version"),
        ([str(every_protocol), str(every_protocol), "--config", "nope"], "config 'nope' is in neither release"),
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
