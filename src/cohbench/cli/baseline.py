"""Commands of the bundled baseline: training it (train), checking it against its floors and the references (gate),
and its studies (learning curve, transfer to SNaC)."""

from __future__ import annotations

from ..display import percent
from ..errors import CohbenchError
from .command import argument, command, emit, release_of


@command("train", "train the bundled baseline (Cai et al. sentence-level detector) and score every applicable config",
         argument("--train-data", action="append", help="train on the configs of this folder laid out like a release (a `cohbench corrupt` "
                  "output) instead of baseline.train_configs (repeatable); needs --output"),
         argument("--evaluate-on", choices=["release", "own"], default="release",
                  help="score the release's configs (default) or, with --train-data, the folders' own splits"),
         argument("--output", help="folder for metrics.json, metrics.md and predictions/ (default with the release's own data: "
                  "<release>/baseline; never inside a release or a --train-data folder)"),
         trains=True)
def cmd_train(args) -> int:
    from pathlib import Path

    from ..baseline import metrics_markdown, train

    if args.output and Path(args.output).exists() and not Path(args.output).is_dir():  # refused before minutes of training
        raise CohbenchError(f"--output {args.output} exists and is not a folder; give a new folder for metrics.json and predictions/")

    metrics = train(release=release_of(args), progress=not args.json, train_data=args.train_data, evaluate_on=args.evaluate_on,
                    output=args.output)
    emit(args, metrics, metrics_markdown(metrics).splitlines())
    return 0


@command("gate", "fail unless the baseline clears the floors and beats the reference scorers (params.yaml baseline)")
def cmd_gate(args) -> int:
    from ..baseline.gate import check

    result = check(release=release_of(args))
    emit(args, result, result["lines"])
    return 0 if result["ok"] else 1


def _int_list(text: str, option: str, allow_all: bool = False) -> list[int | None]:
    """The whole numbers of a comma-separated option (story counts, with 'all' where `allow_all`, or seeds)."""
    try:
        values = [None if allow_all and part == "all" else int(part) for part in text.split(",") if part]
    except ValueError:
        values = []
    if not values or any(v is not None and v < (1 if allow_all else 0) for v in values):
        what = "positive story counts and 'all'" if allow_all else "seeds (whole numbers)"
        raise CohbenchError(f"{option} takes {what} separated by commas (got {text!r})")
    return values


@command("study", "studies of the baseline, written to catalog/baseline/: learning curve, transfer to SNaC",
         argument("study", choices=["learning-curve", "transfer"]),
         argument("--sizes", default="500,1500,3000,all", help="training story counts (learning curve)"),
         argument("--seeds", default="0", help="seeds, comma-separated (learning curve)"),
         argument("--token-sizes", help="story counts at which the token-level model also trains"),
         argument("--seed", type=int, default=0, help="seed (transfer)"),
         argument("--types", default="CharE,SceneE,RefE,InconE", help="SNaC error types scored apart (transfer)"),
         argument("--recipes", help="recipes trained on, each alone, comma-separated; a+b pools a's and b's records "
                  "(transfer; default: baseline.studies.transfer.recipes)"),
         trains=True)
def cmd_study(args) -> int:
    from ..baseline import studies

    if args.study == "learning-curve":
        token = {"token_sizes": _int_list(args.token_sizes, "--token-sizes", True), "token_params": _token_params()} if args.token_sizes else {}
        result = studies.learning_curve(release=release_of(args), sizes=_int_list(args.sizes, "--sizes", True), seeds=_int_list(args.seeds, "--seeds"),
                                        progress=not args.json, **token)
        lines = [f"{pt['model']:<15} seed {pt['seed']} {pt['stories']:>6} stories: "
                 + "  ".join(f"{c} AUC {percent(pt[c]['auc'])} AP {percent(pt[c]['average_precision'])}" for c in result["scored_on"])
                 for pt in result["points"]]
    else:
        from ..baseline import transfer

        types = [t.strip() for t in args.types.split(",") if t.strip()]
        recipes = [r.strip() for r in args.recipes.split(",") if r.strip()] if args.recipes is not None else None
        result = transfer.transfer(release=release_of(args), seed=args.seed, types=types, recipes=recipes, progress=not args.json)
        lines = transfer.table(result).splitlines()
    emit(args, result, lines)
    return 0


def _token_params() -> dict:
    from ..baseline import baseline_params

    return baseline_params().get("token_level") or {}


COMMANDS = (cmd_train, cmd_gate, cmd_study)
