"""Where cohbench reads and writes. Environment variables override the project's defaults.

- COHBENCH_ROOT     project root (default: the checkout this package is installed from, else the cwd)
- COHBENCH_RELEASE  release folder. Without it, the first of these that holds a release: <root>/cohbench (a
                    checkout), ./cohbench, then the user's data folder ($XDG_DATA_HOME/cohbench, default
                    ~/.local/share/cohbench) - the place for a release used from anywhere after `pip install`
- COHBENCH_RAW      local raw-file cache (default: <root>/raw)
- COHBENCH_MIRROR   mirror folder(s) laid out as HOST/URL-PATH, separated by os.pathsep
                    (default: `sources.mirror` in <root>/params.yaml)
- COHBENCH_NETWORK  set to 0 to never download; the default tries the network last
- COHBENCH_VALIDATION_DOCS  where `cohbench validate` writes great-expectations' HTML Data Docs (default: the
                    `validation-docs` cache below): regenerable and timestamped, so never inside the release
- COHBENCH_VERSIONS the declared config versions (default: `versions` in params.yaml, else <root>/catalog/versions)
- XDG_CACHE_HOME    the user's cache folder (default ~/.cache), where caches of other releases go (`cache_dir`)

Caches (what cohbench can make again: sentence splits, encoder embeddings, leaderboard results, training timings,
Data Docs) are placed by one rule, `cache_dir(kind, *sources)`: a command that reads only the project's own release
(<root>/cohbench, where <root> holds params.yaml) keeps them in <root>/.cache/<kind>, where the pipeline finds them;
a command pointed at any other release or folder (`--release`, `--train-data`, COHBENCH_RELEASE elsewhere, or run
outside a checkout) keeps them in $XDG_CACHE_HOME/cohbench/<kind>, so that it writes nothing into a checkout.

The catalog files a light command reads (`catalog_file`: the published figures) are the checkout's; the wheel ships a
copy of each beside the package (pyproject.toml's force-include), read where there is no checkout.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path


def project_root() -> Path:
    if os.environ.get("COHBENCH_ROOT"):
        return Path(os.environ["COHBENCH_ROOT"]).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "params.yaml").is_file():
        return checkout
    return Path.cwd()


_PARSED: dict[tuple, dict] = {}  # (path, size, mtime) -> params.yaml parsed: resolving many files asks for it per file


def params() -> dict:
    """params.yaml, parsed once per version of the file (an edited file is read again); a copy, for callers to keep."""
    path = project_root() / "params.yaml"
    if not path.is_file():
        return {}
    status = path.stat()
    key = (str(path), status.st_size, status.st_mtime_ns)
    if key not in _PARSED:
        _PARSED.clear()
        import yaml  # here, not at the top: a command that never reads params.yaml (`cohbench sql`) does not pay for it

        _PARSED[key] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return copy.deepcopy(_PARSED[key])


# Set, to the parent's pid, in the process a user's scorer runs in (`leaderboards.user_scorer`), which is given no release.
SCORER_PARENT = "COHBENCH_SCORER_PARENT"


def release_places() -> list[tuple[Path, str]]:
    """Where a release is looked for, in order, each with why it is looked at. In a scorer's own process, nowhere: a
    scorer scores the views it is sent, and `cohbench.load` there would hand it the labels."""
    if os.environ.get(SCORER_PARENT):
        from .errors import ReleaseError

        raise ReleaseError("a scorer's process is given no release: score the records the scorer is sent")
    if os.environ.get("COHBENCH_RELEASE"):
        return [(Path(os.environ["COHBENCH_RELEASE"]).resolve(), "COHBENCH_RELEASE")]
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    places = [
        (project_root() / "cohbench", "the project's release folder"),
        (Path.cwd() / "cohbench", "./cohbench"),
        (data_home / "cohbench", "the user's data folder"),
    ]
    unique = {}
    for path, why in places:
        unique.setdefault(path.resolve(), why)
    return list(unique.items())


def holds_release(path: Path) -> bool:
    return (path / "stats").is_dir() or (path / "manifest.json").is_file()


def release_dir() -> Path:
    """The release folder: COHBENCH_RELEASE, else the first of `release_places` that holds a release, else the
    first of them (where a build writes a new one)."""
    places = [path for path, _ in release_places()]
    return next((path for path in places if holds_release(path)), places[0])


def no_release_message(release: Path | None = None) -> str:
    """One line naming every place a release was looked for, and how to point at one."""
    places = [(release.resolve(), "the release argument")] if release else release_places()
    looked = "; ".join(f"{path} ({why})" for path, why in places)
    return f"no cohbench release found (looked in: {looked}); pass --release DIR (release= in Python) or set COHBENCH_RELEASE"


def raw_cache_dir() -> Path:
    return Path(os.environ.get("COHBENCH_RAW") or project_root() / "raw").resolve()


def versions_dir() -> Path:
    """Where each config's version is declared beside the fingerprint of its records (`release.versions`)."""
    configured = os.environ.get("COHBENCH_VERSIONS") or params().get("versions") or "catalog/versions"
    return (project_root() / configured).resolve()


