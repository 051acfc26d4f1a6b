"""The DVC pipeline (`dvc.yaml`), generated whole by `cohbench pipeline` so that no dependency list is kept by hand.

Each stage is declared once below (`STAGES`, plus one build stage per registered config) with its command, the
modules it runs, its data dependencies, parameters and outputs. Its code dependencies are the source files of those
modules and of every cohbench module they import, anywhere in their bodies (read from the source, not run), and the
package data they read: a corpus's checksum table (`pinned("<corpus>")`) and files named beside a module
(`Path(__file__).with_name("<file>")`). So a build stage depends on exactly what building its config uses, and a
corpus added to the registry gets its own stage with its own dependencies. A test checks that the committed
`dvc.yaml` is what this renders.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from .corpora import registry
from . import settings
from .atomic import write_text
from .errors import CohbenchError

PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Stage:
    name: str
    comment: str
    cmd: str
    modules: tuple[str, ...]  # the cohbench modules the command runs
    deps: tuple[str, ...] = ()  # data and folders it reads, besides code
    params: tuple[str, ...] = ()
    outs: tuple = ()
    metrics: tuple = ()


def _not_cached(path: str) -> dict:
    return {path: {"cache": False}}


# The stages after the builds, in the order they run. The CLI pins the float32 code path (`numerics`) of a training command.
STAGES = (
    Stage("report", "Agreement and distribution statistics of every built config, beside the papers' figures, with plots.",
          "cohbench report", ("cohbench.statistics.report",), deps=("cohbench/data", "cohbench/stats", "catalog/versions", "catalog/published.yaml"),
          outs=(_not_cached("catalog/stats"),)),
    Stage("validate", "great-expectations suites per config + release-wide leakage; fails (non-zero) on any failed check.",
          "cohbench validate", ("cohbench.validation",),
          deps=("cohbench/data", "cohbench/stats", "${validation.expected}", "catalog/versions"),
          params=("validation",), outs=(_not_cached("cohbench/validation"),)),
    Stage("train", "The bundled baseline, trained on the release's train splits and scored on every applicable config.",
          "cohbench train", ("cohbench.baseline.release_baseline", "cohbench.numerics"),
          deps=("cohbench/data", "cohbench/validation/release.json", "catalog/published.yaml"),
          params=tuple(f"baseline.{key}" for key in (
              "train_configs", "max_train_records", "max_sentences", "d_model", "layers", "heads", "dropout",
              "learning_rate", "weight_decay", "batch_size", "epochs", "seed")),
          outs=("cohbench/baseline/predictions", _not_cached("cohbench/baseline/metrics.md")),
          metrics=(_not_cached("cohbench/baseline/metrics.json"),)),
    Stage("gate", "Fails the release unless the baseline clears the floors of params.yaml (baseline.floors) and its "
          "paired-bootstrap margin over the best reference scorer (baseline.margin_over_references), listing the "
          "configs it cannot validate with their reasons (baseline.not_validated).",
          "cohbench gate", ("cohbench.baseline.gate",),
          deps=("cohbench/data", "cohbench/baseline/metrics.json", "cohbench/baseline/predictions"),
          params=("baseline.floors", "baseline.margin_over_references", "baseline.not_validated"),
          outs=(_not_cached("cohbench/baseline/gate.json"),)),
    Stage("release", "The card, croissant.json and the manifest, which hashes every shipped file: written last.",
          "cohbench index", ("cohbench.release.index",),
          deps=("cohbench/stats", "cohbench/validation", "cohbench/baseline/gate.json", "cohbench/baseline/metrics.md",
                "cohbench/baseline/metrics.json", "cohbench/baseline/predictions", "catalog/cards", "catalog/versions"),
          outs=tuple(_not_cached(f"cohbench/{name}") for name in ("README.md", "manifest.json", "croissant.json"))),
)


def fetch_stage() -> Stage:
    # every corpus's files into one cache keyed by URL (raw/HOST/URL-PATH): a shared file is stored once
    return Stage("fetch", "Every corpus's upstream files into one cache keyed by URL (raw/HOST/URL-PATH), verified.",
                 "cohbench fetch", ("cohbench.corpora.fetch", *(f"cohbench.corpora.{m}" for m in corpus_modules())),
                 outs=("raw",))


def build_stage(config: str) -> Stage:
    spec = registry.spec(config)
    modules = dict.fromkeys(corpus.parse.__module__ for corpus in registry.corpus_of(config).used_corpora())
    kind = "made with the corruption generators (options: params.yaml `incoherence`)" if spec.options else "parsed from its corpus's files"
    return Stage(f"build_{config}", f"{config}: {kind}.", f"cohbench build {config} --no-index",
                 ("cohbench.release.build", *modules), deps=("raw",),
                 params=("incoherence",) if spec.options else (),
                 outs=(f"cohbench/data/{config}",), metrics=(_not_cached(f"cohbench/stats/{config}.json"),))


def corpus_modules() -> list[str]:
    return sorted({registry.corpus_of(config).parse.__module__.rsplit(".", 1)[-1] for config in registry.config_names()})


def stages() -> list[Stage]:
    return [fetch_stage(), *(build_stage(config) for config in registry.config_names()), *STAGES]


# --- code dependencies, read from the source ---------------------------------------------------------------


def _source(module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.is_file() else (PACKAGE / relative).with_suffix(".py")


@functools.cache
def _direct(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """The cohbench modules `module` imports anywhere in its body, and the package data files it names."""
    path = _source(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    # Importing any module runs `cohbench/__init__.py`, the Python API, whose functions (`cohbench.load`, ...) are entry
    # points of their own: only its top-level statements run with it.
    nodes = [n for top in tree.body if not isinstance(top, ast.FunctionDef) for n in ast.walk(top)] if module == "cohbench" else ast.walk(tree)
    modules, data = set(), set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            name = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            modules.add(name)
            modules |= {f"{name}.{alias.name}" for alias in node.names}  # `from . import x` imports module x
        elif isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called == "pinned":
                data.add(PACKAGE / "corpora" / f"{node.args[0].value}.tsv")
            elif called == "with_name" and Path(node.args[0].value).suffix:
                data.add(path.with_name(node.args[0].value))
    known = {m for m in modules if m.startswith("cohbench") and _source(m).is_file()}
    return frozenset(known - {module}), frozenset(data)


def code_dependencies(modules) -> list[str]:
    """Source files (relative to the project root) of `modules` and of every cohbench module they import, with the
    package data those read; each package's `__init__.py` too, since importing a module runs it."""
    seen, todo, data = set(), list(modules), set()
    while todo:
        module = todo.pop()
        parts = module.split(".")
        parents = [".".join(parts[:n]) for n in range(2, len(parts))]  # cohbench/__init__ itself is the face
        for name in [module, *parents]:
            if name not in seen:
                seen.add(name)
                imported, files = _direct(name)
                todo += imported
                data |= files
    root = settings.project_root()
    paths = {_source(m) for m in seen} | data
    return sorted(p.resolve().relative_to(root).as_posix() for p in paths)


