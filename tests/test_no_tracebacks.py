"""Every subcommand over a corpus of careless and hostile inputs: each ends with one line that says what is wrong
(exit 1), or argparse's usage message (exit 2); no traceback reaches the terminal and the release never changes.
A bug that slips through anyway is one line naming the file that holds its traceback."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cohbench import cli


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


VERDICTS = ("verify", "validate", "gate")  # exit 1 with their report on stdout when the release fails a check


def run(argv, capsys) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exit:  # argparse: usage errors
        code = exit.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err, captured.err
    if code == 1 and argv[0] in VERDICTS and "cohbench: error" not in captured.err:
        assert "FAILED" in captured.out or "fail" in captured.out.lower(), captured.out
        return code, "cohbench: error: (the verdict on stdout)"
    return code, captured.err


def assert_one_clear_line(code: int, err: str, argv) -> None:
    if code == 2:
        assert "usage: cohbench" in err, (argv, err)
        return
    lines = err.strip().splitlines()
    assert code == 1, (argv, code, err)
    assert len(lines) >= 1 and lines[-1].startswith("cohbench: error: "), (argv, err)
    assert len([line for line in lines if line.startswith("cohbench: error")]) == 1, (argv, err)
    assert "failed unexpectedly" not in err, (argv, err)  # a user error has its own message, not the bug guard's


def predictions(tmp: Path, name: str, content: bytes) -> str:
    path = tmp / name
    path.write_bytes(content)
    return str(path)


def bad_invocations(tmp: Path) -> list[list[str]]:
    p = lambda name, content: predictions(tmp, name, content)  # noqa: E731
    return [
        ["list", "--bogus"],
        ["fetch", "no-such-corpus"],
        ["build", "no-such-config"],
        ["build"],
        ["validate", "no-such-config"],
        ["evaluate", "storysumm", "--predictions", str(tmp / "missing.jsonl")],
        ["evaluate", "storysumm", "--predictions", p("high.jsonl", b'{"id": "s1", "score": "high"}\n')],
        ["evaluate", "timetravel_dsd", "--predictions", p("null.jsonl", b'{"id": "d1", "score": [0.1, null, 0.3]}\n')],
        ["evaluate", "timetravel_dsd", "--predictions", p("nested.jsonl", b'{"id": "d1", "score": [0.1, [0.2], 0.3]}\n')],
        ["evaluate", "storysumm", "--predictions", p("listid.jsonl", b'{"id": ["s1"], "label": 1}\n')],
        ["evaluate", "storysumm", "--predictions", p("dict.jsonl", b'{"id": "s1", "score": {"p": 1}}\n')],
        ["evaluate", "storysumm", "--predictions", p("latin1.jsonl", b'{"id": "s1", "label": 1, "x": "\xe9"}\n')],
        ["evaluate", "snac", "--predictions", p("types.jsonl", b'{"id": "n1", "label": [0, 0, 1], "types": "CharE"}\n')],
        ["evaluate", "snac", "--predictions", p("spans.jsonl", b'{"id": "n1", "label": [0, 0, 1], "spans": [{"sentence": "2"}]}\n')],
        ["evaluate", "storysumm", "--predictions", p("empty.jsonl", b"")],
        ["evaluate", "storysumm", "--predictions", p("binary.jsonl", bytes(range(256)))],
        ["evaluate", "storysumm", "--predictions", str(tmp)],
        ["evaluate", "storysumm", "--predictions", p("t.jsonl", b'{"id": "s1", "score": 1}\n'), "--threshold", "nan"],
        ["evaluate", "storysumm", "--predictions", p("t2.jsonl", b'{"id": "s1", "score": 1}\n'), "--threshold", "high"],
        ["evaluate", "no-such-config", "--predictions", p("u.jsonl", b'{"id": "s1", "label": 1}\n')],
        ["evaluate", "storysumm", "--predictions", p("s.jsonl", b'{"id": "s1", "label": 1}\n'), "--split", "nope"],
        ["metaeval", "summeval"],
        ["metaeval", "summeval", "--scores", p("s.csv", b"doc_id,system,score\nd0,M1,high\n")],
        ["metaeval", "summeval", "--scores", p("s2.csv", b"a,b\n1,2\n")],
        ["metaeval", "summeval", "--scores", p("s3.csv", b'\x00\x01"\n')],
        ["metaeval", "summeval", "--measure", "nope"],
        ["metaeval", "summeval", "--measure", "random", "--bootstrap", "-1"],
        ["metaeval", "summeval", "--measure", "random", "--bootstrap", "3", "--plot", "/proc/x.png"],
        ["metaeval", "summeval", "--measure", "random", "--bootstrap", "3", "--bias-table", str(tmp / "no" / "such" / "\0x.csv")],
        ["sql", ""],
        ["sql", "SELEC 1"],
        ["sql", "SELECT * FROM read_csv('/etc/passwd')"],
        ["sql", "SELECT 1 AS x", "--output", "/proc/x.csv"],
        ["sql", "SELECT 1 AS x", "--output", str(tmp / "x.xlsx")],
        ["sql", "SELECT 1", "--max-rows", "many"],
        ["sql", "SELECT 1", "--max-rows", "-1"],
        ["sql", "SELECT 1", "--memory-limit=-1"],
        ["sql", "SELECT 1", "--memory-limit", "80%"],
        ["sql", "SELECT list(DISTINCT system) FROM records", "--format", "csv"],
        ["sql", "SELECT list(DISTINCT system) FROM records", "--output", str(tmp / "lists.csv")],
        ["sql", "SELECT 1; SELECT 2"],
        ["sql", "SELECT references FROM records"],
        ["agreement", "no-such-config"],
        ["report", "--output", "/proc/cohbench-report"],
        ["export", "/proc/x"],
        ["cite", "no-such-config"],
        ["gate"],
        ["corrupt", str(tmp / "missing.jsonl"), "--recipe", "shuffle", "--out", str(tmp / "out")],
        ["corrupt", p("bad.jsonl", b"{not json\n"), "--recipe", "shuffle", "--out", str(tmp / "out2")],
        ["schema", "extra"],
        *hostile_invocations(tmp, p),
    ]


DEEP = b"[" * 100_000 + b"]" * 100_000  # nested past any recursion limit
HUGE = b"1" * 401  # an integer past any float


def hostile_invocations(tmp: Path, p) -> list[list[str]]:
    """Oversized integers, deep nesting, paths that are not regular files, hostile ids, writes into a release."""
    import os

    os.mkfifo(tmp / "fifo.jsonl")
    release = os.environ["COHBENCH_RELEASE"]
    stories = p("stories.jsonl", b'{"id": "a", "text": "Ann left. She came back. It rained."}\n')
    damaged = tmp / "damaged-run"
    (damaged / ".partial").mkdir(parents=True)
    (damaged / ".partial" / "run.json").write_bytes(b'{"recipe": ')
    corrupt = ["corrupt", stories, "--recipe", "shuffle", "--keep-test-overlap", "--out"]
    return [
        ["evaluate", "storysumm", "--predictions", p("huge.jsonl", b'{"id": "s1", "score": ' + HUGE + b"}\n")],
        ["evaluate", "storysumm", "--predictions", p("deep.jsonl", b'{"id": "s1", "score": ' + DEEP + b"}\n")],
        ["evaluate", "storysumm", "--predictions", p("ansi.jsonl", b'{"id": "s1\\n\\u001b[2J", "label": 1}\n')],
        ["evaluate", "storysumm", "--predictions", str(tmp / "fifo.jsonl")],
        ["evaluate", "storysumm", "--predictions", "/dev/null"],
        ["metaeval", "summeval", "--scores", p("huge.csv", b"id,score\nd0/M1," + HUGE + b"\n")],
        ["metaeval", "summeval", "--scores", p("huge-scores.jsonl", b'{"id": "d0/M1", "score": ' + HUGE + b"}\n")],
        ["metaeval", "summeval", "--scores", p("deep-scores.jsonl", b'{"id": "d0/M1", "score": ' + DEEP + b"}\n")],
        ["metaeval", "summeval", "--scores", str(tmp)],
        ["metaeval", "summeval", "--scores", str(tmp / "fifo.jsonl")],
        ["corrupt", p("deep-story.jsonl", b'{"id": "a", "text": ' + DEEP + b"}\n"), "--recipe", "shuffle", "--out", str(tmp / "o1")],
        ["corrupt", p("deep-array.json", DEEP), "--recipe", "shuffle", "--out", str(tmp / "o2")],
        ["corrupt", p("book.jsonl", b'{"id": "book", "text": "' + b"Ann ran. " * 111_112 + b'"}\n'), "--recipe", "shuffle", "--out", str(tmp / "o3")],
        ["corrupt", str(tmp / "fifo.jsonl"), "--recipe", "shuffle", "--out", str(tmp / "o4")],
        [*corrupt, str(tmp / "o5"), "--config", "../../elsewhere/stats/evil"],
        [*corrupt, str(tmp / "o6"), "--config", "records"],
        [*corrupt, str(tmp / "o7"), "--splits", "train=nan,validation=0.5,test=0.5"],
        [*corrupt, str(tmp / "o8"), "--splits", "train=nan,test=0"],
        [*corrupt, str(Path(release) / "mine")],
        [*corrupt, str(damaged), "--resume"],
    ]


@pytest.mark.slow
def test_careless_and_hostile_inputs_are_one_line_each(every_protocol, tmp_path, capsys):
    before = fingerprint(every_protocol)
    for argv in bad_invocations(tmp_path):
        code, err = run(argv, capsys)
        assert_one_clear_line(code, err, argv)
    assert fingerprint(every_protocol) == before


def damage(release: Path, tmp: Path) -> dict[str, callable]:
    data = release / "data" / "storysumm" / "test.parquet"
    return {
        "a truncated Parquet file": lambda: data.write_bytes(data.read_bytes()[: data.stat().st_size // 2]),
        "a missing Parquet file": lambda: data.unlink(),
        "a garbage stats file": lambda: (release / "stats" / "storysumm.json").write_text("{garbage"),
        "a stats file of the wrong shape": lambda: (release / "stats" / "storysumm.json").write_text(json.dumps({"files": [1, 2]})),
        "a stats file pointing outside the release": lambda: (release / "stats" / "storysumm.json").write_text(
            json.dumps({"files": {"test": {"path": "/etc/passwd", "sha256": "0", "rows": 1}}})),
        "a corrupt manifest": lambda: (release / "manifest.json").write_text("not json"),
        "a manifest of the wrong shape": lambda: (release / "manifest.json").write_text(json.dumps({"configs": []})),
    }  # fmt: skip


DAMAGE = list(damage(Path("."), Path(".")))
COMMANDS_ON_THE_RELEASE = [["list"], ["verify"], ["sql", "SELECT count(*) FROM storysumm"], ["validate", "storysumm", "--no-docs"],
                           ["agreement", "storysumm"], ["report", "--output", "REPORT"], ["export", "EXPORT"],
                           ["evaluate", "storysumm", "--predictions", "PREDICTIONS"]]  # fmt: skip


READS_NO_DATA_FILE = ("list",)  # the commands that read the manifest and stats only: a damaged Parquet file is not theirs


@pytest.mark.parametrize("what", DAMAGE)
def test_a_damaged_release_is_one_line_for_every_command(every_protocol, tmp_path, capsys, what):
    damage(every_protocol, tmp_path)[what]()
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": f"s{i}", "label": 1}) + "\n" for i in range(1, 10)))
    for command in COMMANDS_ON_THE_RELEASE:
        argv = [{"REPORT": str(tmp_path / "r"), "EXPORT": str(tmp_path / "e"), "PREDICTIONS": str(preds)}.get(a, a) for a in command]
        shutil.rmtree(tmp_path / "r", ignore_errors=True)
        code, err = run(argv, capsys)
        if "Parquet" in what and command[0] in READS_NO_DATA_FILE:
            assert code == 0, (argv, err)  # it never opens the damaged file
            continue
        assert_one_clear_line(code, err, argv)  # every other command refuses the damaged release: never served with exit 0


def test_a_release_that_cannot_be_written_is_one_line(every_protocol, monkeypatch, capsys):
    monkeypatch.setenv("COHBENCH_RELEASE", "/proc/cohbench-release")
    for argv in (["index"], ["validate"], ["build", "storysumm"]):
        code, err = run(argv, capsys)
        assert_one_clear_line(code, err, argv)


def test_a_bug_is_one_line_naming_the_file_with_its_traceback(every_protocol, tmp_path, monkeypatch, capsys):
    def broken(*args):
        return {}["no such key"]

    monkeypatch.setenv("COHBENCH_LOGS", str(tmp_path / "logs"))
    monkeypatch.setattr("cohbench.release.load.list_configs", broken)  # what `cohbench list` runs
    code, err = run(["list"], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "`cohbench list` failed unexpectedly (KeyError: 'no such key')" in lines[0]
    log = Path(lines[0].split("the full traceback is in ")[1].split(";")[0])
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text() and "no such key" in log.read_text()
