"""Commands that score predictions: one config with its paper's protocol (evaluate), every applicable config with
CIs beside the references and the published figures (leaderboard), a measure against human ratings (metaeval)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..atomic import write_text
from ..display import coefficient, percent
from ..errors import CohbenchError
from ..leaderboards.user_scorer import TIMEOUT
from .command import Exclusive, argument, command, emit, output_file, output_stem, release_of


def _positive_seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is no positive number of seconds")
    return value


SCORER_TIMEOUT = argument("--scorer-timeout", type=_positive_seconds, default=TIMEOUT,
                          help=f"seconds a module:function scorer may take to import or to score one batch of records before it is "
                               f"ended (default {TIMEOUT:g})")


@command("evaluate", "score predictions on a built config with its paper's protocol",
         argument("config"),
         Exclusive((argument("--predictions", help='JSONL: {"id", "score"|"label"} per record (lists per sentence/gap)'),
                    argument("--scorer", help="score with an untrained reference scorer (position_prior, tfidf_dissimilarity, ...) or "
                             "module:function instead")), required=True),
         argument("--split", help="report one split only (default: every non-train split)"),
         argument("--threshold", type=float, help="predict an error when score >= T (default: tuned on the dev split)"),
         argument("--bootstrap", type=int, default=1000, help="resamples of documents for the headline's 95%% CI (default 1000)"),
         argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)"),
         SCORER_TIMEOUT)
def cmd_evaluate(args) -> int:
    from ..evaluation import evaluate, summary_lines
    from ..evaluation.bootstrap import check_settings

    check_settings(args.bootstrap, args.seed)  # before any scorer runs
    predictions = args.predictions
    if args.scorer and ":" in args.scorer:  # a user's module:function, in its own process
        from ..leaderboards.scorers import function_predictions

        predictions = function_predictions(args.scorer, args.config, release_of(args), args.scorer_timeout)
    elif args.scorer:
        from ..evaluation.references import config_predictions

        predictions = config_predictions(args.config, args.scorer, release_of(args))
    result = evaluate(args.config, predictions, split=args.split, threshold=args.threshold, release=release_of(args), samples=args.bootstrap,
                      seed=args.seed)
    if args.scorer:
        result["scorer"] = args.scorer
    emit(args, result, summary_lines(result))
    return 0


@command("leaderboard", "score scorers on every config they apply to, with CIs, the difference from the best reference and the published figures",
         argument("--scorer", action="append", help="a reference scorer, baseline, a folder of <config>.jsonl, or module:function (repeatable; default: every reference scorer and the baseline)"),
         argument("--config", action="append", help="score only this config (repeatable; default: every built config with a test split)"),
         argument("--bootstrap", type=int, default=1000, help="bootstrap samples over documents (default 1000)"),
         argument("--seed", type=int, default=0, help="bootstrap seed (default 0)"),
         argument("--strict", action="store_true", help="a config a scorer cannot be scored on is an error, not a skipped line"),
         argument("--output", help="folder for the results per scorer (default: the release's leaderboard cache, .cache/leaderboard/ of the project's own release; never inside a release)"),
         argument("--markdown", help="also write the table as Markdown to this file"),
         argument("--plot", help="write one PNG per metric family beside this path (board.png -> board-auc.png, board-tau.png): "
                  "headlines with CIs, chance and the published figures marked"),
         SCORER_TIMEOUT)
def cmd_leaderboard(args) -> int:
    from ..leaderboards.board import leaderboard
    from ..leaderboards.render import markdown, plot

    # files the user names are refused inside a release before any work
    plot_path = output_stem("--plot", args.plot, args) if args.plot else None  # one file per metric family is written beside it
    markdown_path = output_file("--markdown", args.markdown, args) if args.markdown else None
    result = leaderboard(args.scorer, release=release_of(args), configs=args.config, samples=args.bootstrap, seed=args.seed, strict=args.strict,
                         output=args.output, scorer_timeout=args.scorer_timeout)
    lines = markdown(result)
    if markdown_path:
        write_text(markdown_path, "\n".join(lines) + "\n")
    if plot_path:
        result["plots"] = [str(p) for p in plot(result, plot_path)]
    if args.json:  # on stderr too, so a script reading --json still sees them (the text output lists them once)
        for skipped in result["skipped"]:
            print(skipped["line"], file=sys.stderr)
    written = [f"results per scorer in {Path(result['written'][0]).parent}"] if result["written"] else []
    written += [f"plot: {path}" for path in result.get("plots", [])]
    emit(args, result, lines + written)
    return 0


@command("metaeval", "score a coherence measure against SummEval's expert ratings (tau_sys/sum/pair/intra, Acc_pair, bias matrix)",
         argument("config", help="the config with human coherence ratings (one whose protocol is metaeval)"),
         argument("--scores", help="CSV or JSONL with doc_id, system (or id = <doc_id>/<system>) and one column of scores: "
                  "coherence (higher = more coherent) or score / error (higher = less coherent, as every prediction)"),
         argument("--measure", help="a rating reference scorer instead: uppercase, architecture, upper-bound, random, or *-noised"),
         argument("--allow-missing", action="store_true", help="evaluate on the scored summaries when some have no score"),
         argument("--bootstrap", type=int, default=1000, help="bootstrap samples for the 95%% CIs (default 1000)"),
         argument("--seed", type=int, default=0, help="seed of the bootstrap and of random measures (default 0)"),
         argument("--plot", help="write the bias matrix heatmap to this PNG"),
         argument("--bias-table", help="write the bias matrix as a table (.csv, or .json)"))
def cmd_metaeval(args) -> int:
    from ..evaluation import protocol_of
    from ..evaluation.bias import write_bias_table
    from ..evaluation.ratings import evaluate

    protocol = protocol_of(args.config)
    if protocol.unit != "ratings":
        raise CohbenchError(f"{args.config} has no human ratings to meta-evaluate against (its protocol is {protocol.name}); "
                            "use `cohbench evaluate`")
    if bool(args.scores) == bool(args.measure):
        raise CohbenchError("give --scores FILE or --measure NAME (one of them)")
    # refused before the bootstrap, and both before either is written
    outputs = [output_file(option, value, args) for option, value in (("--plot", args.plot), ("--bias-table", args.bias_table)) if value]
    if len(set(outputs)) < len(outputs):
        raise CohbenchError(f"--plot and --bias-table name the same file ({args.plot}); give each its own")
    import time

    started = time.perf_counter()  # timed here, not in the result: the train stage ships that result in the release
    result = evaluate(
        args.scores, measure=args.measure, allow_missing=args.allow_missing, bootstrap=args.bootstrap, seed=args.seed, plot=args.plot,
        config=args.config, release=release_of(args),
    ) | {"seconds": round(time.perf_counter() - started, 3)}
    if args.bias_table:
        write_bias_table(result, args.bias_table, release_of(args))
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
    emit(args, result, lines)
    return 0


COMMANDS = (cmd_evaluate, cmd_leaderboard, cmd_metaeval)
