"""Shared test fixtures. Tests never write into the project: each gets its own release folder and raw cache."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
import yaml

import cohbench
from cohbench import settings

FIXTURES = Path(__file__).parent / "fixtures"


def _mirror() -> Path:
    configured = os.environ.get("COHBENCH_MIRROR")
    return Path(configured) if configured else settings.project_root().parent / "shared" / "data" / "mirror"


def _workspace_environment(folder: Path) -> dict[str, str]:
    return {
        "COHBENCH_RELEASE": str(folder / "release"),
        "COHBENCH_RAW": str(folder / "raw"),
        "COHBENCH_NETWORK": "0",
        "HF_DATASETS_CACHE": str(folder / "hf-cache"),
        "HF_DATASETS_OFFLINE": "1",
        "COHBENCH_MIRROR": "",
        "COHBENCH_VALIDATION_DOCS": str(folder / "validation-docs"),
        "COHBENCH_VERSIONS": str(folder / "versions"),  # a test declares the versions of its own configs
        "XDG_CACHE_HOME": str(folder / "user-cache"),  # the caches of a release not the project's
    }


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty release folder and raw cache, the network off, the HF cache private to the test."""
    for name, value in _workspace_environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    return tmp_path


def _required_mirror() -> Path:
    """The real upstream mirror (../shared/data/mirror); required in CI, skipped elsewhere when absent."""
    path = _mirror()
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the mirror {path} is missing; CI must run with ../shared beside the project")
        pytest.skip(f"no mirror at {path}")
    return path


@pytest.fixture
def mirror(workspace, monkeypatch) -> Path:
    path = _required_mirror()
    monkeypatch.setenv("COHBENCH_MIRROR", str(path))
    return path


@contextlib.contextmanager
def built_from_mirror(tmp_path_factory, config: str):
    """Build `config` from the mirror into a private release once, for a whole module's checks: (root, stats)."""
    path = _required_mirror()
    root = tmp_path_factory.mktemp(config)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {
            "COHBENCH_RELEASE": root / "release",
            "COHBENCH_RAW": root / "raw",
            "COHBENCH_NETWORK": "0",
            "COHBENCH_MIRROR": path,
            "HF_DATASETS_CACHE": root / "hf",
        }.items():
            mp.setenv(key, str(value))
        yield root, cohbench.build(config, progress=False)


@pytest.fixture(scope="session")
def _every_protocol_written(tmp_path_factory) -> Path:
    """`release_fixture.write_every_protocol` written once for the session, in a workspace of its own: the release
    and the versions its index declared (0.7 s a test when each wrote its own)."""
    from release_fixture import write_every_protocol

    folder = tmp_path_factory.mktemp("every-protocol")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in _workspace_environment(folder).items():
            patch.setenv(name, value)
        write_every_protocol(folder / "release")
    return folder


@pytest.fixture
def every_protocol(workspace, _every_protocol_written):
    """The tiny release of `release_fixture.write_every_protocol` as the release folder (COHBENCH_RELEASE): a copy of
    the session's, with the versions it declares, for the test to change as it likes."""
    for name in ("release", "versions"):
        shutil.copytree(_every_protocol_written / name, workspace / name, symlinks=True)
    return workspace / "release"


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance with 2 CPUs for the whole session (start-up costs ~8 s); `cohbench corrupt --engine
    ray` joins it. Ray is the `scale` extra: CI installs it, so there its absence is a failure, not a skip."""
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed; `make test` installs the `scale` extra")
        pytest.skip("Ray (cohbench[scale]) is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def upstream_paths(corpus, mirror: Path) -> dict[str, Path]:
    """A corpus's inputs straight from the mirror (byte-exact upstream files; fetch's checks are tested elsewhere),
    so that no test copies FairytaleQA's 279 files into its private cache."""
    return {source.name: mirror / source.relpath for source in corpus.inputs}


@pytest.fixture
def paths(mirror):
    return lambda corpus: upstream_paths(corpus, mirror)


@pytest.fixture
def project_root(tmp_path, monkeypatch):
    """`make(edit, catalog=...)`: a project root of this test's own (COHBENCH_ROOT): the project's params.yaml as
    `edit` changes it, and a `catalog/` that is empty (`"own"`, for what a test writes there) or the project's
    (`"project"`, read only). Made again, the same root gets the newly edited params."""

    def make(edit=lambda params: None, catalog: str = "own") -> Path:
        params = settings.params()
        edit(params)
        root = tmp_path / "project"
        root.mkdir(exist_ok=True)
        (root / "params.yaml").write_text(yaml.safe_dump(params))
        if not (root / "catalog").exists():
            (root / "catalog").mkdir() if catalog == "own" else (root / "catalog").symlink_to(settings.catalog_dir())
        monkeypatch.setenv("COHBENCH_ROOT", str(root))
        return root

    return make


@pytest.fixture
def params_with(project_root, mirror):
    """Run with the project's params.yaml, some `incoherence` entries replaced (and the project's catalog)."""

    def apply(**sections):
        def edit(params):
            for section, values in sections.items():
                params["incoherence"][section] = {**params["incoherence"][section], **values}

        project_root(edit, catalog="project")
        return settings.params()["incoherence"]

    return apply


@pytest.fixture
def small_params(project_root):
    """The project's params.yaml with the TimeTravel dev carve shrunk to the fixtures' size (TimeTravel and Story Cloze)."""

    def edit(params):
        params["incoherence"]["timetravel"] = {"k": 1, "dev_stories": 1, "max_stories_per_split": None}

    project_root(edit)
    return settings.params()


@pytest.fixture(autouse=True)
def training_pins_end_with_their_test():
    """A training command run in-process (`train`, `study`) pins the training path in this process's environment
    (`numerics.pin_for_training`); the pins end with the test, or every later test would see a pinned process (and
    `numerics.unpinned` run its work in a child, out of reach of a test's monkeypatch)."""
    from cohbench import numerics

    before = {name: os.environ.get(name) for name in numerics.FOR_TRAINING}
    set_here = set(numerics._set_here)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    numerics._set_here.clear()
    numerics._set_here.update(set_here)
