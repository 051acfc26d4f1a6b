"""CLI errors are one line on stderr and a non-zero exit, never a traceback."""

import subprocess
import sys

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


def test_a_reader_that_stops_early_ends_the_command_quietly(workspace):
    # `cohbench list | head -1`: the pipe closes before the command writes; no traceback, the shell's 141
    command = [sys.executable, "-m", "cohbench.cli", "list"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait() == 141 and "Traceback" not in err and "Exception ignored" not in err
