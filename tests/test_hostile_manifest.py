"""A manifest or stats file edited by hand (or by an attacker) is refused in one line naming it: a path that leaves the
release, a config named by a path, a field of the wrong kind. `verify` never hashes a file outside the release, and
`index` refuses before it writes anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cohbench.cli import main


def _edit(path: Path, change) -> None:
    recorded = json.loads(path.read_text())
    change(recorded)
    path.write_text(json.dumps(recorded))


def _first(configs: dict) -> dict:
    return next(iter(configs.values()))


MANIFEST_EDITS = {
    "a shipped file up the tree": lambda m: m["shipped"].update({"../../../../etc/hostname": "0" * 64}),
    "a shipped file by an absolute path": lambda m: m["shipped"].update({"/etc/hostname": "0" * 64}),
    "a data file by an absolute path": lambda m: next(iter(_first(m["configs"])["files"].values())).update(path="/etc/hostname"),
    "a data file of another config": lambda m: next(iter(_first(m["configs"])["files"].values())).update(path="data/other/test.parquet"),
    "a config named by a path": lambda m: m["configs"].update({"../../../../tmp/evil": m["configs"].pop(next(iter(m["configs"])))}),
    "a data file without its rows": lambda m: next(iter(_first(m["configs"])["files"].values())).pop("rows"),
    "inputs that are a number": lambda m: _first(m["configs"]).update(inputs=5),
}


@pytest.mark.parametrize("edit", MANIFEST_EDITS)
def test_a_manifest_naming_what_is_not_the_releases_is_refused_in_one_line(every_protocol, capsys, edit):
    _edit(every_protocol / "manifest.json", MANIFEST_EDITS[edit])
    for argv in (["verify"], ["list"]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("cohbench: error: ") and "\n" not in err, (argv, err)
        assert "manifest.json is not a cohbench manifest" in err and "failed unexpectedly" not in err, (argv, err)


def test_verify_fails_a_config_whose_stats_file_the_manifest_no_longer_records(every_protocol, capsys):
    _edit(every_protocol / "manifest.json", lambda m: m["shipped"].pop("stats/storysumm.json"))
    assert main(["verify", "--quiet"]) == 1
    assert "records no sha256 of this config's stats file" in capsys.readouterr().out


def _files(release: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(release).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns) for p in release.rglob("*") if p.is_file()}


@pytest.mark.parametrize("damage, message", [
    (lambda release: (release / "baseline" / "metrics.md").write_bytes(b"# metrics\n\xff\n"), "metrics.md is not UTF-8 text"),
    # a folder never indexed (a `corrupt` output) reads its stats unchecked: one without its corpus
    (lambda release: [(release / name).unlink() for name in ("manifest.json", "README.md", "croissant.json")]
     and _edit(release / "stats" / "storysumm.json", lambda s: s.pop("corpus")), "storysumm.json lacks corpus"),
])
def test_index_refuses_a_damaged_input_before_it_writes_anything(every_protocol, capsys, damage, message):
    (every_protocol / "baseline").mkdir(exist_ok=True)
    (every_protocol / "baseline" / "metrics.md").write_text("# metrics\n")
    damage(every_protocol)
    before = _files(every_protocol)
    assert main(["index"]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "failed unexpectedly" not in err, err
    assert _files(every_protocol) == before
