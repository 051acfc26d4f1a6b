"""`make test`, the README's test command and CI's (`.ci/run`), fails when pytest collects no test: a run that checked
nothing never passes. `make check`, the fast set, leaves out the tests that start slow processes."""

from __future__ import annotations

import ast
import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cohbench import settings

TESTS = Path(__file__).parent
# What a test names to start dvc or git (the commands' names), Chromium (test_viewer's CHROMIUM) or join Ray (the
# session's `ray_local` fixture), itself or through the functions and fixtures it names.
SLOW_STARTS = {"dvc", "git", "CHROMIUM", "ray_local"}


def _make(target: str, pytest_addopts: str) -> subprocess.CompletedProcess:
    if shutil.which("make") is None:
        if os.environ.get("CI"):
            pytest.fail("make is not installed, yet CI runs `make test`")
        pytest.skip("make is not installed")
    # -o: the virtual environment counts as installed (this test runs inside it)
    env = {**os.environ, "PYTEST_ADDOPTS": pytest_addopts}
    return subprocess.run(["make", "-o", ".venv/.installed", target], cwd=settings.project_root(), env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_make_test_fails_when_pytest_collects_no_test():
    run = _make("test", "tests/test_layering.py -k no_such_test -p no:cacheprovider")  # selects no test
    assert run.returncode != 0, run.stdout[-2000:]
    assert "pytest collected no tests" in run.stderr and "0 selected" in run.stdout


@functools.cache
def _namespace(module: Path) -> dict[str, tuple[ast.FunctionDef, Path]]:
    """The functions (fixtures and methods too) that code in `module` can name, each with the module defining it:
    those of every tests/ module it imports from and, for a test module, conftest's; then its own, which win."""
    tree = ast.parse(module.read_text())
    imported = {TESTS / f"{node.module}.py" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    if module.name.startswith("test_"):
        imported.add(TESTS / "conftest.py")
    found = {}
    for path in sorted(imported):
        if path.is_file():
            found |= _namespace(path)
    return found | {node.name: (node, module) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def _names_reached(function: ast.FunctionDef, module: Path, seen: set[tuple[str, Path]]) -> set[str]:
    """The names and strings `function` uses, and those of every function and fixture it names, each read where it
    is defined, transitively."""
    namespace, names = _namespace(module), set()
    for node in ast.walk(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
        elif isinstance(node, (ast.Name, ast.arg)):
            name = node.id if isinstance(node, ast.Name) else node.arg
            names.add(name)
            if name in namespace and (name, namespace[name][1]) not in seen:
                seen.add((name, namespace[name][1]))
                names |= _names_reached(*namespace[name], seen)
    return names


@pytest.mark.slow  # collects the whole suite in a child process
def test_make_check_leaves_out_every_test_that_starts_dvc_git_chromium_or_ray():
    run = _make("check", "--collect-only -q -p no:cacheprovider")
    assert run.returncode == 0, (run.stdout + run.stderr)[-2000:]
    fast = [line for line in run.stdout.splitlines() if "::" in line]
    assert fast and "deselected" in run.stdout, run.stdout[-2000:]
    starting = {}
    for nodeid in fast:
        module, *_, name = nodeid.split("[")[0].split("::")
        namespace = _namespace(settings.project_root() / module)
        assert name in namespace, f"{nodeid}: no function {name} in {module} or the tests/ modules it imports from"
        if reached := _names_reached(*namespace[name], set()) & SLOW_STARTS:
            starting[nodeid] = sorted(reached)
    assert not starting, f"the fast set starts slow processes; mark these `slow`: {starting}"
