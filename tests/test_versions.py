"""Versions bound to content: a config's fingerprint follows its records, not the Parquet writer's bytes; a build whose
records differ from the declared version carries a development version, fails `validate` with the part of the version
that must move, and `cohbench version --record` declares the next one; results and loads name the data they used."""

from __future__ import annotations

import hashlib
import json

import datasets
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cohbench
from cohbench.cli import main
from cohbench.release import versions
from cohbench.release.fingerprint import _canonical_array, _canonical_values, canonical, fingerprint
from cohbench.release.layout import built_configs, read_config
from cohbench.schema import FEATURES
from release_fixture import plain_record, rewrite_split, write_config


def tables(records_by_split: dict[str, list[dict]]) -> dict[str, pa.Table]:
    return {split: datasets.Dataset.from_list(rows, features=FEATURES).data.table for split, rows in records_by_split.items()}


def test_the_fingerprint_follows_the_records_not_their_bytes_or_order():
    records = [plain_record("a", 1, [0, 1]), plain_record("b", 0, [0, 0])]
    for r in records:
        r.update(corpus="x", config="x", split="test")
    base = fingerprint(tables({"test": records}))
    assert fingerprint(tables({"test": records[::-1]}))["fingerprint"] == base["fingerprint"]  # canonical order
    chunked = {"test": pa.Table.from_batches(tables({"test": records})["test"].to_batches(max_chunksize=1))}
    assert fingerprint(chunked)["fingerprint"] == base["fingerprint"]
    flipped = [dict(records[0], sentence_labels=[1, 1]), records[1]]
    changed = fingerprint(tables({"test": flipped}))
    assert changed["fingerprint"] != base["fingerprint"]
    assert {f for f in base["fields"] if base["fields"][f] != changed["fields"][f]} == {"sentence_labels"}


def _corrupted(similarity: float) -> dict:
    record = plain_record("c", 1, [0, 1], corpus="x", config="x", split="test")
    record["corruption"] = {"generator": "g", "seed": 1, "source_id": "s", "positions": [1], "inserted_ids": ["i"],
                            "similarities": [similarity], "ranks": [1]}
    return record


def test_floats_are_content_to_the_declared_precision_and_noise_below_it():
    base = fingerprint(tables({"test": [_corrupted(0.2489)]}))["fingerprint"]
    assert fingerprint(tables({"test": [_corrupted(0.24890003)]}))["fingerprint"] == base  # float32 noise
    assert fingerprint(tables({"test": [_corrupted(0.2490)]}))["fingerprint"] != base
    rated = [dict(_corrupted(0.2489), ratings=[{"annotator": "a", "annotator_type": "expert", "dimension": "coherence", "score": score}])
             for score in (0.0, -0.0, 2.00000001)]  # a float inside a list of structs is content at the same precision
    assert len({fingerprint(tables({"test": [r]}))["fingerprint"] for r in rated}) == 2


# floats where rounding is hard: ties and near-ties at the declared precision, -0.0, NaN, infinities, large values,
# float32 widened, subnormals; and the kind the builds write (a similarity rounded, then stored as float32)
_HARD_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(width=32),
                         st.integers(-10**6, 10**6).map(lambda k: (k + 0.5) / 10**4),
                         st.integers(-10**6, 10**6).map(lambda k: k / 10**4),
                         st.sampled_from([-0.0, 0.0, 1e6, -1e6, 5e-324, 0.00005, 0.99995, 2.00000001]))
_SCORED = st.lists(st.one_of(st.none(), st.fixed_dictionaries({"score": st.one_of(st.none(), _HARD_FLOATS), "name": st.text(max_size=2)})),
                   max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(st.none(), _HARD_FLOATS), max_size=4)), max_size=6),
       st.lists(st.one_of(st.none(), _SCORED), min_size=1, max_size=6), st.booleans(), st.integers(0, 3))
