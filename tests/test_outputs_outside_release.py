"""Every command that writes a file a user names refuses a path inside the release, with one line, before it
writes anything; the report never replaces a folder of someone else's files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cohbench.cli import main


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def scores_csv(path: Path) -> Path:
    path.write_text("doc_id,system,score\n" + "".join(f"d{d},{s},{(d * 3 + i) % 4}\n" for d in range(3) for i, s in enumerate(["M1", "M2", "M3"])))
    return path


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cohbench: error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


COMMANDS = {
    "metaeval --plot": lambda rel, tmp: ["metaeval", "summeval", "--scores", str(scores_csv(tmp / "s.csv")), "--bootstrap", "10", "--plot", str(rel / "data/snac/test.parquet")],
    "metaeval --bias-table": lambda rel, tmp: ["metaeval", "summeval", "--scores", str(scores_csv(tmp / "s.csv")), "--bootstrap", "10",
                                               "--plot", str(tmp / "ok.png"), "--bias-table", str(rel / "stats/snac.json")],
    "sql --output": lambda rel, tmp: ["sql", "SELECT 1 AS x", "--output", str(rel / "manifest.json")],
    "report --output": lambda rel, tmp: ["report", "--output", str(rel / "data")],
    "export": lambda rel, tmp: ["export", str(rel / "copy")],
    "held-out --output": lambda rel, tmp: ["held-out", "--output", str(rel / "stats/x.json")],
    "calibrate --output": lambda rel, tmp: ["calibrate", "--pairs", "2", "--output", str(rel / "calibration.json")],
}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_a_path_inside_the_release_is_refused_before_anything_is_written(every_protocol, tmp_path, capsys, command):
    before = fingerprint(every_protocol)
    assert main(COMMANDS[command](every_protocol, tmp_path)) == 1
    assert "release" in one_error_line(capsys)
    assert fingerprint(every_protocol) == before
    assert not (tmp_path / "ok.png").exists()  # the plot is not written when the table is refused


def test_metaeval_writes_the_plot_and_table_outside_the_release(every_protocol, tmp_path, capsys):
    args = ["metaeval", "summeval", "--scores", str(scores_csv(tmp_path / "s.csv")), "--bootstrap", "10"]
    assert main(args + ["--plot", str(tmp_path / "bias.png"), "--bias-table", str(tmp_path / "bias.csv")]) == 0
    assert (tmp_path / "bias.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "bias.csv").read_text().startswith("row_system")


@pytest.mark.slow
def test_report_refuses_a_folder_of_other_files_and_leaves_it(every_protocol, tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    assert main(["report", "--output", str(home)]) == 1
    assert "no earlier report" in one_error_line(capsys)
    assert (home / "thesis.tex").read_text() == "years of work"
    assert main(["report", "--output", str(tmp_path / "stats")]) == 0
    assert main(["report", "--output", str(tmp_path / "stats")]) == 0  # an earlier report is replaced
    assert (tmp_path / "stats" / "statistics.json").is_file()
    for own in ("thesis.tex", "thesis_figure.png"):  # beside an earlier report: not the report's to drop
        (tmp_path / "stats" / own).write_text("years of work")
        assert main(["report", "--output", str(tmp_path / "stats")]) == 1
        assert f"holds files a report does not write ({own})" in one_error_line(capsys)
        assert (tmp_path / "stats" / own).read_text() == "years of work"
        (tmp_path / "stats" / own).unlink()
    assert any((tmp_path / "stats").glob("*.png"))
    assert main(["report", "--output", str(tmp_path / "stats")]) == 0  # its own plots, which report.md shows, are its own
    (tmp_path / "stats" / "report.md").write_bytes(b"caf\xe9")  # not UTF-8: no plot can be told to be the report's
    assert main(["report", "--output", str(tmp_path / "stats")]) == 1
    assert "holds files a report does not write" in one_error_line(capsys)


def _device_copy(folder: Path, name: str) -> Path:
    """A `mknod` copy of /dev/null: what a careless `--output /dev/null` would otherwise replace with a file."""
    import os
    import stat

    path = folder / name
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        if os.environ.get("CI"):  # CI runs as root: there a skip would hide that the device case was never checked
            pytest.fail("mknod needs root, and CI must run the device cases")
        pytest.skip("mknod needs root")
    return path


@pytest.mark.parametrize("target", ["device", "fifo", "folder"])
def test_an_output_that_is_not_a_regular_file_is_never_replaced(every_protocol, tmp_path, capsys, target):
    import os
    import stat

    if target == "device":
        path = _device_copy(tmp_path, "null")
    elif target == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    else:
        path = tmp_path / "folder"
        path.mkdir()
    kind = stat.S_IFMT(os.lstat(path).st_mode)
    assert main(["sql", "SELECT 1 AS a", "--output", str(path), "--format", "csv"]) == 1
    assert "not a regular file" in one_error_line(capsys)
    assert stat.S_IFMT(os.lstat(path).st_mode) == kind
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_link_to_a_device_is_refused_like_the_device(every_protocol, tmp_path, capsys):
    import os

    device = _device_copy(tmp_path, "null")
    (tmp_path / "link.csv").symlink_to(device)
    assert main(["sql", "SELECT 1 AS a", "--output", str(tmp_path / "link.csv"), "--format", "csv"]) == 1
    assert "not a regular file" in one_error_line(capsys)
    assert os.path.islink(tmp_path / "link.csv") and os.path.realpath(tmp_path / "link.csv") == str(device)


def test_a_folder_of_another_release_is_refused_like_the_release_in_use(every_protocol, tmp_path, capsys):
    import shutil

    other = tmp_path / "received"
    shutil.copytree(every_protocol, other)  # a release received from elsewhere, not the one in use
    before = fingerprint(other)
    for argv in (["sql", "SELECT 1 AS a", "--output", str(other / "out.csv"), "--format", "csv"], ["export", str(other / "copy")]):
        assert main(argv) == 1
        assert f"inside the release folder {other.resolve()}" in one_error_line(capsys)
    assert fingerprint(other) == before


def test_metaeval_and_leaderboard_refuse_an_output_they_could_not_write_before_they_read_a_score(every_protocol, tmp_path, capsys):
    # each run names a scores file or scorer that does not exist: the output is refused first, not after the scoring
    work = tmp_path / "work"
    (work / "folder.png").mkdir(parents=True)
    missing = str(work / "no_such_scores.csv")
    for argv, message in [
        (["metaeval", "summeval", "--scores", missing, "--plot", str(work / "folder.png")], "is not a regular file"),
        (["metaeval", "summeval", "--scores", missing, "--bias-table", str(work / "folder.png")], "is not a regular file"),
        (["metaeval", "summeval", "--scores", missing, "--plot", str(work / "bias"), "--bias-table", str(work / "bias")],
         "name the same file"),  # the table would have overwritten the plot
        (["leaderboard", "--scorer", str(work / "no_such_scorer"), "--markdown", str(work / "folder.png")],
         "is not a regular file"),
        # a name ending in a separator is a folder: Path would drop the "/" and write a file named like it
        (["metaeval", "summeval", "--scores", missing, "--bias-table", f"{work}/table.csv/"], "names a folder"),
        (["metaeval", "summeval", "--scores", missing, "--plot", f"{work}/bias.png/"], "names a folder"),
        (["leaderboard", "--scorer", str(work / "no_such_scorer"), "--markdown", f"{work}/board.md/"], "names a folder"),
        (["leaderboard", "--scorer", str(work / "no_such_scorer"), "--plot", f"{work}/board.png/"], "names a folder"),
    ]:
        assert main(argv) == 1, argv
        assert message in one_error_line(capsys), argv
    assert sorted(p.name for p in work.iterdir()) == ["folder.png"]
