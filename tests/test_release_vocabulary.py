"""Labels and span types outside the schema's vocabularies are refused by the one writer and by the one reader: a
label of 7 or a span type of -3 has no meaning, and shown or counted it would be wrong data (a -3 shown as "RepE")."""

from __future__ import annotations

import datasets
import pyarrow as pa
import pytest

from cohbench import cli, schema
from cohbench.errors import ReleaseError
from cohbench.release import layout
from release_fixture import plain_record, rewrite_split


def test_every_class_label_of_the_schema_has_its_vocabulary_in_one_table():
    def walk(feature, path):
        if isinstance(feature, datasets.ClassLabel):
            yield ".".join(path), tuple(feature.names)
        elif isinstance(feature, datasets.List):
            yield from walk(feature.feature, path)
        elif isinstance(feature, dict):
            for key, inner in feature.items():
                yield from walk(inner, (*path, key))

    assert dict(walk(schema.FEATURES, ())) == schema.CLASS_LABELS


@pytest.mark.parametrize("label, sentence_labels, wrong", [(7, [0, 1], "label holds 7"), (1, [0, -5], "sentence_labels holds -5")])
def test_the_writer_refuses_a_label_outside_its_names_and_writes_nothing(workspace, label, sentence_labels, wrong):
    release = workspace / "release"
    row = {**plain_record("s1", label, sentence_labels), "corpus": "storysumm", "config": "storysumm", "split": "test"}
    split = datasets.Dataset(pa.Table.from_pylist([row], schema=schema.ARROW_SCHEMA))  # as `derive` hands SQL rows over
    with pytest.raises(ReleaseError, match=f"refusing to write storysumm's test split: {wrong}, which is none of 0=ok, 1=error"):
        layout.write_config(release, "storysumm", {"test": split}, {"corpus": "storysumm"})
    assert not (release / "data" / "storysumm").exists() and not (release / "stats" / "storysumm.json").exists()


def test_a_span_type_outside_its_names_written_past_the_writer_is_refused_by_every_reader(every_protocol, monkeypatch, capsys):
    table = layout.read_config(every_protocol, "snac").tables["test"]
    rows = table.to_pylist()
    rows[0]["spans"][0]["type"] = -3  # would be shown as ERROR_TYPES[-3], "RepE"
    with monkeypatch.context() as patched:  # a forger's writer: the same files, stats and build state, no check
        patched.setattr(layout, "outside_vocabulary", lambda table: None)
        rewrite_split(every_protocol, "snac", "test", pa.Table.from_pylist(rows, schema=table.schema))

    with pytest.raises(ReleaseError, match=r"snac/test.parquet: spans.type holds -3, which is none of 0=CharE, .*6=CorefE"):
        layout.read_config(every_protocol, "snac")
    assert cli.main(["sql", "SELECT count(*) FROM snac"]) == 1
    err = capsys.readouterr().err
    assert "spans.type holds -3" in err and err.count("\n") == 1


def test_bytes_that_passed_once_are_not_parsed_again_by_a_later_process(every_protocol, monkeypatch):
    from cohbench.release import files

    layout.read_config(every_protocol, "snac")  # checks and marks its files' bytes
    monkeypatch.setattr(files, "_VERIFIED", {})  # a new process: nothing checked in it yet
    monkeypatch.setattr(layout, "outside_vocabulary", lambda table: pytest.fail("parsed again"))
    assert layout.read_config(every_protocol, "snac").stats["config"] == "snac"
