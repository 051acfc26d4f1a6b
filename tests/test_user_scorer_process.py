"""A user's `module:function` scorer (`evaluate --scorer`, `leaderboard --scorer`) runs in its own process on what the
protocol declares a scorer sees (`Protocol.scorer_view`): never an id, a label, a span or a corruption's provenance,
so returning the answers cannot work; nothing it does changes another scorer's figures; and whatever it does (exit,
print, crash, return garbage) is one line naming it, with `--json` output still JSON."""

import json
import os
import textwrap

import pytest

from cohbench.cli import main

from release_fixture import record, write_config

# The answer is in the id, as in Story Cloze's `:wrong_ending`; texts differ, so a label found by text is exact.
DSD = {
    "validation": [record(f"v{i}:error_at_{i % 3}", f"dv{i}", [f"Val {i} sentence {k}." for k in range(3)],
                          sentence_labels=[int(k == i % 3) for k in range(3)], label=1) for i in range(4)],
    "test": [record(f"t{i}:error_at_{i % 3}", f"dt{i}", [f"Test {i} sentence {k}." for k in range(3)],
                    sentence_labels=[int(k == i % 3) for k in range(3)], label=1) for i in range(6)],
}  # fmt: skip


def _summary(i: int, label: int) -> dict:
    words = " ".join(["word"] * (i + 1))
    return record(f"s{i}", f"story-{i}", [f"Summary {i} says {words}.", "It ends."], label=label, sentence_labels=[0, label],
                  source_text=f"Story {i}: {words}. It ends.")


SUMMARIES = {"validation": [_summary(i, i % 2) for i in range(4)], "test": [_summary(i, i % 2) for i in range(4, 10)]}

# Looks for the labels everywhere it can: in its records, then in every object of its process (what a scorer run in
# the process holding the release would find), and returns them; records what it was given.
LABEL_HUNTER = '''
import gc, json, os

def score(records):
    with open(os.environ["SEEN"], "a") as seen:
        seen.write(json.dumps(sorted(records[0])) + "\\n")
    found = {}
    for obj in gc.get_objects():
        if type(obj) is dict and isinstance(obj.get("sentences"), list) and obj.get("sentence_labels"):
            found[tuple(obj["sentences"])] = obj["sentence_labels"]
    return [r.get("sentence_labels") or found.get(tuple(r["sentences"])) or [0] * len(r["sentences"]) for r in records]
'''


@pytest.fixture
def release(workspace, monkeypatch):
    from cohbench.release.index import write_index

    root = workspace / "release"
    write_config(root, "timetravel_dsd", "timetravel", DSD)
    write_config(root, "storysumm", "storysumm", SUMMARIES)
    write_index(root)
    work = workspace / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("SEEN", str(work / "seen.jsonl"))
    return work


def _module(work, name: str, body: str) -> str:
    (work / f"{name}.py").write_text(textwrap.dedent(body))
    return f"{name}:score"