def test_floats_put_in_canonical_form_in_arrow_read_exactly_as_pythons_rounding_gives_them(lists, scored, float32, cut):
    """The fingerprint rounds a column's floats with numpy where that is exact, and in Python elsewhere: the values
    (down to -0.0 against 0.0 and the last bit, as JSON shows them) must be the same either way."""
    float_list = pa.list_(pa.float32() if float32 else pa.float64())
    columns = [pa.chunked_array([pa.array(lists[:cut], float_list), pa.array(lists[cut:], float_list)]),
               pa.chunked_array([pa.array(scored, pa.list_(pa.struct([("score", pa.float64()), ("name", pa.string())])))]).slice(1)]
    for column in columns:
        assert json.dumps(_canonical_values(column)) == json.dumps(canonical(column.to_pylist()))


def test_a_builds_floats_are_put_in_canonical_form_without_pythons_walk():
    similarities = pa.array([[0.3278, 0.2941], None, [0.0]], pa.list_(pa.float32()))  # rounded, then stored as float32
    assert _canonical_array(similarities).to_pylist() == [[0.3278, 0.2941], None, [0.0]]
    assert _canonical_array(pa.array([0.00005])) is None  # a tie: Python's rounding decides
    # floats in a type the numpy form does not know (a list view beside a float): Python's walk rounds them
    viewed = pa.StructArray.from_arrays([pa.array([0.1]), pa.array([[0.123456]], pa.list_view(pa.float64()))], names=["a", "b"])
    assert _canonical_values(pa.chunked_array([viewed])) == [{"a": 0.1, "b": [0.1235]}]


def test_noise_below_the_float_precision_moves_no_fingerprint_whatever_type_holds_the_float():
    def field_hash(value: float, kind) -> str:
        return fingerprint({"test": pa.table({"id": ["a"], "scores": pa.array([[value]], kind)})})["fields"]["scores"]

    for kind in (pa.list_(pa.float64()), pa.list_view(pa.float64()), pa.large_list_view(pa.float32())):
        assert field_hash(0.123456, kind) == field_hash(0.1234561, kind), kind  # both 0.1235
        assert field_hash(0.123456, kind) != field_hash(0.1236, kind), kind


def _stats(config: str, fields: dict, schema: dict, rows=None) -> dict:
    content = {"fingerprint": hashlib.sha256(json.dumps([fields, schema, rows], sort_keys=True).encode()).hexdigest(), "schema": schema,
               "field_hashes": fields}
    return content | {"files": {"test": {"rows": rows or 2, "sha256": "0" * 64}}}


def test_the_part_of_the_version_that_moves_is_read_from_the_field_hashes(workspace):
    fields, schema = {"id": "1", "label": "2"}, {"id": "string", "label": "int64"}
    assert versions.record("c", _stats("c", fields, schema)).next == "1.0.0"  # a new config
    assert versions.check("c", _stats("c", fields, schema)).ok
    added = versions.check("c", _stats("c", {**fields, "extra": "3"}, {**schema, "extra": "string"}))
    assert (added.bump, added.next, added.reasons) == ("minor", "1.1.0", ("fields added: extra",))
    relabelled = versions.check("c", _stats("c", {**fields, "label": "9"}, schema))
    assert (relabelled.bump, relabelled.next) == ("major", "2.0.0") and "values changed in: label" in relabelled.reasons
    assert versions.check("c", _stats("c", fields, schema, rows=3)).bump == "major"
    assert versions.check("c", _stats("c", fields, {**schema, "label": "string"})).bump == "major"
    assert relabelled.built.startswith("1.0.0+dev.")
    assert versions.matches("2.3.1", "2.*.*") and versions.matches("2.3.1", "2.3.1") and not versions.matches("2.3.1", "3.*.*")
    assert not versions.matches("2.3.1+dev.abc", "2.*.*")


