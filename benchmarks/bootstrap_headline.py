"""The headline bootstrap (`cohbench.evaluation.headline`): 1,000 resamples of documents on the largest test split of
the release (by units), against the obvious implementation in the same run — materialise each resample's units and
call `metrics.roc_auc` once per resample — timed on a few resamples and extrapolated to the same count. Both must
agree on the resamples they share. Prints times and the ratio (goal: well under a few seconds per call).

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/bootstrap_headline.py [--samples 1000] [--loop-samples 50] [--json]

Scores are a fixed seeded function of each unit (the timing does not depend on what they mean).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from cohbench import evaluation
from cohbench.evaluation import bootstrap, metrics
from cohbench.evaluation.detection import gather
from cohbench.release.layout import built_configs, read_config
from cohbench.settings import release_dir


def largest_test_split() -> tuple[str, dict]:
    """(config, its splits) of the built sentence- or gap-level config with the most test units."""
    release = release_dir()
    best, best_units, best_splits = None, -1, None
    for config, stats in built_configs(release).items():
        if evaluation.unit_of(config) not in ("sentences", "gaps"):
            continue
        splits = read_config(release, config, stats).splits
        units = sum(len(r["sentences"]) for r in splits.get("test", []))
        if units > best_units:
            best, best_units, best_splits = config, units, splits
    if best is None:
        raise SystemExit("no sentence- or gap-level config with a test split is built in the release")
    return best, best_splits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=bootstrap.DEFAULT_SAMPLES)
    parser.add_argument("--loop-samples", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    config, splits = largest_test_split()
    protocol = evaluation.protocol_of(config)
    rng = np.random.default_rng(0)
    predictions = [{"id": r["id"], "score": rng.random(protocol.width(r)).round(3).tolist()} for r in splits["test"]]

    evaluation.headline(config, predictions, splits=splits, samples=10)  # warm up numpy's dispatch
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        figure = evaluation.headline(config, predictions, splits=splits, samples=args.samples)
        runs.append(time.perf_counter() - started)
    headline_seconds = float(np.median(runs))

    # the resampling alone, without reading and checking the predictions
    checked = {p["id"]: evaluation.reader.check(p, protocol, r) for p, r in zip(predictions, splits["test"])}
    gold, _, scores, where, documents = gather(protocol.unit, splits["test"], checked, None)
    statistic = bootstrap.auc_statistic(gold, scores, where)
    started = time.perf_counter()
    bootstrap.resample([statistic], [documents], samples=args.samples)
    vectorised_seconds = time.perf_counter() - started

    # the Python loop: one resample at a time, its units materialised
    units_of = [np.flatnonzero(where == d) for d in range(documents)]
    draws = [rng.integers(0, documents, documents) for _ in range(args.loop_samples)]
    started = time.perf_counter()
    looped = [metrics.roc_auc(gold[units], scores[units]) for units in (np.concatenate([units_of[d] for d in drawn]) for drawn in draws)]
    loop_seconds = (time.perf_counter() - started) / args.loop_samples * args.samples
    counts = np.stack([np.bincount(drawn, minlength=documents) for drawn in draws]).astype(float)
    worst = float(np.max(np.abs(statistic(counts) - np.array(looped))))

    report = {
        "config": config, "split": "test", "units": int(len(gold)), "documents": documents, "samples": args.samples,
        "headline": figure, "headline_seconds": round(headline_seconds, 3), "resampling_seconds": round(vectorised_seconds, 3),
        "python_loop_seconds_extrapolated": round(loop_seconds, 2), "speedup_vs_loop": round(loop_seconds / vectorised_seconds, 1),
        "max_abs_difference_vs_loop": worst,
    }  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{config} test: {report['units']} units in {report['documents']} documents; AUC {figure['value']:.4f} 95% CI {figure['ci']}")
    print(f"headline() with {args.samples} resamples (read, check, point, CI): {headline_seconds:.2f} s (median of 3)")
    print(f"the {args.samples} resamples alone: {vectorised_seconds:.3f} s")
    print(f"Python loop, one roc_auc per materialised resample, extrapolated from {args.loop_samples}: {loop_seconds:.1f} s"
          f"  -> {report['speedup_vs_loop']}x")
    print(f"largest difference from the loop on {args.loop_samples} shared resamples: {worst:.2e}")


if __name__ == "__main__":
    main()
