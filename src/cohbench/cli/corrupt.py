"""Commands of the corruption engine: synthetic training data from a user's narratives (corrupt), and the two files
the engine ships, remade from the release: the BERTScore rescaling baseline (calibrate) and the fingerprints of
cohbench's evaluation stories (held-out)."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import settings
from ..encoder import DEVICES
from .command import argument, command, emit, release_of


def _recipe_options():
    """A flag per option a recipe may read, as its declaration (`recipes.OPTIONS`) describes it; unset unless given,
    so that the recipe's default applies. Made only for `corrupt` itself: the recipes take seconds to import."""
    from ..corruptions.recipes import OPTIONS

    return [argument(f"--{name.replace('_', '-')}", type=option.type, choices=option.choices, help=option.help)
            for name, option in OPTIONS.items()]


@command("corrupt", "make synthetic training data (MSD, DSD, SNaC-style, ...) from your own narratives",
         argument("input", help="JSONL or Parquet file, a folder of them, or a folder saved by datasets"),
         argument("--recipe", required=True, help="a registered recipe: msd, dsd, synthetic, shuffle, snac_mixture, ... (an unknown name lists them), or a mixture such as goyal_coref:0.4+unintroduced_reference:0.6"),
         argument("--out", required=True, help="a new or empty folder (or an unfinished run's, with --resume)"),
         argument("--id-column", default="id", help="column of unique story ids (default id)"),
         argument("--text-column", help="column of texts or of lists of sentences (default: sentences, else text)"),
         argument("--n", type=int, help="N: cut each story into windows of N sentences (default: whole stories)"),
         _recipe_options,
         argument("--splits", default="train=0.8,validation=0.1,test=0.1", help="split ratios, assigned by a hash of the story id"),
         argument("--corpus", default="custom", help="value of the corpus column (default custom)"),
         argument("--config", help="value of the config column and the output's name (default: the recipe; `mixture` for a mixture written out)"),
         argument("--keep-test-overlap", action="store_true", help="keep stories that are in a cohbench test split"),
         argument("--engine", choices=("local", "ray"), default="local", help="run in this process (default) or on Ray"),
         argument("--device", choices=DEVICES, default="auto", help="where the encoder runs: the GPU where there is one (auto), "
                  "cpu, or cuda (refused without a usable GPU); the output's bytes are the same on every device"),
         argument("--address", help="Ray: join the cluster at this address (default: start a local instance)"),
         argument("--workers", type=int, help="Ray: actors per stage (default: the cluster's CPUs; on GPUs four to a "
                  "GPU, and more share them evenly, at least 1/16 of a GPU each)"),
         argument("--partition-size", type=int, default=2000, help="records per partition, the unit of resuming"),
         argument("--resume", action="store_true", help="continue the unfinished run in --out"),
         epilog="Options a recipe does not read are ignored; the summary (OUT/stats/CONFIG.json) records every value used.")
def cmd_corrupt(args) -> int:
    from ..user_corruption.job import corrupt
    from ..user_corruption.request import CorruptRequest, parse_splits
    from ..corruptions.recipes import OPTIONS

    params = {key: getattr(args, key) for key in OPTIONS if getattr(args, key) is not None}
    options = CorruptRequest(
        recipe=args.recipe, params=params, splits=parse_splits(args.splits), corpus=args.corpus, config=args.config,
        sentences_per_record=args.n, id_column=args.id_column, text_column=args.text_column,
        drop_test_overlap=not args.keep_test_overlap, partition_size=args.partition_size, engine=args.engine,
        device=args.device, workers=args.workers, address=args.address, resume=args.resume, progress=not args.json,
        release=release_of(args),
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
    emit(args, summary, lines)
    return 0


@command("calibrate", "remake the BERTScore rescaling baseline (the scale of incoherence.tau) from random TimeTravel train sentence pairs",
         argument("--pairs", type=int, default=5000, help="random sentence pairs (default 5000)"),
         argument("--seed", type=int, default=13, help="seed of the pair draw (default 13)"),
         argument("--output", help="write here instead of the shipped corruptions/bertscore_baseline.json"))
def cmd_calibrate(args) -> int:
    from ..calibration import calibrate
    from ..corruptions.bertscore import BASELINE_FILE

    target = settings.user_output(args.output, release_of(args)) if args.output else BASELINE_FILE  # refused before the progress line
    print(f"encoding sentences of {args.pairs} random pairs", file=sys.stderr)
    baseline = calibrate(pairs=args.pairs, seed=args.seed, target=target)
    emit(args, baseline, [f"wrote {target}: mean F of {baseline['pairs']} random pairs = {baseline['F']:.6f}"])
    return 0


@command("held-out", "rewrite the packaged fingerprints of every cohbench evaluation story (the test-overlap check of `corrupt`) from the release's stats",
         argument("--output", help="write here instead of the shipped user_corruption/held_out.json"))
def cmd_held_out(args) -> int:
    from ..user_corruption.leakage import PACKAGED, write_packaged
    from ..release.layout import require_release

    target = settings.user_output(args.output, release_of(args)) if args.output else PACKAGED  # refused before the release is read
    _, configs = require_release(release_of(args))
    content = write_packaged(configs, target)
    counts = {corpus: len(fingerprints) for corpus, fingerprints in content["corpora"].items()}
    shown = ", ".join(f"{corpus} {n}" for corpus, n in counts.items())
    emit(args, {"wrote": str(target), "held_out_stories": counts}, [f"wrote {target}: held-out stories of {shown}"])
    return 0


COMMANDS = (cmd_corrupt, cmd_calibrate, cmd_held_out)
