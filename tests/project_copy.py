"""A throwaway copy of the project's tracked files with DVC runnable in it, for pipeline tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cohbench import settings

ROOT = settings.project_root()


def tracked_copy(tmp_path: Path) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    copy = tmp_path / "project"
    for name in files:
        if not (ROOT / name).exists():  # deleted in the working tree, not yet committed
            continue
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    return copy


def dvc_runner(copy: Path):
    """`dvc(*args)` in `copy`, with this interpreter's `cohbench` on PATH and the copy as the project root."""
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"], "COHBENCH_ROOT": str(copy), "DVC_NO_ANALYTICS": "1"}
    for key in ("COHBENCH_RELEASE", "COHBENCH_RAW", "COHBENCH_VALIDATION_DOCS", "COHBENCH_VERSIONS"):
        env.pop(key, None)

    def dvc(*args, timeout: float | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([f"{bindir}/dvc", *args], cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)

    return dvc
