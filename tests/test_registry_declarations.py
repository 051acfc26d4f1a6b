"""The project's declarations agree with each other: schema docs, params.yaml, cards, DVC pipeline."""

import pytest
from project_copy import dvc_runner, tracked_copy

from cohbench import registry, settings
from cohbench.schema import FEATURES, FIELDS, schema_markdown

ROOT = settings.project_root()


def test_schema_doc_is_generated_from_the_schema():
    assert (ROOT / "catalog/SCHEMA.md").read_text() == schema_markdown(), "regenerate: cohbench schema > catalog/SCHEMA.md"
    assert list(FEATURES) == [f.name for f in FIELDS]


def test_params_list_exactly_the_registered_corpora_and_configs():
    params = settings.params()
    assert sorted(params["corpora"]) == sorted(registry.corpora())
    declared = {**params["configs"], **params["derived_configs"]}
    assert len(declared) == len(params["configs"]) + len(params["derived_configs"]), "a config is declared twice"
    assert {c: v["corpus"] for c, v in declared.items()} == {c: registry.corpus_of(c).name for c in registry.config_names()}


def test_every_corpus_has_a_card():
    for name in registry.corpora():
        assert (ROOT / "catalog/cards" / f"{name}.md").is_file(), name


def test_registering_a_duplicate_name_is_an_error():
    corpus = registry.lookup("storysumm")
    with pytest.raises(registry.RegistryError, match="registered twice"):
        registry.register(corpus)


@pytest.mark.integration
def test_dvc_rebuilds_from_the_mirror_then_is_a_noop_until_a_builder_changes(mirror, tmp_path):
    copy = tracked_copy(tmp_path)
    dvc = dvc_runner(copy)
    run = dvc("repro", "build@storysumm")
    assert run.returncode == 0, run.stderr
    assert (copy / "cohbench/data/storysumm/test.parquet").is_file()
    assert "up to date" in dvc("status", "build@storysumm").stdout
    with open(copy / "src/cohbench/builders/storysumm.py", "a") as handle:
        handle.write("\n# a change\n")
    assert "changed deps" in dvc("status", "build@storysumm").stdout
