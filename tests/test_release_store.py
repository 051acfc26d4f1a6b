"""Releases you can get back, end to end in a temporary git repository with DVC: a tiny release is built, recorded as
this repository records it (one DVC output per config, `record_outputs`), tagged and pushed to a local store; a fixture changes and a second release is tagged; with the local DVC cache gone, the first
is restored from the store byte-identically and verified, and `cohbench diff` shows exactly the change."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cohbench._version import __version__
from cohbench.cli import main
from cohbench.release.index import write_index
from release_fixture import plain_record, write_config

pytestmark = pytest.mark.slow  # each test runs git and dvc in subprocesses

BIN = Path(sys.executable).parent


def _run(repo: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    tool = str(BIN / "dvc") if args[0] == "dvc" else args[0]
    run = subprocess.run([tool, *args[1:]], cwd=repo, capture_output=True, text=True, env=env)
    assert run.returncode == 0, (args, run.stderr[-2000:])
    return run.stdout


def _files(folder: Path) -> dict[str, str]:
    """The release's files (not git's or DVC's bookkeeping beside them) and their sha256."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".gitignore" and p.suffix != ".dvc"}


def build_stage(config: str) -> dict:
    """A config's stage as this repository's dvc.yaml declares it: one DVC output per config."""
    return {"cmd": f"cohbench build {config} --no-index", "outs": [f"cohbench/data/{config}"],
            "metrics": [{f"cohbench/stats/{config}.json": {"cache": False}}]}


def record_outputs(repo: Path, stages: dict) -> None:
    """Write `stages` as dvc.yaml and record their outputs as they are (`dvc commit`, as `dvc repro` records them)."""
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    _run(repo, "dvc", "commit", "--force", "--quiet")


def _release(repo: Path, labels: list[int], tag: str) -> None:
    """Build, declare the records' version, index, commit and tag: what `make release` and its commit do."""
    release = repo / "cohbench"
    write_config(release, "timetravel_dsd", "timetravel", {"test": [plain_record("a", 1, labels), plain_record("b", 0, [0, 0])]})
    assert main(["version", "--record"]) == 0
    write_index(release)
    record_outputs(repo, {"build_timetravel_dsd": build_stage("timetravel_dsd")})
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "commit", "-qm", tag)
    _run(repo, "git", "tag", tag)


@pytest.fixture
def repo(workspace, monkeypatch):
    if not (BIN / "dvc").is_file() or not shutil.which("git"):
        pytest.skip("needs git and DVC (the pipeline extra)")
    repo = workspace / "project"
    repo.mkdir()
    _run(repo, "git", "init", "-q")
    _run(repo, "dvc", "init", "-q")
    _run(repo, "dvc", "remote", "add", "-d", "store", str(workspace / "store"))
    monkeypatch.setenv("COHBENCH_RELEASE", str(repo / "cohbench"))
    return repo


