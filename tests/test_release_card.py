"""The release card is for a person: short, prose first, one table of configs, a licence and BibTeX for each,
Hub metadata in its front matter, a summary of each corpus card (the whole card ships beside it in cards/), and no
per-file input list (that is manifest.json's)."""

import json
import re

import yaml

from cohbench import cli, settings
from cohbench.corpora import registry
from cohbench.release.card import DETAILS, citation_keys
from cohbench.release.index import write_index
from cohbench.release.verify import verify

from release_fixture import record, write_config

CORRUPTION = {"generator": "discordant_replace", "seed": 0, "source_id": "s", "positions": [1], "inserted_ids": ["x"],
              "similarities": [0.3], "ranks": [1]}  # fmt: skip


def _every_config(root):
    """A release holding every registered config (two records each), synthetic where the config's generator is."""
    for config in registry.config_names():
        corpus = registry.corpus_of(config)
        synthetic = corpus.name in ("timetravel", "fairytaleqa", "storycloze", "synthetic_coherence")
        rows = [record(f"{config}-{i}", f"doc-{i}", ["One.", "Two."], label=i % 2, corruption=CORRUPTION if synthetic else None)
                for i in range(2)]  # fmt: skip
        write_config(root, config, corpus.name, {"test": rows}, research_only=corpus.config(config).research_only)
    write_index(root)
    return (root / "README.md").read_text(encoding="utf-8")


def test_the_card_of_every_config_is_short_and_carries_hub_metadata(tmp_path):
    card = _every_config(tmp_path)
    assert len(card.encode()) < 40_000
    front = yaml.safe_load(card.split("---")[1])
    for key in ("pretty_name", "language", "license_name", "license_link", "task_categories", "task_ids", "size_categories"):
        assert front[key], key
    assert front["license"] == "other" and front["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in front["configs"]] == registry.config_names()
    assert all("features" not in e for e in front["dataset_info"])  # the features travel in the Parquet files; 9 copies of them buried the prose
    body = card.split("---", 2)[2]
    assert body.index("# cohbench") < body.index("## Configs") < body.index("## Counts") < body.index("## Citation")
    assert "https://raw.githubusercontent.com" not in card  # inputs are listed in manifest.json only


def test_the_committed_release_card_is_under_40_kb():
    card = settings.project_root() / "cohbench" / "README.md"
    assert len(card.read_bytes()) < 40_000


def test_each_corpus_card_shows_its_summary_and_ships_whole_beside_the_card(tmp_path):
    card = _every_config(tmp_path)
    for corpus in sorted({registry.corpus_of(c).name for c in registry.config_names()}):
        source = (settings.catalog_dir() / "cards" / f"{corpus}.md").read_text(encoding="utf-8")
        summary, marked, details = source.partition(DETAILS)
        shipped = (tmp_path / "cards" / f"{corpus}.md").read_text(encoding="utf-8")
        lines = lambda text: [line for line in text.splitlines() if line.strip()]  # noqa: E731
        assert lines(shipped) == lines(summary + details)  # every line of the catalog card but the DETAILS line
        assert f"[`cards/{corpus}.md`](cards/{corpus}.md)" in card
        assert lines(summary)[0] in card and lines(summary)[-1] in card
        if marked:  # the details are in cards/ only
            assert lines(details)[0] not in card
    assert DETAILS not in card


def test_the_manifest_hashes_the_shipped_corpus_cards_and_verify_catches_an_edit(tmp_path):
    _every_config(tmp_path)
    shipped = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))["shipped"]
    assert "cards/snac.md" in shipped
    (tmp_path / "cards" / "snac.md").write_text("edited\n", encoding="utf-8")
    failed = [r["path"] for r in verify(tmp_path)["files"] if not r["ok"] and r["kind"] == "cards"]
    assert failed == [str(tmp_path / "cards" / "snac.md")]


def test_a_corpus_no_longer_built_leaves_no_card_behind(tmp_path):
    _every_config(tmp_path)
    for config in registry.config_names():
        if registry.corpus_of(config).name == "snac":
            (tmp_path / "stats" / f"{config}.json").unlink()
    write_index(tmp_path)
    assert not (tmp_path / "cards" / "snac.md").exists() and (tmp_path / "cards" / "storysumm.md").is_file()


def test_a_corpus_name_that_is_a_path_reads_no_card(tmp_path):
    """A stats file's corpus may be anything (one's own `corrupt` output): "../cards/snac" leads back to SNaC's card."""
    write_config(tmp_path, "mine", "../cards/snac", {"test": [record("mine-0", "doc-0", ["One.", "Two."], label=0)]})
    write_index(tmp_path)
    assert not any((tmp_path / "cards").iterdir())
    snac_card = (settings.catalog_dir() / "cards" / "snac.md").read_text(encoding="utf-8").partition(DETAILS)[0].strip()
    assert snac_card.splitlines()[0] not in (tmp_path / "README.md").read_text(encoding="utf-8")


def test_each_config_has_one_table_row_with_its_annotations_licence_and_citation_keys(tmp_path):
    card = _every_config(tmp_path)
    table = card.split("## Configs", 1)[1].split("\n\n")[1]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_]+)` \|.*$", table, flags=re.M)}
    assert set(rows) == set(registry.config_names())
    assert "| human |" in rows["snac"] and "| synthetic |" in rows["timetravel_dsd"]
    assert "| [cc-by-sa-4.0](https://creativecommons.org/licenses/by-sa/4.0/) |" in rows["snac"]
    assert "| [mit](https://github.com/melaniesubbiah/storysumm) |" in rows["storysumm"]
    bibtex = card.split("```bibtex", 1)[1]
    for config in registry.config_names():
        for key in citation_keys(registry.corpus_of(config).bibtex):
            assert f"`{key}`" in rows[config] and f"{{{key}," in bibtex
    assert "@software{cohbench," in bibtex
    assert rows["storycloze_dsd"].count("research only") == 1 and "research only" not in rows["storysumm"]


def test_cite_prints_the_corpus_papers_and_cohbench_and_suggests_the_closest_name(capsys):
    assert cli.main(["cite", "storysumm"]) == 0
    out = capsys.readouterr().out
    assert citation_keys(out) == ["subbiah-etal-2024-storysumm", "cohbench"]
    assert cli.main(["cite", "snacc"]) == 1
    assert "did you mean 'snac'?" in capsys.readouterr().err


def test_cite_from_a_release_that_is_not_there_is_refused_not_printed_without_its_versions(tmp_path, capsys):
    assert cli.main(["cite", "storysumm", "--release", str(tmp_path / "missing")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("cohbench: error: no cohbench release found")
