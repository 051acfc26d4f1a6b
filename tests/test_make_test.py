"""`make test`, the README's test command and CI's (`.ci/run`), fails when pytest collects no test: a run that checked
nothing never passes."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cohbench import settings


def test_make_test_fails_when_pytest_collects_no_test():
    if shutil.which("make") is None:
        if os.environ.get("CI"):
            pytest.fail("make is not installed, yet CI runs `make test`")
        pytest.skip("make is not installed")
    # -o: the virtual environment counts as installed (this test runs inside it); PYTEST_ADDOPTS selects no test
    env = {**os.environ, "PYTEST_ADDOPTS": "tests/test_layering.py -k no_such_test -p no:cacheprovider"}
    run = subprocess.run(["make", "-o", ".venv/.installed", "test"], cwd=settings.project_root(), env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode != 0, run.stdout[-2000:]
    assert "pytest collected no tests" in run.stderr and "0 selected" in run.stdout
