"""The release card is for a person: short, prose first, one table of configs, a licence and BibTeX for each,
Hub metadata in its front matter, and no per-file input list (that is manifest.json's)."""

import re

import yaml

from cohbench import cli, registry
from cohbench.card import citation_keys
from cohbench.release import write_index

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
        for key in citation_keys(registry.corpus_of(config).citation):
            assert f"`{key}`" in rows[config] and f"{{{key}," in bibtex
    assert "@software{cohbench," in bibtex
    assert rows["storycloze_dsd"].count("research only") == 1 and "research only" not in rows["storysumm"]


def test_cite_prints_the_corpus_papers_and_cohbench_and_suggests_the_closest_name(capsys):
    assert cli.main(["cite", "storysumm"]) == 0
    out = capsys.readouterr().out
    assert citation_keys(out) == ["subbiah-etal-2024-storysumm", "cohbench"]
    assert cli.main(["cite", "snacc"]) == 1
    assert "did you mean 'snac'?" in capsys.readouterr().err
