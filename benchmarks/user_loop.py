"""The researcher's loop on narratives no config uses: `cohbench corrupt --recipe snac_mixture`, then `cohbench train
--train-data`, scored on the release's SNaC test split beside the transfer study's figure for the same mixture.

The narratives are TimeTravel's counterfactual rewrites (premise, counterfactual sentence, the first edited ending) of
the dev file's stories: written by crowdworkers, five sentences each, and used by no config (the configs read the
original stories). The dev file is resolved and checked against its pinned sha256 by `cohbench fetch`; its edited
endings glue their sentences without spaces, which is repaired here before the text is written out.

    .venv/bin/python benchmarks/user_loop.py [--stories 500] [--out DIR] [--json]    # COHBENCH_RELEASE: the release
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GLUED = re.compile(r"(?<=[.!?])(?=[A-Z])")  # "He left.She slept." -> two sentences


def counterfactual_stories(count: int) -> list[dict]:
    from cohbench.corpora.fetch import fetch
    from cohbench.corpora.registry import lookup

    path = fetch(lookup("timetravel"))["timetravel_dev"]
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        story = json.loads(line)
        ending = GLUED.sub(" ", story["edited_ending"].split("<SEP>")[0].strip())
        out.append({"id": f"cf-{story['story_id']}", "text": " ".join([story["premise"], story["counterfactual"], ending])})
        if len(out) == count:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=500)
    parser.add_argument("--out", type=Path, help="keep the generated data and the run here (default: a temporary folder)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="cohbench-user-loop-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "stories.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in counterfactual_stories(args.stories)), encoding="utf-8")
    cohbench = [sys.executable, "-m", "cohbench.cli"]
    timings = {}
    started = time.perf_counter()
    subprocess.run([*cohbench, "corrupt", str(source), "--recipe", "snac_mixture", "--instances", "6",
                    "--out", str(folder / "synth"), "--json"], check=True, stdout=subprocess.DEVNULL)
    timings["corrupt_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    subprocess.run([*cohbench, "train", "--train-data", str(folder / "synth"), "--output", str(folder / "run"), "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    timings["train_s"] = round(time.perf_counter() - started, 1)
    made = json.loads((folder / "synth/stats/snac_mixture.json").read_text())
    metrics = json.loads((folder / "run/metrics.json").read_text())
    headline = metrics["scores"]["snac"]["splits"]["test"]["headline"]
    study = json.loads((Path(__file__).parents[1] / "catalog/baseline/snac_transfer.json").read_text())["synthetic_only_model"]
    result = {
        "stories": args.stories, "records": {split: f["rows"] for split, f in made["files"].items()},
        "dropped": made["dropped"], "head": metrics["sentence_features"]["trained_on"],
        "snac_test_auc": headline["value"], "snac_test_auc_ci": headline["ci"],
        "study": {"row": study["row"], "test_auc": study["test_auc"], "test_auc_ci": study["test_auc_ci"]},
        "difference_from_study": headline["value"] - study["test_auc"], **timings, "folder": str(folder),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{args.stories} counterfactual stories -> {sum(result['records'].values())} records {result['records']} "
          f"(dropped {result['dropped']}); corrupt {timings['corrupt_s']} s, train {timings['train_s']} s")
    print(f"SNaC test AUC {100 * headline['value']:.1f} [{100 * headline['ci'][0]:.1f}, {100 * headline['ci'][1]:.1f}]; "
          f"the study's {study['row']}: {100 * study['test_auc']:.1f}; difference {100 * result['difference_from_study']:+.1f}")


if __name__ == "__main__":
    main()
