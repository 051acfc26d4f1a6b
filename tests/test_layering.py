"""The import graph, read from the source (AST, imports inside functions included), against the floors that
catalog/ARCHITECTURE.md declares: every module is on a floor, imports only from its floor or below, and nothing
imports in a circle. The one dependency that runs upward is the registry's discovery of the corpus modules, which
`importlib` makes at run time and no import statement names. Only the registry and the corpus modules name a config."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cohbench
from cohbench import registry, settings

PACKAGE = Path(cohbench.__file__).parent
ARCHITECTURE = settings.catalog_dir() / "ARCHITECTURE.md"


def _modules() -> dict[str, tuple[ast.Module, bool]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = (ast.parse(path.read_text(encoding="utf-8")), path.name == "__init__.py")
    return out


def _imports(name: str, tree: ast.Module, is_package: bool, known) -> set[str]:
    """The cohbench modules `name` imports, anywhere in its body. `from pkg import module` imports the module (a
    package's face is not a dependency of every module inside it)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            submodules = {f"{module}.{alias.name}" for alias in node.names} & set(known)
            found |= submodules if len(submodules) == len(node.names) else {module} | submodules
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, tree, is_package, modules) for name, (tree, is_package) in modules.items()}


def _declared_floors() -> dict[str, int]:
    """module -> floor, from the floors table of ARCHITECTURE.md (`pkg/` names every module of a package; a module
    named on its own, `pkg/module`, takes its own floor over its package's)."""
    found, modules = {}, set(_modules())
    for number, cells in re.findall(r"^\| (\d+)\. [^|]+\| ([^|]+) \|", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.M):
        for entry in re.findall(r"`([\w/.]+)`", cells):
            name = "cohbench." + entry.strip("/").replace("/", ".") if entry != "cohbench" else "cohbench"
            members = {m for m in modules if m == name or m.startswith(name + ".")} if entry.endswith("/") else {name}
            for member in members:
                found.setdefault(member, []).append((not entry.endswith("/"), len(name), int(number)))
    return {member: max(claims)[2] for member, claims in found.items()}


def test_every_module_is_on_a_declared_floor():
    floors = _declared_floors()
    missing = sorted(set(_modules()) - set(floors))
    assert not missing, f"catalog/ARCHITECTURE.md gives no floor to {missing}"
    assert not sorted(set(floors) - set(_modules())), "ARCHITECTURE.md names modules that do not exist"


def test_each_module_imports_only_from_its_floor_or_below():
    floors = _declared_floors()
    upward = [f"{a} (floor {floors[a]}) imports {b} (floor {floors[b]})"
              for a, targets in _graph().items() for b in targets if floors[b] > floors[a]]
    assert not upward, upward


def test_nothing_imports_in_a_circle():
    graph, state, path = _graph(), {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                pytest.fail("import circle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_registry_finds_corpus_modules_without_importing_them_by_name():
    graph = _graph()
    corpus_modules = {m for m in graph if m.startswith("cohbench.builders.") and m != "cohbench.builders.incoherence"}
    assert not graph["cohbench.registry"] & corpus_modules  # discovered (importlib), so no floor has to hold them below
    assert {registry.corpus_of(c).parse.__module__ for c in registry.config_names()} <= corpus_modules


def test_the_corruption_engine_imports_nothing_above_the_ground():
    floors = _declared_floors()
    engine = {name for name, floor in floors.items() if name.startswith("cohbench.corruptions") and floor == 2}
    assert {"cohbench.corruptions", "cohbench.corruptions.recipes", "cohbench.corruptions.ray_engine"} <= engine
    for name in engine:
        above = {t for t in _graph()[name] if t not in engine and floors[t] > 1}
        assert not above, f"{name} imports {sorted(above)}"


def test_a_module_named_on_its_own_takes_its_floor_over_its_packages():
    floors = _declared_floors()
    assert floors["cohbench.corruptions.job"] == 6 and floors["cohbench.corruptions.dsd"] == 2
    assert floors["cohbench.release.layout"] == 3 and floors["cohbench.release.build"] == 5


def test_the_checker_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    from ..builders import timetravel\n")
    known = {"cohbench.builders", "cohbench.builders.timetravel"}
    assert _imports("cohbench.corruptions.x", tree, False, known) == {"cohbench.builders.timetravel"}


def test_only_the_registry_and_the_corpus_modules_name_a_config():
    configs = set(registry.config_names())
    for name, (tree, _) in _modules().items():
        if name == "cohbench.registry" or name.startswith("cohbench.builders"):
            continue
        named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in configs}
        assert not named, f"{name} names config(s) {sorted(named)}; look them up in the registry instead"


def test_every_cohbench_module_an_import_names_exists():
    """A lazy import inside a command is only run when the command is: a renamed module must fail here, not there."""
    modules = _modules()
    missing = []
    for name, (tree, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = f"{base}.{node.module}" if node.module else base
                if module not in modules:
                    missing.append(f"{name} imports {module}")
                elif not node.module:
                    missing += [f"{name} imports {module}.{a.name}" for a in node.names
                                if f"{module}.{a.name}" not in modules and not _defines(modules[module][0], a.name)]
    assert not missing, missing


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether a package's face defines or imports `name` at its top level."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return True
    return False
