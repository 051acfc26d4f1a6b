"""croissant.json: mlcroissant validates it and reads every config's records through it, with the Parquet files'
checksums, the licences, the citations and the known responsible-AI facts (provenance, annotators, human/synthetic)."""

import json

import mlcroissant as mlc
import pyarrow.parquet as pq

from cohbench.release.index import write_index

from release_fixture import plain_record, record, write_config

CORRUPTION = {"generator": "discordant_replace", "seed": 0, "source_id": "s", "positions": [1], "inserted_ids": ["x"],
              "similarities": [0.3], "ranks": [1]}  # fmt: skip


def _release(root):
    summaries = [record(f"s{i}", f"story-{i}", ["One.", "Two."], label=i % 2, system="gpt-4", difficulty="hard" if i % 2 else None)
                 for i in range(5)]  # fmt: skip
    write_config(root, "storysumm", "storysumm", {"validation": summaries[:2], "test": summaries[2:]})
    write_config(root, "timetravel_dsd", "timetravel", {"test": [plain_record("t1", 1, [0, 1], corruption=CORRUPTION), plain_record("t2", 0, [0, 0])]})
    write_index(root)
    return root


def test_mlcroissant_validates_the_metadata_and_reads_every_config_through_it(tmp_path):
    root = _release(tmp_path / "release")
    dataset = mlc.Dataset(jsonld=root / "croissant.json")  # raises on any validation error
    assert not dataset.metadata.ctx.issues.errors
    assert [r.name for r in dataset.metadata.record_sets] == ["storysumm", "timetravel_dsd"]
    for config in ("storysumm", "timetravel_dsd"):
        read = sorted(r[f"{config}/id"].decode() for r in dataset.records(config))
        stored = sorted(i for path in (root / "data" / config).glob("*.parquet") for i in pq.read_table(path)["id"].to_pylist())
        assert read == stored
    labels = {r["storysumm/id"].decode(): (r["storysumm/label"], r["storysumm/difficulty"]) for r in dataset.records("storysumm")}
    assert labels["s1"] == (1, b"hard") and labels["s2"] == (0, None)


def test_files_carry_their_checksums_and_the_dataset_its_licences_citations_and_provenance(tmp_path):
    root = _release(tmp_path / "release")
    metadata = json.loads((root / "croissant.json").read_text())
    manifest = json.loads((root / "manifest.json").read_text())
    recorded = {f["path"]: f["sha256"] for c in manifest["configs"].values() for f in c["files"].values()}
    files = {d["contentUrl"]: d["sha256"] for d in metadata["distribution"] if d["@type"] == "cr:FileObject"}
    assert files == recorded
    assert "https://github.com/melaniesubbiah/storysumm" in metadata["license"]
    assert "@inproceedings{subbiah-etal-2024-storysumm," in metadata["citeAs"] and "@software{cohbench," in metadata["citeAs"]
    kinds = metadata["rai:dataCollectionType"]
    assert "storysumm: human labels (5 records)" in kinds
    assert "timetravel_dsd: synthetic labels, made by a corruption generator (1 of 2 records altered" in kinds
    assert "storysumm: 3 Upwork annotators per summary" in metadata["rai:annotationsPerItem"]
    assert "timetravel_dsd: no human annotators" in metadata["rai:annotationsPerItem"]
