"""The GPU batch budget asks torch about the device by index: on a real GPU torch's memory queries refuse the bare
string "cuda" (found on an H100, where every `--device cuda` run failed before its first batch)."""

from __future__ import annotations

import pytest
import torch
from torch.cuda._utils import _get_device_index

from cohbench.encoder import batch_memory, rows_within

GIB = 1 << 30


@pytest.fixture
def one_gpu(monkeypatch):
    """torch's memory queries with their real argument check, answering for one 80 GiB GPU with 40 GiB free, 10 GiB
    allocated by this process and a Ray actor's share of a half."""

    def checked(answer):
        return lambda device=None: answer if _get_device_index(device, optional=True) == 0 else pytest.fail(device)

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "mem_get_info", checked((40 * GIB, 80 * GIB)))
    monkeypatch.setattr(torch.cuda, "get_per_process_memory_fraction", checked(0.5))
    monkeypatch.setattr(torch.cuda, "memory_allocated", checked(10 * GIB))


def test_a_batch_may_take_a_quarter_of_the_free_memory_within_the_process_share(one_gpu):
    assert batch_memory() == int(30 * GIB * 0.25)  # the share (40 - 10) is below the free 40


def test_a_batch_is_sized_by_its_longest_sentence_not_its_first():
    widths = [8] * 5_000 + [64] * 5_000 + [512] * 500  # token counts, ascending as the encoder sorts them
    budget = 8 * 16_777  # tokens: 16,777 sentences of the first width, which would reach into the 512-token ones
    for start in (0, 4_990, 9_000, 10_400):
        rows = rows_within(widths, start, budget)
        assert rows * widths[start + rows - 1] <= budget, start  # padded to the last (longest) sentence, it fits
        assert start + rows == len(widths) or (rows + 1) * widths[start + rows] > budget, start  # one more would not
    assert rows_within(widths, 0, budget) == 5_000  # the 8-token ones: a 64-token one more pads all 5,001 to 64
