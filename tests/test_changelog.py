"""CHANGELOG.md keeps up with the versions: its newest entry is the package's release version and names every config
at the version `catalog/versions/` declares (a config added or moved since that release, in its Unreleased section),
and the committed release is that release, config for config."""

from __future__ import annotations

import json
import re

from cohbench.corpora import registry
from cohbench import settings
from cohbench._version import __version__
from cohbench.release.store import CHANGELOG_ENTRY as ENTRY
from cohbench.release.versions import declared



def _entries() -> list[tuple[str, str]]:
    text = (settings.project_root() / "CHANGELOG.md").read_text(encoding="utf-8")
    heads = list(ENTRY.finditer(text))
    return [(m.group(1), text[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]) for i, m in enumerate(heads)]


def _unreleased() -> str:
    text = (settings.project_root() / "CHANGELOG.md").read_text(encoding="utf-8")
    start = text.find("## Unreleased")
    return "" if start < 0 else text[start : (ENTRY.search(text, start) or re.compile("$").search(text)).start()]


def test_the_newest_entry_is_this_release_and_names_every_config_at_its_declared_version():
    entries = _entries()
    assert entries, "CHANGELOG.md has no '## X.Y.Z' entry"
    version, body = entries[0]
    assert version == __version__
    unreleased = _unreleased()
    for config in registry.config_names():
        entry = declared(config)
        assert entry is not None, f"{config} has no declared version (cohbench version --record {config})"
        named = f"`{config}` {entry['version']}"
        assert named in body or named in unreleased, f"neither the {version} entry nor Unreleased names {config} {entry['version']}"


def test_entries_run_from_newest_to_oldest_without_repeats():
    versions = [tuple(map(int, v.split("."))) for v, _ in _entries()]
    assert versions == sorted(set(versions), reverse=True)


def test_the_committed_release_is_the_declared_versions():
    manifest = json.loads((settings.project_root() / "cohbench/manifest.json").read_text(encoding="utf-8"))
    assert manifest["cohbench_version"] == __version__
    for config, recorded in manifest["configs"].items():
        entry = declared(config)
        assert (recorded["version"], recorded["fingerprint"]) == (entry["version"], entry["fingerprint"]), config
