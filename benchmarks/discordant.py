"""Discordant-confounder search (Cai et al. §3) — the naive reference against cohbench's fast path, same input,
same process. Prints the speed-up and whether the chosen confounders agree.

Reference (what a user would write): rank_bm25 scores the whole pool for every query, then
`bert_score.BERTScorer.score` is called one (sentence, candidate) pair at a time in BM25 order until a rescaled
F1 falls below tau. Fast path: `ConfounderPool` (token embeddings cached per unique sentence, batched encoding,
candidates scored a few at a time), once with rank_bm25 (must choose the same confounders as the reference) and
once with bm25s (the default).

    .venv/bin/python benchmarks/discordant.py [--queries 200] [--json]
Input: the TimeTravel train split (coherent stories); one sentence per story, drawn by seed, up to --queries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reference(pool_texts, pool_docs, queries, query_docs, tau, baseline, top_k=100):
    from bert_score import BERTScorer
    from rank_bm25 import BM25Okapi

    from cohbench.corruptions.bertscore import encoder_path, rescale
    from cohbench.corruptions.retrieval import rank_bm25_top, tokenize

    scorer = BERTScorer(model_type=encoder_path(), num_layers=6, lang="en", device="cpu")
    scorer.score(["warm up"], ["warm up"])
    start = time.perf_counter()
    index = BM25Okapi([tokenize(t) for t in pool_texts])
    widest = max(pool_docs.count(d) for d in set(pool_docs))
    chosen = []
    for query, doc in zip(queries, query_docs):
        hits = rank_bm25_top(index, query, top_k + widest + 1)
        candidates = [i for i in hits if pool_docs[i] != doc and pool_texts[i] != query][:top_k]
        pick = None
        for rank, i in enumerate(candidates, 1):
            _, _, f1 = scorer.score([pool_texts[i]], [query])
            similarity = rescale(float(f1[0]), baseline)
            if similarity < tau:
                pick = (i, rank, round(similarity, 4))
                break
        chosen.append(pick)
    return chosen, time.perf_counter() - start


def fast(pool_texts, pool_docs, queries, query_docs, tau, retriever):
    from cohbench.corruptions.bertscore import TokenEmbeddings
    from cohbench.corruptions.dsd import ConfounderPool

    embeddings = TokenEmbeddings()
    embeddings.encode(["warm up"])  # model load outside the timing, as for the reference
    embeddings._cache.clear()
    start = time.perf_counter()
    pool = ConfounderPool("train", pool_texts, [str(i) for i in range(len(pool_texts))], pool_docs,
                          retriever=retriever, embeddings=embeddings)
    picks = pool.choose(queries, pool.candidates(queries, query_docs), tau)
    chosen = [(p.index, p.rank, round(p.similarity, 4)) if p else None for p in picks]
    return chosen, time.perf_counter() - start, embeddings.device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from cohbench.builders import timetravel
    from cohbench.corruptions import corpora
    from cohbench.corruptions.bertscore import load_baseline
    from cohbench.fetch import fetch

    tau, baseline = corpora.params()["tau"], load_baseline()["F"]
    records, _, _ = timetravel.coherent_records(fetch(timetravel.CORPUS), "benchmark")
    train = [r for r in records if r["split"] == "train"]
    pool_texts = [s for r in train for s in r["sentences"]]
    pool_docs = [r["doc_id"] for r in train for _ in r["sentences"]]
    rng = random.Random(args.seed)
    sample = rng.sample(train, min(args.queries, len(train)))
    queries = [r["sentences"][rng.randrange(5)] for r in sample]
    query_docs = [r["doc_id"] for r in sample]

    ref, ref_s = reference(pool_texts, pool_docs, queries, query_docs, tau, baseline)
    same, same_s, device = fast(pool_texts, pool_docs, queries, query_docs, tau, "rank_bm25")
    default, default_s, _ = fast(pool_texts, pool_docs, queries, query_docs, tau, "bm25s")
    agree = sum(a == b for a, b in zip(ref, same))
    result = {
        "pool_sentences": len(pool_texts), "queries": len(queries), "tau": tau, "device": device,
        "torch_threads": __import__("torch").get_num_threads(),
        "reference_s": round(ref_s, 2), "fast_rank_bm25_s": round(same_s, 2), "fast_bm25s_s": round(default_s, 2),
        "speedup_same_retriever": round(ref_s / same_s, 1), "speedup_default": round(ref_s / default_s, 1),
        "same_retriever_agreement": f"{agree}/{len(queries)}",
        "bm25s_vs_rank_bm25_same_confounder": f"{sum((a or (None,))[0] == (b or (None,))[0] for a, b in zip(same, default))}/{len(queries)}",
        "reference_pairs_scored_per_query": round(sum(p[1] if p else 100 for p in ref) / len(ref), 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
