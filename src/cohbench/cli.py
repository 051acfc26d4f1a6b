"""`cohbench` command line. Errors are one line on stderr and a non-zero exit; figures go to stdout,
as JSON with --json; progress goes to stderr."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from . import jsonout, settings
from .display import coefficient, percent
from ._version import __version__
from .errors import CohbenchError


def _emit(args, payload, lines) -> None:
    if args.json:
        print(jsonout.dumps(payload, indent=2, sort_keys=True))
    else:
        print("\n".join(lines))


def cmd_list(args) -> int:
    from .release.load import list_configs

    rows = list_configs()
    lines = [f"{'config':<22} {'version':<8} {'rows':<32} licence"]
    for row in rows:
        counts = ", ".join(f"{s} {n}" for s, n in row["rows"].items()) if row["built"] else "not built"
        lines.append(f"{row['config']:<22} {row['version']:<8} {counts:<32} {row['licence']}")
    release = settings.release_dir()
    lines.append(f"release folder: {release}" if settings.holds_release(release) else settings.no_release_message())
    _emit(args, rows, lines)
    return 0


def cmd_fetch(args) -> int:
    from .fetch import fetch
    from .registry import config_names, corpus_of, lookup

    if args.register_checksums:  # before any corpus module is imported: those refuse unregistered rows
        return _register_checksums(args, args.names)
    names = args.names or sorted({corpus_of(c).name for c in config_names()})
    out = {}
    for name in names:
        corpus = lookup(name)
        print(f"fetching {corpus.name} ({len(corpus.sources)} file(s))", file=sys.stderr)
        out[corpus.name] = {source: str(path) for source, path in fetch(corpus, progress=not args.json).items()}
    _emit(args, out, [f"{c}: {s} -> {p}" for c, paths in out.items() for s, p in paths.items()])
    return 0


def _register_checksums(args, corpora: list[str]) -> int:
    from .builders import CHECKSUMS, checksum_table
    from .sources import register_checksums

    known = sorted(p.stem for p in CHECKSUMS.glob("*.tsv"))
    for corpus in corpora:
        if corpus not in known:
            raise CohbenchError(f"no checksum table for {corpus!r} in {CHECKSUMS}; corpora with one: {', '.join(known)}")
    out = {corpus: register_checksums(checksum_table(corpus)) for corpus in corpora or known}
    _emit(args, out, [f"{c}: {len(urls)} pin(s) changed" + "".join(f"\n  {u}" for u in urls) for c, urls in out.items()])
    return 0


def cmd_build(args) -> int:
    from .release.build import build
    from .release.index import write_index
    from .registry import config_names, corpus_of

    configs = config_names() if args.all else args.configs
    if not configs:
        raise CohbenchError("name at least one config to build, or pass --all")
    for config in configs:
        corpus_of(config)  # every name is checked before any work starts
    results = {}
    for config in configs:
        print(f"building {config}", file=sys.stderr)
        results[config] = build(config, progress=not args.json)
    if not args.no_index:
        write_index()
    lines = []
    for config, stats in results.items():
        rows = ", ".join(f"{s} {f['rows']}" for s, f in stats["files"].items())
        lines.append(f"{config}: {rows} ({stats['upstream_records']} upstream records, dropped {dict(stats['dropped']) or 'none'})")
    _emit(args, results, lines)
    return 0


def cmd_index(args) -> int:
    from .release.index import write_index
    from .release.layout import built_configs

    write_index()
    configs = sorted(built_configs())
    _emit(args, configs, [f"wrote the card and manifest for {len(configs)} config(s): {', '.join(configs)}"])
    return 0


def cmd_verify(args) -> int:
    from .release.verify import verify

    result = verify()
    results, bad = result["files"], [r for r in result["files"] if not r["ok"]]
    lines = [f"{'ok' if r['ok'] else 'FAILED'}  {r['kind']:<8} {r['path']}" + (f"  ({r['problem']})" if r["problem"] else "")
             for r in (bad if args.quiet else results)]
    lines.append(f"{len(results) - len(bad)} of {len(results)} files match their recorded sha256")
    lines += [f"not checked: {what}" for what in result["not_checked"]]
    _emit(args, result, lines)
    return 0 if result["ok"] else 1


def cmd_version(args) -> int:
    from .release import versions
    from .release.layout import require_release

    release, built = require_release()
    names = args.configs or sorted(built)
    unbuilt = [c for c in names if c not in built]
    if unbuilt:
        raise CohbenchError(f"config {unbuilt[0]!r} is not built in {release}; built: {', '.join(built)}")
    verdicts = [(versions.record if args.record else versions.check)(name, versions.of_records(release, name, built[name])) for name in names]
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
    _emit(args, payload, lines)
    return 0 if args.record or all(v.ok for v in verdicts) else 1


def _release_at(spec: str, scratch: Path, repo: str | None) -> Path:
    """A release folder to read: `spec` itself when it is a folder, else the release of that version, pulled from the
    store of `repo` (default: this checkout) into `scratch`."""
    from .release.store import TAG, pull

    if Path(spec).is_dir():
        return Path(spec)
    if not TAG.match(spec):
        raise CohbenchError(f"{spec} is neither a release folder nor a version X.Y.Z (or tag vX.Y.Z)")
    return Path(pull(spec, scratch / spec, repo=repo)["path"])


def cmd_diff(args) -> int:
    import tempfile

    from .release.diff import diff, markdown, text_lines

    with tempfile.TemporaryDirectory(prefix="cohbench-diff-") as scratch:
        old = _release_at(args.old, Path(scratch), args.repo)
        same_version = not Path(args.old).is_dir() and args.new.removeprefix("v") == args.old.removeprefix("v")  # pulled once
        new = old if same_version else _release_at(args.new, Path(scratch), args.repo)
        result = diff(old, new, args.config or None)
        result["old"]["path"], result["new"]["path"] = args.old, args.new
    if args.markdown and not args.json:
        print(markdown(result), end="")
    else:
        _emit(args, result, text_lines(result))
    return 0 if result["equal"] and not (result["old"]["failed"] or result["new"]["failed"]) else 1


def cmd_pull(args) -> int:
    from .release.store import pull

    result = pull(args.version, Path(args.out or f"cohbench-{args.version.removeprefix('v')}"), repo=args.repo, remote=args.remote)
    _emit(args, result, [f"restored cohbench {result['release']} ({result['files']} files, each matching its manifest) from "
                         f"{result['remote']} into {result['path']}; use it with --release {result['path']}"])
    return 0


def cmd_publish(args) -> int:
    from .release.store import publish

    result = publish(args.target, args.versions, repo=args.repo)
    _emit(args, result, [f"published {', '.join(result['releases'])} to {result['remote']} ({result['objects_pushed']} object(s) sent, "
                         f"{result['objects_checked']} checked); users get one with `cohbench pull VERSION --remote URL` where URL serves it"])
    return 0


def cmd_derive(args) -> int:
    from .derive import derive

    result = derive(args.name, args.query, Path(args.out))
    rows = ", ".join(f"{split} {n}" for split, n in result["rows"].items())
    _emit(args, result, [f"wrote {result['config']} ({rows}) to {result['path']}, indexed; check it with `cohbench verify --release "
                         f"{result['path']}`, query it with `cohbench sql --release {result['path']}`"])
    return 0


def cmd_show(args) -> int:
    from .viewer.site import write_site

    result = write_site(Path(args.out), configs=args.config)
    _emit(args, result, [f"wrote the viewer of {len(result['configs'])} config(s) to {result['path']}; open {result['path']}/index.html in a browser"])
    return 0


def cmd_push(args) -> int:
    from .release.store import push

    result = push(repo=args.repo)
    _emit(args, result, [f"pushed the release's data to the store {result['store']}: {result['dvc'] or 'nothing new'}"])
    return 0


def cmd_export(args) -> int:
    from .export import export

    result = export(Path(args.target), include_research_only=args.include_research_only)
    lines = [f"exported {len(result['configs'])} config(s) to {result['target']}: {', '.join(result['configs'])}"]
    if result["left_out_research_only"]:
        lines.append(f"left out (research only): {', '.join(result['left_out_research_only'])}; "
                     "pass --include-research-only to include them")
    _emit(args, result, lines)
    return 0


def cmd_metaeval(args) -> int:
    from .evaluation import protocol_of
    from .evaluation.bias import write_bias_table
    from .evaluation.ratings import evaluate

    protocol = protocol_of(args.config)
    if protocol.unit != "ratings":
        raise CohbenchError(f"{args.config} has no human ratings to meta-evaluate against (its protocol is {protocol.name}); "
                            "use `cohbench evaluate`")
    if bool(args.scores) == bool(args.measure):
        raise CohbenchError("give --scores FILE or --measure NAME (one of them)")
    for output in (args.plot, args.bias_table):
        if output:
            settings.user_output(output)  # both refused before either is written
    import time

    started = time.perf_counter()  # timed here, not in the result: the train stage ships that result in the release
    result = evaluate(
        args.scores, measure=args.measure, allow_missing=args.allow_missing, bootstrap=args.bootstrap, seed=args.seed, plot=args.plot,
        config=args.config,
    ) | {"seconds": round(time.perf_counter() - started, 3)}
    if args.bias_table:
        write_bias_table(result, args.bias_table)
        result["bias_table"] = args.bias_table
    lines = [
        f"{result['measure']} vs {result['gold']} on {result['ratings_from']}: {result['scored']} of {result['summaries']} summaries scored "
        f"({result['documents']} documents x {result['systems']} systems)",
        f"{'metric':<10} {'value':>7}   95% CI ({args.bootstrap} bootstrap samples of {result['bootstrap']['resampled']})",
    ]
    for metric, entry in result["metrics"].items():
        # τ is a coefficient (3 decimals); Acc_pair a proportion (a percentage with one decimal, as every table)
        show = percent if metric.startswith("acc") else (lambda v: coefficient(v, signed=True))
        value = "undefined" if entry["value"] is None else show(entry["value"])
        ci = f"[{show(entry['ci95'][0])}, {show(entry['ci95'][1])}]" if entry["ci95"] else "-"
        notes = [f"{entry[k]} {k.split('_')[0]} undefined" for k in ("documents_undefined", "systems_undefined") if entry.get(k)]
        lines.append(f"{metric:<10} {value:>9} {ci}" + (f"  ({', '.join(notes)})" if notes else ""))
    for key in ("plot", "bias_table"):
        if key in result:
            lines.append(f"bias matrix {key.replace('_', ' ')}: {result[key]}")
    lines.append(f"{result['seconds']:.2f} s")
    _emit(args, result, lines)
    return 0


def cmd_cite(args) -> int:
    from .registry import corpus_of
    from .release.card import cohbench_citation, citation
    from .release.layout import built_configs
    from .release.versions import provenance

    for config in args.configs:
        corpus_of(config)  # every name is checked before anything is printed
    release = settings.release_dir()
    data = provenance(release, built_configs(release))  # the versions of the configs built in the release in use
    text = "\n".join(citation(config, data) for config in args.configs) if args.configs else cohbench_citation(data["release"]) + "\n"
    _emit(args, {"bibtex": text}, [text.rstrip()])
    return 0


def cmd_schema(args) -> int:
    from .schema import schema_markdown

    print(schema_markdown(), end="")
    return 0


def cmd_validate(args) -> int:
    from .validation import record_expected, validate

    if args.record_expected:
        if not args.configs:
            raise CohbenchError("name the config(s) whose expected statistics to record")
        paths = [str(record_expected(config)) for config in args.configs]
        _emit(args, paths, [f"recorded {p}; review the diff and commit it" for p in paths])
        return 0
    print("validating the release with great-expectations", file=sys.stderr)
    report = validate(args.configs or None, docs=not args.no_docs)
    verdicts = [*report["configs"].values(), report["release"]]
    _emit(args, report, [v["line"] for v in verdicts])
    return 0 if report["ok"] else 1


def cmd_sql(args) -> int:
    from . import sql

    statement = args.query
    if statement is None and not sys.stdin.isatty():
        statement = _stdin_query(sql.MAX_QUERY_CHARS)
    if args.format == "parquet" and not args.output:
        raise CohbenchError("--format parquet needs --output FILE")
    if args.output:
        settings.user_output(args.output)  # refused before the release is loaded
    memory = sql.memory_limit(args.memory_limit)
    with sql.interruptible():  # Ctrl-C while the views are made stops after them, as 130
        con = sql.db(memory=memory, statement=statement)
    with sql.process_memory_bound(memory):
        if statement is None:
            sql.shell(con, args.max_rows)
            return 0
        with sql.interruptible(con):
            if args.output:
                fmt = args.format or (args.output.rsplit(".", 1)[-1] if "." in args.output else "")
                rows = sql.write(statement, args.output, fmt, con)
                print(f"wrote {rows} rows to {args.output} ({fmt})", file=sys.stderr)
            elif args.json or args.format == "json":
                sql.stream_to(statement, sys.stdout.buffer, "json", con)
            elif args.format == "csv":
                sql.stream_to(statement, sys.stdout.buffer, "csv", con)
            else:
                print(sql.table(statement, con, args.max_rows), end="")
    return 0


def _stdin_query(bound: int) -> str:
    """The query piped to `cohbench sql`, read no further than `bound` characters (`< /dev/zero` never ends)."""
    try:
        text = sys.stdin.read(bound + 1)
        text.encode("utf-8")  # some locales read undecodable bytes as surrogates
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise CohbenchError("the query on stdin is not UTF-8 text") from None
    if len(text) > bound:
        raise CohbenchError(f"the query on stdin is longer than {bound:,} characters; pipe one SQL statement")
    return text


def _memory_size(text: str) -> int:
    from .sql import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _row_count(text: str) -> int:
    from .sql import MAX_SHOWN_ROWS

    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of rows")
    if int(text) > MAX_SHOWN_ROWS:
        raise argparse.ArgumentTypeError(f"{text} rows is more than a terminal table shows (at most {MAX_SHOWN_ROWS:,}); "
                                         "--format csv|json or --output gives every row")
    return int(text)


def cmd_agreement(args) -> int:
    from .statistics import statistics
    from .statistics.report import config_markdown

    stats = statistics(args.config)
    _emit(args, stats, config_markdown(stats))
    return 0


def cmd_report(args) -> int:
    from .statistics.report import report

    out = report(args.output)
    _emit(args, out, [f"wrote the statistics report of {len(out)} config(s) ({', '.join(out)}) to {args.output or 'catalog/stats'}"])
    return 0


def cmd_evaluate(args) -> int:
    from .evaluation import evaluate, summary_lines
    from .evaluation.bootstrap import check_settings

    check_settings(args.bootstrap, args.seed)  # before any scorer runs
    predictions = args.predictions
    if args.scorer and ":" in args.scorer:  # a user's module:function, in its own process
        from .comparison.scorers import function_predictions

        predictions = function_predictions(args.scorer, args.config)
    elif args.scorer:
        from .evaluation.references import config_predictions

        predictions = config_predictions(args.config, args.scorer)
    result = evaluate(args.config, predictions, split=args.split, threshold=args.threshold, samples=args.bootstrap, seed=args.seed)
    if args.scorer:
        result["scorer"] = args.scorer
    _emit(args, result, summary_lines(result))
    return 0


def cmd_leaderboard(args) -> int:
    from .comparison.board import leaderboard
    from .comparison.render import markdown, plot

    from .atomic import write_text

    # files the user names are refused inside a release before any work
    plot_path, markdown_path = (settings.user_output(path) if path else None for path in (args.plot, args.markdown))
    result = leaderboard(args.scorer, configs=args.config, samples=args.bootstrap, seed=args.seed, strict=args.strict,
                         output=args.output)
    lines = markdown(result)
    if markdown_path:
        write_text(markdown_path, "\n".join(lines) + "\n")
    if plot_path:
        plot(result, plot_path)
        result["plot"] = str(plot_path)
    for skipped in result["skipped"]:  # on stderr too, so a script reading --json still sees them
        print(skipped["line"], file=sys.stderr)
    written = [f"results per scorer in {Path(result['written'][0]).parent}"] if result["written"] else []
    _emit(args, result, lines + written)
    return 0


def cmd_train(args) -> int:
    from .baseline import metrics_markdown, train

    metrics = train(progress=not args.json)
    _emit(args, metrics, metrics_markdown(metrics).splitlines())
    return 0


def _numbers(text: str, option: str, allow_all: bool = False) -> list[int | None]:
    try:
        values = [None if allow_all and part == "all" else int(part) for part in text.split(",") if part]
    except ValueError:
        values = []
    if not values or any(v is not None and v < (1 if allow_all else 0) for v in values):
        what = "positive story counts and 'all'" if allow_all else "seeds (whole numbers)"
        raise CohbenchError(f"{option} takes {what} separated by commas (got {text!r})")
    return values


def cmd_study(args) -> int:
    from .baseline import studies

    if args.study == "learning-curve":
        token = {"token_sizes": _numbers(args.token_sizes, "--token-sizes", True), "token_params": _token_params()} if args.token_sizes else {}
        result = studies.learning_curve(sizes=_numbers(args.sizes, "--sizes", True), seeds=_numbers(args.seeds, "--seeds"),
                                        progress=not args.json, **token)
        lines = [f"{pt['model']:<15} seed {pt['seed']} {pt['stories']:>6} stories: "
                 + "  ".join(f"{c} AUC {percent(pt[c]['auc'])} AP {percent(pt[c]['average_precision'])}" for c in result["scored_on"])
                 for pt in result["points"]]
    else:
        from .baseline import transfer

        types = [t.strip() for t in args.types.split(",") if t.strip()]
        recipes = [r.strip() for r in args.recipes.split(",") if r.strip()] if args.recipes is not None else None
        result = transfer.transfer(seed=args.seed, types=types, recipes=recipes, progress=not args.json)
        lines = transfer.table(result).splitlines()
    _emit(args, result, lines)
    return 0


def _token_params() -> dict:
    from .baseline import baseline_params

    return baseline_params().get("token_level") or {}


def cmd_gate(args) -> int:
    from .baseline.gate import check

    result = check()
    _emit(args, result, result["lines"])
    return 0 if result["ok"] else 1


DISTRIBUTION_OF = {"sklearn": "scikit_learn"}  # modules an extra installs under another name than the module's


def _extra_providing(module: str) -> str | None:
    """The smallest extra of cohbench's own metadata whose distribution provides `module`, if any: [validate] rather
    than [pipeline], which holds every extra (build backends list extras in their own order), never [test]."""
    from collections import Counter
    from importlib import metadata

    try:
        requirements = metadata.requires("cohbench") or []
    except metadata.PackageNotFoundError:
        return None
    sizes, providing = Counter(), set()
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        distribution = re.split(r"[\s=<>!~\[(]", name.strip(), maxsplit=1)[0]
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", marker)
        if extra and extra.group(1) != "test":
            sizes[extra.group(1)] += 1
            if distribution.lower().replace("-", "_") == DISTRIBUTION_OF.get(module, module):
                providing.add(extra.group(1))
    return min(providing, key=lambda e: (sizes[e], e), default=None)


def cmd_corrupt(args) -> int:
    from .corruptions.job import Options, corrupt, parse_splits

    params = {key: getattr(args, key) for key in ("seed", "k", "tau", "top_k", "retriever", "window", "ratio", "pool_shards")
              if getattr(args, key) is not None}
    options = Options(
        recipe=args.recipe, params=params, splits=parse_splits(args.splits), corpus=args.corpus, config=args.config,
        sentences_per_record=args.n, id_column=args.id_column, text_column=args.text_column,
        drop_test_overlap=not args.keep_test_overlap, partition_size=args.partition_size, engine=args.engine,
        device=args.device, workers=args.workers, address=args.address, resume=args.resume, progress=not args.json,
    )
    summary = corrupt(Path(args.input), Path(args.out), options)
    rows = ", ".join(f"{split} {f['rows']}" for split, f in summary["files"].items())
    dropped = ", ".join(f"{reason} {n}" for reason, n in summary["dropped"].items()) or "none"
    lines = [
        f"{summary['config']}: made {summary['built_records']} records ({rows}) from {summary['sources_used']} of "
        f"{summary['source_records']} source records ({summary['input_stories']} input stories)",
        f"dropped: {dropped}",
        f"wrote {Path(args.out) / 'data' / summary['config']}; query it with: cohbench sql --release {args.out}",
    ]
    _emit(args, summary, lines)
    return 0


def cmd_calibrate(args) -> int:
    from .calibration import calibrate
    from .corruptions.bertscore import BASELINE_FILE

    target = settings.user_output(args.output) if args.output else BASELINE_FILE  # refused before the progress line
    print(f"encoding sentences of {args.pairs} random pairs", file=sys.stderr)
    baseline = calibrate(pairs=args.pairs, seed=args.seed, target=target)
    _emit(args, baseline, [f"wrote {target}: mean F of {baseline['pairs']} random pairs = {baseline['F']:.6f}"])
    return 0


def cmd_held_out(args) -> int:
    from .corruptions.leakage import PACKAGED, write_packaged
    from .release.layout import require_release

    target = settings.user_output(args.output) if args.output else PACKAGED  # refused before the release is read
    _, configs = require_release()
    content = write_packaged(configs, target)
    counts = {corpus: len(fingerprints) for corpus, fingerprints in content["corpora"].items()}
    shown = ", ".join(f"{corpus} {n}" for corpus, n in counts.items())
    _emit(args, {"wrote": str(target), "held_out_stories": counts}, [f"wrote {target}: held-out stories of {shown}"])
    return 0


def cmd_pipeline(args) -> int:
    from .pipeline import write

    changed = write()
    _emit(args, {"changed": changed}, ["rewrote dvc.yaml from the stage declarations (cohbench.pipeline) and the registry" if changed else "dvc.yaml is current"])
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="cohbench", description=__doc__, epilog=EXIT_CODES)
    top.add_argument("--version", action="version", version=f"cohbench {__version__}")
    sub = top.add_subparsers(dest="command", required=True)

    def add(name, func, help_text, trains=False):
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--json", action="store_true", help="write figures to stdout as JSON")
        command.add_argument("--release", help="release folder (default: COHBENCH_RELEASE, else the first of a checkout's cohbench/, ./cohbench, "
                             "~/.local/share/cohbench that holds one)")
        command.set_defaults(func=func, trains=trains)  # a training command pins its float32 code path
        return command

    add("list", cmd_list, "configs with their versions, licences and built row counts")
    export = add("export", cmd_export, "write a shareable copy of the release (research-only configs left out)")
    export.add_argument("target", help="a new or empty folder")
    export.add_argument("--include-research-only", action="store_true", help="also copy research-only configs")
    fetch = add("fetch", cmd_fetch, "resolve and verify upstream files (cache, then mirror, then network)")
    fetch.add_argument("names", nargs="*", help="corpora or configs (default: all)")
    fetch.add_argument("--mirror", help="mirror folder laid out as HOST/URL-PATH (overrides COHBENCH_MIRROR)")
    fetch.add_argument("--register-checksums", action="store_true",
                       help="hash each file the corpus's checksum table declares and write its size and sha256 there")
    build = add("build", cmd_build, "build configs into the release folder")
    build.add_argument("configs", nargs="*")
    build.add_argument("--all", action="store_true", help="build every registered config")
    build.add_argument("--mirror", help="mirror folder laid out as HOST/URL-PATH (overrides COHBENCH_MIRROR)")
    build.add_argument("--no-index", action="store_true", help="do not rewrite README.md and manifest.json")
    add("index", cmd_index, "rewrite the release card and manifest from the configs built")
    verify = add("verify", cmd_verify, "re-check every release file (and, where a raw cache exists, every upstream file) against its recorded sha256")
    verify.add_argument("--quiet", action="store_true", help="print only the files that fail and the summary")
    version = add("version", cmd_version, "whether each built config's records are its declared version (catalog/versions/), and which part must move if not")
    version.add_argument("configs", nargs="*", help="configs (default: every built config)")
    version.add_argument("--record", action="store_true", help="declare the built records as each config's next version (the part the change requires)")
    diff = add("diff", cmd_diff, "how two releases differ, config by config, row by row (exit 1 when they differ or a side fails the release's checks)")
    diff.add_argument("old", help="a release folder, or a release version (X.Y.Z) the release store holds")
    diff.add_argument("new", help="a release folder, or a release version")
    diff.add_argument("--config", action="append", help="only this config (repeatable)")
    diff.add_argument("--markdown", action="store_true", help="a changelog summary (Markdown table)")
    diff.add_argument("--repo", help="the cohbench checkout whose tags and store give a version (default: this one)")
    pull = add("pull", cmd_pull, "restore a tagged release's exact bytes from the release store into a new folder")
    pull.add_argument("version", help="release version X.Y.Z (or tag vX.Y.Z)")
    pull.add_argument("--out", help="a new or empty folder (default: ./cohbench-VERSION)")
    pull.add_argument("--repo", help="the cohbench checkout whose tags and store to use (default: this one)")
    pull.add_argument("--remote", help="where the data is: an http(s):// URL serving a published folder, any DVC remote URL, or a folder "
                      "(default: the release store of .dvc/config)")
    publish = add("publish", cmd_publish, "copy releases' data to a folder any web server can serve, or to any DVC remote URL")
    publish.add_argument("target", help="a folder (laid out as a DVC store) or a DVC remote URL (s3://, ssh://, ...)")
    publish.add_argument("versions", nargs="*", help="release versions X.Y.Z (default: every release this checkout knows)")
    publish.add_argument("--repo", help="the cohbench checkout (default: this one)")
    push = add("push", cmd_push, "send the built release's data to the release store (the DVC remote `store`)")
    push.add_argument("--repo", help="the cohbench checkout (default: this one)")
    derive = add("derive", cmd_derive, "write a changed copy of a config, from one SQL query, into a new folder laid out like a release (indexed, verifiable)")
    derive.add_argument("name", help="the new config's name (lowercase letters, digits, _)")
    derive.add_argument("query", help="SELECT * FROM CONFIG WHERE ... (or SELECT * REPLACE (expr AS field) ...): every schema field, one row per record")
    derive.add_argument("--out", required=True, help="a new or empty folder outside the release")
    show = add("show", cmd_show, "write a static HTML site to browse and filter a release's (or a corrupt output's) records, spans highlighted")
    show.add_argument("--out", required=True, help="a new or empty folder outside the release")
    show.add_argument("--config", action="append", help="only this config (repeatable; default: every built config)")
    validate = add("validate", cmd_validate, "check the release with great-expectations; one verdict line per config")
    validate.add_argument("configs", nargs="*", help="configs to check (default: every built config)")
    validate.add_argument("--record-expected", action="store_true", help="snapshot the configs' statistics into the expected-statistics folder (validation.expected, default catalog/expected/)")
    validate.add_argument("--no-docs", action="store_true", help="skip the HTML Data Docs (written to COHBENCH_VALIDATION_DOCS, default .cache/validation-docs)")
    evaluate = add("evaluate", cmd_evaluate, "score predictions on a built config with its paper's protocol")
    evaluate.add_argument("config")
    given = evaluate.add_mutually_exclusive_group(required=True)
    given.add_argument("--predictions", help='JSONL: {"id", "score"|"label"} per record (lists per sentence/gap)')
    given.add_argument("--scorer", help="score with an untrained reference scorer (position_prior, tfidf_dissimilarity, ...) or "
                       "module:function instead")
    evaluate.add_argument("--split", help="report one split only (default: every non-train split)")
    evaluate.add_argument("--threshold", type=float, help="predict an error when score >= T (default: tuned on the dev split)")
    board = add("leaderboard", cmd_leaderboard, "score scorers on every config they apply to, with CIs, the difference from the best reference and the published figures")
    board.add_argument("--scorer", action="append", help="a reference scorer, baseline, a folder of <config>.jsonl, or module:function (repeatable; default: every reference scorer and the baseline)")
    board.add_argument("--config", action="append", help="score only this config (repeatable; default: every built config with a test split)")
    board.add_argument("--bootstrap", type=int, default=1000, help="bootstrap samples over documents (default 1000)")
    board.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    board.add_argument("--strict", action="store_true", help="a config a scorer cannot be scored on is an error, not a skipped line")
    board.add_argument("--output", help="folder for the results per scorer (default .cache/leaderboard/; never inside a release)")
    board.add_argument("--markdown", help="also write the table as Markdown to this file")
    board.add_argument("--plot", help="write a PNG of scorers x configs with CI bars to this file")
    evaluate.add_argument("--bootstrap", type=int, default=1000, help="resamples of documents for the headline's 95%% CI (default 1000)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    add("train", cmd_train, "train the bundled baseline (Cai et al. sentence-level detector) and score every applicable config", trains=True)
    add("gate", cmd_gate, "fail unless the baseline clears the floors and beats the reference scorers (params.yaml baseline)")
    study = add("study", cmd_study, "studies of the baseline, written to catalog/baseline/: learning curve, transfer to SNaC", trains=True)
    study.add_argument("study", choices=["learning-curve", "transfer"])
    study.add_argument("--sizes", default="500,1500,3000,all", help="training story counts (learning curve)")
    study.add_argument("--seeds", default="0", help="seeds, comma-separated (learning curve)")
    study.add_argument("--token-sizes", default="", help="story counts at which the token-level model also trains")
    study.add_argument("--seed", type=int, default=0, help="seed (transfer)")
    study.add_argument("--types", default="CharE,SceneE,RefE,InconE", help="SNaC error types scored apart (transfer)")
    study.add_argument("--recipes", help="recipes trained on, each alone, comma-separated; a+b pools a's and b's records "
                       "(transfer; default: baseline.studies.transfer.recipes)")
    cite = add("cite", cmd_cite, "print the BibTeX to cite for configs (their corpora's papers and cohbench)")
    cite.add_argument("configs", nargs="*", help="configs (default: cohbench itself)")
    calibrate = add("calibrate", cmd_calibrate, "remake the BERTScore rescaling baseline (the scale of incoherence.tau) from random TimeTravel train sentence pairs")
    calibrate.add_argument("--pairs", type=int, default=5000, help="random sentence pairs (default 5000)")
    calibrate.add_argument("--seed", type=int, default=13, help="seed of the pair draw (default 13)")
    calibrate.add_argument("--output", help="write here instead of the shipped corruptions/bertscore_baseline.json")
    held_out = add("held-out", cmd_held_out, "rewrite the packaged fingerprints of every cohbench evaluation story (the test-overlap check of `corrupt`) from the release's stats")
    held_out.add_argument("--output", help="write here instead of the shipped corruptions/held_out.json")
    add("pipeline", cmd_pipeline, "rewrite dvc.yaml: a build stage per registered config, every stage depending on the code it runs")
    add("schema", cmd_schema, "print the schema documentation (catalog/SCHEMA.md)")
    metaeval = add("metaeval", cmd_metaeval, "score a coherence measure against SummEval's expert ratings (tau_sys/sum/pair/intra, Acc_pair, bias matrix)")
    metaeval.add_argument("config", help="the config with human coherence ratings (one whose protocol is metaeval)")
    metaeval.add_argument("--scores", help="CSV or JSONL with doc_id, system (or id = <doc_id>/<system>) and one column of scores: "
                          "coherence (higher = more coherent) or score / error (higher = less coherent, as every prediction)")
    metaeval.add_argument("--measure", help="a rating reference scorer instead: uppercase, architecture, upper-bound, random, or *-noised")
    metaeval.add_argument("--allow-missing", action="store_true", help="evaluate on the scored summaries when some have no score")
    metaeval.add_argument("--bootstrap", type=int, default=1000, help="bootstrap samples for the 95%% CIs (default 1000)")
    metaeval.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of random measures (default 0)")
    metaeval.add_argument("--plot", help="write the bias matrix heatmap to this PNG")
    metaeval.add_argument("--bias-table", help="write the bias matrix as a table (.csv, or .json)")
    sql = add("sql", cmd_sql, "run SQL over the release views (catalog/SQL.md); without a query, an interactive prompt")
    sql.add_argument("query", nargs="?", help="one SQL statement (read from stdin when piped)")
    sql.add_argument("--format", choices=("csv", "json", "parquet"), help="output format (default: a table on the terminal)")
    sql.add_argument("--output", help="write the result to this file instead of stdout")
    sql.add_argument("--max-rows", type=_row_count, default=40, help="rows shown in the terminal table (default 40)")
    sql.add_argument("--memory-limit", type=_memory_size, help="DuckDB memory limit for the query, e.g. 8GB; the process "
                     "may grow by the limit plus as much again (default: COHBENCH_SQL_MEMORY or 4GB; at most the machine's memory)")
    agreement = add("agreement", cmd_agreement, "agreement and distribution statistics of one built config")
    agreement.add_argument("config")
    corrupt = add("corrupt", cmd_corrupt, "make synthetic training data (MSD, DSD, SNaC-style, ...) from your own narratives")
    corrupt.add_argument("input", help="JSONL or Parquet file, a folder of them, or a folder saved by datasets")
    corrupt.add_argument("--recipe", required=True, help="a registered recipe: msd, dsd, synthetic, shuffle, ... (an unknown name lists them)")
    corrupt.add_argument("--out", required=True, help="a new or empty folder (or an unfinished run's, with --resume)")
    corrupt.add_argument("--id-column", default="id", help="column of unique story ids (default id)")
    corrupt.add_argument("--text-column", help="column of texts or of lists of sentences (default: sentences, else text)")
    corrupt.add_argument("--n", type=int, help="N: cut each story into windows of N sentences (default: whole stories)")
    corrupt.add_argument("--k", type=int, help="K: sentences altered per record (msd, dsd)")
    corrupt.add_argument("--tau", type=float, help="confounders' rescaled BERTScore F1 must be below tau (dsd, synthetic)")
    corrupt.add_argument("--top-k", type=int, help="BM25 candidates per replaced sentence")
    corrupt.add_argument("--retriever", choices=("bm25s", "rank_bm25", "tantivy"), help="BM25 implementation: bm25s (default, exhaustive), rank_bm25 "
                         "(reference), tantivy (an inverted index on disk; extra cohbench[tantivy])")
    corrupt.add_argument("--window", type=int, help="shuffle only within windows of this many sentences (default: whole text)")
    corrupt.add_argument("--ratio", type=float, help="repetition: share of sentences repeated")
    corrupt.add_argument("--seed", type=int, help="seed; each record draws from (seed, its id)")
    corrupt.add_argument("--splits", default="train=0.8,validation=0.1,test=0.1", help="split ratios, assigned by a hash of the story id")
    corrupt.add_argument("--corpus", default="custom", help="value of the corpus column (default custom)")
    corrupt.add_argument("--config", help="value of the config column and the output's name (default: the recipe)")
    corrupt.add_argument("--keep-test-overlap", action="store_true", help="keep stories that are in a cohbench test split")
    corrupt.add_argument("--engine", choices=("local", "ray"), default="local", help="run in this process (default) or on Ray")
    corrupt.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="where the encoder runs: the GPU where there is one (auto), "
                         "cpu, or cuda (refused without a usable GPU); the output's bytes are the same on every device")
    corrupt.add_argument("--address", help="Ray: join the cluster at this address (default: start a local instance)")
    corrupt.add_argument("--workers", type=int, help="Ray: actors per stage (default: the cluster's CPUs)")
    corrupt.add_argument("--pool-shards", type=int, help="cut each confounder pool's BM25 index into this many shards")
    corrupt.add_argument("--partition-size", type=int, default=2000, help="records per partition, the unit of resuming")
    corrupt.add_argument("--resume", action="store_true", help="continue the unfinished run in --out")
    corrupt.epilog = "Options a recipe does not read are ignored; the summary (OUT/stats/CONFIG.json) records every value used."
    report = add("report", cmd_report, "write the statistics report (JSON, Markdown, plots) to catalog/stats")
    report.add_argument("--output", help="folder to write to (default catalog/stats)")
    return top


EXIT_CODES = """exit status: 0 success; 1 an error (one line on stderr says what and what to do); 2 a usage error
(unknown command or option); 130 interrupted (Ctrl-C); 141 the reader of the output went away (| head)"""


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.trains:
        from . import numerics  # only training commands pay for its imports (multiprocessing)

        numerics.pin_for_training()
    if getattr(args, "mirror", None):
        os.environ["COHBENCH_MIRROR"] = args.mirror
    if getattr(args, "release", None):
        os.environ["COHBENCH_RELEASE"] = args.release
    try:
        return args.func(args)
    except CohbenchError as error:
        print(f"cohbench: error: {error}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as error:
        module = (error.name or "").split(".")[0]
        extra = _extra_providing(module)
        if extra is None:
            return _unexpected(args)
        print(f"cohbench: error: `cohbench {args.command}` needs {module}, which the [{extra}] extra installs: "
              f"pip install 'cohbench[{extra}]' torch==2.13.0", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cohbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`cohbench fetch x | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # the machine said no: a read-only folder, a full disk, /proc, a missing directory
        where = f" {error.filename}" if error.filename else ""
        print(f"cohbench: error: cannot use{where}: {error.strerror or error}", file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001  (the guard of last resort: one line, the traceback to a file)
        return _unexpected(args)


def _unexpected(args) -> int:
    """One line for a bug, with the full traceback written to a log file outside the release."""
    import tempfile
    import time
    import traceback

    error = sys.exc_info()[1]
    log = Path(os.environ.get("COHBENCH_LOGS") or Path(tempfile.gettempdir()) / "cohbench-logs")
    try:
        log.mkdir(parents=True, exist_ok=True)
        path = log / f"traceback-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        path.write_text(f"cohbench {__version__} {' '.join(sys.argv)}\n\n{traceback.format_exc()}", encoding="utf-8")
        where = f"the full traceback is in {path}"
    except OSError:
        where = "the traceback could not be written (set COHBENCH_LOGS to a writable folder)"
    summary = f"{type(error).__name__}: {error}".splitlines()[0][:200]
    print(f"cohbench: error: `cohbench {args.command}` failed unexpectedly ({summary}); {where}; please report it", file=sys.stderr)
    return 1


def console() -> None:
    """The `cohbench` command: `main`, Python's exit handlers, then the end of the process without the interpreter's
    teardown. A native thread pool torn down at exit (DuckDB's or Arrow's: "terminate called without an active
    exception") aborted a finished `evaluate` on Python 3.13 once in three test runs, its output already written."""
    import atexit

    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away after the last write
            code = 141 if stream is sys.stdout else code
        except OSError:
            code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    console()
