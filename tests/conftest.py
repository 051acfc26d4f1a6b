"""Shared test fixtures. Tests never write into the project: each gets its own release folder and raw cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cohbench import settings

FIXTURES = Path(__file__).parent / "fixtures"


def _mirror() -> Path:
    configured = os.environ.get("COHBENCH_MIRROR")
    return Path(configured) if configured else settings.project_root().parent / "shared" / "data" / "mirror"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty release folder and raw cache, the network off, the HF cache private to the test."""
    monkeypatch.setenv("COHBENCH_RELEASE", str(tmp_path / "release"))
    monkeypatch.setenv("COHBENCH_RAW", str(tmp_path / "raw"))
    monkeypatch.setenv("COHBENCH_NETWORK", "0")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("COHBENCH_MIRROR", "")
    return tmp_path


@pytest.fixture
def mirror(workspace, monkeypatch) -> Path:
    """The real upstream mirror (../shared/data/mirror); required in CI, skipped elsewhere when absent."""
    path = _mirror()
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the mirror {path} is missing; CI must run with ../shared beside the project")
        pytest.skip(f"no mirror at {path}")
    monkeypatch.setenv("COHBENCH_MIRROR", str(path))
    return path