def test_a_tagged_release_comes_back_byte_identical_from_the_store(repo, workspace, capsys):
    _release(repo, [0, 1], "v1.0.0")
    first = _files(repo / "cohbench")
    assert main(["push", "--repo", str(repo)]) == 0
    _release(repo, [1, 1], "v1.1.0")
    assert main(["push", "--repo", str(repo)]) == 0
    shutil.rmtree(repo / ".dvc" / "cache")  # only the store holds the data now
    capsys.readouterr()

    assert main(["pull", "1.0.0", "--repo", str(repo), "--out", str(workspace / "v1"), "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    assert pulled["release"] == "1.0.0" and Path(pulled["path"]) == (workspace / "v1").resolve()
    restored = _files(workspace / "v1")
    assert restored == first and "data/timetravel_dsd/test.parquet" in restored  # byte for byte
    assert main(["verify", "--release", str(workspace / "v1")]) == 0
    assert "of" in capsys.readouterr().out

    assert main(["diff", str(workspace / "v1"), str(repo / "cohbench"), "--json"]) == 1
    change = json.loads(capsys.readouterr().out)["configs"]["timetravel_dsd"]
    assert (change["changed"], change["changed_fields"], change["label_transitions"]) == (1, {"sentence_labels": 1}, {"sentence_labels 0 -> 1": 1})
    assert main(["diff", "1.0.0", "1.1.0", "--repo", str(repo), "--json"]) == 1  # versions, pulled from the store on the way
    result = json.loads(capsys.readouterr().out)["configs"]["timetravel_dsd"]
    assert result["changed"] == 1 and (result["old"]["version"], result["new"]["version"]) == ("1.0.0", "2.0.0")
    assert main(["diff", "1.0.0", "v1.0.0", "--repo", str(repo)]) == 0  # one release on both sides: pulled once
    assert capsys.readouterr().out.rstrip().endswith("no difference")


def test_a_clone_without_tags_finds_a_release_by_the_version_its_manifest_records(repo, workspace, capsys):
    _release(repo, [0, 1], "v1.0.0")
    _release(repo, [1, 1], "v1.1.0")
    newest = _files(repo / "cohbench")
    assert main(["push", "--repo", str(repo)]) == 0
    _run(repo, "git", "tag", "-d", "v1.0.0", "v1.1.0")  # tags that did not travel with the commits
    shutil.rmtree(repo / ".dvc" / "cache")
    capsys.readouterr()
    assert main(["pull", __version__, "--repo", str(repo), "--out", str(workspace / "restored"), "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    head = _run(repo, "git", "rev-parse", "HEAD").strip()
    assert (pulled["release"], pulled["revision"]) == (__version__, head)  # the newest commit that holds the release
    assert _files(workspace / "restored") == newest


def test_without_tags_a_release_is_the_commit_whose_configs_are_those_its_changelog_entry_names(repo, workspace, capsys):
    """Records rebuilt after a release while the package still says its version (timetravel_dsd 1.0.0 -> 2.0.0,
    both commits recording the same release) are not that release: CHANGELOG.md's entry names the config at 1.0.0,
    so the release is the older commit, and pulling it gives the older records."""
    _release(repo, [0, 1], "v1.0.0")
    released = _files(repo / "cohbench")
    assert main(["push", "--repo", str(repo)]) == 0
    (repo / "CHANGELOG.md").write_text(f"# Changelog\n\n## Unreleased\n\nConfigs: `timetravel_dsd` 2.0.0.\n\n"
                                       f"## {__version__}\n\nConfigs: `timetravel_dsd` 1.0.0.\n\n- The first release.\n")
    _release(repo, [1, 1], "v1.1.0")
    assert main(["push", "--repo", str(repo)]) == 0
    _run(repo, "git", "tag", "-d", "v1.0.0", "v1.1.0")
    first = _run(repo, "git", "rev-list", "--max-parents=0", "HEAD").strip()
    capsys.readouterr()
    assert main(["pull", __version__, "--repo", str(repo), "--out", str(workspace / "restored"), "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    assert (pulled["release"], pulled["revision"]) == (__version__, first)
    assert _files(workspace / "restored") == released != _files(repo / "cohbench")


def test_what_the_store_cannot_give_is_one_line_and_writes_nothing(repo, workspace, capsys):
    _release(repo, [0, 1], "v1.0.0")
    shutil.rmtree(repo / ".dvc" / "cache")  # tagged, but never pushed
    (workspace / "store").mkdir()
    for args, message in [
        (["pull", "9.9.9"], "there is no release v9.9.9"),
        (["pull", "latest"], "is not a release version"),
        (["pull", "1.0.0"], f"the release store {workspace / 'store'} does not hold release 1.0.0"),
        (["pull", "1.0.0", "--out", str(repo / "cohbench" / "inside")], "inside the release folder"),
    ]:
        out = workspace / "restored"
        assert main([*args, "--repo", str(repo), *(() if "--out" in args else ("--out", str(out)))]) == 1, args
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists() and not list(workspace.glob(".restored*"))
    _run(repo, "dvc", "remote", "modify", "store", "url", str(workspace / "a-file" / "store"))
    (workspace / "a-file").write_text("not a folder")
    assert main(["push", "--repo", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "is not writable" in err and err.count("\n") == 1