def _run(capsys, *argv):
    capsys.readouterr()
    code = main([*argv, "--bootstrap", "20"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_a_scorer_that_returns_the_labels_cannot_because_it_never_gets_them(release, capsys, monkeypatch):
    spec = _module(release, "hunter", LABEL_HUNTER)
    code, out, _ = _run(capsys, "evaluate", "timetravel_dsd", "--scorer", spec, "--json")
    assert code == 0
    auc = json.loads(out)["splits"]["test"]["headline"]["value"]
    seen = {line for line in (release / "seen.jsonl").read_text().splitlines()}
    assert seen == {json.dumps(["config", "sentences"])}  # the protocol's declaration, nothing more
    assert auc == 0.5  # it found no label anywhere: every unit tied
    # the same function handed whole records, as scorers were before, returns the answers: the test can fail
    from cohbench.release.layout import read_config
    from cohbench.settings import release_dir

    monkeypatch.syspath_prepend(str(release))
    import hunter

    records = [r for split in ("validation", "test") for r in read_config(release_dir(), "timetravel_dsd").splits[split]]
    path = release / "handed.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "score": s}) + "\n" for r, s in zip(records, hunter.score(records))))
    code, out, _ = _run(capsys, "evaluate", "timetravel_dsd", "--predictions", str(path), "--json")
    assert json.loads(out)["splits"]["test"]["headline"]["value"] == 1.0


def test_a_scorer_that_loads_the_release_itself_is_refused_it_in_one_line(release, capsys):
    """`cohbench.load` inside a scorer finds no release: its process is named none (no COHBENCH_RELEASE) and the
    package looks nowhere there. A scorer that opens the release's files by path is not stopped (README)."""
    spec = _module(release, "loader", '''
        import os

        import cohbench

        def score(records):
            assert "COHBENCH_RELEASE" not in os.environ
            data = cohbench.load("timetravel_dsd")
            labels = {tuple(r["sentences"]): r["sentence_labels"] for split in data.values() for r in split}
            return [labels[tuple(r["sentences"])] for r in records]
    ''')
    code, out, err = _run(capsys, "evaluate", "timetravel_dsd", "--scorer", spec, "--json")
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()
    assert "a scorer's process is given no release: score the records the scorer is sent" in line, line


def test_a_summary_scorer_also_sees_the_source_its_protocol_declares(release, capsys):
    spec = _module(release, "lengths", '''
        import json, os

        def score(records):
            with open(os.environ["SEEN"], "a") as seen:
                seen.write(json.dumps(sorted(records[0])) + "\\n")
            return [float(len(r["source_text"])) for r in records]
    ''')
    code, out, _ = _run(capsys, "evaluate", "storysumm", "--scorer", spec, "--json")
    assert code == 0 and json.loads(out)["splits"]["test"]["headline"] is not None
    assert (release / "seen.jsonl").read_text().splitlines() == [json.dumps(["config", "sentences", "source_text"])]


def test_a_scorer_that_changes_what_it_is_given_changes_no_other_scorers_figures(release, capsys):
    mutator = _module(release, "mutator", '''
        import gc

        def score(records):
            for obj in [*records, *gc.get_objects()]:
                if type(obj) is dict and "label" in obj:
                    obj["label"] = 1
                if type(obj) is dict and "sentences" in obj:
                    obj["sentences"] = ["changed."]
            return [0.5 for _ in records]
    ''')
    honest = _module(release, "honest", '''
        def score(records):
            return [float(len(" ".join(r["sentences"]))) for r in records]
    ''')
    board = ["leaderboard", "--config", "storysumm", "--json", "--output", str(release / "out")]
    code, out, _ = _run(capsys, *board, "--scorer", mutator, "--scorer", honest)
    assert code == 0
    after = json.loads(out)["configs"]["storysumm"]
    code, out, _ = _run(capsys, *board, "--scorer", honest)
    alone = json.loads(out)["configs"]["storysumm"]
    assert after["scores"][honest] == alone["scores"][honest] and after["references"] == alone["references"]
    assert alone["scores"][honest]["value"] is not None


def test_a_scorer_that_exits_while_scoring_is_one_line_and_the_boards_json_stays_json(release, capsys):
    spec = _module(release, "quits", "import sys\ndef score(records):\n    sys.exit(0)\n")
    code, out, err = _run(capsys, "evaluate", "timetravel_dsd", "--scorer", spec, "--json")
    assert code == 1 and out == "" and err.strip() == f"cohbench: error: {spec} on timetravel_dsd: called sys.exit(0)"
    code, out, err = _run(capsys, "leaderboard", "--config", "storysumm", "--scorer", spec, "--json", "--output", str(release / "out"))
    assert code == 0 and [s["line"] for s in json.loads(out)["skipped"]] == [f"{spec} on storysumm: called sys.exit(0)"]


@pytest.mark.parametrize("command", ["evaluate", "leaderboard"])
@pytest.mark.parametrize(("body", "said"), [
    ("import sys\nsys.exit(3)\ndef score(records):\n    return []\n", "called sys.exit(3) on import"),
    ("import not_a_module_anywhere\n", "cannot import it: ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
    ("import os\nos._exit(4)\n", "its process ended on import (exit status 4)"),
    ("score = 3\n", "score in bad_import is not a function"),
])  # fmt: skip
def test_a_scorer_that_cannot_be_imported_is_refused_in_one_line_naming_it(release, capsys, command, body, said):
    spec = _module(release, "bad_import", body)
    argv = ["evaluate", "timetravel_dsd"] if command == "evaluate" else ["leaderboard", "--output", str(release / "out")]
    code, out, err = _run(capsys, *argv, "--scorer", spec, "--json")
    assert (code, out) == (1, "") and err.strip() == f"cohbench: error: --scorer {spec}: {said}"


def test_what_a_scorer_prints_goes_to_stderr_and_json_output_stays_json(release, capfd):
    spec = _module(release, "chatty", '''
        import os
        print("loading my model")

        def score(records):
            print("scoring", len(records), "records")
            os.write(1, b"written below Python\\n")
            return [0.5 for _ in records]
    ''')
    capfd.readouterr()
    assert main(["leaderboard", "--config", "storysumm", "--scorer", spec, "--json", "--bootstrap", "20", "--output", str(release / "out")]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["configs"]["storysumm"]["scores"][spec]["value"] is not None
    assert "loading my model" in err and "written below Python" in err


@pytest.mark.parametrize("value", ["10**400", "float('nan')", "float('inf')", "'high'", "None", "True", "'x' * 10**6"])
def test_a_score_that_is_no_finite_number_is_one_short_line(release, capsys, value):
    spec = _module(release, "garbage", f"def score(records):\n    return [{value} for _ in records]\n")
    code, out, err = _run(capsys, "evaluate", "storysumm", "--scorer", spec, "--json")
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and len(err) < 400
    assert err.startswith(f"cohbench: error: {spec} on storysumm: gave record ") and "not a finite number" in err


def test_a_scorer_whose_process_dies_while_scoring_is_one_line(release, capsys):
    spec = _module(release, "dies", "import os\ndef score(records):\n    os._exit(7)\n")
    code, out, err = _run(capsys, "evaluate", "storysumm", "--scorer", spec)
    assert (code, out) == (1, "")
    assert err.strip() == f"cohbench: error: {spec} on storysumm: its process ended while scoring (exit status 7)"


def test_a_scorer_that_hangs_is_ended_at_the_timeout_and_the_board_goes_on(release, capsys):
    import time

    spec = _module(release, "hangs", "import time\ndef score(records):\n    time.sleep(600)\n")
    started = time.monotonic()
    code, out, err = _run(capsys, "leaderboard", "--config", "storysumm", "--scorer", spec, "--scorer", "summary_length",
                          "--scorer-timeout", "1", "--json", "--output", str(release / "out"))
    assert code == 0 and time.monotonic() - started < 60
    board = json.loads(out)
    assert [s["line"] for s in board["skipped"]] == [
        f"{spec} on storysumm: gave no reply within 1 s while scoring (--scorer-timeout sets the limit)"]
    assert board["configs"]["storysumm"]["scores"]["summary_length"]["value"] is not None  # the other scorer's figure
    hangs_on_import = _module(release, "slow_import", "import time\ntime.sleep(600)\n")
    code, out, err = _run(capsys, "evaluate", "storysumm", "--scorer", hangs_on_import, "--scorer-timeout", "1")
    assert (code, out) == (1, "") and err.strip().endswith("gave no reply within 1 s on import (--scorer-timeout sets the limit)")
    with pytest.raises(SystemExit) as usage:  # argparse's usage error, before any scorer starts
        main(["evaluate", "storysumm", "--scorer", spec, "--scorer-timeout", "-3"])
    assert usage.value.code == 2 and "'-3' is no positive number of seconds" in capsys.readouterr().err


def test_a_scorer_that_dies_after_writing_part_of_a_reply_is_said_to_have_ended_not_to_have_sent_too_much(release, capsys):
    spec = _module(release, "half_reply", """
        import os, stat

        def score(records):  # writes the start of a reply on the replies' pipe (the one writable pipe above stderr), then dies
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        os.write(fd, b'{"scores": [')
                except OSError:
                    pass
            os._exit(5)
    """)
    code, out, err = _run(capsys, "evaluate", "storysumm", "--scorer", spec)
    assert (code, out) == (1, "")
    assert err.strip() == f"cohbench: error: {spec} on storysumm: its process ended while scoring (exit status 5)"


def _alive(pid: int) -> bool:
    """Running (a zombie, waiting for a reaper, has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc (Linux)")
def test_a_scorer_never_outlives_a_cohbench_that_is_terminated(release, workspace):
    import signal
    import subprocess
    import sys
    import time

    pid_file = release / "scorer.pid"
    spec = _module(release, "stuck", f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                     "def score(records):\n    time.sleep(600)\n")
    run = subprocess.Popen([sys.executable, "-m", "cohbench.cli", "leaderboard", "--config", "storysumm", "--scorer", spec,
                            "--bootstrap", "20", "--output", str(release / "out")], cwd=release,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline and run.poll() is None, "the scorer never started"
            time.sleep(0.2)
        scorer = int(pid_file.read_text())
        time.sleep(1)  # the scorer is now inside score(), sleeping
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(scorer) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(scorer)
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc (Linux)")
def test_ctrl_c_that_ends_the_scorer_before_cohbench_sees_it_is_an_interrupted_run_exit_130(release, workspace):
    """Ctrl-C sends SIGINT to every process of the terminal's job; when the scorer's process ends of it before cohbench
    handles its own, the run is still interrupted (130), not a scorer whose "process ended"."""
    import signal
    import subprocess
    import sys
    import time

    pid_file = release / "scorer.pid"
    spec = _module(release, "slow", f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                    "def score(records):\n    time.sleep(600)\n")
    run = subprocess.Popen([sys.executable, "-m", "cohbench.cli", "evaluate", "storysumm", "--scorer", spec,
                            "--bootstrap", "20"], cwd=release, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline and run.poll() is None, "the scorer never started"
            time.sleep(0.2)
        time.sleep(1)  # the scorer is now inside score(), sleeping
        os.kill(int(pid_file.read_text()), signal.SIGINT)  # the scorer's share of a Ctrl-C, arriving first
        out, err = run.communicate(timeout=30)
        assert (run.returncode, out, err.strip()) == (130, "", "cohbench: interrupted")
    finally:
        run.kill()


@pytest.mark.parametrize(("body", "said"), [
    ("class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
     "def score(records):\n    raise Odd()\n", "raised Odd: <a Odd whose str() raised>"),
    ("def score(records):\n    raise ValueError('\\x1b[2J\\x1b[31mred')\n", r"raised ValueError: \x1b[2J\x1b[31mred"),
])  # fmt: skip
def test_a_scorers_error_that_cannot_be_printed_or_drives_the_terminal_is_one_plain_line(release, capsys, body, said):
    spec = _module(release, "odd_error", body)
    code, out, err = _run(capsys, "evaluate", "storysumm", "--scorer", spec)
    assert (code, out) == (1, "") and err.strip() == f"cohbench: error: {spec} on storysumm: {said}" and "\x1b" not in err
