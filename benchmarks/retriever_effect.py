"""What choosing tantivy over bm25s would change in the made data: top-k overlap of the candidates, and the DSD
records' label rates and confounder similarities, on the ROCStories and TimeTravel pools of the release.

For each of `rocstories_dsd` and `timetravel_dsd`: the config's coherent records and options as `cohbench build`
reads them (params.yaml), one confounder pool per split built over all of them with each retriever, then
- candidates: for the replaced sentences of the first `--stories` sources of every split (positions as the recipe
  draws them), the admissible top-10 and top-100 of each retriever, and their overlap (|A & B| / |A|, A: bm25s);
- made data: those sources run through the dsd recipe with the tantivy pool, beside the same sources' records in
  the built release (made with bm25s): records made per source, discordant-sentence rate, the rank of the accepted
  confounder, its rescaled BERTScore similarity (histogram in bins of 0.1 below tau), and how often the very same
  confounder was chosen.

    .venv/bin/python benchmarks/retriever_effect.py [--stories 400] [--json]   (COHBENCH_RELEASE: the built release)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CONFIGS = {"rocstories_dsd": "rocstories", "timetravel_dsd": "timetravel"}


def coherent_and_params(config: str):
    from cohbench import settings
    from cohbench.corpora import rocstories, timetravel
    from cohbench.corpora.fetch import fetch
    from cohbench.corpora.registry import corpus_of

    corpus = corpus_of(config)
    opts = corpus.config(config).options.from_params(settings.params())
    paths = fetch(corpus, progress=False)
    if config == "rocstories_dsd":
        coherent, _, _ = rocstories.coherent_records(paths, config)
        params = opts.recipe_params("dsd", instances=opts.dsd_instances)
    else:
        coherent, _, _ = timetravel.coherent_records(paths, config, opts)
        params = opts.recipe_params("dsd")
    return coherent, params


def histogram(values, tau: float) -> dict:
    bins = Counter(min(int((v + 1) * 10), int((tau + 1) * 10) - 1) for v in values)  # bins of 0.1 from -1
    return {f"[{b / 10 - 1:.1f},{b / 10 - 0.9:.1f})": n for b, n in sorted(bins.items())}


def summary(records: list[dict], sources: int, tau: float) -> dict:
    labels = [v for r in records for v in r["sentence_labels"] if v != -1]
    similarities = [s for r in records for s in r["corruption"]["similarities"]]
    ranks = [k for r in records for k in r["corruption"]["ranks"]]
    return {"records": len(records), "records_per_source": round(len(records) / sources, 4),
            "discordant_rate": round(sum(labels) / len(labels), 6) if labels else None,
            "similarity_mean": round(sum(similarities) / len(similarities), 4) if similarities else None,
            "similarity_histogram": histogram(similarities, tau),
            "rank_1_share": round(ranks.count(1) / len(ranks), 4) if ranks else None,
            "rank_mean": round(sum(ranks) / len(ranks), 2) if ranks else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=400, help="sources per split corrupted with tantivy")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    from cohbench.corruptions import recipes
    from cohbench.corruptions.dsd import plan_replacements
    from cohbench.release.layout import read_config

    torch.set_num_threads(1)
    result = {}
    for config in CONFIGS:
        coherent, params = coherent_and_params(config)
        release = read_config(None, config)
        by_source = {}
        for r in release.records():
            by_source.setdefault(r["corruption"]["source_id"], []).append(r)
        pools, seconds = {}, {}
        for retriever in ("bm25s", "tantivy"):
            start = time.perf_counter()
            pools[retriever] = recipes.pools(coherent, params | {"retriever": retriever})
            seconds[retriever] = round(time.perf_counter() - start, 2)
        row = {"pool_sentences": {s: len(p.texts) for s, p in pools["bm25s"].items()}, "index_seconds": seconds, "splits": {}}
        for split, bm25s_pool in pools["bm25s"].items():
            sources = [r for r in coherent if r["split"] == split][: args.stories]
            plans = {retriever: plan_replacements(sources, pools[retriever][split], seed=params["seed"], k=params.get("k", 1),
                                                  instances=params.get("instances", 1)) for retriever in pools}
            pairs = [(a, b) for plan_a, plan_b in zip(plans["bm25s"], plans["tantivy"]) if plan_a
                     for unit_a, unit_b in zip(plan_a, plan_b) for a, b in zip(unit_a["candidates"], unit_b["candidates"])]
            overlap = {f"top_{k}": round(sum(len(set(a[:k]) & set(b[:k])) / max(len(a[:k]), 1) for a, b in pairs) / len(pairs), 4)
                       for k in (10, 100)}
            start = time.perf_counter()
            made, _ = recipes.run("dsd", sources, params | {"retriever": "tantivy"}, shared=pools["tantivy"])
            made_seconds = time.perf_counter() - start
            tantivy_records = [r for out in made for r in out]
            bm25s_records = [r for s in sources for r in by_source.get(s["id"], [])]
            inserted = {b["id"]: b["corruption"]["inserted_ids"] for b in bm25s_records}
            same = sum(1 for r in tantivy_records if inserted.get(r["id"]) == r["corruption"]["inserted_ids"])
            row["splits"][split] = {
                "sources": len(sources), "queries_compared": len(pairs), "candidate_overlap": overlap,
                "bm25s_release": summary(bm25s_records, len(sources), params["tau"]),
                "tantivy": summary(tantivy_records, len(sources), params["tau"]),
                "same_confounder_share": round(same / max(len(tantivy_records), 1), 4),
                "tantivy_made_seconds": round(made_seconds, 1)}
        result[config] = row
        if not args.json:
            print(config, json.dumps(row, indent=1), flush=True)
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
