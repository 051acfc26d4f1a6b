"""Releases you can get back: a git tag `vX.Y.Z` per release (in a clone without tags, the newest commit whose
manifest records that release), its data in a DVC remote (the release store).

The committed part of a release (card, manifest, stats, summaries, scores) is in git at the tag; its Parquet files
and the baseline's predictions are DVC outputs whose objects `cohbench push` (`make release`) sends to the store,
a local folder by default (`../cohbench-store` beside the checkout, `.dvc/config`; any DVC remote such as S3, GCS or
SSH with `dvc remote modify store url ...`). `cohbench pull VERSION` restores that release's exact bytes into a new
folder and verifies every one of them against its manifest before the folder appears.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from .. import settings
from ..atomic import atomic_dir
from ..errors import ReleaseError
from .verify import verify

RELEASE_FOLDER = "cohbench"  # the release inside a checkout
DVC_OUTPUTS = ("data", "baseline/predictions")  # what the store holds; the rest of a release is in git
TAG = re.compile(r"^v?(\d+\.\d+\.\d+)$")


def _tool(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not found:
        extra = " (pip install 'cohbench[pipeline]')" if name == "dvc" else ""
        raise ReleaseError(f"`cohbench pull`/`push` needs {name}, which is not installed{extra}")
    return found


def _run(repo: Path, *args: str, what: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_TERMINAL_PROMPT": "0"}
    run = subprocess.run([_tool(args[0]), *args[1:]], cwd=repo, capture_output=True, env=env)
    if run.returncode != 0:
        detail = next((line.strip() for line in run.stderr.decode("utf-8", "replace").splitlines()[::-1]
                       if line.strip() and not line.startswith("Having any troubles")), "no message")
        raise ReleaseError(f"{what} failed ({args[0]}: {detail[:300]})")
    return run


def repository(repo: Path | None = None) -> Path:
    """The git checkout whose tags name the releases (default: this project)."""
    repo = Path(repo or settings.project_root()).resolve()
    if not (repo / ".git").exists() or not (repo / ".dvc").is_dir():
        raise ReleaseError(f"{repo} is not a cohbench checkout with git and DVC; run this in one, or give --repo")
    return repo


def tags(repo: Path) -> list[str]:
    listed = _run(repo, "git", "tag", "--list", "v*", what="listing the release tags").stdout.decode().split()
    return sorted((t for t in listed if TAG.match(t)), key=_version_key)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(map(int, TAG.match(name).group(1).split(".")))


def _manifest_at(repo: Path, revision: str) -> dict | None:
    shown = subprocess.run([_tool("git"), "show", f"{revision}:{RELEASE_FOLDER}/manifest.json"], cwd=repo, capture_output=True)
    try:
        return json.loads(shown.stdout) if shown.returncode == 0 else None
    except ValueError:
        return None


def releases(repo: Path) -> dict[str, str]:
    """Release version -> the git revision that holds it: its tag `vX.Y.Z`; for a version no tag names (a clone made
    without tags, a submission whose tags did not travel), the newest commit of the checked-out history whose release
    manifest records that version with every config at a declared version (no development build)."""
    found = {TAG.match(tag).group(1): tag for tag in tags(repo)}
    history = _run(repo, "git", "log", "--format=%H", "--", f"{RELEASE_FOLDER}/manifest.json", what="reading the release history").stdout
    for commit in history.decode().split():
        manifest = _manifest_at(repo, commit) or {}
        version, configs = manifest.get("cohbench_version"), manifest.get("configs") or {}
        if isinstance(version, str) and TAG.match(version) and version not in found and configs and all(
                isinstance(c, dict) and "+" not in str(c.get("version", "+")) for c in configs.values()):
            found[version] = commit
    return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))


def revision_of(repo: Path, version: str) -> tuple[str, str]:
    """The release `version` (`0.2.0` or `v0.2.0`) as (its version X.Y.Z, the git revision holding it); an error
    listing the releases there are."""
    match = TAG.match(version.strip())
    if not match:
        raise ReleaseError(f"{version!r} is not a release version; give X.Y.Z (e.g. 0.2.0) or its tag vX.Y.Z")
    known = releases(repo)
    if match.group(1) not in known:
        raise ReleaseError(f"there is no release v{match.group(1)} in {repo} (releases: {', '.join(known) or 'none'}); "
                           "`git fetch --tags` gets the tags of the repository you cloned")
    return match.group(1), known[match.group(1)]


def _committed_part(repo: Path, tag: str, target: Path) -> None:
    archive = _run(repo, "git", "archive", "--format=tar", tag, RELEASE_FOLDER, what=f"reading {tag} from git").stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = []
        for member in tar.getmembers():
            name = Path(member.name)
            if name.parts[:1] != (RELEASE_FOLDER,) or len(name.parts) == 1 or name.suffix == ".dvc":
                continue  # outside the release, or DVC's pointer to data the store gives
            member.name = Path(*name.parts[1:]).as_posix()
            members.append(member)
        tar.extractall(target, members=members, filter="data")  # no links, no paths outside the target


def pull(version: str, out: Path, repo: Path | None = None) -> dict:
    """Restore release `version` into `out` (new or empty): git's part at its revision, the data from the store, every file
    checked against the manifest before `out` appears. Returns what was restored."""
    repo = repository(repo)
    version, revision = revision_of(repo, version)
    tag = f"v{version}"
    target = settings.user_output(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ReleaseError(f"{out} exists and is not empty; pull into a new or empty folder")
    with atomic_dir(target) as tmp:
        _committed_part(repo, revision, tmp)
        if not (tmp / "manifest.json").is_file():
            raise ReleaseError(f"{tag} holds no release manifest (cohbench/manifest.json); it is not a release tag")
        for output in DVC_OUTPUTS:
            if _in_pipeline(repo, revision, output):
                _run(repo, "dvc", "get", str(repo), f"{RELEASE_FOLDER}/{output}", "--rev", revision, "-o", str(tmp / output), "--force",
                     what=f"getting {output} of {tag} from the release store (push it with `cohbench push` on the machine "
                          "that built it; `dvc remote list` shows where the store is)")
        checked = verify(tmp, raw=False)
        bad = [r for r in checked["files"] if not r["ok"]]
        if bad:
            raise ReleaseError(f"the restored {tag} does not match its manifest ({len(bad)} file(s), e.g. {bad[0]['path']}: "
                               f"{bad[0]['problem']}); nothing was written")
    return {"release": version, "revision": revision, "path": str(target), "files": len(checked["files"])}


def _in_pipeline(repo: Path, tag: str, output: str) -> bool:
    """Whether the release at `tag` tracks `output` with DVC (an older release may have no baseline predictions)."""
    lock = subprocess.run([_tool("git"), "show", f"{tag}:dvc.lock"], cwd=repo, capture_output=True)
    tracked = subprocess.run([_tool("git"), "ls-tree", "-r", "--name-only", tag, f"{RELEASE_FOLDER}/{output}.dvc"], cwd=repo,
                             capture_output=True)
    path = f"{RELEASE_FOLDER}/{output}"
    return (lock.returncode == 0 and f"path: {path}" in lock.stdout.decode()) or bool(tracked.stdout.strip())


def push(repo: Path | None = None) -> dict:
    """Send the built release's DVC outputs to the store (the default remote); a local store must be writable."""
    repo = repository(repo)
    remote = _run(repo, "dvc", "config", "core.remote", what="finding the release store (`dvc remote add -d store PATH` sets one)").stdout.decode().strip()
    location = _run(repo, "dvc", "config", f"remote.{remote}.url", what="finding the release store").stdout.decode().strip()
    if location and "://" not in location:  # a local folder: relative paths are relative to .dvc/
        folder = (repo / ".dvc" / location).resolve() if not Path(location).is_absolute() else Path(location)
        probe = folder if folder.exists() else next((p for p in folder.parents if p.exists()), folder)
        if not probe.is_dir() or not os.access(probe, os.W_OK):
            raise ReleaseError(f"the release store {folder} is not writable; make it writable, or point the store elsewhere "
                               "with `dvc remote modify store url PATH`")
    pushed = _run(repo, "dvc", "push", what=f"pushing the release to the store {location or remote}").stdout.decode()
    return {"store": location or remote, "dvc": pushed.strip().splitlines()[-1] if pushed.strip() else ""}


def releases_with(config: str, version: str, repo: Path | None = None) -> list[str]:
    """The releases whose manifest records `config` at `version`: where a user gets that version back."""
    try:
        repo = repository(repo)
        return [release for release, revision in releases(repo).items()
                if ((_manifest_at(repo, revision) or {}).get("configs") or {}).get(config, {}).get("version") == version]
    except ReleaseError:
        return []
