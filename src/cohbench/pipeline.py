"""The config lists of the DVC pipeline (`dvc.yaml`), generated from the registry so they are never kept by hand.

`dvc.yaml` builds each config in a `foreach` stage: `build` for configs parsed from their own corpus files,
`build_derived` for configs made with the corruption generators (those that declare typed options, read from
params.yaml's `incoherence:` block). `cohbench pipeline` rewrites those two `foreach:` mappings from the registry
and leaves the rest of the file as written; a test checks that the committed file is current.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import registry, settings
from .atomic import write_text
from .errors import CohbenchError

STAGES = ("build", "build_derived")


def stage_items() -> dict[str, dict[str, str]]:
    """stage -> {config: corpus module}, every registered config in exactly one stage."""
    items = {stage: {} for stage in STAGES}
    for config in registry.config_names():
        module = registry.corpus_of(config).parse.__module__.rsplit(".", 1)[-1]
        items["build" if registry.spec(config).options is None else "build_derived"][config] = module
    return items


def render(text: str) -> str:
    """`text` (a dvc.yaml) with the `foreach:` mapping of each build stage replaced by the registry's configs."""
    for stage, configs in stage_items().items():
        pattern = re.compile(rf"(\n  {stage}:\n(?:    #.*\n)*    foreach:\n)(?:      .*\n)*")
        if not pattern.search(text):
            raise CohbenchError(f"dvc.yaml has no `{stage}:` stage with a `foreach:` mapping; restore it from the repository")
        lines = "".join(f"      {config}: {{module: {module}}}\n" for config, module in configs.items())
        text = pattern.sub(lambda m: m.group(1) + lines, text, count=1)
    return text


def write(path: Path | None = None) -> bool:
    """Rewrite the config lists of `path` (default: the project's dvc.yaml); True when the file changed."""
    path = path or settings.project_root() / "dvc.yaml"
    if not path.is_file():
        raise CohbenchError(f"no dvc.yaml at {path}; run this in a cohbench checkout")
    text = path.read_text(encoding="utf-8")
    rendered = render(text)
    if rendered != text:
        write_text(path, rendered)
    return rendered != text
