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
