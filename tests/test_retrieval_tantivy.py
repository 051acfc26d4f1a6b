"""The tantivy retriever: BM25 top-k from an inverted index on disk, ties by pool index, shards merged in a fixed
order, folders checked against the pool they were built from, and a missing package named with its extra."""

from __future__ import annotations

import json
import pickle
import sys

import pytest

from cohbench.errors import CorruptionError
from cohbench.corruptions.retrieval import SHARD_MARK, merged_top, pool_index

POOL = ["Tom went to the park.", "The dog chased a ball in the park.", "Tom went to the park.", "Mary baked a cake.",
        "The cake burned.", "Tom and the dog went home.", "A ball rolled into the park.", "Tom went to the park."]


def test_ties_come_in_pool_order_and_only_matching_sentences_are_returned():
    index, shards = pool_index(POOL, "tantivy")
    assert shards is None
    hits = index.scored_top(["tom went to the park", "zebra"], 4)
    assert [i for i, _ in hits[0][:3]] == [0, 2, 7]  # three identical sentences tie: lower pool index first
    assert hits[0][0][1] == hits[0][1][1] == hits[0][2][1] > hits[0][3][1] > 0
    assert hits[1] == []  # no term of the query is in the pool


def test_a_tie_cut_at_the_kth_score_keeps_the_lowest_pool_indices():
    pool = ["red"] + ["red ball", "a red ball"] * 30
    index, _ = pool_index(pool, "tantivy")
    assert index.top(["red ball"], 5) == [[1, 3, 5, 7, 9]]
    assert index.top(["red ball a"], 3) == [[2, 4, 6]]


def test_shards_merge_to_the_same_candidates_in_every_process():
    _, shards = pool_index(POOL, "tantivy", shards=3)
    assert [(s.offset, s.size) for s in shards] == [(0, 3), (3, 2), (5, 3)]
    queries = ["the dog went to the park", "a cake"]
    merged = merged_top(shards, queries, 5)
    candidates = [sorted((hit for shard in shards for hit in shard.scored_top([q], 5)[0]), key=lambda h: (-h[1], h[0]))
                  for q in queries]
    assert merged == [[i for i, _ in hits[:5]] for hits in candidates]
    assert merged_top([pickle.loads(pickle.dumps(s)) for s in shards], queries, 5) == merged  # a worker's copy


def test_a_shard_folder_that_is_missing_or_from_another_pool_is_refused_in_one_line():
    _, shards = pool_index(POOL, "tantivy", shards=2)
    _, other = pool_index(POOL[:4] + ["Another sentence."] * 4, "tantivy", shards=2)
    foreign = pickle.loads(pickle.dumps(shards[0]))
    foreign.path = other[0].path
    with pytest.raises(CorruptionError, match=r"^index shard .* was built from another pool \(fingerprint [0-9a-f]{12}, expected") as error:
        foreign.top(["tom"], 1)
    assert "\n" not in str(error.value)
    gone = pickle.loads(pickle.dumps(shards[1]))
    (gone.path / SHARD_MARK).unlink()
    with pytest.raises(CorruptionError, match=r"^index shard .* is missing or unfinished; a worker must read"):
        gone.top(["tom"], 1)
    assert json.loads((shards[0].path / SHARD_MARK).read_text())["size"] == 4


def test_a_shard_too_large_for_one_segment_names_the_shards_it_needs(monkeypatch):
    from cohbench.corruptions import retrieval

    monkeypatch.setattr(retrieval, "WRITER_HEAP", 15_000_000)  # tantivy's floor: a few thousand sentences a segment
    pool = [f"sentence number {n} of a pool too large for its shards" for n in range(60_000)]
    with pytest.raises(CorruptionError, match=r"^a pool shard of 30,000 sentences does not fit one tantivy segment .* at least [3-9]\d* shards"):
        pool_index(pool, "tantivy", shards=2)


def test_a_retriever_that_is_not_installed_names_the_extra_that_brings_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tantivy", None)  # what `import tantivy` meets without the package
    with pytest.raises(CorruptionError, match=r"^the tantivy retriever needs the tantivy package: pip install 'cohbench\[tantivy\]'$"):
        pool_index(POOL, "tantivy")


def test_the_index_folder_is_removed_with_its_pool():
    import gc

    index, _ = pool_index(POOL, "tantivy")
    folder = index.path.parent
    assert folder.is_dir()
    del index
    gc.collect()
    assert not folder.exists()
