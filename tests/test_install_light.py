"""The light install: `pip install cohbench` (the wheel, no extras) loads, queries and evaluates a release from any
directory, and every pin of pyproject.toml is the one requirements.lock installs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv

import pytest

from cohbench import settings
from cohbench.release.index import write_index

from release_fixture import plain_record, record, write_config

ROOT = settings.project_root()


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for requirement in requirements:
        name, _, version = requirement.partition("==")
        if not version:
            assert name.startswith("cohbench["), f"{requirement!r} is not pinned exactly"
            continue
        pins[re.sub(r"[-_.]+", "-", re.sub(r"\[.*\]", "", name).lower())] = version  # ray[data] is pinned as ray
    return pins


def test_every_dependency_and_extra_is_pinned_as_requirements_lock_pins_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _pins(project["dependencies"])
    for requirements in project["optional-dependencies"].values():
        declared |= _pins(requirements)
    locked = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            locked[re.sub(r"[-_.]+", "-", name.lower())] = version.strip()
    locked.setdefault("torch", "2.13.0")  # the local CPU wheel, installed beside the lock (Makefile)
    assert {name: locked.get(name) for name in declared} == declared
    assert "torch" not in _pins(project["dependencies"]), "torch belongs in the [build] and [train] extras only"


def _tiny_release(folder):
    def summary(i, label, split):
        return record(f"s{i}", f"story-{i}", ["Ann left.", "She came back."], label=label, sentence_labels=[0, label], system="gpt-4")

    splits = {"validation": [summary(i, i % 2, "validation") for i in range(4)], "test": [summary(i, i % 2, "test") for i in range(4, 10)]}
    # undeclared: declaring would write their versions into this checkout's catalog/versions, which the wheel never reads
    write_config(folder, "storysumm", "storysumm", splits, declare=False)
    # a sentence and a gap config, for the reference scorers
    write_config(folder, "timetravel_dsd", "timetravel", {"test": [plain_record("d1", 1, [0, 1, 0])]}, declare=False)
    gaps = record("g1", "g1", ["Ann left.", "She came back.", "It rained."], gap_labels=[0, 1])
    write_config(folder, "timetravel_msd", "timetravel", {"test": [gaps]}, declare=False)
    write_index(folder)
    return folder


@pytest.mark.wheel_install
def test_the_wheel_without_extras_loads_queries_and_evaluates_a_release_from_another_directory(tmp_path):
    release = _tiny_release(tmp_path / "release")
    source = tmp_path / "source"  # a copy, so that building the wheel writes nothing into the project
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", source],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    (wheel,) = (tmp_path / "dist").glob("cohbench-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    run = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COHBENCH_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env |= {"HF_DATASETS_CACHE": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HOME": str(tmp_path / "home"), "COHBENCH_NETWORK": "0"}
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps({"id": f"s{i}", "score": i % 2 * 0.8 + 0.1}) + "\n" for i in range(10)))
    script = f"""
import importlib.util, json, cohbench
assert importlib.util.find_spec("torch") is None and importlib.util.find_spec("spacy") is None, "extras leaked in"
assert cohbench.__file__.startswith({str(tmp_path / "venv")!r}), cohbench.__file__
test = cohbench.load("storysumm", split="test", release={str(release)!r})
rows = cohbench.db({str(release)!r}).sql("SELECT count(*) FROM storysumm WHERE split = 'test'").fetchall()
result = cohbench.evaluate("storysumm", {str(tmp_path / "predictions.jsonl")!r}, release={str(release)!r})
print(json.dumps({{"rows": test.num_rows, "sql": rows[0][0], "auc": result["splits"]["test"]["auc"]}}))
"""
    run = subprocess.run([python, "-c", script], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"rows": 6, "sql": 6, "auc": 1.0}

    cli = tmp_path / "venv" / "bin" / "cohbench"
    query = ["sql", "SELECT count(*) AS n FROM storysumm", "--format", "csv"]
    by_env = subprocess.run([cli, *query], cwd=elsewhere, env=env | {"COHBENCH_RELEASE": str(release)}, capture_output=True, text=True)
    assert by_env.stdout.split() == ['"n"', "10"], by_env.stderr
    by_option = subprocess.run([cli, *query, "--release", str(release)], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert by_option.stdout.split() == ['"n"', "10"], by_option.stderr

    nowhere = subprocess.run([cli, *query], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert nowhere.returncode == 1 and len(nowhere.stderr.splitlines()) == 1, nowhere.stderr
    for place in (elsewhere / "cohbench", tmp_path / "home" / ".local" / "share" / "cohbench"):
        assert str(place) in nowhere.stderr
    assert "COHBENCH_RELEASE" in nowhere.stderr

    validate = subprocess.run([cli, "validate", "--release", str(release)], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert validate.returncode == 1 and "cohbench[validate]" in validate.stderr and "Traceback" not in validate.stderr, validate.stderr

    for config, scorer in (("timetravel_dsd", "tfidf_dissimilarity"), ("timetravel_msd", "tfidf_gap_drop")):  # scikit-learn's TF-IDF
        scored = subprocess.run([cli, "evaluate", config, "--scorer", scorer, "--release", str(release)], cwd=elsewhere, env=env,
                                capture_output=True, text=True)  # fmt: skip
        assert scored.returncode == 1 and len(scored.stderr.splitlines()) == 1, scored.stderr
        assert "needs sklearn, which the [train] extra installs: pip install 'cohbench[train]'" in scored.stderr, scored.stderr
