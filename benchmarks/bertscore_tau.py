"""Evidence for the DSD threshold tau on the rescaled MiniLM BERTScore: distributions of the rescaled F1 of
(a) random sentence pairs, (b) each sentence and its BM25 top-1 candidate from another story, and
(c) TimeTravel's original ending sentences and their human counterfactual rewrites (minimal edits, different
wording of a closely related event), all from the TimeTravel test file.

    .venv/bin/python benchmarks/bertscore_tau.py [--json]
"""

from __future__ import annotations

import json
import random
import sys

import numpy as np

from cohbench.builders import timetravel
from cohbench.corruptions.bertscore import TokenEmbeddings, load_baseline, rescale
from cohbench.corruptions.dsd import ConfounderPool
from cohbench.fetch import fetch

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def summary(values, tau):
    array = np.asarray(values)
    return {"n": len(values), **{f"q{int(q * 100):02d}": round(float(np.quantile(array, q)), 3) for q in QUANTILES},
            "share_below_tau": round(float((array < tau).mean()), 3)}


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
    top1 = [(q, pool.texts[c[0]]) for q, c in zip(queries, pool.candidates(queries, docs[:500])) if c]
    result = {
        "baseline_F": baseline, "tau": tau,
        "random_pairs": summary([score(a, b) for a, b in randoms], tau),
        "bm25_top1_other_story": summary([score(a, b) for a, b in top1], tau),
        "counterfactual_rewrites": summary([score(a, b) for a, b in edits], tau),
    }
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for name, value in result.items():
            print(f"{name}: {value}")


if __name__ == "__main__":
    main()
