"""The import graph and the config names, read from the source (AST, imports inside functions included):
`generators/` stands on its own, and only the registry and the corpus modules name a config."""

from __future__ import annotations

import ast
from pathlib import Path

import cohbench
from cohbench import registry

PACKAGE = Path(cohbench.__file__).parent


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = (ast.parse(path.read_text(encoding="utf-8")), path.name == "__init__.py")
    return out


def _imports(name: str, tree: ast.Module, is_package: bool) -> set[str]:
    """Absolute names of every cohbench module `name` imports, anywhere in its body."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = f"{base}.{node.module}" if node.level and node.module else (node.module if not node.level else base)
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}  # `from . import x` imports module x
    return {m for m in found if m == "cohbench" or m.startswith("cohbench.")}


def test_generators_import_nothing_above_them():
    modules = _modules()
    # the floor they stand on: the schema, errors and text utilities, which import no other cohbench module
    allowed = ("cohbench.generators", "cohbench.schema", "cohbench.errors", "cohbench.text")
    for name, (tree, is_package) in modules.items():
        if not name.startswith("cohbench.generators"):
            continue
        above = {m for m in _imports(name, tree, is_package) if m in modules and not m.startswith(allowed)}
        assert not above, f"{name} imports {sorted(above)}"


def test_the_checker_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    from ..builders import timetravel\n")
    assert "cohbench.builders.timetravel" in _imports("cohbench.generators.x", tree, False)


# The baseline still keys Cai et al.'s published figures and its SNaC handling by config name; issue 13 moves it
# onto the registry (`registry.spec(config).task` / `.protocol`). Remove this exemption with that change.
def test_only_the_registry_and_the_corpus_modules_name_a_config():
    configs = set(registry.config_names())
    for name, (tree, _) in _modules().items():
        if name == "cohbench.registry" or name.startswith("cohbench.builders"):
            continue
        named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in configs}
        assert not named, f"{name} names config(s) {sorted(named)}; look them up in the registry instead"
