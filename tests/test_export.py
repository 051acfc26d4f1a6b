"""`cohbench export`: a shareable copy of the release that leaves research-only configs out unless asked, whose
card and manifest list only what it holds, and that never overwrites a folder or copies a damaged or changed file:
only an indexed release is exported, each file checked against its record."""

import json

import pytest
from datasets import load_dataset
from release_fixture import plain_record, write_config

from cohbench.cli import main
from cohbench.export import export
from cohbench.release.index import write_index


@pytest.fixture
def release(workspace):
    root = workspace / "release"
    write_config(root, "open_dsd", "toy", {"test": [plain_record("a", 1, [0, 1]), plain_record("b", 0, [0, 0])]})
    write_config(root, "cloze_dsd", "toy", {"test": [plain_record("c", 1, [1, 0])]}, research_only=True)
    (root / "baseline" / "predictions").mkdir(parents=True)
    (root / "baseline" / "metrics.md").write_text("## Baseline (machine-written)\n")
    (root / "baseline" / "predictions" / "open_dsd.jsonl").write_text("{}\n")
    write_index(root)
    return root


def test_research_only_configs_stay_out_of_the_copy_and_its_card(release, workspace, capsys):
    target = workspace / "share"
    assert main(["export", str(target)]) == 0
    out = capsys.readouterr().out
    assert "left out (research only): cloze_dsd" in out and "--include-research-only" in out
    assert sorted(p.name for p in (target / "data").iterdir()) == ["open_dsd"]
    assert list(json.loads((target / "manifest.json").read_text())["configs"]) == ["open_dsd"]
    card = (target / "README.md").read_text()
    assert "cloze_dsd" not in card and "## Baseline (machine-written)" in card
    assert not (target / "baseline" / "predictions").exists()
    assert load_dataset(str(target), "open_dsd", split="test")["id"] == ["a", "b"]


def test_research_only_configs_go_in_when_asked(release, workspace):
    result = export(workspace / "share", include_research_only=True, release=release)
    assert result["configs"] == ["cloze_dsd", "open_dsd"] and result["left_out_research_only"] == []
    assert load_dataset(str(workspace / "share"), "cloze_dsd", split="test")["id"] == ["c"]


def test_a_non_empty_target_is_refused_and_left_as_it_was(release, workspace, capsys):
    target = workspace / "share"
    target.mkdir()
    (target / "mine.txt").write_text("keep")
    assert main(["export", str(target)]) == 1
    assert "exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in target.iterdir()] == ["mine.txt"]


def test_a_damaged_release_file_stops_the_export_without_output(release, workspace, capsys):
    (release / "data" / "open_dsd" / "test.parquet").write_bytes(b"truncated")
    assert main(["export", str(workspace / "share")]) == 1
    err = capsys.readouterr().err.strip()
    assert "differs from the sha256 recorded in stats/open_dsd.json" in err and "\n" not in err
    assert not (workspace / "share").exists()


def test_a_changed_baseline_score_or_stats_is_refused_never_laundered_into_the_copy(release, workspace, capsys):
    (release / "baseline" / "metrics.md").write_text("## Baseline (machine-written)\n| forged | 99.9 |\n")
    assert main(["export", str(workspace / "share")]) == 1
    err = capsys.readouterr().err.strip()
    assert "baseline/metrics.md differs from the sha256 recorded in manifest.json" in err and "\n" not in err
    assert not (workspace / "share").exists()


def test_a_release_never_indexed_or_built_since_its_index_is_not_exported(release, workspace, capsys):
    # a registered config built since the index (only those leave a build state)
    write_config(release, "timetravel_dsd", "timetravel", {"test": [plain_record("a", 0, [0, 0])]})
    assert main(["export", str(workspace / "share")]) == 1
    assert "is being built (building/: timetravel_dsd); run `cohbench index` first" in capsys.readouterr().err
    (release / "manifest.json").unlink()
    for name in ("README.md", "croissant.json"):
        (release / name).unlink()
    assert main(["export", str(workspace / "share")]) == 1
    assert "has no manifest.json (it was never indexed)" in capsys.readouterr().err
    assert not (workspace / "share").exists()


def test_a_terminated_export_leaves_no_temporary_folder_and_says_interrupted(release, workspace, monkeypatch, capsys):
    import os
    import signal

    from cohbench import export as export_module

    real = export_module.write_index

    def terminated_while_writing(folder):  # SIGTERM arrives while the copy is half written
        os.kill(os.getpid(), signal.SIGTERM)
        return real(folder)

    monkeypatch.setattr(export_module, "write_index", terminated_while_writing)
    assert main(["export", str(workspace / "share")]) == 130
    assert capsys.readouterr().err.strip() == "cohbench: interrupted"
    assert sorted(p.name for p in workspace.iterdir() if "share" in p.name) == []  # neither the copy nor a .tmp folder
