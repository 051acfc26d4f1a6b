"""Every config is declared once, in the registry, and what is generated from the declarations is current: the
schema docs, the DVC pipeline's config lists; evaluation and statistics look configs up there."""

import pytest
from project_copy import dvc_runner, tracked_copy

from cohbench import pipeline, settings
from cohbench.corpora import registry
from cohbench.evaluation import protocol_of, unit_of
from cohbench.schema import FEATURES, FIELDS, schema_markdown

ROOT = settings.project_root()


def test_schema_doc_is_generated_from_the_schema():
    assert (ROOT / "catalog/SCHEMA.md").read_text() == schema_markdown(), "regenerate: cohbench schema > catalog/SCHEMA.md"
    assert list(FEATURES) == [f.name for f in FIELDS]


def test_dvc_yaml_is_current_and_builds_exactly_the_registered_configs():
    assert (ROOT / "dvc.yaml").read_text() == pipeline.render(), "regenerate: cohbench pipeline"
    staged = {stage.name.removeprefix("build_") for stage in pipeline.stages() if stage.name.startswith("build_")}
    assert staged == set(registry.config_names())


def test_a_stage_depends_on_the_code_it_runs_and_nothing_a_change_elsewhere_touches():
    deps = {stage.name: pipeline.code_dependencies(stage.modules) for stage in pipeline.stages()}
    snac, dsd = set(deps["build_snac"]), set(deps["build_timetravel_dsd"])
    assert {"src/cohbench/corpora/snac/__init__.py", "src/cohbench/corpora/snac.tsv", "src/cohbench/release/layout.py"} <= snac
    assert not any("corruptions/" in d or "timetravel" in d for d in snac)  # a generator change leaves SNaC alone
    # a generated corpus depends on the generators it runs and the BERTScore baseline its tau applies to
    assert {"src/cohbench/corruptions/dsd.py", "src/cohbench/corruptions/bertscore_baseline.json",
            "src/cohbench/corpora/incoherence.py", "src/cohbench/numerics.py"} <= dsd
    assert not any(d.endswith(("verify.py", "load.py", "index.py", "card.py")) or "/sql/" in d for d in snac | dsd)
    assert "src/cohbench/corpora/storycloze.py" in deps["build_rocstories_dsd"]  # what it imports, transitively


def test_configs_are_found_by_protocol_and_the_unit_is_the_protocols():
    # that each config's protocol and statistics kind exist: corpus_case.CorpusCase, for every corpus
    assert all(protocol_of(config).name == registry.spec(config).protocol for config in registry.config_names())
    assert registry.configs_where(protocol="metaeval") == ["summeval"]
    # the unit a model predicts is the protocol's, declared there once (the registry has no second field for it)
    assert unit_of("timetravel_msd") == "gaps" and unit_of("snac") == "sentences" and unit_of("summeval") == "ratings"
    assert "task" not in registry.ConfigSpec.__dataclass_fields__


def test_every_corpus_has_a_card():
    for name in registry.corpora():
        assert (ROOT / "catalog/cards" / f"{name}.md").is_file(), name


def test_registering_a_duplicate_name_is_an_error():
    corpus = registry.lookup("storysumm")
    with pytest.raises(registry.RegistryError, match="corpus 'storysumm' is registered twice"):
        registry.register(corpus)


def test_every_table_of_names_is_one_registry_with_one_unknown_name_error():
    from cohbench.corruptions import GENERATORS, recipes
    from cohbench.evaluation import PROTOCOLS, references
    from cohbench.names import Registry
    from cohbench.statistics.kind import KINDS

    tables = {"corpus": registry._CORPORA, "config": registry._CONFIGS, "corruption generator": GENERATORS,
              "recipe": recipes.RECIPES, "protocol": PROTOCOLS, "statistics kind": KINDS, "reference scorer": references.REFERENCES}
    for kind, table in tables.items():
        assert isinstance(table, Registry) and table.kind == kind and table.names()
        with pytest.raises(registry.RegistryError, match=f"^unknown {kind} 'no_such_name'; known: {table.names()[0]}, ") as raised:
            table["no_such_name"]
        assert "\n" not in str(raised.value)
    with pytest.raises(registry.RegistryError, match="^unknown recipe 'dsdd'; did you mean 'dsd'\\? known: "):
        recipes.RECIPES["dsdd"]


@pytest.mark.integration
def test_dvc_rebuilds_from_the_mirror_then_is_a_noop_until_a_builder_changes(mirror, tmp_path):
    copy = tracked_copy(tmp_path)
    dvc = dvc_runner(copy)
    run = dvc("repro", "build_storysumm")
    assert run.returncode == 0, run.stderr
    assert (copy / "cohbench/data/storysumm/test.parquet").is_file()
    assert "up to date" in dvc("status", "build_storysumm").stdout
    with open(copy / "src/cohbench/corpora/storysumm.py", "a") as handle:
        handle.write("\n# a change\n")
    assert "changed deps" in dvc("status", "build_storysumm").stdout
