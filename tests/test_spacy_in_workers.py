"""Long lists of texts go through spaCy in worker processes (`text.pipe`): the same results, in the same order, as in
one process, for sentence splits and for the entity generators' analysis."""

from __future__ import annotations

import os

import pytest

from cohbench import text
from cohbench.corruptions import nlp
from cohbench.corruptions.character_and_scene import character_mentions
from cohbench.corruptions.surface import entity_texts

TEXTS = [f"Anna met Tom in Paris on day {n}. It rained! Mr. Lorry waited at the bank, and {n} clerks were late."
         for n in range(23)] + ["One sentence only", ""]


def worker_pid(doc) -> int:
    return os.getpid()


@pytest.fixture
def every_list_in_workers(monkeypatch):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: spaCy stays in this process")
    monkeypatch.setattr(text, "PARALLEL_FROM", 0)


def test_workers_split_every_text_as_one_process_does(every_list_in_workers, monkeypatch):
    in_workers = text.sentence_offsets(TEXTS, batch_size=4)
    assert len(set(text.pipe(text._senter, TEXTS, worker_pid, batch_size=4)) - {os.getpid()}) >= 2
    monkeypatch.setattr(text, "PARALLEL_FROM", 10**12)
    assert in_workers == text.sentence_offsets(TEXTS, batch_size=4)
    assert in_workers[-1] == [] and len(in_workers[0]) == 3


def test_workers_find_the_same_entities_and_characters(every_list_in_workers, monkeypatch):
    found = nlp.analyse(TEXTS, entity_texts, batch_size=4), nlp.analyse(TEXTS, character_mentions, batch_size=4)
    monkeypatch.setattr(text, "PARALLEL_FROM", 10**12)
    assert found == (nlp.analyse(TEXTS, entity_texts, batch_size=4), nlp.analyse(TEXTS, character_mentions, batch_size=4))
    assert "Paris" in found[0][0] and any("lorry" in tokens for _, tokens in found[1][0])
