"""discordant_replace and the fast BERTScore: parity with the bert-score package, calibration, pool rules."""

from __future__ import annotations

import pytest

from cohbench.corruptions.bertscore import TokenEmbeddings, load_baseline, rescale
from cohbench.corruptions.dsd import ConfounderPool
from cohbench.encoder import AUTO, CPU, encode, encoder_path
from cohbench.errors import CorruptionError
from generator_run import corrupt
from cohbench.schema import FEATURES, empty_record

PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on a mat."),
    ("Julie scored the winning goal.", "The bank sent Miss Manette a letter."),
    ("He ran.", "He ran."),
    ("I went to the store to buy milk, eggs and bread for breakfast.", "The weather was nice."),
]

STORIES = {
    "a": ["Tom went to the park with his dog.", "The dog chased a red ball.", "Tom threw the ball again.", "They went home happy."],
    "b": ["Mary baked a cake for her mother.", "The cake burned in the oven.", "Mary baked another cake.", "Her mother loved it."],
    "c": ["Sam lost his dog at the park.", "He searched the park all day.", "A neighbour found the dog.", "Sam thanked him."],
    "d": ["Ann threw a ball for her dog at the beach.", "The dog swam after it.", "Ann dried the dog off.", "They drove home."],
}


@pytest.fixture(scope="module")
def embeddings():
    return TokenEmbeddings(device=CPU)


def records(split="train", docs=STORIES):
    out = []
    for doc, sentences in docs.items():
        r = empty_record()
        r.update(id=f"{split}-{doc}", corpus="test", config="test", split=split, doc_id=doc, sentences=sentences)
        out.append(r)
    return out


@pytest.mark.slow
def test_cached_bertscore_equals_the_bert_score_package(embeddings):
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=encoder_path(), num_layers=6, lang="en", device="cpu")
    _, _, reference = scorer.score([c for _, c in PAIRS], [r for r, _ in PAIRS])
    for (ref, cand), expected in zip(PAIRS, reference.tolist()):
        assert embeddings.f1(ref, [cand])[0] == pytest.approx(expected, abs=1e-5)
        assert embeddings.f1(cand, [ref])[0] == pytest.approx(expected, abs=1e-5)


def test_tokens_are_bert_scores_own_for_every_sentence_of_a_real_corpus():
    """One batched call of the fast tokenizer gives bert-score's `sent_encode` ids: TimeTravel's test sentences, one
    with spaces around it and one longer than the model's 512 tokens (cut there)."""
    import json

    from bert_score.utils import sent_encode

    from cohbench.encoder import _encoder, token_ids
    from conftest import _required_mirror
    from test_bm25_top import TIMETRAVEL

    sentences = sorted({item[key] for line in (_required_mirror() / TIMETRAVEL).read_text(encoding="utf-8").splitlines()
                        if line.strip() for item in [json.loads(line)] for key in ("premise", "initial", "counterfactual")})
    sentences += ["  Tom went home.\n", " ".join(sentences[:60])]
    tokenizer = _encoder("cpu")[0]
    ids = token_ids(tokenizer, sentences)
    assert len(sentences) > 5000 and len(ids[-1]) == tokenizer.model_max_length
    assert ids == [sent_encode(tokenizer, s) for s in sentences]
    assert token_ids(tokenizer, [" "]) == [[tokenizer.cls_token_id, tokenizer.sep_token_id]] and token_ids(tokenizer, []) == []


@pytest.mark.slow
def test_scoring_candidates_together_equals_scoring_each_alone(embeddings):
    """Candidates of different lengths share one product: each keeps its own tokens' matches."""
    references = [r for r, _ in PAIRS]
    candidates = [c for _, c in PAIRS] + ["Short.", "A much longer candidate sentence with many more tokens than the others."]
    for reference in references:
        together = embeddings.f1(reference, candidates)
        alone = [embeddings.f1(reference, [c])[0] for c in candidates]
        assert together == pytest.approx(alone, abs=1e-12) and len(together) == len(candidates)
    assert embeddings.f1(references[0], []) == []


