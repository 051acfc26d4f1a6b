"""CLI errors are one line on stderr and a non-zero exit, never a traceback."""

import subprocess
import sys

import pytest

from cohbench.cli import main


def test_unknown_config_is_one_clear_line(workspace, capsys):
    assert main(["build", "no-such-config"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("cohbench: error: unknown config 'no-such-config'") and "\n" not in err
    assert "storysumm" in err


def test_missing_upstream_file_is_one_clear_line(workspace, capsys):
    assert main(["fetch", "storysumm"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("cohbench: error: storysumm.json was not found")
    assert "https://raw.githubusercontent.com/melaniesubbiah/storysumm/" in err


def test_verify_without_a_release_says_what_to_do(workspace, capsys):
    assert main(["verify"]) == 1
    assert "build a config first" in capsys.readouterr().err


@pytest.mark.slow
def test_a_reader_that_stops_early_ends_the_command_quietly(workspace):
    # `cohbench list | head -1`: the pipe closes before the command writes; no traceback, the shell's 141
    command = [sys.executable, "-m", "cohbench.cli", "list"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait() == 141 and "Traceback" not in err and "Exception ignored" not in err


def test_release_and_mirror_reach_the_code_as_arguments_not_through_the_environment(workspace, capsys):
    """`--release` and `--mirror` are passed to what a command runs: written into the environment, they outlived the
    command, and a later command in the same process read the other release."""
    import json
    import os

    from conftest import _required_mirror
    from release_fixture import write_every_protocol

    other = write_every_protocol(workspace / "other")
    assert main(["list", "--release", str(other), "--json"]) == 0
    assert any(row["built"] for row in json.loads(capsys.readouterr().out))
    assert main(["sql", "SELECT count(*) AS n FROM records", "--release", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["n"] > 0
    assert os.environ["COHBENCH_RELEASE"] == str(workspace / "release")
    assert main(["verify"]) == 1 and "build a config first" in capsys.readouterr().err  # the release in use is still empty
    mirror = _required_mirror()
    assert main(["fetch", "storysumm", "--mirror", str(mirror), "--json"]) == 0
    assert os.environ["COHBENCH_MIRROR"] == ""
    assert main(["fetch", "storysumm"]) == 0  # now from the raw cache the fetch filled


def test_train_onto_a_file_is_refused_before_any_training(workspace, capsys):
    for target in ("/dev/null", str(workspace / "metrics.json")):
        (workspace / "metrics.json").write_text("{}")
        assert main(["train", "--train-data", str(workspace), "--output", target]) == 1
        err = capsys.readouterr().err
        assert err.strip() == f"cohbench: error: --output {target} exists and is not a folder; give a new folder for metrics.json and predictions/"
    assert (workspace / "metrics.json").read_text() == "{}"


@pytest.mark.parametrize("argv", [["held-out", "--output", ""], ["calibrate", "--output", ""], ["sql", "SELECT 1", "--release", ""],
                                  ["evaluate", "storysumm", "--scorer", ""], ["publish", "", "0.5.0"]])
def test_an_empty_value_is_refused_not_read_as_the_default(workspace, capsys, argv):
    # read as "not given", `--output ""` rewrote a file inside the package and `--release ""` queried the default release
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("an empty value names nothing; give one or leave the option out")
