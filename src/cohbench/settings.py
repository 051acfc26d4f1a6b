"""Where cohbench reads and writes. Environment variables override the project's defaults.

- COHBENCH_ROOT     project root (default: the checkout this package is installed from, else the cwd)
- COHBENCH_RELEASE  release folder (default: <root>/cohbench)
- COHBENCH_RAW      local raw-file cache (default: <root>/raw)
- COHBENCH_MIRROR   mirror folder(s) laid out as HOST/URL-PATH, separated by os.pathsep
                    (default: `sources.mirror` in <root>/params.yaml)
- COHBENCH_NETWORK  set to 0 to never download; the default tries the network last
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml


def project_root() -> Path:
    if os.environ.get("COHBENCH_ROOT"):
        return Path(os.environ["COHBENCH_ROOT"]).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "params.yaml").is_file():
        return checkout
    return Path.cwd()


def params() -> dict:
    path = project_root() / "params.yaml"
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def release_dir() -> Path:
    return Path(os.environ.get("COHBENCH_RELEASE") or project_root() / "cohbench").resolve()


def raw_cache_dir() -> Path:
    return Path(os.environ.get("COHBENCH_RAW") or project_root() / "raw").resolve()


def catalog_dir() -> Path:
    return project_root() / "catalog"


def mirror_dirs() -> list[Path]:
    configured = os.environ.get("COHBENCH_MIRROR")
    if configured is None:
        configured = (params().get("sources") or {}).get("mirror") or ""
    root = project_root()
    return [(root / entry).resolve() for entry in configured.split(os.pathsep) if entry]


def network_allowed() -> bool:
    return os.environ.get("COHBENCH_NETWORK", "1") != "0"


def user_output(path) -> Path:
    """A file or folder a user named for cohbench to write, refused when it lies inside the release folder
    (the release changes only through `cohbench build`, `index` and `validate`)."""
    from .errors import CohbenchError

    target = Path(path).expanduser().resolve()
    release = release_dir()
    if target == release or release in target.parents:
        raise CohbenchError(f"refusing to write {path}: it is inside the release folder {release}; choose a path outside it")
    return target