# --- dvc.yaml ------------------------------------------------------------------------------------------------

HEADER = """\
# Generated by `cohbench pipeline` from src/cohbench/pipeline.py and the registry: edit those, not this file.
# fetch (resolve + verify + errata) -> build per config -> statistics, validation, baseline, gate -> card and manifest.
# Each stage's code dependencies are the modules it runs and every cohbench module they import."""


def render() -> str:
    blocks = [HEADER, "stages:"]
    for stage in stages():
        body = {"cmd": stage.cmd, "deps": [*stage.deps, *code_dependencies(stage.modules)]}
        for key in ("params", "outs", "metrics"):
            if getattr(stage, key):
                body[key] = list(getattr(stage, key))
        text = yaml.safe_dump({stage.name: body}, sort_keys=False, width=120, default_flow_style=False)
        blocks.append(f"  # {stage.comment}\n" + "".join(f"  {line}\n" for line in text.splitlines()).rstrip("\n"))
    return "\n".join(blocks) + "\n"


def write(path: Path | None = None) -> bool:
    """Rewrite `path` (default: the project's dvc.yaml); True when the file changed."""
    path = path or settings.project_root() / "dvc.yaml"
    if not path.parent.is_dir() or not (path.parent / "pyproject.toml").is_file():
        raise CohbenchError(f"{path.parent} is not a cohbench checkout; run `cohbench pipeline` in one")
    rendered = render()
    changed = not path.is_file() or path.read_text(encoding="utf-8") != rendered
    if changed:
        write_text(path, rendered)
    return changed
