"""Releases you can get back: a git tag `vX.Y.Z` per release (in a clone without tags, the newest commit whose
manifest records that release), its data in a DVC remote (the release store).

The committed part of a release (card, manifest, stats, summaries, scores) is in git at the tag; its Parquet files
(one DVC output per config) and the baseline's predictions are DVC outputs whose objects `cohbench push` (`make
release`) sends to the store,
a local folder by default (`../cohbench-store` beside the checkout, `.dvc/config`; any DVC remote such as S3, GCS or
SSH with `dvc remote modify store url ...`). `cohbench publish TARGET` copies the data of chosen releases to another
remote: a folder (laid out as DVC's store, so that any web server can serve it as an HTTP remote) or any DVC remote URL,
reading the checkout without writing into it (DVC on each release's revision, with a temporary cache).
`cohbench pull VERSION [--remote URL]` restores that release's exact bytes into a new folder and verifies every one
of them against its manifest before the folder appears. Over HTTP it asks for each object itself, within bounds a
hostile server cannot stretch (`http_remote`); from a folder it first checks that the store holds every object as a
regular file, then DVC copies them, as it does from any other DVC remote. Either way the disk must have room first.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import posixpath
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import settings
from ..atomic import atomic_dir, remove_orphans
from ..errors import ReleaseError
from .http_remote import download
from .store_objects import check_folder, check_md5, in_folder, remove_damaged
from .verify import verify
from .versions import is_development

RELEASE_FOLDER = "cohbench"  # the release inside a checkout
TAG = re.compile(r"^v?(\d+\.\d+\.\d+)$")


def _tool(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not found:
        extra = " (pip install 'cohbench[pipeline]')" if name == "dvc" else ""
        raise ReleaseError(f"`cohbench pull`/`push` needs {name}, which is not installed{extra}")
    return found


def _dvc_python() -> str:
    """The Python DVC runs in (it may be installed apart from cohbench, e.g. by pipx), for its Python API."""
    python = Path(_tool("dvc")).parent / "python"
    return str(python if python.exists() else sys.executable)


def _dies_with(parent: int):
    """For a child process: killed when cohbench dies, even by SIGKILL, so that no DVC copy goes on writing into a
    temporary folder or a remote after the command that started it is gone (Linux's PR_SET_PDEATHSIG)."""
    def arrange() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # cohbench died before the request took hold
            os._exit(1)
    return arrange


def _run(repo: Path, *args: str, what: str, shown: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git, dvc or a script in DVC's Python ("python"); a failure is one line naming `what`, with each path of
    `shown` (a temporary folder) replaced by the one the user knows."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_TERMINAL_PROMPT": "0"}
    run = subprocess.run([_dvc_python() if args[0] == "python" else _tool(args[0]), *args[1:]], cwd=repo, capture_output=True, env=env,
                         preexec_fn=_dies_with(os.getpid()) if sys.platform.startswith("linux") else None)
    if run.returncode != 0:
        detail = next((line.strip() for line in run.stderr.decode("utf-8", "replace").splitlines()[::-1]
                       if line.strip() and not line.startswith("Having any troubles")), "no message")
        for hidden, known in (shown or {}).items():
            detail = detail.replace(hidden, known)
        if "[Errno 28]" in detail or "No space left on device" in detail:  # DVC calls a full disk "unexpected"
            raise ReleaseError(f"{what} failed: no space left on the device; free some space, or write elsewhere")
        raise ReleaseError(f"{what} failed ({'dvc' if args[0] == 'python' else args[0]}: {detail[:300]})")
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
    manifest records that version with every config at a declared version (no development build) and at the version
    CHANGELOG.md's entry for the release names it (`released_configs`): records rebuilt after a release, before the
    package moved on, are not that release."""
    found = {TAG.match(tag).group(1): tag for tag in tags(repo)}
    named = released_configs(repo)
    history = _run(repo, "git", "log", "--format=%H", "--", f"{RELEASE_FOLDER}/manifest.json", what="reading the release history").stdout
    for commit in history.decode().split():
        manifest = _manifest_at(repo, commit) or {}
        version, configs = manifest.get("cohbench_version"), manifest.get("configs") or {}
        if isinstance(version, str) and TAG.match(version) and version not in found and configs and all(
                isinstance(c, dict) and not is_development(str(c.get("version", "+"))) for c in configs.values()) and all(
                isinstance(configs.get(config), dict) and configs[config].get("version") == at
                for config, at in named.get(version, {}).items()):
            found[version] = commit
    return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))


CHANGELOG_ENTRY = re.compile(r"^## (\d+\.\d+\.\d+)\b", re.MULTILINE)
CONFIGS_LINE = re.compile(r"^Configs:(.*?)(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)
CONFIG_AT = re.compile(r"`([a-z0-9_]+)` (\d+\.\d+\.\d+)")


def released_configs(repo: Path) -> dict[str, dict[str, str]]:
    """Release version -> {config: its version} as the checkout's CHANGELOG.md names them, on the `Configs:` line of
    each `## X.Y.Z` entry (an entry without one, or no CHANGELOG.md, names none)."""
    try:
        text = (repo / "CHANGELOG.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    heads = list(CHANGELOG_ENTRY.finditer(text))
    named = {}
    for n, head in enumerate(heads):
        body = text[head.end() : heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        line = CONFIGS_LINE.search(body)
        if line:
            named[head.group(1)] = dict(CONFIG_AT.findall(line.group(1)))
    return named


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


# The release's outputs at a revision, from the remote `url` (a folder, S3, ...), in one DVC process (a `dvc get` each costs seconds of
# start-up per config). The remote is named in a config of its own, never written into the checkout (`dvc get
# --remote-config url=` would merge the URL into the store's local-folder settings, which an http remote refuses).
PULL = """import sys
from dvc.api import DVCFileSystem
repo, revision, url, folder, target, *outputs = sys.argv[1:]
fs = DVCFileSystem(repo, rev=revision, config={"remote": {"cohbench-remote": {"url": url}}}, remote="cohbench-remote")
for output in outputs:
    try:
        fs.get(f"{folder}/{output}", f"{target}/{output}", recursive=True)
    except FileNotFoundError as error:  # DVC: "No storage files available: 'cohbench/data/snac/test.parquet'"
        sys.exit(f"the remote holds no object for {str(error.filename).removeprefix(folder + '/')}")
"""


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
    over_http = url.startswith(("http://", "https://"))
    if "://" not in url:
        check_folder(url, outputs, version)
    remove_orphans(target.parent, of=target.name)  # what a killed pull of this folder left there
    with atomic_dir(target) as tmp:
        _committed_part(repo, revision, tmp)
        if not (tmp / "manifest.json").is_file():
            raise ReleaseError(f"{tag} holds no release manifest (cohbench/manifest.json); it is not a release tag")
        _check_room(tmp, outputs, out)
        received = None  # bytes over HTTP; a folder or DVC remote is copied by DVC, which does not say
        if outputs and over_http:
            received = download(url, outputs, version, tmp)
        elif outputs:
            _run(repo, "python", "-c", PULL, str(repo), revision, url, RELEASE_FOLDER, str(tmp), *outputs,
                 shown={str(tmp): str(out)}, what=f"getting the data of {tag} from {url}")
        checked = verify(tmp, raw=False)
        bad = [r for r in checked["files"] if not r["ok"]]
        if bad:
            where = Path(bad[0]["path"]).relative_to(tmp).as_posix() if Path(bad[0]["path"]).is_relative_to(tmp) else bad[0]["path"]
            problem = "missing" if bad[0]["problem"].startswith("missing") else bad[0]["problem"].replace(str(tmp), str(out))
            raise ReleaseError(f"{url} gave a damaged copy of {tag}: {len(bad)} file(s) do not match the release manifest, e.g. "
                               f"{where} ({problem}); the remote's copy is damaged: publish {version} there again (`cohbench "
                               f"publish TARGET {version}`; `cohbench push` for the builder's own store); nothing was written")
    return {"release": version, "revision": revision, "path": str(target), "files": len(checked["files"]), "remote": url,
            "bytes_received": received}


def _outputs_at(repo: Path, revision: str) -> dict[str, dict]:
    """The release's DVC outputs at `revision`, by path in the release (`data/snac`, `baseline/predictions`): each
    one's entry in dvc.lock or in a .dvc file (md5 of the file or of a folder's listing, size). Outputs git holds
    (`cache: false`: stats, card, manifest) are not in the store, and neither is anything outside the release."""
    import yaml

    def at_revision(path: str):
        shown = subprocess.run([_tool("git"), "show", f"{revision}:{path}"], cwd=repo, capture_output=True)
        return (yaml.safe_load(shown.stdout) or {}) if shown.returncode == 0 else {}

    committed = _run(repo, "git", "ls-tree", "-r", "--name-only", revision, "--", RELEASE_FOLDER,
                     what=f"listing the release at {revision}").stdout.decode().splitlines()
    found = {}
    # dvc.lock keeps the entries of stages dvc.yaml no longer has (a renamed stage's old md5), so only the declared
    # stages count; a foreach stage's entries are NAME@KEY
    declared = at_revision("dvc.yaml").get("stages") or {}
    for name, stage in (at_revision("dvc.lock").get("stages") or {}).items():
        if name.split("@")[0] in declared:
            found.update((entry["path"], entry) for entry in stage.get("outs") or [])
    uncached = {path for stage in declared.values() if isinstance(stage, dict) for kind in ("outs", "metrics", "plots")
                for item in stage.get(kind) or [] if isinstance(item, dict)
                for path, flags in item.items() if isinstance(flags, dict) and flags.get("cache") is False}
    for pointer in (p for p in committed if p.endswith(".dvc")):  # `dvc add` (an older layout: cohbench/data.dvc)
        for entry in at_revision(pointer).get("outs") or []:
            found[posixpath.normpath(posixpath.join(posixpath.dirname(pointer), entry["path"]))] = entry
    return {path.removeprefix(f"{RELEASE_FOLDER}/"): entry for path, entry in sorted(found.items())
            if path.startswith(f"{RELEASE_FOLDER}/") and "md5" in entry and path not in uncached
            and not any(c == path or c.startswith(f"{path}/") for c in committed)}


def _remote_url(repo: Path, remote: str | None) -> str:
    """A remote given as a URL (kept) or a folder (made absolute); default: the url of the configured store, a relative
    folder there being relative to .dvc/."""
    if remote is None:
        name = _run(repo, "dvc", "config", "core.remote", what="finding the release store (`dvc remote add -d store PATH` sets one)").stdout.decode().strip()
        remote = _run(repo, "dvc", "config", f"remote.{name}.url", what="finding the release store").stdout.decode().strip()
        return remote if "://" in remote or Path(remote).is_absolute() else str((repo / ".dvc" / remote).resolve())
    remote = _without_file_scheme(remote)
    return remote if "://" in remote else str(Path(remote).expanduser().resolve())


def _without_file_scheme(location: str) -> str:
    """A folder written as a URL (file:///srv/store) as its path: DVC calls such a remote an unexpected error."""
    return unquote(urlsplit(location).path) if location.startswith("file://") else location


def _check_room(folder: Path, outputs: dict[str, dict], out: Path) -> None:
    """The data's recorded size against the free space where it goes (after git's part is written there)."""
    needed = sum(int(entry.get("size") or 0) for entry in outputs.values())
    probe = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise ReleaseError(f"not enough space for {out}: the release's data needs {needed / 1e6:.1f} MB and {probe} has "
                           f"{free / 1e6:.1f} MB free; free some space or pull elsewhere")


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


# Each release read from git at its revision into a temporary DVC cache, so that nothing is written into the checkout:
# DVC opened on a working tree takes a lock in its .dvc/tmp and fetches into its .dvc/cache. The checkout's settings
# (its store, with the credentials of config.local) are read from its files, its relative paths resolved there, and its
# own DVC cache is read as a remote for what the store lacks (a release built here and not yet pushed).
PUBLISH = """import json, os, sys
from dvc.config import Config
from dvc.exceptions import DownloadError
from dvc.repo import Repo
repo_path, step, url, cache, plan = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])  # plan: [[revision, [output, ...]], ...]
checkout = Config(dvc_dir=os.path.join(repo_path, ".dvc"))
own_cache = checkout["cache"].get("dir") or os.path.join(repo_path, ".dvc", "cache")
config = {"remote": {**checkout["remote"], "cohbench-remote": {"url": url}, "cohbench-checkout-cache": {"url": own_cache}},
          "cache": {"dir": cache}, "core": {k: v for k, v in checkout["core"].items() if k == "remote"}}
pushed = 0
for revision, outputs in plan:
    repo = Repo(repo_path, rev=revision, config=config)
    if step == "fetch":  # from the store, then from the checkout's cache; the caller then sees what is still missing
        for source in ([None] if "remote" in config["core"] else []) + (["cohbench-checkout-cache"] if os.path.isdir(own_cache) else []):
            try:
                repo.fetch(targets=outputs, revs=[revision], workspace=False, remote=source)
            except DownloadError:
                pass
    else:  # only the releases' own outputs: not the upstream files (raw/) nor other commits' data
        pushed += repo.push(targets=outputs, remote="cohbench-remote", revs=[revision], workspace=False)
print(pushed)
"""


def publish(target: str, versions: list[str] | None = None, repo: Path | None = None) -> dict:
    """Copy the data of `versions` (default: every release the checkout knows) to `target`: a folder, laid out as a DVC
    store that any web server can serve (`pull --remote http://HOST/PATH`), or any DVC remote URL. Only the releases'
    own objects are sent, after checking that the builder's store (or DVC cache) holds every one of them; a folder's
    objects are then checked against their md5 names."""
    repo = repository(repo)
    known = releases(repo)
    chosen = [revision_of(repo, v)[0] for v in versions] if versions else list(known)
    if not chosen:
        raise ReleaseError(f"{repo} holds no release to publish; build and commit one first (make release)")
    target = _without_file_scheme(target)
    url = target if "://" in target else str(settings.user_output(target))
    if "://" not in url:
        if Path(url).exists() and not Path(url).is_dir():
            raise ReleaseError(f"{target} exists and is not a folder; publish into a new folder or a DVC store")
        _check_writable(Path(url))
    outputs = {version: _outputs_at(repo, known[version]) for version in chosen}
    plan = json.dumps([[known[v], [f"{RELEASE_FOLDER}/{o}" for o in outputs[v]]] for v in chosen if outputs[v]])
    what = f"publishing {', '.join(chosen)} to {url}"
    with tempfile.TemporaryDirectory(prefix="cohbench-publish-") as cache:
        _run(repo, "python", "-c", PUBLISH, str(repo), "fetch", url, cache, plan, what=what)
        fetched = {version: in_folder(cache, outputs[version], version, "the release store or this checkout's DVC cache") for version in chosen}
        for version in chosen:  # DVC would send a partial release without a word: say which release the store lacks first
            for where, _, path in fetched[version]:
                if not path.is_file():
                    others = "" if versions else ", or name the releases to publish (`cohbench publish TARGET VERSION ...`)"
                    raise ReleaseError(f"the release store {_remote_url(repo, None)} does not hold release {version} ({where} is "
                                       f"missing, and so is this checkout's DVC cache); push it there from the checkout that built "
                                       f"it (`cohbench push`){others}")
        # an object a folder already holds is skipped by the push, damaged or not: removed here, it is sent again
        replaced = [what for v in chosen for what in remove_damaged(url, fetched[v])] if "://" not in url and Path(url).is_dir() else []
        pushed = _run(repo, "python", "-c", PUBLISH, str(repo), "push", url, cache, plan, what=what).stdout.decode().strip().splitlines()
    checked = 0
    if "://" not in url:
        for version in chosen:
            check_folder(url, outputs[version], version)
            checked += check_md5(url, outputs[version], version)
    return {"remote": url, "releases": {v: known[v] for v in chosen}, "objects_pushed": int(pushed[-1]) if pushed and pushed[-1].isdigit() else 0,
            "objects_checked": checked, "damaged_replaced": replaced}


def releases_with(config: str, version: str, repo: Path | None = None) -> list[str]:
    """The releases whose manifest records `config` at `version`: where a user gets that version back."""
    try:
        repo = repository(repo)
        return [release for release, revision in releases(repo).items()
                if ((_manifest_at(repo, revision) or {}).get("configs") or {}).get(config, {}).get("version") == version]
    except ReleaseError:
        return []
