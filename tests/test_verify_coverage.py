"""`cohbench verify` covers everything the release ships: the Parquet files, the card, the stats, the validation
summaries and the baseline's scores; an edited or unlisted file fails, a damaged manifest is one line."""

from __future__ import annotations

import json

import pytest

from cohbench.cli import main
from cohbench.release.index import write_index
from cohbench.release.verify import verify

pytestmark = pytest.mark.slow  # each test builds a release to verify


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


def release_with_inputs(root):
    """A tiny storysumm release whose stats record the corpus's real upstream inputs, as a build records them."""
    import datasets

    from cohbench.corpora.registry import lookup
    from cohbench.release.layout import write_config
    from cohbench.schema import FEATURES
    from release_fixture import plain_record

    sources = lookup("storysumm").sources
    records = [plain_record("s1", 1, [0, 1]) | {"corpus": "storysumm", "config": "storysumm", "split": "test"}]
    write_config(root, "storysumm", {"test": datasets.Dataset.from_list(records, features=FEATURES)}, {
        "corpus": "storysumm", "licence": "test fixture", "research_only": False, "upstream_records": 1, "built_records": 1,
        "dropped": {}, "errata": [], "notes": {},
        "inputs": [{"name": s.name, "url": s.url, "sha256": s.sha256, "bytes": s.size, "licence": s.licence} for s in sources],
    })  # fmt: skip
    write_index(root)
    return root


def test_a_release_received_without_the_raw_cache_passes_and_says_what_it_did_not_check(workspace, capsys):
    release = release_with_inputs(workspace / "release")
    assert not (workspace / "raw").exists()
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "FAILED" not in out and "not checked: 1 upstream input file(s) of corpora the raw cache" in out
    assert not {"raw", "erratum"} & {r["kind"] for r in verify(release)["files"]}


def test_in_a_checkout_that_fetched_the_corpus_its_upstream_files_are_checked_too(mirror, workspace, capsys):
    from cohbench.corpora.fetch import fetch
    from cohbench.corpora.registry import lookup

    release = release_with_inputs(workspace / "release")
    fetch(lookup("storysumm"))
    result = verify(release)
    assert result["ok"] and not result["not_checked"] and {"raw", "erratum"} <= {r["kind"] for r in result["files"]}
    raw = next(r["path"] for r in result["files"] if r["kind"] == "raw")
    with open(raw, "ab") as damaged:
        damaged.write(b" ")
    assert main(["verify"]) == 1 and f"FAILED  raw      {raw}" in capsys.readouterr().out


def test_a_build_killed_with_sigterm_leaves_a_leftover_that_verify_reports_and_the_next_build_removes(release):
    import signal
    import subprocess
    import sys

    from release_fixture import plain_record, write_config

    # a writer killed by SIGTERM in the middle of writing snac's data (Python runs no cleanup on SIGTERM)
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from cohbench.atomic import atomic_dir\n"
        "with atomic_dir(Path(sys.argv[1]) / 'data' / 'snac') as tmp:\n"
        "    (tmp / 'test.parquet').write_bytes(b'half a file')\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"), str(release)], capture_output=True)
    assert killed.returncode == -signal.SIGTERM
    leftovers = [r for r in verify(release)["files"] if r["kind"] == "leftover"]
    assert len(leftovers) == 1 and "/data/.snac." in leftovers[0]["path"] and not leftovers[0]["ok"]
    assert shipped_results(release)["data/snac/test.parquet"]["ok"]  # the old data is untouched

    write_config(release, "timetravel_msd", "timetravel", {"test": [plain_record("t1", 1, [0, 1])]})  # a build of another config
    write_index(release)
    assert not list((release / "data").glob(".*.tmp")) and verify(release)["ok"]
