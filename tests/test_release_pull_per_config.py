"""Releases laid out as this repository records them: one DVC output per config (a `build` stage each in dvc.yaml,
its md5 in dvc.lock) plus the baseline's predictions, the upstream files (`raw`) an output outside the release. Each
release comes back from the builder's store, a published folder and over HTTP into a fresh clone without tags,
verified and loadable; a damaged or missing object is named by its path in the release; publishing every release
names the builder's store when that lacks one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import cohbench
import cohbench._version
from cohbench.cli import main
from cohbench.release.index import write_index
from release_fixture import plain_record, write_config
from test_release_publish import _fresh_clone, _one_line, served  # noqa: F401  (served: the fixture)
from test_release_store import _files, _run, build_stage, record_outputs, repo  # noqa: F401  (repo: the fixture, a git + DVC project with a local store)

pytestmark = pytest.mark.slow  # each test publishes releases from a git + DVC repository


def _release(repo: Path, version: str, configs: dict[str, list[int]], monkeypatch, foreach: bool = False) -> dict[str, str]:
    """Build `configs` (name -> one record's sentence labels), their predictions and the upstream files, record each
    as a DVC output of its stage (`dvc commit`, as `dvc repro` records them), index and commit a release whose manifest
    records `version`; no tag (a clone gets none). `foreach`: one `build` stage over the configs (this repository's
    older dvc.yaml), whose entries dvc.lock keeps after the stages are renamed."""
    monkeypatch.setattr(cohbench._version, "__version__", version)
    release = repo / "cohbench"
    for gone in [p.name for p in (release / "data").glob("*") if p.is_dir() and p.name not in configs]:  # dropped configs
        shutil.rmtree(release / "data" / gone)
        (release / "stats" / f"{gone}.json").unlink()
        write_index(release)  # the manifest no longer lists it
    shutil.rmtree(release / "baseline" / "predictions", ignore_errors=True)
    (release / "baseline" / "predictions" / "baseline").mkdir(parents=True)
    (release / "baseline" / "metrics.json").write_text(json.dumps({"release": version}) + "\n")
    for config, labels in configs.items():
        write_config(release, config, "timetravel", {"test": [plain_record("a", 1, labels), plain_record("b", 0, [0, 0])]})
        (release / "baseline" / "predictions" / "baseline" / f"{config}.jsonl").write_text(json.dumps({"id": "a", "release": version}) + "\n")
    (repo / "raw").mkdir(exist_ok=True)
    (repo / "raw" / "upstream.txt").write_text(f"upstream files as of {version}\n")
    assert main(["version", "--record"]) == 0
    write_index(release)
    builds = {"build": {"foreach": list(configs), "do": build_stage("${item}")}} if foreach else {
        f"build_{config}": build_stage(config) for config in configs}
    stages = {"fetch": {"cmd": "cohbench fetch", "outs": ["raw"]}, **builds,
              "train": {"cmd": "cohbench train", "outs": ["cohbench/baseline/predictions", "cohbench/baseline/metrics.json"]}}  # a file output too
    record_outputs(repo, stages)
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "commit", "-qm", f"release {version}")
    return _files(release)


def _object(store: Path, md5: str) -> Path:
    return store / "files" / "md5" / md5[:2] / md5[2:]


def _object_of(repo: Path, store: Path, path: str) -> Path:
    """The object in the DVC store `store` that holds `path` (data/CONFIG/SPLIT.parquet) of the committed release."""
    folder, name = path.rsplit("/", 1)
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    listing = next(out["md5"] for stage in lock["stages"].values() for out in stage["outs"] if out["path"] == f"cohbench/{folder}")
    return _object(store, next(m["md5"] for m in json.loads(_object(store, listing).read_bytes()) if m["relpath"] == name))


def _pulled(args: list[str], expected: dict[str, str], out: Path, capsys) -> str:
    """A pull that gives the release byte for byte, which `verify` passes and whose every config loads; what it said."""
    assert main(["pull", *args, "--out", str(out)]) == 0, capsys.readouterr().err
    assert _files(out) == expected
    said = capsys.readouterr().out
    assert main(["verify", "--release", str(out), "--quiet"]) == 0, capsys.readouterr().out
    for config in {p.split("/")[1] for p in expected if p.startswith("data/")}:
        assert cohbench.load(config, "test", release=out).num_rows == 2
    return said


def test_every_config_of_every_release_comes_back_from_the_store_a_published_folder_and_http(repo, workspace, served, monkeypatch, capsys):
    folder, url = served
    first = _release(repo, "1.0.0", {"timetravel_dsd": [0, 1], "timetravel_msd": [1, 0]}, monkeypatch, foreach=True)
    assert {"data/timetravel_msd/test.parquet", "baseline/predictions/baseline/timetravel_msd.jsonl", "baseline/metrics.json"} <= set(first)
    assert main(["push", "--repo", str(repo)]) == 0  # to the builder's own store, as `make release` does
    second = _release(repo, "1.1.0", {"timetravel_dsd": [1, 1]}, monkeypatch)  # stages renamed, msd dropped
    assert main(["push", "--repo", str(repo)]) == 0
    _pulled(["1.0.0", "--repo", str(repo)], first, workspace / "from-store", capsys)  # the builder's own store

    shutil.rmtree(repo / ".dvc" / "cache")  # publishing takes what the cache lacks from the store
    capsys.readouterr()
    assert main(["publish", str(folder), "--repo", str(repo), "--json"]) == 0  # every release
    published = json.loads(capsys.readouterr().out)
    assert sorted(published["releases"]) == ["1.0.0", "1.1.0"] and published["objects_checked"] >= 10
    raw = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["fetch"]["outs"][0]["md5"]
    assert not _object(folder, raw).exists()  # the upstream files are not the release's: never published

    clone = _fresh_clone(repo, workspace / "clone")
    shutil.rmtree(repo)  # every local copy gone but the published folder
    shutil.rmtree(workspace / "store")
    said = json.loads(_pulled(["1.0.0", "--repo", str(clone), "--remote", url, "--json"], first, workspace / "over-http", capsys))
    pulled = {p: (workspace / "over-http" / p).stat().st_size for p in first}
    # the bytes of every DVC-tracked file (the configs' data, the baseline's predictions) and their listings, no more
    tracked = sum(size for p, size in pulled.items() if p.startswith(("data/", "baseline/predictions/")))
    assert tracked < said["bytes_received"] < tracked + 4096 * 8, (said, tracked)
    _pulled(["1.1.0", "--repo", str(clone), "--remote", str(folder)], second, workspace / "from-folder", capsys)


def test_a_damaged_or_missing_object_is_named_by_its_path_in_the_release(repo, workspace, served, monkeypatch, capsys):
    folder, url = served
    _release(repo, "1.0.0", {"timetravel_dsd": [0, 1], "timetravel_msd": [1, 0]}, monkeypatch)
    assert main(["publish", str(folder), "1.0.0", "--repo", str(repo)]) == 0
    clone = _fresh_clone(repo, workspace / "clone")
    out = workspace / "out"
    pull = ["pull", "1.0.0", "--repo", str(clone), "--out", str(out)]
    damaged = _object_of(repo, folder, "data/timetravel_msd/test.parquet")

    damaged.write_bytes(damaged.read_bytes()[:-1] + b"!")  # same size, one byte changed: only the manifest tells
    err = _one_line([*pull, "--remote", url], capsys)
    assert "gave a damaged copy of v1.0.0" in err and "data/timetravel_msd/test.parquet" in err and "publish 1.0.0 there again" in err, err
    assert "cohbench build" not in err

    damaged.unlink()
    for remote in (url, str(folder)):
        err = _one_line([*pull, "--remote", remote], capsys)
        assert f"does not hold release 1.0.0 (data/timetravel_msd/test.parquet is missing)" in err, err
    assert not out.exists() and not list(workspace.glob(".out.*"))


def test_publishing_every_release_names_the_builders_store_when_it_lacks_one(repo, workspace, monkeypatch, capsys):
    _release(repo, "1.0.0", {"timetravel_dsd": [0, 1]}, monkeypatch)
    shutil.rmtree(repo / ".dvc" / "cache")  # committed, never pushed: its data is nowhere now
    _release(repo, "1.1.0", {"timetravel_dsd": [1, 1]}, monkeypatch)
    assert main(["push", "--repo", str(repo)]) == 0
    target = workspace / "published"

    err = _one_line(["publish", str(target), "--repo", str(repo)], capsys)
    assert f"the release store {workspace / 'store'} does not hold release 1.0.0 (baseline/metrics.json is missing" in err, err
    assert str(target) not in err and not [p for p in target.rglob("*") if p.is_file()]  # nothing sent
    assert main(["publish", str(target), "1.1.0", "--repo", str(repo), "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)["releases"]) == ["1.1.0"]
