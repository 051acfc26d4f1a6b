"""The import graph, read from the source (AST, imports inside functions included), against the floors that
catalog/ARCHITECTURE.md declares: every module is on one floor and every package wholly on one, each imports only from
its floor or below, nothing imports in a circle, no two packages import each other, and no import statement names a
corpus module (the registry finds them by listing `corpora/`). Only the registry and the corpus modules name a config
or a corpus."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cohbench
from cohbench.corpora import registry
from cohbench import settings

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


def _floor_claims() -> dict[str, set[int]]:
    """module -> the floors the floors table of ARCHITECTURE.md puts it on (`pkg/` names every module of a package)."""
    found, modules = {}, set(_modules())
    for number, cells in re.findall(r"^\| (\d+)\. [^|]+\| ([^|]+) \|", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.M):
        for entry in re.findall(r"`([\w/.]+)`", cells):
            name = "cohbench." + entry.strip("/").replace("/", ".") if entry != "cohbench" else "cohbench"
            members = {m for m in modules if m == name or m.startswith(name + ".")} if entry.endswith("/") else {name}
            for member in members:
                found.setdefault(member, set()).add(int(number))
    return found


def _declared_floors() -> dict[str, int]:
    return {module: min(floors) for module, floors in _floor_claims().items()}


def _package(module: str) -> str:
    """The top-level package (or module) of cohbench that `module` belongs to."""
    return ".".join(module.split(".")[:2])


def test_every_module_is_on_one_declared_floor():
    claims = _floor_claims()
    missing = sorted(set(_modules()) - set(claims))
    assert not missing, f"catalog/ARCHITECTURE.md gives no floor to {missing}"
    assert not sorted(set(claims) - set(_modules())), "ARCHITECTURE.md names modules that do not exist"
    twice = {module: sorted(floors) for module, floors in claims.items() if len(floors) > 1}
    assert not twice, f"ARCHITECTURE.md puts modules on more than one floor: {twice}"


def test_no_module_is_over_400_lines():
    assert "no module is over 400 lines" in " ".join(ARCHITECTURE.read_text(encoding="utf-8").lower().split())
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"split these modules along their seams: {long}"


def test_every_package_is_wholly_on_one_floor():
    by_package = {}
    for module, floor in _declared_floors().items():
        by_package.setdefault(_package(module), set()).add(floor)
    split = {package: sorted(floors) for package, floors in by_package.items() if len(floors) > 1}
    assert not split, f"packages on more than one floor: {split}"


def test_each_module_imports_only_from_its_floor_or_below():
    assert "must go to its own floor or any floor below" in " ".join(ARCHITECTURE.read_text(encoding="utf-8").split())
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


def test_no_two_packages_import_each_other():
    packages = {}
    for module, targets in _graph().items():
        for target in targets:
            edge = (_package(module), _package(target))
            if edge[0] != edge[1]:
                packages.setdefault(edge[0], set()).add(edge[1])

    def reaches(start, goal, seen):
        return any(t == goal or (t not in seen and not seen.add(t) and reaches(t, goal, seen)) for t in packages.get(start, ()))

    loops = sorted(f"{a} <-> {b}" for a, targets in packages.items() for b in targets if reaches(b, a, set()))
    assert not loops, f"packages that import each other (through any path): {loops}"


def test_no_import_statement_names_a_corpus_module():
    """The registry finds the corpus modules by listing `corpora/`; a corpus that needs another names it in `uses`
    (and `cites`), and reads it through the registry."""
    assert "no import statement names a corpus module" in " ".join(ARCHITECTURE.read_text(encoding="utf-8").split())
    graph = _graph()
    declaring = {registry.corpus_of(c).parse.__module__ for c in registry.config_names()}
    corpus_of = {m: d for d in declaring for m in graph if m == d or m.startswith(d + ".")}  # a corpus package's parts
    assert {"cohbench.corpora.snac", "cohbench.corpora.snac.spans", "cohbench.corpora.timetravel"} <= set(corpus_of)
    named = sorted(f"{m} imports {t}" for m, targets in graph.items() for t in targets if t in corpus_of and corpus_of.get(m) != corpus_of[t])
    assert not named, named
    assert all(name in registry.corpora() for c in registry.corpora().values() for name in (*c.uses, *c.cites))


def test_the_corruption_engine_imports_nothing_above_the_ground():
    floors, graph = _declared_floors(), _graph()
    engine = {name for name, floor in floors.items() if name.startswith("cohbench.corruptions") and floor == 2}
    assert {"cohbench.corruptions", "cohbench.corruptions.recipes", "cohbench.corruptions.ray_engine"} <= engine
    for name in engine:
        above = {t for t in graph[name] if t not in engine and floors[t] > 1}
        assert not above, f"{name} imports {sorted(above)}"


def test_the_checker_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    from ..corpora import timetravel\n")
    known = {"cohbench.corpora", "cohbench.corpora.timetravel"}
    assert _imports("cohbench.corruptions.x", tree, False, known) == {"cohbench.corpora.timetravel"}


def _named(tree: ast.Module, configs: set[str], quoted: re.Pattern) -> set[str]:
    """The config names a module's strings hold whole, and the config or corpus names quoted inside its f-strings'
    text (a query such as f"... WHERE corpus = 'snac' ...")."""
    named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in configs}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            named |= {m for part in node.values if isinstance(part, ast.Constant) for m in quoted.findall(part.value)}
    return named


def _quoted(names) -> re.Pattern:
    return re.compile(r"""['"](""" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r""")['"]""")


def test_only_the_registry_and_the_corpus_modules_name_a_config_or_a_corpus():
    configs = set(registry.config_names())
    quoted = _quoted(configs | set(registry.corpora()))
    for name, (tree, _) in _modules().items():
        if name.startswith("cohbench.corpora"):
            continue
        named = _named(tree, configs, quoted)
        assert not named, f"{name} names {sorted(named)}; look them up in the registry instead"


def test_the_name_check_sees_a_corpus_inside_an_f_string():
    tree = ast.parse("""view = f"SELECT * FROM {source} WHERE corpus = 'snac' AND x = {x}"\nplain = 'summeval'\n""")
    assert _named(tree, {"summeval"}, _quoted({"snac", "summeval"})) == {"snac", "summeval"}


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
