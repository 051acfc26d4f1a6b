"""Evidence for the DSD threshold tau on the rescaled MiniLM BERTScore: distributions of the rescaled F1 of
(a) random sentence pairs, (b) each sentence and its BM25 top-1 candidate from another story, and
(c) TimeTravel's original ending sentences and their human counterfactual rewrites (minimal edits, different
wording of a closely related event), all from the TimeTravel test file.

    .venv/bin/python benchmarks/bertscore_tau.py [--json] [--plot bertscore_tau.png]
"""

from __future__ import annotations

import json
import random
import sys

import numpy as np

from cohbench.corpora import timetravel
from cohbench.corruptions.bertscore import TokenEmbeddings, load_baseline, rescale
from cohbench.corruptions.dsd import ConfounderPool
from cohbench.corpora.fetch import fetch

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def summary(values, tau):
    array = np.asarray(values)
    return {"n": len(values), **{f"q{int(q * 100):02d}": round(float(np.quantile(array, q)), 3) for q in QUANTILES},
            "share_below_tau": round(float((array < tau).mean()), 3)}


def plot(groups: dict, tau: float, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    bins = np.linspace(-0.4, 1.0, 57)
    for name, values in groups.items():
        ax.hist(values, bins=bins, density=True, histtype="step", linewidth=2, label=f"{name} (n={len(values)})")
    ax.axvline(tau, color="black", linestyle="--", label=f"tau = {tau}")
    ax.set_xlabel("BERTScore F1, rescaled (all-MiniLM-L6-v2, baseline = mean of random TimeTravel pairs)")
    ax.set_ylabel("density")
    ax.set_title("Where the DSD threshold sits: TimeTravel test sentence pairs")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    tau = 0.5
    baseline = load_baseline()["F"]
    paths = fetch(timetravel.CORPUS)
    rng = random.Random(0)
    test = [json.loads(line) for line in open(paths["timetravel_test"], encoding="utf-8")]
    stories = rng.sample(test, 300)
    embeddings = TokenEmbeddings()
    score = lambda a, b: rescale(embeddings.f1(a, [b])[0], baseline)  # noqa: E731

    edits = [(o, e) for s in stories for rewrite in s["edited_endings"] for o, e in zip(s["original_ending"], rewrite) if o.strip() != e.strip()]
    sentences = [x for s in stories for x in [s["premise"], s["initial"], *s["original_ending"]]]
    docs = [s["story_id"] for s in stories for _ in range(5)]
    randoms = [tuple(rng.sample(sentences, 2)) for _ in range(1000)]
    pool = ConfounderPool("test", sentences, [str(i) for i in range(len(sentences))], docs, embeddings=embeddings)
    queries = sentences[:500]
    top1 = [(q, pool.texts_at([c[0]])[0]) for q, c in zip(queries, pool.candidates(queries, docs[:500])) if c]
    groups = {
        "random pairs": [score(a, b) for a, b in randoms],
        "BM25 top-1 from another story": [score(a, b) for a, b in top1],
        "counterfactual rewrites (minimal edits)": [score(a, b) for a, b in edits],
    }
    result = {"baseline_F": baseline, "tau": tau, **{name: summary(values, tau) for name, values in groups.items()}}
    if "--plot" in sys.argv:
        plot(groups, tau, sys.argv[sys.argv.index("--plot") + 1])
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for name, value in result.items():
            print(f"{name}: {value}")


if __name__ == "__main__":
    main()
