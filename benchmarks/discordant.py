"""Discordant-confounder search (Cai et al. §3) — the naive reference against cohbench's fast path, same input,
same process. Prints the speed-up (wall clock, and CPU time of this process, which a shared machine disturbs less) and
whether the chosen confounders agree.

Reference (what a user would write, as the issue defines it): rank_bm25 scores the whole pool for every query,
then `bert_score.BERTScorer.score` is called one (sentence, candidate) pair at a time for the top-100, and the
highest-ranked candidate with rescaled F1 below tau is taken. A second reference stops at that candidate
(early stopping is one of the fast path's features; this isolates what caching and batching add). Fast path: `ConfounderPool` (token embeddings cached per unique sentence, batched encoding,
candidates scored a few at a time), once with rank_bm25 (must choose the same confounders as the reference) and
once with bm25s (the default).

    .venv/bin/python benchmarks/discordant.py [--queries 40] [--json]   (about 3 min on 2 cores)
Input: the TimeTravel train split (coherent stories); one sentence per story, drawn by seed, up to --queries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reference(pool_texts, pool_docs, queries, query_docs, tau, baseline, early_stop, top_k=100):
    from bert_score import BERTScorer
    from rank_bm25 import BM25Okapi

    from cohbench.encoder import encoder_path
    from cohbench.corruptions.bertscore import rescale
    from cohbench.corruptions.retrieval import rank_bm25_top, tokenize

    scorer = BERTScorer(model_type=encoder_path(), num_layers=6, lang="en", device="cpu")
    scorer.score(["warm up"], ["warm up"])
    start, cpu = time.perf_counter(), time.process_time()
    index = BM25Okapi([tokenize(t) for t in pool_texts])
    widest = max(pool_docs.count(d) for d in set(pool_docs))
    chosen = []
    for query, doc in zip(queries, query_docs):
        hits = [i for i, _ in rank_bm25_top(index, query, top_k + widest + 1)]
        candidates = [i for i in hits if pool_docs[i] != doc and pool_texts[i] != query][:top_k]
        pick = None
        for rank, i in enumerate(candidates, 1):
            _, _, f1 = scorer.score([pool_texts[i]], [query])
            similarity = rescale(float(f1[0]), baseline)
            if similarity < tau and pick is None:
                pick = (i, rank, similarity)
                if early_stop:
                    break
        chosen.append(pick)
    return chosen, time.perf_counter() - start, time.process_time() - cpu


def fast(pool_texts, pool_docs, queries, query_docs, tau, retriever):
    from cohbench.corruptions.bertscore import TokenEmbeddings
    from cohbench.corruptions.dsd import ConfounderPool

    TokenEmbeddings().encode(["warm up"])  # model load outside the timing, as for the reference
    embeddings = TokenEmbeddings()
    start, cpu = time.perf_counter(), time.process_time()
    pool = ConfounderPool("train", pool_texts, [str(i) for i in range(len(pool_texts))], pool_docs,
                          retriever=retriever, embeddings=embeddings)
    picks = pool.choose(queries, pool.candidates(queries, query_docs), tau)
    chosen = [(p.index, p.rank, p.similarity) if p else None for p in picks]
    return chosen, time.perf_counter() - start, time.process_time() - cpu, embeddings.device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from cohbench.corpora import registry
    from cohbench.corpora import timetravel
    from cohbench.corruptions.bertscore import load_baseline
    from cohbench.corpora.fetch import fetch

    options = registry.spec("timetravel_dsd").generator_options()
    tau, baseline = options.tau, load_baseline()["F"]
    records, _, _ = timetravel.coherent_records(fetch(timetravel.CORPUS), "benchmark", options)
    train = [r for r in records if r["split"] == "train"]
    pool_texts = [s for r in train for s in r["sentences"]]
    pool_docs = [r["doc_id"] for r in train for _ in r["sentences"]]
    rng = random.Random(args.seed)
    sample = rng.sample(train, min(args.queries, len(train)))
    queries = [r["sentences"][rng.randrange(5)] for r in sample]
    query_docs = [r["doc_id"] for r in sample]

    ref, ref_s, ref_cpu = reference(pool_texts, pool_docs, queries, query_docs, tau, baseline, early_stop=False)
    stop, stop_s, stop_cpu = reference(pool_texts, pool_docs, queries, query_docs, tau, baseline, early_stop=True)
    same, same_s, same_cpu, device = fast(pool_texts, pool_docs, queries, query_docs, tau, "rank_bm25")
    default, default_s, default_cpu, _ = fast(pool_texts, pool_docs, queries, query_docs, tau, "bm25s")
    choice = lambda pick: pick[:2] if pick else None  # noqa: E731  (pool index, rank)
    assert [choice(p) for p in ref] == [choice(p) for p in stop]  # both references choose alike by construction
    agree = sum(choice(a) == choice(b) for a, b in zip(ref, same))
    both = [(a[2], b[2]) for a, b in zip(ref, same) if a and b and choice(a) == choice(b)]
    result = {
        "pool_sentences": len(pool_texts), "queries": len(queries), "tau": tau, "device": device,
        "torch_threads": __import__("torch").get_num_threads(), "load_average_1min": os.getloadavg()[0],
        "wall_s": {"reference": round(ref_s, 2), "reference_early_stop": round(stop_s, 2),
                   "fast_rank_bm25": round(same_s, 2), "fast_bm25s": round(default_s, 2)},
        "cpu_s": {"reference": round(ref_cpu, 2), "reference_early_stop": round(stop_cpu, 2),
                  "fast_rank_bm25": round(same_cpu, 2), "fast_bm25s": round(default_cpu, 2)},
        "speedup_wall": {"same_retriever": round(ref_s / same_s, 1), "default": round(ref_s / default_s, 1),
                         "early_stop_reference_vs_default": round(stop_s / default_s, 1)},
        "speedup_cpu": {"same_retriever": round(ref_cpu / same_cpu, 1), "default": round(ref_cpu / default_cpu, 1),
                        "early_stop_reference_vs_default": round(stop_cpu / default_cpu, 1)},
        "same_retriever_agreement": f"{agree}/{len(queries)}",
        "max_similarity_difference": max((abs(a - b) for a, b in both), default=0.0),
        "bm25s_vs_rank_bm25_same_confounder": f"{sum(choice(a) == choice(b) for a, b in zip(same, default))}/{len(queries)}",
        "early_stop_pairs_scored_per_query": round(sum(p[1] if p else 100 for p in stop) / len(stop), 2),
    }
    disagreements = [(q, a, b) for q, a, b in zip(queries, ref, same) if choice(a) != choice(b)]
    result["disagreements"] = [{"query": q, "reference": a and pool_texts[a[0]], "reference_similarity": a and a[2],
                                "fast": b and pool_texts[b[0]], "fast_similarity": b and b[2]} for q, a, b in disagreements]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