def test_a_struct_that_gains_a_subfield_is_a_minor_change_only_where_it_is_null_in_every_record(workspace):
    fields, schema = {"id": "1", "corruption": "2"}, {"id": "string", "corruption": "struct<generator: string>"}
    versions.record("c", _stats("c", fields, schema))
    grown = {**schema, "corruption": "struct<generator: string, replaced: list<string>>"}
    null_everywhere = versions.check("c", _stats("c", fields, grown))  # a null struct hashes alike with any subfields
    assert (null_everywhere.bump, null_everywhere.reasons) == ("minor", ("fields added: corruption (+replaced: list<string>)",))
    filled = versions.check("c", _stats("c", {**fields, "corruption": "3"}, grown))  # without the records: cannot tell
    assert (filled.bump, filled.reasons) == ("major", ("fields retyped: corruption",))
    reordered = {**schema, "corruption": "struct<replaced: list<string>, generator: string>"}
    assert versions.check("c", _stats("c", fields, reordered)).bump == "major"


def _declared_stats(content: dict) -> dict:
    return {"fingerprint": content["fingerprint"], "schema": content["schema"], "field_hashes": content["fields"],
            "files": {split: {"rows": rows, "sha256": "0" * 64} for split, rows in content["rows"].items()}}


def test_given_the_records_a_subfield_with_values_is_a_minor_change_and_a_changed_old_subfield_a_major_one(workspace):
    """corruption.replaced came with a value in every corrupted record: the records tell that nothing else moved."""
    older = pa.struct([f for f in FEATURES.arrow_schema.field("corruption").type if f.name != "replaced"])
    older_schema = pa.schema([f.with_type(older) if f.name == "corruption" else f for f in FEATURES.arrow_schema])
    record = _corrupted(0.25)
    versions.record("x", _declared_stats(fingerprint({"test": pa.Table.from_pylist([record], schema=older_schema)})))
    grown = tables({"test": [{**record, "corruption": {**record["corruption"], "replaced": ["Was."]}}]})
    assert versions.check("x", _declared_stats(fingerprint(grown))).bump == "major"  # the stats alone cannot tell
    verdict = versions.check("x", _declared_stats(fingerprint(grown)), tables=grown)
    assert (verdict.bump, verdict.next, verdict.reasons) == ("minor", "1.1.0", ("fields added: corruption (+replaced: list<string>)",))
    reseeded = tables({"test": [{**record, "corruption": {**record["corruption"], "seed": 2, "replaced": ["Was."]}}]})
    assert versions.check("x", _declared_stats(fingerprint(reseeded)), tables=reseeded).bump == "major"


def _release(workspace):
    rel = workspace / "release"
    write_config(rel, "timetravel_dsd", "timetravel", {"test": [plain_record("a", 1, [0, 1]), plain_record("b", 0, [0, 0])]})
    return rel


@pytest.mark.slow
def test_changed_records_fail_validate_until_their_version_is_declared(workspace, capsys):
    rel = _release(workspace)
    assert main(["version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["configs"]["timetravel_dsd"]["built"] == "1.0.0"
    table = read_config(rel, "timetravel_dsd").tables["test"]
    labels = pa.array([[1, 1], [0, 0]], type=table.schema.field("sentence_labels").type)
    rewrite_split(rel, "timetravel_dsd", "test", table.set_column(table.schema.get_field_index("sentence_labels"), "sentence_labels", labels))

    assert main(["version"]) == 1
    line = capsys.readouterr().out
    assert "declare 2.0.0 (major)" in line and "values changed in: sentence_labels" in line
    from cohbench.validation import validate

    verdict = validate(["timetravel_dsd"], docs=False)["configs"]["timetravel_dsd"]
    assert not verdict["ok"] and "[version]" in verdict["line"] and "declare 2.0.0 (major)" in verdict["line"]
    assert main(["version", "--record", "timetravel_dsd"]) == 0
    assert "declared 2.0.0 (major" in capsys.readouterr().out
    assert json.loads((workspace / "versions/timetravel_dsd.json").read_text())["version"] == "2.0.0"
    assert versions.check("timetravel_dsd", built_configs(rel)["timetravel_dsd"]).ok


def test_loads_and_results_name_the_version_and_fingerprint_of_their_data(workspace, capsys):
    rel = _release(workspace)
    fingerprint_ = built_configs(rel)["timetravel_dsd"]["fingerprint"]
    assert str(cohbench.load("timetravel_dsd", split="test", version="1.*.*").info.version) == "1.0.0"
    with pytest.raises(cohbench.errors.ReleaseError, match=r"timetravel_dsd in .* is version 1\.0\.0 .*not 2\.0\.0"):
        cohbench.load("timetravel_dsd", version="2.0.0")
    predictions = workspace / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "score": [0.1, 0.9]}) + "\n" for i in "ab"))
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(predictions), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["configs"]["timetravel_dsd"] == {"version": "1.0.0", "fingerprint": fingerprint_}
    assert data["release"] == cohbench.__version__
    assert main(["cite", "timetravel_dsd"]) == 0
    assert f"note = {{configs: timetravel_dsd 1.0.0 (records {fingerprint_[:12]})}}" in capsys.readouterr().out


