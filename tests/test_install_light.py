"""The light install: `pip install cohbench` (the wheel, no extras) runs every command the README calls light (list,
load, sql, evaluate, metaeval, agreement, leaderboard, show) on a release from any directory, `/` included, with the
catalog files they read shipped in the wheel; and every pin of pyproject.toml is the one requirements.lock installs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from cohbench import settings
from cohbench.release.index import write_index

from release_fixture import plain_record, record, snac_like, write_config

ROOT = settings.project_root()


def _locked() -> dict[str, str]:
    locked = {"torch": "2.13.0"}  # the local CPU wheel, installed beside the lock (Makefile)
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            locked[canonicalize_name(name)] = version.strip()
    return locked


def test_every_dependency_admits_the_version_requirements_lock_pins_and_no_next_major():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    locked = _locked()
    requirements = [Requirement(r) for r in project["dependencies"]]
    requirements += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        if name == "cohbench":
            continue  # an extra made of the others
        assert requirement.specifier.contains(locked[name], prereleases=True), f"{requirement} excludes the locked {locked[name]}"
        major = int(locked[name].split(".")[0])
        assert not requirement.specifier.contains(f"{major + 1}.0.0"), f"{requirement} admits an untested major release"
        if name == "torch":
            assert str(requirement.specifier) == f"=={locked['torch']}", "torch is pinned exactly: a looser one pulls a CUDA build"
    assert "torch" not in {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}, "torch belongs in the [build] and [train] extras only"
    assert SpecifierSet(project["requires-python"]) == SpecifierSet(">=3.11,<3.14")


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
    # SNaC's spans and SummEval's ratings, for `agreement` (beside the published figures) and `metaeval`
    write_config(folder, "snac", "snac", {"validation": [snac_like("n1", "b1")], "test": [snac_like("n2", "b2"), snac_like("n3", "b3")]},
                 declare=False)  # fmt: skip
    rated = [record(f"d{d}/{system}", f"d{d}", ["A summary."], system=system, system_name=system,
                    ratings=[{"annotator": f"e{k}", "annotator_type": "expert", "dimension": "coherence", "score": 1 + (d + 2 * s) % 5}
                             for k in range(3)])
             for d in range(3) for s, system in enumerate(["M1", "M2", "M3"])]  # fmt: skip
    write_config(folder, "summeval", "summeval", {"test": rated}, declare=False)
    _ship_reference_predictions(folder)
    write_index(folder)
    return folder


def _ship_reference_predictions(release: Path) -> None:
    """What `cohbench train` ships in a release beside the baseline's: every reference scorer's predictions on every
    config it applies to, made here by the scorers themselves (this environment has the extras). The leaderboard
    reads them, as a light install cannot run the scorers that need torch, spaCy or scikit-learn."""
    from cohbench.evaluation import protocols, references
    from cohbench.corpora.registry import spec
    from cohbench.release.layout import built_configs, read_config, shipped_predictions

    for config in built_configs(release):
        splits, protocol = read_config(release, config).splits, spec(config).protocol
        unit = protocols()[protocol].unit
        for name in (n for n in references.scorers_for(unit) if not references.REFERENCES[n].oracle):
            if references.applicable(name, splits, unit):
                path = shipped_predictions(release, name, config)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(json.dumps(line) + "\n" for line in references.predictions(name, splits, protocol)))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel, built by pip from a copy of the project (so that nothing is written into it) with the build
    backend pyproject.toml names; the copy is left without a build/ folder or an .egg-info."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "catalog/published.yaml"):  # catalog: what the wheel force-includes
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path / "dist", "."], cwd=source,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in source.iterdir()) == ["README.md", "catalog", "pyproject.toml", "src"], "the build left files in the checkout"
    assert sorted(p.name for p in (source / "src").iterdir()) == ["cohbench"]
    (built,) = (tmp_path / "dist").glob("cohbench-*.whl")
    return built


def _venv(python: str, folder) -> str:
    """A fresh virtual environment of `python` with the wheel's light install, at the versions requirements.lock pins."""
    subprocess.run([python, "-m", "venv", str(folder)], check=True, capture_output=True)
    return str(folder / "bin" / "python")


def _install(python: str, wheel) -> None:
    run = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-c", ROOT / "requirements.lock", wheel],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.wheel_install
