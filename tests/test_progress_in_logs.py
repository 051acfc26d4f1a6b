"""Long work's progress: a bar on a terminal, whole lines in a log (`make release > log`), nothing when switched off."""

from __future__ import annotations

import io
import time

from cohbench import display


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_bar(monkeypatch, stream, shown=True, interval=None, steps=5):
    monkeypatch.setattr("sys.stderr", stream)
    if interval is not None:
        monkeypatch.setattr(display, "LOG_INTERVAL_S", interval)
    for _ in display.progress_bar(range(steps), shown=shown, desc="encoding", leave=False):
        time.sleep(0.01)
    return stream.getvalue()


def test_in_a_log_progress_comes_as_whole_lines_without_carriage_returns(monkeypatch):
    written = run_bar(monkeypatch, io.StringIO(), interval=0)
    lines = written.splitlines()
    assert "\r" not in written and written.endswith("\n") and all(line.strip() for line in lines)
    assert lines[0].startswith("encoding:") and any("5/5" in line for line in lines)  # ascii bars, one per refresh


def test_in_a_log_work_shorter_than_the_interval_prints_nothing(monkeypatch):
    assert run_bar(monkeypatch, io.StringIO()) == ""  # a 30 s delay: the epochs of a small model leave no line


def test_a_terminal_gets_a_redrawn_bar_and_a_switched_off_bar_prints_nothing(monkeypatch):
    assert "\r" in run_bar(monkeypatch, Terminal())
    assert run_bar(monkeypatch, Terminal(), shown=False) == ""


def test_hf_datasets_bars_are_off_in_a_log_and_restored_after(monkeypatch):
    import datasets

    datasets.enable_progress_bars()
    monkeypatch.setattr("sys.stderr", io.StringIO())
    with display.datasets_bars(shown=True):
        assert not datasets.is_progress_bar_enabled()  # "Creating parquet from Arrow format" would write refreshes
    assert datasets.is_progress_bar_enabled()  # a caller's own setting is left as it was
    monkeypatch.setattr("sys.stderr", Terminal())
    with display.datasets_bars(shown=True):
        assert datasets.is_progress_bar_enabled()
    with display.datasets_bars(shown=False):
        assert not datasets.is_progress_bar_enabled()
