"""Adding a corpus is one module plus its checksum table and fixtures, as ARCHITECTURE.md says: in a copy of the
project, a tiny corpus module dropped into `cohbench/corpora/`, its checksum table (rows of name, url and licence)
beside it and its upstream file into the fixtures (and a mirror). Everything else is written by
commands: the table's sizes and sha256 (`fetch --register-checksums`), its first version (`version --record`), its
expectations (`validate --record-expected`) and its dvc.yaml stage (`pipeline`); it is then built, validated and
evaluated through the command line, and the per-corpus checks (`corpus_case.CorpusCase`, run by
`tests/test_corpora.py`) cover it; its own test module (`test_tiny_stories.py`) is the one written by hand, with the
spot checks of its records that `tests/test_corpora.py` requires of every corpus."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from project_copy import tracked_copy

pytestmark = pytest.mark.slow  # a git copy of the project and the CLI and pytest in child processes

FIXTURE = Path(__file__).parent / "fixtures/tiny_corpus"


def test_a_corpus_module_its_checksums_and_fixtures_are_all_a_new_config_needs(tmp_path):
    copy = tracked_copy(tmp_path)
    shutil.copyfile(FIXTURE / "tiny_stories.py", copy / "src/cohbench/corpora/tiny_stories.py")
    shutil.copyfile(FIXTURE / "tiny_stories.tsv", copy / "src/cohbench/corpora/tiny_stories.tsv")
    (copy / "tests/fixtures/tiny_stories").mkdir()
    shutil.copyfile(FIXTURE / "stories.jsonl", copy / "tests/fixtures/tiny_stories/stories.jsonl")
    shutil.copyfile(FIXTURE / "tiny_stories_case.py", copy / "tests/test_tiny_stories.py")
    mirror = tmp_path / "mirror/example.org/tiny/v1"
    mirror.mkdir(parents=True)
    shutil.copyfile(FIXTURE / "stories.jsonl", mirror / "stories.jsonl")
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "COHBENCH_ROOT": str(copy), "COHBENCH_MIRROR": str(tmp_path / "mirror"),
           "COHBENCH_RELEASE": str(tmp_path / "release"), "COHBENCH_RAW": str(tmp_path / "raw"), "COHBENCH_NETWORK": "0",
           "HF_DATASETS_CACHE": str(tmp_path / "hf")}

    def cohbench(*args):
        run = subprocess.run([sys.executable, "-m", "cohbench.cli", *args], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert run.returncode == 0, (args, run.stderr[-2000:])
        return run.stdout

    table = copy / "src/cohbench/corpora/tiny_stories.tsv"
    assert table.read_text().splitlines()[1].split("\t")[2:4] == ["", ""]  # by hand: name, url and licence only
    cohbench("fetch", "--register-checksums", "tiny_stories")
    upstream = (FIXTURE / "stories.jsonl").read_bytes()
    assert table.read_text().splitlines()[1].split("\t")[2:4] == [str(len(upstream)), hashlib.sha256(upstream).hexdigest()]

    built = json.loads(cohbench("build", "tiny_dsd", "--json"))["tiny_dsd"]
    assert (built["upstream_records"], built["built_records"], built["dropped"]) == (6, 6, {})

    # a new config has no version until one is declared: validate says which, and `version --record` declares it
    undeclared = subprocess.run([sys.executable, "-m", "cohbench.cli", "version", "tiny_dsd"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert undeclared.returncode == 1 and "declare 1.0.0" in undeclared.stdout
    cohbench("version", "tiny_dsd", "--record")
    assert json.loads((copy / "catalog/versions/tiny_dsd.json").read_text())["version"] == "1.0.0"
    assert {row["config"]: row["version"] for row in json.loads(cohbench("list", "--json"))}["tiny_dsd"] == "1.0.0"
    cohbench("validate", "tiny_dsd", "--record-expected")
    cohbench("pipeline")
    assert "  build_tiny_dsd:\n" in (copy / "dvc.yaml").read_text()
    checks = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_corpora.py",
                             "tests/test_tiny_stories.py", "-k", "tiny_stories"],
                            env=env, capture_output=True, text=True, cwd=copy)
    assert checks.returncode == 0 and "\n12 passed" in checks.stdout, checks.stdout[-2000:]  # 5 declaration checks, 7 of its own case
    verdict = json.loads(cohbench("validate", "tiny_dsd", "--no-docs", "--json"))
    assert verdict["ok"] and verdict["configs"]["tiny_dsd"]["ok"]

    # a model that flags sentence 3 of every story: right on e, one false alarm on f
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "label": [0, 0, 1, 0]}) + "\n" for i in "abcdef"))
    result = json.loads(cohbench("evaluate", "tiny_dsd", "--predictions", str(predictions), "--json"))
    assert result["protocol"] == "sentences"
    test = result["splits"]["test"]
    assert (test["units"], test["errors"]) == (8, 1) and test["precision"] == 0.5 and test["recall"] == 1.0