def numpy_f1(reference, candidates):
    """The per-query matching cohbench shipped before the batched product (numpy, one reference at a time, on the
    token embeddings and weights `encoder.encode` gives): the oracle."""
    import numpy as np

    found = {sentence: tokens for sentence, _, tokens in encode([reference, *candidates], device=CPU)}
    ref, ref_w = found[reference]
    parts = [found[c] for c in candidates]
    tokens, weights = np.concatenate([t for t, _ in parts]), np.concatenate([w for _, w in parts])
    starts = np.cumsum([0] + [len(w) for _, w in parts[:-1]])
    sim = tokens.astype(np.float64) @ ref.astype(np.float64).T
    precision = np.add.reduceat(sim.max(axis=1) * weights, starts) / np.add.reduceat(weights, starts)
    recall = (np.maximum.reduceat(sim, starts, axis=0) @ ref_w) / ref_w.sum()
    return (2 * precision * recall / (precision + recall)).tolist()


def test_batched_matching_of_many_queries_equals_the_per_query_numpy_matching(embeddings):
    """Queries with different numbers of candidates of different lengths, all in one padded product on the device
    (here the CPU): each score equals the per-query reference, and every recorded (rounded) value is the same."""
    from cohbench.schema import FLOAT_DECIMALS

    sentences = [s for story in STORIES.values() for s in story] + [r for r, _ in PAIRS] + [c for _, c in PAIRS]
    queries = sentences[:9]
    candidates = [sentences[(3 * q + 1) % len(sentences):][: 1 + q % 5] for q in range(len(queries))]
    candidates[4] = []
    batched = embeddings.f1_many(queries, candidates)
    assert [len(b) for b in batched] == [len(c) for c in candidates]
    for query, cands, got in zip(queries, candidates, batched):
        expected = numpy_f1(query, cands) if cands else []
        assert got == pytest.approx(expected, abs=1e-12)
        baseline = load_baseline()["F"]
        assert [round(rescale(x, baseline), FLOAT_DECIMALS) for x in got] == [round(rescale(x, baseline), FLOAT_DECIMALS) for x in expected]


def test_pairs_are_matched_in_runs_that_fit_the_budget_and_cover_every_pair():
    from cohbench.corruptions.bertscore import _chunks

    sizes = [4, 9, 1, 30, 2, 2, 50, 3]
    runs = list(_chunks(sizes, CPU, budget=40))
    assert [i for start, end in runs for i in range(start, end)] == list(range(len(sizes)))
    assert all(max(sizes[start:end]) * (end - start) <= 40 or end - start == 1 for start, end in runs)
    assert list(_chunks([], CPU, budget=40)) == []


def test_cpu_path_is_taken_without_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert AUTO.kind == "cpu" and not TokenEmbeddings().device.is_gpu
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert AUTO.kind == "cuda" and TokenEmbeddings().device.is_gpu and CPU.kind == "cpu"


def test_rescaling_is_a_monotone_map_with_the_shipped_baseline():
    baseline = load_baseline()
    assert 0 < baseline["F"] < 1 and baseline["pairs"] >= 1000 and baseline["idf"] is False
    raw = [i / 100 for i in range(101)]
    scaled = [rescale(x, baseline["F"]) for x in raw]
    assert all(b > a for a, b in zip(scaled, scaled[1:]))
    assert rescale(1.0, baseline["F"]) == pytest.approx(1.0) and rescale(baseline["F"], baseline["F"]) == 0