def test_the_card_croissant_and_manifest_show_each_configs_version(workspace):
    from cohbench.release.index import write_index

    rel = _release(workspace)
    write_index(rel)
    manifest = json.loads((rel / "manifest.json").read_text())
    assert manifest["configs"]["timetravel_dsd"]["version"] == "1.0.0" and manifest["cohbench_version"] == cohbench.__version__
    assert "| `timetravel_dsd` | 1.0.0 |" in (rel / "README.md").read_text()
    assert "timetravel_dsd 1.0.0" in json.loads((rel / "croissant.json").read_text())["recordSet"][0]["description"]
    loaded = datasets.load_dataset(str(rel), "timetravel_dsd", split="test", cache_dir=str(workspace / "hf"))
    assert str(loaded.info.version) == "1.0.0"


def _edit_stats(release, config: str, edit) -> None:
    path = release / "stats" / f"{config}.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def test_version_refuses_stats_whose_fingerprint_is_not_that_of_their_records(workspace, capsys):
    # the tamperer kept the stats' fingerprint and wrote the changed file's sha256 (in a release never indexed, the
    # stats are their only record; in an indexed one the manifest refuses them first: test_read_integrity)
    rel = _release(workspace)
    table = read_config(rel, "timetravel_dsd").tables["test"]
    kept = json.loads((rel / "stats" / "timetravel_dsd.json").read_text())
    rewrite_split(rel, "timetravel_dsd", "test", table.set_column(table.schema.get_field_index("label"), "label", pa.array([0, 0], pa.int64())))
    _edit_stats(rel, "timetravel_dsd", lambda s: s | {key: kept[key] for key in ("fingerprint", "schema", "field_hashes")})
    declared = (workspace / "versions" / "timetravel_dsd.json").read_bytes()
    for argv in (["version"], ["version", "--record"]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert "stats/timetravel_dsd.json records another fingerprint than that of the records it describes" in err and "\n" not in err
    assert (workspace / "versions" / "timetravel_dsd.json").read_bytes() == declared


@pytest.mark.parametrize("edit", ["no field hashes", "no schema", "a junk fingerprint"])
def test_version_record_refuses_stats_without_a_whole_fingerprint_in_one_line(workspace, capsys, edit):
    rel = _release(workspace)
    change = {"no field hashes": lambda s: {k: v for k, v in s.items() if k != "field_hashes"},
              "no schema": lambda s: {k: v for k, v in s.items() if k != "schema"},
              "a junk fingerprint": lambda s: s | {"fingerprint": "junk"}}[edit]
    _edit_stats(rel, "timetravel_dsd", change)
    declared = (workspace / "versions" / "timetravel_dsd.json").read_bytes()
    assert main(["version", "--record"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("cohbench: error: stats/timetravel_dsd.json records") and "\n" not in err and "failed unexpectedly" not in err
    assert (workspace / "versions" / "timetravel_dsd.json").read_bytes() == declared  # no major bump written


def test_load_refuses_arguments_of_the_wrong_type_in_one_line(workspace):
    _release(workspace)
    for arguments in ({"version": 123}, {"split": 3}, {"release": 5}):
        with pytest.raises(cohbench.errors.ReleaseError, match=f"load's {next(iter(arguments))} must be"):
            cohbench.load("timetravel_dsd", **arguments)


@pytest.mark.slow
def test_every_result_names_its_data(every_protocol, tmp_path, capsys):
    """evaluate (above), metaeval, agreement --json and the report carry the release version and each config's version
    and fingerprint (gate.json: test_baseline_gate)."""
    from cohbench.release.versions import provenance

    expected = provenance(every_protocol, built_configs(every_protocol))
    assert all(c["version"] == "1.0.0" and len(c["fingerprint"]) == 64 for c in expected["configs"].values())
    assert main(["metaeval", "summeval", "--measure", "random", "--bootstrap", "10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data == {"release": expected["release"], "configs": {"summeval": expected["configs"]["summeval"]}}
    assert main(["agreement", "snac", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"] == {"release": expected["release"], **expected["configs"]["snac"]}
    assert main(["report", "--output", str(tmp_path / "report")]) == 0
    statistics = json.loads((tmp_path / "report" / "statistics.json").read_text())
    assert {config: s["data"] for config, s in statistics.items()} == {
        config: {"release": expected["release"], **expected["configs"][config]} for config in statistics}
    assert set(statistics) >= {"snac", "storysumm", "summeval", "timetravel_dsd"}


def _flipped_and_indexed(workspace):
    """An indexed release whose timetravel_dsd labels were flipped through the writer (new data, stats and build
    state): what a tamperer starts from."""
    from cohbench.release.index import write_index

    rel = _release(workspace)
    write_index(rel)
    kept = json.loads((rel / "stats" / "timetravel_dsd.json").read_text())
    table = read_config(rel, "timetravel_dsd").tables["test"]
    rewrite_split(rel, "timetravel_dsd", "test", table.set_column(table.schema.get_field_index("label"), "label", pa.array([0, 1], pa.int64())))
    return rel, kept


def _rerecord(rel, config: str) -> None:
    """The tamperer's last step: the build state records the edited stats, so every sha256 check passes."""
    from cohbench.release.build_state import record_build

    record_build(rel, config, hashlib.sha256((rel / "stats" / f"{config}.json").read_bytes()).hexdigest())


def test_stats_that_keep_the_declared_fingerprint_over_other_records_are_served_nowhere(workspace, capsys):
    rel, kept = _flipped_and_indexed(workspace)
    _edit_stats(rel, "timetravel_dsd", lambda s: s | {key: kept[key] for key in ("fingerprint", "schema", "field_hashes")})
    _rerecord(rel, "timetravel_dsd")
    with pytest.raises(cohbench.errors.ReleaseError, match="records another fingerprint than that of the records it describes"):
        cohbench.load("timetravel_dsd", split="test")
    predictions = workspace / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "score": [0.1, 0.9]}) + "\n" for i in "ab"))
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(predictions)]) == 1
    assert "records another fingerprint" in capsys.readouterr().err


def test_a_manifest_claiming_the_declared_version_for_another_fingerprint_gives_a_dev_version(workspace):
    from cohbench.release.verify import verify

    rel, _ = _flipped_and_indexed(workspace)
    stats = json.loads((rel / "stats" / "timetravel_dsd.json").read_text())
    manifest = json.loads((rel / "manifest.json").read_text())
    manifest["configs"]["timetravel_dsd"].update(fingerprint=stats["fingerprint"], files=stats["files"])  # still "1.0.0"
    manifest["shipped"]["stats/timetravel_dsd.json"] = hashlib.sha256((rel / "stats" / "timetravel_dsd.json").read_bytes()).hexdigest()
    (rel / "manifest.json").write_text(json.dumps(manifest))
    for leftover in (rel / "building").iterdir():
        leftover.unlink()  # the forged manifest records the flipped stats itself
    assert versions.provenance(rel, built_configs(rel))["configs"]["timetravel_dsd"]["version"] == f"1.0.0+dev.{stats['fingerprint'][:8]}"
    with pytest.raises(cohbench.errors.ReleaseError, match=r"is version 1\.0\.0\+dev"):
        cohbench.load("timetravel_dsd", version="1.0.0")
    problems = [r["problem"] for r in verify(rel, raw=False)["files"] if not r["ok"]]
    assert any("is said to be version 1.0.0, which this cohbench declares for other records" in p for p in problems), problems
