"""`cohbench verify` covers everything the release ships: the Parquet files, the card, the stats, the validation
summaries and the baseline's scores; an edited or unlisted file fails, a damaged manifest is one line."""

from __future__ import annotations

import json

import pytest

from cohbench.cli import main
from cohbench.release.index import write_index
from cohbench.release.verify import verify


def shipped_results(release):
    return {r["path"].removeprefix(str(release) + "/"): r for r in verify(release)["files"] if r["kind"] not in ("raw", "erratum")}


@pytest.fixture
def release(every_protocol):
    (every_protocol / "validation").mkdir()
    (every_protocol / "validation" / "storysumm.json").write_text('{"ok": true}\n')
    (every_protocol / "baseline").mkdir()
    (every_protocol / "baseline" / "metrics.json").write_text('{"auc": 0.6}\n')
    write_index(every_protocol)
    return every_protocol


def test_every_shipped_file_is_hashed_and_matches(release):
    results = shipped_results(release)
    for path in ("README.md", "stats/snac.json", "validation/storysumm.json", "baseline/metrics.json", "data/snac/test.parquet"):
        assert results[path]["ok"], results[path]


@pytest.mark.parametrize("path", ["README.md", "stats/snac.json", "validation/storysumm.json", "baseline/metrics.json"])
def test_an_edited_shipped_file_fails_verify(release, capsys, path):
    target = release / path
    target.write_text(target.read_text().replace("a", "b", 1) + " ")
    results = shipped_results(release)
    assert not results[path]["ok"] and "sha256" in results[path]["problem"]
    assert main(["verify"]) == 1
    assert f"FAILED" in capsys.readouterr().out


def test_a_file_the_manifest_does_not_list_fails_verify(release):
    (release / "validation" / "extra.json").write_text("{}")
    assert not shipped_results(release)["validation/extra.json"]["ok"]


def test_stats_that_disagree_with_the_manifest_fail_verify(release):
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["configs"]["snac"]["files"]["test"]["rows"] = 999
    (release / "manifest.json").write_text(json.dumps(manifest))
    problems = [r for r in verify(release)["files"] if r["kind"] == "stats" and not r["ok"]]
    assert problems and "lists other files than the manifest" in problems[0]["problem"]


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"configs": []}', '{"configs": {"snac": {"corpus": "snac", "files": [1]}}}'])
def test_a_damaged_manifest_is_one_line(release, capsys, content):
    (release / "manifest.json").write_text(content)
    assert main(["verify"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("cohbench: error: ") and "\n" not in err and "manifest.json" in err
