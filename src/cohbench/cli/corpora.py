"""Commands about the corpora: what is registered and built, fetching upstream files, building and indexing configs,
their schema and how to cite them."""

from __future__ import annotations

import sys

from .. import settings
from ..errors import CohbenchError
from .command import argument, command, emit, release_of


MIRROR = argument("--mirror", help="mirror folder laid out as HOST/URL-PATH (overrides COHBENCH_MIRROR)")


def _mirrors(args) -> list | None:
    """The mirror folders `--mirror` names (relative ones from the project root, as COHBENCH_MIRROR's), if given."""
    return settings.mirror_dirs(args.mirror) if args.mirror else None


@command("list", "configs with their versions, licences and built row counts")
def cmd_list(args) -> int:
    from ..release.load import list_configs

    rows = list_configs(release_of(args))
    table = [("config", "version", "rows", "licence")] + [
        (row["config"], row["version"], ", ".join(f"{s} {n}" for s, n in row["rows"].items()) if row["built"] else "not built",
         row["licence"] + (f" (derived from {', '.join(row['derived_from'])})" if row.get("derived_from") else "")) for row in rows]
    widths = [max(len(cells[k]) for cells in table) for k in range(3)]  # columns as wide as their longest cell
    lines = [" ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + " " + cells[3] for cells in table]
    given = release_of(args)
    release = given.resolve() if given else settings.release_dir()
    lines.append(f"release folder: {release}" if settings.holds_release(release) else settings.no_release_message(given))
    emit(args, rows, lines)
    return 0


@command("fetch", "resolve and verify upstream files (cache, then mirror, then network)",
         argument("names", nargs="*", help="corpora or configs (default: all)"),
         MIRROR,
         argument("--register-checksums", action="store_true",
                  help="hash each file the corpus's checksum table declares and write its size and sha256 there"))
def cmd_fetch(args) -> int:
    from ..corpora.fetch import fetch
    from ..corpora.registry import config_names, corpus_of, lookup

    if args.register_checksums:  # before any corpus module is imported: those refuse unregistered rows
        return _register_checksums(args, args.names)
    names = args.names or sorted({corpus_of(c).name for c in config_names()})
    out = {}
    for name in names:
        corpus = lookup(name)
        print(f"fetching {corpus.name} ({len(corpus.inputs)} file(s))", file=sys.stderr)
        out[corpus.name] = {source: str(path) for source, path in fetch(corpus, mirrors=_mirrors(args), progress=not args.json).items()}
    emit(args, out, [f"{c}: {s} -> {p}" for c, paths in out.items() for s, p in paths.items()])
    return 0


def _register_checksums(args, corpora: list[str]) -> int:
    from ..corpora import CHECKSUMS, checksum_table
    from ..corpora.sources import register_checksums

    known = sorted(p.stem for p in CHECKSUMS.glob("*.tsv"))
    for corpus in corpora:
        if corpus not in known:
            raise CohbenchError(f"no checksum table for {corpus!r} in {CHECKSUMS}; corpora with one: {', '.join(known)}")
    out = {corpus: register_checksums(checksum_table(corpus), mirrors=_mirrors(args)) for corpus in corpora or known}
    emit(args, out, [f"{c}: {len(urls)} pin(s) changed" + "".join(f"\n  {u}" for u in urls) for c, urls in out.items()])
    return 0


@command("build", "build configs into the release folder",
         argument("configs", nargs="*"),
         argument("--all", action="store_true", help="build every registered config"),
         MIRROR,
         argument("--no-index", action="store_true", help="do not rewrite README.md and manifest.json"))
def cmd_build(args) -> int:
    from ..corpora.fetch import fetch
    from ..release.build import build
    from ..release.index import write_index
    from ..corpora.registry import config_names, corpus_of

    configs = config_names() if args.all else args.configs
    if not configs:
        raise CohbenchError("name at least one config to build, or pass --all")
    for config in configs:
        corpus_of(config)  # every name is checked before any work starts
    results = {}
    for config in configs:
        print(f"building {config}", file=sys.stderr)
        paths = fetch(corpus_of(config), mirrors=_mirrors(args), progress=not args.json)
        results[config] = build(config, release=release_of(args), paths=paths, progress=not args.json)
    if not args.no_index:
        write_index(release_of(args))
    lines = []
    for config, stats in results.items():
        rows = ", ".join(f"{s} {f['rows']}" for s, f in stats["files"].items())
        lines.append(f"{config}: {rows} ({stats['upstream_records']} upstream records, dropped {dict(stats['dropped']) or 'none'})")
    emit(args, results, lines)
    return 0


@command("index", "rewrite the release card and manifest from the configs built")
def cmd_index(args) -> int:
    from ..release.index import write_index
    from ..release.layout import built_configs

    write_index(release_of(args))
    configs = sorted(built_configs(release_of(args)))
    emit(args, configs, [f"wrote the card and manifest for {len(configs)} config(s): {', '.join(configs)}"])
    return 0


@command("cite", "print the BibTeX to cite for configs (their corpora's papers and cohbench)",
         argument("configs", nargs="*", help="configs (default: cohbench itself)"))
def cmd_cite(args) -> int:
    from ..corpora.registry import corpus_of
    from ..release.card import cohbench_citation, citation
    from ..release.layout import built_configs, require_release
    from ..release.versions import provenance

    for config in args.configs:
        corpus_of(config)  # every name is checked before anything is printed
    if args.release:  # a release named must be there, or the citation would say no config's version
        release, built = require_release(release_of(args))
    else:  # the release in use, if any: the versions of the configs built there
        release = settings.release_dir()
        built = built_configs(release)
    data = provenance(release, built)
    text = "\n".join(citation(config, data) for config in args.configs) if args.configs else cohbench_citation(data["release"]) + "\n"
    emit(args, {"bibtex": text}, [text.rstrip()])
    return 0


@command("schema", "print the schema documentation (catalog/SCHEMA.md)")
def cmd_schema(args) -> int:
    from ..schema import schema_markdown

    print(schema_markdown(), end="")
    return 0


COMMANDS = (cmd_list, cmd_fetch, cmd_build, cmd_index, cmd_cite, cmd_schema)
