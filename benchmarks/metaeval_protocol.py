"""SummEval meta-evaluation: the vectorised protocol (five measures, 1,000 bootstrap samples, bias matrix) against
the obvious implementation in the same run — materialise each resample and call scipy.stats.kendalltau per
document, per system, on all summaries and on system means — timed on a few samples and extrapolated to the
same count. Both must agree on the samples they share; prints times and the ratio (goal: the protocol runs in
seconds). Also prints the paper's confounders and upper bound (Steen & Markert 2022, Table 1) next to ours,
noised variants averaged over 100 seeds as in the paper.

    COHBENCH_RELEASE=... .venv/bin/python benchmarks/metaeval_protocol.py [--naive-samples 20] [--json]

Needs the `summeval` config built in the release folder.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.stats

from cohbench.evaluation import bootstrap, kendall, rating_grid, ratings, references

# Steen & Markert 2022, Table 1 (17 systems; (r) = noised, averaged over 100 runs; None = undefined)
PAPER_TABLE_1 = {
    "uppercase": {"tau_sys": 0.42, "tau_sum": 0.19, "tau_pair": 0.21, "acc_pair": 0.23, "tau_intra": None},
    "uppercase-noised": {"tau_sys": 0.23, "tau_sum": 0.11, "tau_pair": 0.14, "acc_pair": 0.57, "tau_intra": -0.03},
    "architecture": {"tau_sys": 0.58, "tau_sum": 0.31, "tau_pair": 0.33, "acc_pair": 0.34, "tau_intra": None},
    "architecture-noised": {"tau_sys": 0.37, "tau_sum": 0.20, "tau_pair": 0.22, "acc_pair": 0.62, "tau_intra": 0.01},
    "upper-bound": {"tau_sys": 1.00, "tau_sum": 0.39, "tau_pair": 0.44, "acc_pair": 0.73, "tau_intra": None},
    "upper-bound-noised": {"tau_sys": 1.00, "tau_sum": 0.39, "tau_pair": 0.44, "acc_pair": 0.73, "tau_intra": 0.00},
}


def naive_sample(gold: np.ndarray, pred: np.ndarray, docs: np.ndarray, systems: np.ndarray) -> dict:
    g, p = gold[docs][:, systems], pred[docs][:, systems]
    tau = lambda x, y: scipy.stats.kendalltau(x, y).statistic  # noqa: E731
    per_doc = [tau(g[d], p[d]) for d in range(len(docs))]
    per_sys = [tau(g[:, s], p[:, s]) for s in range(len(systems))]
    wins = agreed = 0
    for d in range(len(docs)):
        for i in range(len(systems)):
            for j in range(len(systems)):
                if g[d, i] > g[d, j]:
                    wins += 1
                    agreed += p[d, i] > p[d, j]
    return {
        "tau_sys": tau(g.mean(0), p.mean(0)),
        "tau_sum": tau(g.ravel(), p.ravel()),
        "tau_pair": np.nanmean(per_doc),
        "acc_pair": agreed / wins,
        "tau_intra": np.nanmean(per_sys),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--naive-samples", type=int, default=20)
    parser.add_argument("--bootstrap", type=int, default=bootstrap.DEFAULT_SAMPLES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    human, _ = rating_grid.load_human()  # (grid, provenance)
    load_seconds = time.perf_counter() - started
    gold = human.expert_sum
    pred = references.reference_scores("architecture-noised", human, seed=0)

    kendall.correlations(gold, pred, samples=10)  # warm up BLAS and numpy's dispatch
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        ratings.evaluate(measure="architecture-noised", human=human, bootstrap=args.bootstrap)
        runs.append(time.perf_counter() - started)
    protocol_seconds = float(np.median(runs))

    rng = np.random.default_rng(0)
    protocol = kendall.Comparisons(gold, pred)
    started = time.perf_counter()
    draws = [(rng.integers(0, gold.shape[0], gold.shape[0]), rng.integers(0, gold.shape[1], gold.shape[1])) for _ in range(args.naive_samples)]
    naive = [naive_sample(gold, pred, docs, systems) for docs, systems in draws]
    naive_seconds = (time.perf_counter() - started) / args.naive_samples * args.bootstrap
    worst = 0.0
    for (docs, systems), expected in zip(draws, naive):
        m = np.bincount(docs, minlength=gold.shape[0])[None] * 1.0
        c = np.bincount(systems, minlength=gold.shape[1])[None] * 1.0
        got = protocol.evaluate(m, c)
        worst = max(worst, *(abs(got[k][0] - expected[k]) for k in kendall.METRICS))

    table = {}
    for name, paper in PAPER_TABLE_1.items():
        seeds = range(100) if name.endswith("-noised") else range(1)
        values = [kendall.correlations(gold, references.reference_scores(name, human, seed=s), samples=0) for s in seeds]
        ours = {}
        for metric in kendall.METRICS:
            defined = [v[metric]["value"] for v in values if v[metric]["value"] is not None]
            ours[metric] = round(float(np.mean(defined)), 3) if defined else None
        ci = kendall.correlations(gold, references.reference_scores(name, human, seed=0), samples=args.bootstrap)
        table[name] = {"ours": ours, "ours_ci95_seed0": {m: ci[m]["ci95"] for m in kendall.METRICS}, "paper": paper}

    report = {
        "load_seconds": round(load_seconds, 3),
        "protocol_seconds": round(protocol_seconds, 3),
        "naive_seconds_extrapolated": round(naive_seconds, 2),
        "speedup": round(naive_seconds / protocol_seconds, 1),
        "max_abs_difference_vs_naive": worst,
        "bootstrap": args.bootstrap,
        "table_1": table,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load the release: {load_seconds:.2f} s")
    print(f"protocol, {args.bootstrap} bootstrap samples + bias matrix: {protocol_seconds:.2f} s (median of 3)")
    print(f"naive scipy per resample, extrapolated to {args.bootstrap}: {naive_seconds:.1f} s  -> {report['speedup']}x")
    print(f"largest difference from the naive results on {args.naive_samples} shared samples: {worst:.2e}")
    print(f"\n{'measure':<22}" + "  ".join(f"{m:>27}" for m in kendall.METRICS))
    for name, row in table.items():
        cells = []
        for m in kendall.METRICS:
            ours, paper, ci = row["ours"][m], row["paper"][m], row["ours_ci95_seed0"][m]
            text = "-" if ours is None else f"{ours:+.2f}"
            text += f" [{ci[0]:+.2f},{ci[1]:+.2f}]" if ci and ours is not None else ""
            cells.append(f"{text} ({'-' if paper is None else f'{paper:+.2f}'})")
        print(f"{name:<22}" + "  ".join(f"{c:>27}" for c in cells))
    print("(ours [95% CI of one seed] (paper); noised rows: mean over 100 seeds)")


if __name__ == "__main__":
    main()
