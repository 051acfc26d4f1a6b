"""Releases you can get back: a git tag `vX.Y.Z` per release (in a clone without tags, the newest commit whose
manifest records that release), its data in a DVC remote (the release store).

The committed part of a release (card, manifest, stats, summaries, scores) is in git at the tag; its Parquet files
and the baseline's predictions are DVC outputs whose objects `cohbench push` (`make release`) sends to the store,
a local folder by default (`../cohbench-store` beside the checkout, `.dvc/config`; any DVC remote such as S3, GCS or
SSH with `dvc remote modify store url ...`). `cohbench publish TARGET` copies the data of chosen releases to another
remote: a folder (laid out as DVC's store, so that any web server can serve it as an HTTP remote) or any DVC remote URL.
`cohbench pull VERSION [--remote URL]` restores that release's exact bytes into a new folder and verifies every one
of them against its manifest before the folder appears; before it asks DVC, it checks that the remote is reachable
and holds the release's objects (regular files, for a folder), and that the disk has room for them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

from .. import settings
from ..atomic import atomic_dir, remove_orphans
from ..errors import ReleaseError
from .verify import verify

RELEASE_FOLDER = "cohbench"  # the release inside a checkout
DVC_OUTPUTS = ("data", "baseline/predictions")  # what the store holds; the rest of a release is in git
REMOTE = "cohbench-remote"  # the name a remote given by URL has for DVC (never written into the checkout)
TAG = re.compile(r"^v?(\d+\.\d+\.\d+)$")


def _tool(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not found:
        extra = " (pip install 'cohbench[pipeline]')" if name == "dvc" else ""
        raise ReleaseError(f"`cohbench pull`/`push` needs {name}, which is not installed{extra}")
    return found


def _run(repo: Path, *args: str, what: str, shown: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git or dvc; a failure is one line naming `what`, with each path of `shown` (a temporary folder) replaced by
    the one the user knows."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_TERMINAL_PROMPT": "0"}
    run = subprocess.run([_tool(args[0]), *args[1:]], cwd=repo, capture_output=True, env=env)
    if run.returncode != 0:
        detail = next((line.strip() for line in run.stderr.decode("utf-8", "replace").splitlines()[::-1]
                       if line.strip() and not line.startswith("Having any troubles")), "no message")
        for hidden, known in (shown or {}).items():
            detail = detail.replace(hidden, known)
        if "[Errno 28]" in detail or "No space left on device" in detail:  # DVC calls a full disk "unexpected"
            raise ReleaseError(f"{what} failed: no space left on the device; free some space, or write elsewhere")
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


def pull(version: str, out: Path, repo: Path | None = None, remote: str | None = None) -> dict:
    """Restore release `version` into `out` (new or empty): git's part at its revision, the data from `remote` (a URL
    or folder; default: the configured store), every file checked against the manifest before `out` appears. Returns
    what was restored."""
    repo = repository(repo)
    version, revision = revision_of(repo, version)
    tag = f"v{version}"
    target = settings.user_output(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ReleaseError(f"{out} exists and is not empty; pull into a new or empty folder")
    url = _remote_url(repo, remote)
    outputs = _outputs_at(repo, revision)
    _check_remote(url, outputs, version)
    remove_orphans(target.parent)  # what a killed pull left there
    with _terminated_as_exit(), atomic_dir(target) as tmp, tempfile.TemporaryDirectory(prefix="cohbench-remote-") as config:
        _committed_part(repo, revision, tmp)
        if not (tmp / "manifest.json").is_file():
            raise ReleaseError(f"{tag} holds no release manifest (cohbench/manifest.json); it is not a release tag")
        _check_room(tmp, outputs, out)
        # the remote just checked, named in a config file of its own (`dvc get --remote-config url=` would merge the
        # URL into the store's local-folder settings, which an http remote refuses)
        Path(config, "config").write_text(f'[remote "{REMOTE}"]\n    url = {url}\n', encoding="utf-8")
        for output in outputs:
            _run(repo, "dvc", "get", str(repo), f"{RELEASE_FOLDER}/{output}", "--rev", revision, "-o", str(tmp / output), "--force",
                 "--config", str(Path(config, "config")), "--remote", REMOTE, shown={str(tmp): str(out)},
                 what=f"getting {output} of {tag} from {url}")
        checked = verify(tmp, raw=False)
        bad = [r for r in checked["files"] if not r["ok"]]
        if bad:
            where = Path(bad[0]["path"]).relative_to(tmp).as_posix() if Path(bad[0]["path"]).is_relative_to(tmp) else bad[0]["path"]
            raise ReleaseError(f"{url} gave a damaged copy of {tag}: {len(bad)} file(s) do not match the release manifest, e.g. "
                               f"{where} ({bad[0]['problem'].replace(str(tmp), str(out))}); nothing was written")
    return {"release": version, "revision": revision, "path": str(target), "files": len(checked["files"]), "remote": url}


def _outputs_at(repo: Path, revision: str) -> dict[str, dict]:
    """The release's DVC outputs at `revision` (an older release may have no baseline predictions): output -> its
    entry in dvc.lock or its .dvc file (md5 of the folder's listing, size)."""
    import yaml

    found = {}
    lock = subprocess.run([_tool("git"), "show", f"{revision}:dvc.lock"], cwd=repo, capture_output=True)
    stages = (yaml.safe_load(lock.stdout) or {}).get("stages", {}) if lock.returncode == 0 else {}
    for stage in stages.values():
        for entry in stage.get("outs", []):
            found[entry["path"]] = entry
    for output in DVC_OUTPUTS:
        pointer = subprocess.run([_tool("git"), "show", f"{revision}:{RELEASE_FOLDER}/{output}.dvc"], cwd=repo, capture_output=True)
        if pointer.returncode == 0:
            found[f"{RELEASE_FOLDER}/{output}"] = (yaml.safe_load(pointer.stdout) or {}).get("outs", [{}])[0]
    return {output: found[f"{RELEASE_FOLDER}/{output}"] for output in DVC_OUTPUTS if f"{RELEASE_FOLDER}/{output}" in found}


def _remote_url(repo: Path, remote: str | None) -> str:
    """A remote given as a URL (kept) or a folder (made absolute); default: the url of the configured store, a relative
    folder there being relative to .dvc/."""
    if remote is None:
        name = _run(repo, "dvc", "config", "core.remote", what="finding the release store (`dvc remote add -d store PATH` sets one)").stdout.decode().strip()
        remote = _run(repo, "dvc", "config", f"remote.{name}.url", what="finding the release store").stdout.decode().strip()
        return remote if "://" in remote or Path(remote).is_absolute() else str((repo / ".dvc" / remote).resolve())
    return remote if "://" in remote else str(Path(remote).expanduser().resolve())


def _object(folder: str, md5: str) -> str:
    return f"{folder.rstrip('/')}/files/md5/{md5[:2]}/{md5[2:]}"


def _check_remote(url: str, outputs: dict[str, dict], version: str) -> None:
    """One line saying which, before DVC is asked: the remote cannot be reached, does not hold the release, or holds
    a damaged object. A folder's objects must be regular files (a FIFO would hang the copy); over HTTP, each output's
    listing must be there."""
    from urllib.error import HTTPError, URLError
    from urllib.request import Request, urlopen

    for output, entry in outputs.items():
        listing = _object(url, entry["md5"])
        if url.startswith(("http://", "https://")):
            try:
                urlopen(Request(listing, method="HEAD"), timeout=30).close()
            except HTTPError as error:
                if error.code == 404:
                    raise ReleaseError(f"the remote {url} does not hold release {version} (no {output} listing {entry['md5']}); "
                                       "publish it there with `cohbench publish`") from None
                raise ReleaseError(f"the remote {url} refused {output} of release {version} (HTTP {error.code})") from None
            except (URLError, OSError) as error:
                raise ReleaseError(f"the remote {url} cannot be reached ({getattr(error, 'reason', error)})") from None
        elif "://" not in url:
            if not Path(url).is_dir():
                raise ReleaseError(f"the release store {url} does not exist; give the remote that holds the release with --remote URL")
            members = [(output, entry["md5"])]
            members += [(f"{output}/{m.get('relpath')}", m.get("md5", "")) for m in _listing(Path(listing), output, version, url)]
            for what, md5 in members:
                path = Path(_object(url, md5))
                if not path.exists():
                    raise ReleaseError(f"the release store {url} does not hold release {version} ({what} is missing); "
                                       "push it there with `cohbench push` or `cohbench publish`")
                if not path.is_file():
                    raise ReleaseError(f"the release store {url} holds a damaged object for {what} of release {version} "
                                       f"({path} is not a regular file)")


def _listing(path: Path, output: str, version: str, url: str) -> list[dict]:
    """A folder's DVC listing (a JSON list of {md5, relpath}), refused in one line when it is not one."""
    if not path.is_file():
        return []  # missing or not a file: the caller says which
    try:
        members = json.loads(path.read_bytes()[:64 << 20])
        if isinstance(members, list) and all(isinstance(m, dict) and isinstance(m.get("md5"), str) for m in members):
            return members
    except (ValueError, RecursionError):
        pass
    raise ReleaseError(f"the release store {url} holds a damaged object for {output} of release {version} ({path} is not a DVC listing)")


def _check_room(folder: Path, outputs: dict[str, dict], out: Path) -> None:
    """The data's recorded size against the free space where it goes (after git's part is written there)."""
    needed = sum(int(entry.get("size") or 0) for entry in outputs.values())
    probe = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise ReleaseError(f"not enough space for {out}: the release's data needs {needed / 1e6:.1f} MB and {probe} has "
                           f"{free / 1e6:.1f} MB free; free some space or pull elsewhere")


@contextlib.contextmanager
def _terminated_as_exit():
    """SIGTERM ends the pull like Ctrl-C does, through the clean-up of its temporary folder (SIGKILL cannot be caught:
    the next pull beside it removes what it left)."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def push(repo: Path | None = None) -> dict:
    """Send the built release's DVC outputs to the store (the default remote); a local store must be writable."""
    repo = repository(repo)
    location = _remote_url(repo, None)
    if "://" not in location:
        _check_writable(Path(location))
    pushed = _run(repo, "dvc", "push", what=f"pushing the release to the store {location}").stdout.decode()
    return {"store": location, "dvc": pushed.strip().splitlines()[-1] if pushed.strip() else ""}


def _check_writable(folder: Path) -> None:
    probe = folder if folder.exists() else next((p for p in folder.parents if p.exists()), folder)
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise ReleaseError(f"the release store {folder} is not writable; make it writable, or point the store elsewhere "
                           "with `dvc remote modify store url PATH`")


PUBLISH = """import json, sys
from dvc.repo import Repo
repo_path, url, revisions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
repo = Repo(repo_path, config={"remote": {"cohbench-remote": {"url": url}}})
repo.fetch(revs=revisions, workspace=False)  # what the local cache lacks, from the configured store
print(repo.push(remote="cohbench-remote", revs=revisions, workspace=False))
"""


def publish(target: str, versions: list[str] | None = None, repo: Path | None = None) -> dict:
    """Copy the data of `versions` (default: every release the checkout knows) to `target`: a folder, laid out as a DVC
    store that any web server can serve (`pull --remote http://HOST/PATH`), or any DVC remote URL. A folder's objects
    are then checked against their md5 names."""
    repo = repository(repo)
    known = releases(repo)
    chosen = [revision_of(repo, v)[0] for v in versions] if versions else list(known)
    if not chosen:
        raise ReleaseError(f"{repo} holds no release to publish; build and commit one first (make release)")
    url = target if "://" in target else str(settings.user_output(target))
    if "://" not in url:
        if Path(url).exists() and not Path(url).is_dir():
            raise ReleaseError(f"{target} exists and is not a folder; publish into a new folder or a DVC store")
        _check_writable(Path(url))
    python = Path(_tool("dvc")).parent / "python"
    revisions = [known[v] for v in chosen]
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    run = subprocess.run([str(python if python.exists() else sys.executable), "-c", PUBLISH, str(repo), url, json.dumps(revisions)],
                         cwd=repo, capture_output=True, env=env)
    if run.returncode != 0:
        detail = next((line for line in run.stderr.decode("utf-8", "replace").splitlines()[::-1] if line.strip()), "no message")
        raise ReleaseError(f"publishing {', '.join(chosen)} to {url} failed ({detail.strip()[:300]}); the configured store "
                           "must hold what this checkout's DVC cache lacks")
    checked = 0
    if "://" not in url:
        for version, revision in zip(chosen, revisions):
            outputs = _outputs_at(repo, revision)
            _check_remote(url, outputs, version)
            checked += _check_md5(url, outputs, version)
    last = (run.stdout.decode().strip().splitlines() or ["0"])[-1]  # the count push returned, printed last
    return {"remote": url, "releases": dict(zip(chosen, revisions)), "objects_pushed": int(last) if last.isdigit() else 0,
            "objects_checked": checked}


def _check_md5(url: str, outputs: dict[str, dict], version: str) -> int:
    """Every object of the releases' outputs in the folder `url` against the md5 it is named by."""
    count = 0
    for output, entry in outputs.items():
        for what, md5 in [(output, entry["md5"])] + [(f"{output}/{m['relpath']}", m["md5"])
                                                     for m in _listing(Path(_object(url, entry["md5"])), output, version, url)]:
            digest = hashlib.md5()
            with open(_object(url, md5), "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            if digest.hexdigest() != md5.removesuffix(".dir"):
                raise ReleaseError(f"the published copy of {what} of release {version} in {url} is damaged (md5 {digest.hexdigest()})")
            count += 1
    return count


def releases_with(config: str, version: str, repo: Path | None = None) -> list[str]:
    """The releases whose manifest records `config` at `version`: where a user gets that version back."""
    try:
        repo = repository(repo)
        return [release for release, revision in releases(repo).items()
                if ((_manifest_at(repo, revision) or {}).get("configs") or {}).get(config, {}).get("version") == version]
    except ReleaseError:
        return []
