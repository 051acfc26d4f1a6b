"""Commands about a release as a whole: checking it (verify, version, validate), comparing two (diff), storing and
getting one back (push, publish, pull), a shareable copy (export) and the DVC pipeline that builds it."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import settings
from .._version import __version__
from ..errors import CohbenchError
from .command import argument, command, emit, release_of


REPO = "the cohbench checkout (default: this one)"


@command("export", "write a shareable copy of the release (research-only configs left out)",
         argument("target", help="a new or empty folder"),
         argument("--include-research-only", action="store_true", help="also copy research-only configs"))
def cmd_export(args) -> int:
    from ..export import export

    result = export(Path(args.target), include_research_only=args.include_research_only, release=release_of(args))
    lines = [f"exported {len(result['configs'])} config(s) to {result['target']}: {', '.join(result['configs'])}"]
    if result["left_out_research_only"]:
        lines.append(f"left out (research only): {', '.join(result['left_out_research_only'])}; "
                     "pass --include-research-only to include them")
    emit(args, result, lines)
    return 0


@command("verify", "re-check every release file (and, where a raw cache exists, every upstream file) against its recorded sha256",
         argument("--quiet", action="store_true", help="print only the files that fail and the summary"))
def cmd_verify(args) -> int:
    from ..release.verify import verify

    result = verify(release_of(args))
    results, bad = result["files"], [r for r in result["files"] if not r["ok"]]
    lines = [f"{'ok' if r['ok'] else 'FAILED'}  {r['kind']:<8} {r['path']}" + (f"  ({r['problem']})" if r["problem"] else "")
             for r in (bad if args.quiet else results)]
    lines.append(f"{len(results) - len(bad)} of {len(results)} files match their recorded sha256")
    lines += [f"not checked: {what}" for what in result["not_checked"]]
    emit(args, result, lines)
    return 0 if result["ok"] else 1


@command("version", "whether each built config's records are its declared version (catalog/versions/), and which part must move if not",
         argument("configs", nargs="*", help="configs (default: every built config)"),
         argument("--record", action="store_true", help="declare the built records as each config's next version (the part the change requires)"))
def cmd_version(args) -> int:
    from ..release import versions
    from ..release.layout import require_release

    release, built = require_release(release_of(args))
    names = args.configs or sorted(built)
    unbuilt = [c for c in names if c not in built]
    if unbuilt:
        raise CohbenchError(f"config {unbuilt[0]!r} is not built in {release}; built: {', '.join(built)}")
    decide = versions.record if args.record else versions.check
    verdicts = [decide(name, built[name], tables=versions.records_of(release, name, built[name])) for name in names]
    lines = []
    for v in verdicts:
        if args.record and not v.ok:
            lines.append(f"{v.config}: declared {v.next} ({v.bump}: {'; '.join(v.reasons)}) in {settings.versions_dir() / v.config}.json; "
                         "review the diff, and describe the change in CHANGELOG.md (`cohbench diff OLD NEW --markdown` summarises it)")
        else:
            lines.append(v.line)
    payload = {"release": __version__, "configs": {v.config: {"declared": v.declared, "built": v.built, "bump": v.bump, "next": v.next,
                                                               "reasons": list(v.reasons), "recorded": bool(args.record and not v.ok)}
                                                   for v in verdicts}}
    emit(args, payload, lines)
    return 0 if args.record or all(v.ok for v in verdicts) else 1


def _release_at(spec: str, scratch: Path, repo: str | None) -> Path:
    """A release folder to read: `spec` itself when it is a folder, else the release of that version, pulled from the
    store of `repo` (default: this checkout) into `scratch`."""
    from ..release.store import TAG, pull

    if Path(spec).is_dir():
        return Path(spec)
    if not TAG.match(spec):
        raise CohbenchError(f"{spec} is neither a release folder nor a version X.Y.Z (or tag vX.Y.Z)")
    return Path(pull(spec, scratch / spec, repo=repo)["path"])


@command("diff", "how two releases differ, config by config, row by row (exit 1 when they differ or a side fails the release's checks)",
         argument("old", help="a release folder, or a release version (X.Y.Z) the release store holds"),
         argument("new", help="a release folder, or a release version"),
         argument("--config", action="append", help="only this config (repeatable)"),
         argument("--markdown", action="store_true", help="a changelog summary (Markdown table)"),
         argument("--repo", help="the cohbench checkout whose tags and store give a version (default: this one)"))
def cmd_diff(args) -> int:
    import tempfile

    from ..release.diff import diff, markdown, text_lines

    with tempfile.TemporaryDirectory(prefix="cohbench-diff-") as scratch:
        old = _release_at(args.old, Path(scratch), args.repo)
        same_version = not Path(args.old).is_dir() and args.new.removeprefix("v") == args.old.removeprefix("v")  # pulled once
        new = old if same_version else _release_at(args.new, Path(scratch), args.repo)
        result = diff(old, new, args.config or None)
        result["old"]["path"], result["new"]["path"] = args.old, args.new
    if args.markdown and not args.json:
        print(markdown(result), end="")
    else:
        emit(args, result, text_lines(result))
    return 0 if result["equal"] and not (result["old"]["failed"] or result["new"]["failed"]) else 1


@command("pull", "restore a tagged release's exact bytes from the release store into a new folder",
         argument("version", help="release version X.Y.Z (or tag vX.Y.Z)"),
         argument("--out", help="a new or empty folder (default: ./cohbench-VERSION)"),
         argument("--repo", help="the cohbench checkout whose tags and store to use (default: this one)"),
         argument("--remote", help="where the data is: an http(s):// URL serving a published folder, any DVC remote URL, or a folder "
                  "(default: the release store of .dvc/config)"))
def cmd_pull(args) -> int:
    from ..release.store import pull

    result = pull(args.version, Path(args.out or f"cohbench-{args.version.removeprefix('v')}"), repo=args.repo, remote=args.remote)
    received = f", {result['bytes_received'] / 1e6:.1f} MB received" if result["bytes_received"] is not None else ""
    emit(args, result, [f"restored cohbench {result['release']} ({result['files']} files, each matching its manifest{received}) "
                         f"from {result['remote']} into {result['path']}; use it with --release {result['path']}"])
    return 0


@command("publish", "copy releases' data to a folder any web server can serve, or to any DVC remote URL",
         argument("target", help="a folder (laid out as a DVC store) or a DVC remote URL (s3://, ssh://, ...)"),
         argument("versions", nargs="*", help="release versions X.Y.Z (default: every release this checkout knows)"),
         argument("--repo", help=REPO))
def cmd_publish(args) -> int:
    from ..release.store import publish

    result = publish(args.target, args.versions, repo=args.repo)
    damaged = result["damaged_replaced"]
    emit(args, result, ([f"sent again {len(damaged)} damaged object(s) the folder held: {', '.join(damaged)}"] if damaged else []) + [
        f"published {', '.join(result['releases'])} to {result['remote']} ({result['objects_pushed']} object(s) sent, "
        f"{result['objects_checked']} checked); users get one with `cohbench pull VERSION --remote URL` where URL serves it"])
    return 0


@command("push", "send the built release's data to the release store (the DVC remote `store`)",
         argument("--repo", help=REPO))
def cmd_push(args) -> int:
    from ..release.store import push

    result = push(repo=args.repo)
    emit(args, result, [f"pushed the release's data to the store {result['store']}: {result['dvc'] or 'nothing new'}"])
    return 0


@command("validate", "check the release with great-expectations; one verdict line per config",
         argument("configs", nargs="*", help="configs to check (default: every built config)"),
         argument("--record-expected", action="store_true", help="snapshot the configs' statistics into the expected-statistics folder (validation.expected, default catalog/expected/)"),
         argument("--no-docs", action="store_true", help="skip the HTML Data Docs (written to COHBENCH_VALIDATION_DOCS, default: the release's cache, .cache/validation-docs of the project's own)"))
def cmd_validate(args) -> int:
    from ..validation import record_expected, validate

    if args.record_expected:
        if not args.configs:
            raise CohbenchError("name the config(s) whose expected statistics to record")
        paths = [str(record_expected(config, release=release_of(args))) for config in args.configs]
        emit(args, paths, [f"recorded {p}; review the diff and commit it" for p in paths])
        return 0
    print("validating the release with great-expectations", file=sys.stderr)
    report = validate(args.configs or None, release=release_of(args), docs=not args.no_docs)
    verdicts = [*report["configs"].values(), report["release"]]
    emit(args, report, [v["line"] for v in verdicts])
    return 0 if report["ok"] else 1


@command("pipeline", "rewrite dvc.yaml: a build stage per registered config, every stage depending on the code it runs")
def cmd_pipeline(args) -> int:
    from ..pipeline import write

    changed = write()
    emit(args, {"changed": changed}, ["rewrote dvc.yaml from the stage declarations (cohbench.pipeline) and the registry" if changed else "dvc.yaml is current"])
    return 0


COMMANDS = (cmd_export, cmd_verify, cmd_version, cmd_diff, cmd_pull, cmd_publish, cmd_push, cmd_validate, cmd_pipeline)