@pytest.mark.parametrize("version", ["3.12.1", "3.13.0"])
def test_the_wheel_runs_every_light_command_from_the_root_directory_on_python(version, wheel, workspace, tmp_path):
    prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True) if shutil.which("pyenv") else None
    if prefix is None or prefix.returncode != 0:
        pytest.skip(f"Python {version} is not installed through pyenv here")
    python = _venv(str(Path(prefix.stdout.strip()) / "bin" / "python3"), tmp_path / "venv")
    _install(python, wheel)
    release = _tiny_release(tmp_path / "release")
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps({"id": f"s{i}", "score": i % 2 * 0.8 + 0.1}) + "\n" for i in range(10)))
    (tmp_path / "scores.csv").write_text("id,coherence\n" + "".join(f"d{d}/M{s},{(d + 2 * s) % 5}\n" for d in range(3) for s in range(1, 4)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COHBENCH_", "PYTHONPATH", "VIRTUAL_ENV", "PYENV", "XDG_"))}
    env |= {"HF_DATASETS_CACHE": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HOME": str(tmp_path / "home"), "COHBENCH_NETWORK": "0",
            "COHBENCH_RELEASE": str(release)}
    cli = str(tmp_path / "venv" / "bin" / "cohbench")
    ran = {}
    for name, args in {"list": ["list", "--json"], "sql": ["sql", "SELECT count(*) AS n FROM storysumm WHERE label = 1", "--format", "csv"],
                       "evaluate": ["evaluate", "storysumm", "--predictions", str(tmp_path / "predictions.jsonl"), "--json"],
                       "metaeval": ["metaeval", "summeval", "--scores", str(tmp_path / "scores.csv"), "--json"],
                       "agreement snac": ["agreement", "snac", "--json"],
                       "agreement summeval": ["agreement", "summeval"],  # beside the published figures the wheel ships
                       "leaderboard": ["leaderboard", "--scorer", "entity_cue", "--config", "timetravel_dsd", "--bootstrap", "200", "--json"],
                       "show": ["show", "--out", str(tmp_path / "site")]}.items():  # its script and style ship in the wheel
        run = subprocess.run([cli, *args], cwd="/", env=env, capture_output=True, text=True)  # no checkout, no ./catalog
        assert run.returncode == 0, (name, run.stderr[-2000:])
        ran[name] = run.stdout
    loaded = subprocess.run([python, "-c", "import cohbench; print(cohbench.load('storysumm', split='test').num_rows)"], cwd="/", env=env,
                            capture_output=True, text=True)  # fmt: skip
    assert loaded.stdout.split() == ["6"], loaded.stderr
    assert subprocess.run([python, "--version"], capture_output=True, text=True).stdout.split()[1] == version
    assert {row["config"]: row["rows"] for row in json.loads(ran["list"])}["storysumm"] == {"validation": 4, "test": 6}
    assert ran["sql"].split() == ['"n"', "5"]
    assert json.loads(ran["evaluate"])["splits"]["test"]["auc"] == 1.0
    assert json.loads(ran["metaeval"])["summaries"] == 9
    assert json.loads(ran["agreement snac"])["config"] == "snac"
    published = ran["agreement summeval"].split("Published reference", 1)[1]
    assert "| expert | 0.41 |" in published, ran["agreement summeval"]  # SummEval's expert alpha, a row of catalog/published.yaml
    board = json.loads(ran["leaderboard"])
    assert board["configs"]["timetravel_dsd"]["scores"]["entity_cue"]["value"] is not None and board["configs"]["timetravel_dsd"]["best_reference"]
    assert list((tmp_path / "home" / ".cache" / "cohbench" / "leaderboard").glob("*/entity_cue.json")), "results go to the user's cache"
    assert {p.name for p in (tmp_path / "site").iterdir()} >= {"index.html", "storysumm.html", "viewer.js", "viewer.css", "data"}


@pytest.mark.wheel_install
def test_the_wheel_without_extras_loads_queries_and_evaluates_a_release_from_another_directory(tmp_path, workspace, wheel):
    release = _tiny_release(tmp_path / "release")
    python = _venv(sys.executable, tmp_path / "venv")
    _install(python, wheel)

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
