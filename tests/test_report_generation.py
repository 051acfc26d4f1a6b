"""The statistics report on a small fixture release: JSON of every statistic, the Markdown comparison with the
papers' figures, readable PNG plots, and nothing half-written."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cohbench import cli
from cohbench.statistics import kind, report
from release_fixture import plain_record, summeval_record, write_release
from snac_toy import write_toy_release

pytestmark = pytest.mark.slow  # each test computes a release's statistics and plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def release(tmp_path, monkeypatch):
    root = write_toy_release(tmp_path / "release")
    ratings = [
        summeval_record(f"d{r}-M8", "M8", {**{f"expert_{i}": {"coherence": 1 + (r + i) % 5, "fluency": 5} for i in (1, 2, 3)},
                                            **{f"crowd_{i}": {"coherence": 1 + (r * i) % 5, "fluency": 4} for i in range(1, 6)}})
        for r in range(4)
    ]
    write_release(root, {
        "summeval": ("summeval", {"test": ratings}),
        "storysumm": ("storysumm", {"validation": [plain_record("a", 1, [0, 1], system="gpt-4")], "test": [plain_record("b", 0, [0], system="claude")]}),
        "timetravel_dsd": ("timetravel", {"test": [plain_record(f"c{i}", 1, [0, 1, 0], corruption={
            "generator": "discordant_replace", "seed": 1, "source_id": f"s{i}", "positions": [1], "inserted_ids": [f"x{i}"],
            "similarities": [0.1 * i], "ranks": [i]}) for i in range(5)]}),
    })
    monkeypatch.setenv("COHBENCH_RELEASE", str(root))
    return root


def test_report_writes_json_markdown_and_plots(release, tmp_path):
    out = tmp_path / "stats"
    statistics = report.report(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "report.md", "snac_agreement.png", "snac_error_types.png", "statistics.json", "storysumm_labels.png", "summeval_ratings.png",
        "timetravel_dsd_similarity.png",
    ]
    for png in out.glob("*.png"):
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    saved = json.loads((out / "statistics.json").read_text())
    assert set(saved) == {"snac", "summeval", "storysumm", "timetravel_dsd"} == set(statistics)
    assert saved["timetravel_dsd"]["corruption_similarity"][0]["insertions"] == 5
    assert sum(r["insertions"] for r in saved["timetravel_dsd"]["corruption_similarity_histogram"]) == 5
    assert saved["timetravel_dsd"]["sentence_labels_by_split"] == [{"split": "test", "sentences": 15, "error": 5, "ok": 10, "no_label": 0, "gaps_missing": 0}]
    assert saved["snac"]["token_level"]["as_marked"]["by_type"]["RefE"]["two_agree_pct"] == pytest.approx(40.0)
    markdown = (out / "report.md").read_text()
    # the paper's crowd figure stands beside cohbench's, with the difference
    assert "| RefE | " in markdown and "| 0.10 |" in markdown
    assert "![snac_agreement.png](snac_agreement.png)" in markdown
    assert "## Assumptions" in markdown


def test_report_is_deterministic(release, tmp_path):
    report.report(tmp_path / "a")
    report.report(tmp_path / "b")
    for name in ("statistics.json", "report.md", "snac_agreement.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_failed_report_leaves_the_previous_one(release, tmp_path, monkeypatch):
    out = tmp_path / "stats"
    report.report(out)
    before = (out / "report.md").read_text()

    def broken(stats, path):
        raise RuntimeError("plot failed")

    ratings = kind.KINDS["expert_ratings"]
    monkeypatch.setitem(kind.KINDS._entries, "expert_ratings", dataclasses.replace(ratings, plots=(kind.Plot("ratings", broken),)))
    with pytest.raises(RuntimeError):
        report.report(out)
    assert (out / "report.md").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release", "stats"]


def test_report_command(release, tmp_path, capsys):
    assert cli.main(["report", "--output", str(tmp_path / "stats")]) == 0
    assert "4 config(s)" in capsys.readouterr().out