@pytest.mark.parametrize("retriever", ["bm25s", "rank_bm25", "tantivy"])
def test_confounders_come_from_other_documents_of_the_same_split_below_tau(embeddings, retriever):
    batch = records()
    pool = ConfounderPool.from_records(batch, retriever=retriever, embeddings=embeddings)
    tau = 0.5
    out = corrupt("discordant_replace", batch, seed=3, pool=pool, tau=tau, k=2)
    assert len(out) >= 3  # a record yields nothing when a chosen sentence has no admissible candidate
    ids = {f"{r['id']}#s{i}": (r["doc_id"], s) for r in batch for i, s in enumerate(r["sentences"])}
    for r in out:
        FEATURES.encode_example(r)
        c = r["corruption"]
        assert len(c["positions"]) == 2 == sum(r["sentence_labels"]) and len(set(c["inserted_ids"])) == 2
        for position, inserted, similarity, rank in zip(c["positions"], c["inserted_ids"], c["similarities"], c["ranks"]):
            doc, text = ids[inserted]
            assert doc != r["doc_id"] and r["sentence_labels"][position] == 1 and r["sentences"][position] == text
            assert similarity < tau and rank >= 1
            source = next(s for s in batch if s["id"] == c["source_id"])
            assert c["replaced"][c["positions"].index(position)] == source["sentences"][position]  # what the viewer shows
            expected = rescale(embeddings.f1(source["sentences"][position], [text])[0], load_baseline()["F"])
            assert similarity == pytest.approx(expected, abs=1e-4)
    again = corrupt("discordant_replace", batch, seed=3, pool=pool, tau=tau, k=2)
    assert again == out


def test_the_first_candidate_below_tau_is_taken_in_bm25_order(embeddings):
    batch = records()
    pool = ConfounderPool.from_records(batch, embeddings=embeddings)
    query = batch[0]["sentences"][0]
    (candidates,) = pool.candidates([query], ["a"])
    scores = [rescale(s, pool.baseline) for s in embeddings.f1(query, pool.texts_at(candidates))]
    for tau in (0.05, 0.2, 0.4, 1.01):
        (pick,) = pool.choose([query], [candidates], tau)
        first = next((i for i, s in enumerate(scores) if s < tau), None)
        assert (pick is None) == (first is None)
        if pick:
            assert pick.rank == first + 1 and pick.index == candidates[first]


def test_a_record_from_another_split_is_refused(embeddings):
    pool = ConfounderPool.from_records(records("train"), embeddings=embeddings)
    with pytest.raises(CorruptionError, match="no confounder crosses splits"):
        corrupt("discordant_replace", records("test"), seed=1, pool=pool, tau=0.5)
    with pytest.raises(CorruptionError, match="one split"):
        ConfounderPool.from_records(records("train") + records("test"), embeddings=embeddings)


def test_a_pool_s_sentences_ids_and_documents_travel_as_out_of_band_buffers(embeddings):
    """What lets Ray's object store hand the columns to every worker without a copy: pickled with protocol 5 (as
    Ray pickles), the Arrow columns' bytes leave the pickle as buffers, and the pickle itself stays small."""
    import pickle

    pool = ConfounderPool.from_records(records("train", {f"{d}{n}": s for n in range(200) for d, s in STORIES.items()}),
                                       embeddings=embeddings)
    buffers = []
    inline = pickle.dumps(pool, protocol=5, buffer_callback=buffers.append)
    columns = sum(column.nbytes for column in (pool.texts, pool.ids, pool.doc_ids))
    assert sum(memoryview(b).nbytes for b in buffers) >= columns
    assert len(inline) < columns / 4
    again = pickle.loads(inline, buffers=buffers)
    assert again.texts_at([0, len(pool) - 1]) == pool.texts_at([0, len(pool) - 1])


def test_a_candidate_within_a_rounding_of_tau_is_decided_on_the_value_it_would_record(embeddings):
    """The device only marks candidates that may be below tau (score < tau + 10^-FLOAT_DECIMALS); the host decides on the rounded
    value the record would hold. With tau equal to a candidate's rounded similarity, that candidate is marked but
    refused, and the next one below tau is taken, as a plain loop over the rounded values takes it."""
    from cohbench.schema import FLOAT_DECIMALS

    batch = records()
    pool = ConfounderPool.from_records(batch, embeddings=embeddings)
    query = batch[0]["sentences"][0]
    (candidates,) = pool.candidates([query], ["a"])
    recorded = [round(rescale(s, pool.baseline), FLOAT_DECIMALS) for s in embeddings.f1(query, pool.texts_at(candidates))]
    for tau in sorted(set(recorded)):
        (pick,) = pool.choose([query], [candidates], tau)
        first = next((i for i, s in enumerate(recorded) if s < tau), None)
        assert (pick is None) == (first is None)
        if pick:
            assert (pick.rank, pick.index, pick.similarity) == (first + 1, candidates[first], recorded[first])


