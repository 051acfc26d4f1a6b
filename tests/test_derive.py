"""`cohbench derive`: a changed copy of a config from one SQL query, written into a new folder laid out like a
release: indexed, verifiable, readable by sql and evaluate, its stats naming the query and the configs it came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cohbench.cli import main
from cohbench.release.index import write_index
from release_fixture import record, write_config


def _release(folder):
    rows = [record(f"s{i}", f"story-{i}", ["Ann left.", "She came back."], label=i % 2, sentence_labels=[0, i % 2],
                   system="gpt-4" if i < 6 else "claude") for i in range(10)]
    write_config(folder, "storysumm", "storysumm", {"validation": rows[:4], "test": rows[4:]})
    write_index(folder)
    return folder


def test_a_derived_config_is_a_verifiable_release_folder_with_the_rows_and_changes_the_query_made(workspace, capsys):
    _release(workspace / "release")
    out = workspace / "gpt4-flipped"
    query = "SELECT * REPLACE (1 - label AS label) FROM storysumm WHERE system = 'gpt-4'"
    assert main(["derive", "storysumm_gpt4", query, "--out", str(out), "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["rows"] == {"validation": 4, "test": 2} and result["derived_from"]["storysumm"]["version"]
    assert main(["verify", "--release", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("files match their recorded sha256")
    assert main(["sql", "--release", str(out), "SELECT id, label, config FROM storysumm_gpt4 ORDER BY id", "--format", "csv"]) == 0
    flipped = [f'"s{i}",{1 - i % 2},"storysumm_gpt4"' for i in range(6)]  # s0-s5 are gpt-4's; each label flipped
    assert capsys.readouterr().out.split() == ['"id","label","config"', *flipped]
    stats = json.loads((out / "stats" / "storysumm_gpt4.json").read_text())
    assert stats["notes"]["derived_from"]["query"] == query
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["configs"]) == ["storysumm_gpt4"] and "+dev." in manifest["configs"]["storysumm_gpt4"]["version"]


def test_a_derive_logged_to_a_file_writes_its_one_line_and_no_progress_bar(workspace):
    _release(workspace / "release")
    out = workspace / "copy"
    command = "import sys; from cohbench.cli import main; sys.exit(main(sys.argv[1:]))"
    run = subprocess.run([sys.executable, "-c", command, "derive", "copy", "SELECT * FROM storysumm", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("wrote copy (validation 4, test 6)") and run.stderr == ""  # HF's bar: on a terminal only


def test_a_query_that_does_not_give_records_in_the_schema_or_a_name_no_config_may_have_is_refused_in_one_line(workspace, capsys):
    _release(workspace / "release")
    for name, query, message in [
        ("x", "SELECT id, label FROM storysumm", "missing: corpus"),
        ("x", "SELECT * FROM storysumm UNION ALL SELECT * FROM storysumm", "ids must be unique"),
        ("x", "SELECT * FROM storysumm WHERE false", "no rows"),
        ("x", "SELECT * REPLACE ('dev' AS split) FROM storysumm", "split 'dev' is not one of"),
        ("x", "SELECT * REPLACE (['a', 'b', 'c'] AS sentences) FROM storysumm", "every row's sentence_labels must give one label per sentence"),
        ("x", "SELECT * REPLACE ([1, 0] AS gap_labels) FROM storysumm WHERE id = 's1'", "every row's gap_labels must give one label per gap"),
        ("x", "SELECT * REPLACE (CASE WHEN id = 's1' THEN NULL ELSE sentences END AS sentences) FROM storysumm",
         "every row's sentence_labels must give one label per sentence"),
        ("Bad-Name", "SELECT * FROM storysumm", "is not a config name"),
        ("snac_x\n", "SELECT * FROM storysumm", "is not a config name"),  # a folder name with a newline in it
        ("a" * 65, "SELECT * FROM storysumm", "is not a config name"),
        ("spans", "SELECT * FROM storysumm", "is the name of a view every release defines"),
        ("select", "SELECT * FROM storysumm", "is a word SQL reserves"),  # `sql` could not name its view
    ]:
        out = workspace / "out"
        assert main(["derive", name, query, "--out", str(out)]) == 1, query
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists()
    assert main(["derive", "x", "SELECT * FROM storysumm", "--out", str(workspace / "release" / "inside")]) == 1
    assert "inside the release folder" in capsys.readouterr().err


def test_a_derived_config_is_listed_and_diffed_against_the_config_it_was_made_from_by_name(workspace, capsys):
    _release(workspace / "release")
    out = workspace / "gpt4-flipped"
    assert main(["derive", "storysumm_gpt4", "SELECT * REPLACE (1 - label AS label) FROM storysumm WHERE system = 'gpt-4'",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["list", "--release", str(out), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)  # the copy alone: no registered config is "not built" in a derive output
    assert row["config"] == "storysumm_gpt4" and row["derived_from"] == ["storysumm"]
    assert row["rows"] == {"validation": 4, "test": 2} and "+dev." in row["version"]
    assert main(["list", "--release", str(out)]) == 0
    header, line = capsys.readouterr().out.splitlines()[:2]
    assert header.index("rows") == line.index("validation 4") and "(derived from storysumm)" in line  # aligned columns
    for narrowed in ([], ["--config", "storysumm_gpt4"]):
        assert main(["diff", str(workspace / "release"), str(out), "--json", *narrowed]) == 1  # 1: they differ
        (name, entry), = json.loads(capsys.readouterr().out)["configs"].items()
        assert name == "storysumm_gpt4" and entry["compared_with"] == "storysumm"
        assert entry["ids"]["removed"] == ["s6", "s7", "s8", "s9"] and entry["ids"]["changed"] == [f"s{i}" for i in range(6)]
        assert entry["changed_fields"] == {"label": 6}  # `config` differs by design, not reported as a change
    assert main(["diff", str(workspace / "release"), str(out)]) == 1
    assert "storysumm -> storysumm_gpt4" in capsys.readouterr().out


@pytest.mark.slow
def test_a_derive_larger_than_memory_is_refused_in_one_line_and_writes_nothing(workspace):
    """Ten million rows under an address-space limit 1.5 GB above what the imports take: one line, exit 1, no folder
    and no temporary folder left, whichever layer runs out first (DuckDB's result here; Python's MemoryError is one
    line too)."""
    _release(workspace / "release")
    out = workspace / "huge"
    query = "SELECT * REPLACE (id || '-' || range AS id) FROM storysumm, range(1000000)"
    child = f"""
import resource, sys
import datasets, duckdb, pyarrow  # the imports' reservations happen before the limit
from cohbench.cli import main
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (1536 << 20), resource.RLIM_INFINITY))
sys.exit(main(["derive", "huge", {query!r}, "--out", {str(out)!r}]))
"""
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert run.stderr.count("\n") == 1 and "unexpectedly" not in run.stderr and "memory" in run.stderr.lower(), run.stderr
    assert not out.exists() and not list(workspace.glob(".huge.*"))