def validation_docs_dir(release: Path | None = None) -> Path:
    return Path(os.environ.get("COHBENCH_VALIDATION_DOCS") or cache_dir("validation-docs", release or release_dir())).resolve()


CACHE_KINDS = ("embeddings", "sentences", "leaderboard", "timings", "validation-docs", "vocabulary")


def cache_dir(kind: str, *sources: Path) -> Path:
    """Where the cache `kind` goes for a command reading `sources` (the release, training folders; none: the release
    in use): the project's <root>/.cache/<kind> when every source is the project's own release, else the user's
    $XDG_CACHE_HOME/cohbench/<kind> (see the module's docstring)."""
    if kind not in CACHE_KINDS:
        raise ValueError(f"unknown cache {kind!r}; one of {', '.join(CACHE_KINDS)}")
    root = project_root()
    own = (root / "cohbench").resolve()
    read = [Path(source).expanduser().resolve() for source in sources] or [release_dir()]
    if (root / "params.yaml").is_file() and all(source == own for source in read):
        return root / ".cache" / kind
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser().resolve() / "cohbench" / kind


def caches_also_read(kind: str, *sources: Path) -> list[Path]:
    """Caches read beside `cache_dir(kind, *sources)` and never written: the checkout's own <root>/.cache/<kind> when
    one source is its release but the caches go elsewhere (`train --train-data` in a checkout finds the vectors its
    builds kept, which depend only on the sentence)."""
    root = project_root()
    own, checkout_cache = (root / "cohbench").resolve(), root / ".cache" / kind
    mine = cache_dir(kind, *sources)
    read = [Path(source).expanduser().resolve() for source in sources]
    return [checkout_cache] if mine != checkout_cache and own in read and checkout_cache.is_dir() else []


def catalog_dir() -> Path:
    return project_root() / "catalog"


PACKAGED_CATALOG = Path(__file__).resolve().parent / "catalog"  # where the wheel puts its copies of catalog files


def catalog_file(name: str) -> Path:
    """The catalog file `name` a light command reads: the checkout's (catalog/ under the project root), else the copy
    the installed wheel ships."""
    checkout = catalog_dir() / name
    return checkout if checkout.is_file() or not (PACKAGED_CATALOG / name).is_file() else PACKAGED_CATALOG / name


def mirror_dirs(configured: str | None = None) -> list[Path]:
    """The mirror folders: `configured` (a `--mirror`), else COHBENCH_MIRROR, else params.yaml's `sources.mirror`;
    relative ones from the project root."""
    configured = configured or os.environ.get("COHBENCH_MIRROR")
    if configured is None:
        configured = (params().get("sources") or {}).get("mirror") or ""
    root = project_root()
    return [(root / entry).resolve() for entry in configured.split(os.pathsep) if entry]


def network_allowed() -> bool:
    return os.environ.get("COHBENCH_NETWORK", "1") != "0"


def _reaches_device_files(path: Path) -> bool:
    """Whether `path`, or a link it leads through on its way to a file (`~/out -> /dev/stdout`), is under /dev or
    /proc: resolving the path would already have passed them to the file behind."""
    for _ in range(40):  # the kernel's own bound on links followed
        if path.parts[1:2] in (("dev",), ("proc",)):
            return True
        if not path.is_symlink():
            return False
        path = Path(os.path.normpath(path.parent / os.readlink(path)))
    return False


def user_output(path, release: Path | None = None) -> Path:
    """A file or folder a user named for cohbench to write, refused when it lies inside the release folder in use
    (`release`, else `release_dir()`) or
    inside any other release (a folder holding a release manifest.json beside its data/): a release changes only
    through `cohbench build`, `index`, `validate`, `train` and `gate`."""
    from .errors import CohbenchError

    try:
        given, target = Path(path).expanduser().absolute(), Path(path).expanduser().resolve()
    except (ValueError, RuntimeError) as error:  # a NUL byte in the name, a symlink loop
        raise CohbenchError(f"{path!r} is not a usable path ({error})") from None
    if _reaches_device_files(given):  # /dev/stdout resolves to the file stdout goes to, even one opened to append
        # to (>>): cohbench writes by replacing a file whole, so what the file held would be lost
        raise CohbenchError(f"refusing to write {path}: cohbench writes a new file and renames it into place, which "
                            "a device or process file cannot take; name a file (for stdout, leave out the output option)")
    release = Path(release).resolve() if release else release_dir()
    inside = next((folder for folder in (target, *target.parents) if folder == release or (
        (folder / "manifest.json").is_file() and (folder / "data").is_dir())), None)  # a web project's manifest.json is no release
    if inside is not None:
        raise CohbenchError(f"refusing to write {path}: it is inside the release folder {inside}; choose a path outside it")
    return target