def test_the_confounder_choice_waits_for_the_device_once_per_round_whatever_the_number_of_queries():
    """What a GPU would wait for (every copy back, `encoder.to_host`, and every op that reads a device value), counted
    in the profile of `choose` on the CPU: one per matching round with 3 queries and with 12."""
    from torch.profiler import ProfilerActivity, profile

    from cohbench.corruptions.dsd import MATCHING_ROUND
    from cohbench.encoder import DEVICE_READS, TO_HOST

    batch = records(docs={f"{doc}{n}": [f"{s[:-1]} number {n}." for s in story] for n in range(3)
                          for doc, story in STORIES.items()})
    per_round = []
    for queries in (3, 12):
        pool = ConfounderPool.from_records(batch, embeddings=TokenEmbeddings(device=CPU))
        asked = [r["sentences"][1] for r in batch[:queries]]
        candidates = pool.candidates(asked, [r["doc_id"] for r in batch[:queries]])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            pool.choose(asked, candidates, 0.2, device=CPU)
        names = [event.name for event in prof.events()]
        waits = sum(n == TO_HOST or n in DEVICE_READS for n in names)
        per_round.append((names.count(MATCHING_ROUND), waits))
    assert all(rounds >= 2 and waits == rounds for rounds, waits in per_round), per_round


def test_kept_token_embeddings_stay_within_their_capacity_and_score_the_same():
    """A capacity far below what the calls encode: each call keeps only what it needs, the scores are those of an
    unbounded cache bit for bit, and a sentence dropped and asked for again is encoded again."""
    sentences = [s for story in STORIES.values() for s in story]
    bounded, unbounded = TokenEmbeddings(device=CPU, capacity=40), TokenEmbeddings(device=CPU)
    for n in range(0, len(sentences) - 3, 2):
        reference, candidates = sentences[n], sentences[n + 1 : n + 4]
        assert bounded.f1(reference, candidates) == unbounded.f1(reference, candidates)
        assert bounded._used <= max(40, sum(bounded._span[s][1] for s in {reference, *candidates}))
    assert len(bounded) < len(unbounded) == len(sentences)


def test_matching_out_of_gpu_memory_is_halved_and_one_pair_that_does_not_fit_is_refused(embeddings, monkeypatch):
    """Fault injection: torch's out-of-memory error where a GPU would raise it (matching a run of pairs). The call
    is split in halves until each fits, with the same scores to 1e-12; a single reference's pairs that never fit are refused
    in one line naming --device cpu."""
    import torch

    references = [story[0] for story in STORIES.values()]
    candidates = [story[1:] for story in STORIES.values()]
    expected = embeddings.f1_many(references, candidates)
    real, refused = TokenEmbeddings._matched, []

    def within_three_pairs(self, pairs):
        if len(pairs) > 3:
            refused.append(len(pairs))
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real(self, pairs)

    monkeypatch.setattr(TokenEmbeddings, "_matched", within_three_pairs)
    halved = embeddings.f1_many(references, candidates)
    assert refused == [12, 6, 6]  # the pairs of 4 references, then twice those of 2
    # the same scores; smaller runs pad less, which may move the last bit of a sum (never the recorded value)
    assert [x for row in halved for x in row] == pytest.approx([x for row in expected for x in row], abs=1e-12)
    monkeypatch.setattr(TokenEmbeddings, "_matched", lambda self, pairs: (_ for _ in ()).throw(torch.OutOfMemoryError("CUDA")))
    with pytest.raises(CorruptionError, match=r"^the GPU \(cpu\) ran out of memory matching one sentence's candidates.*--device cpu$"):
        embeddings.f1_many(references, candidates)
