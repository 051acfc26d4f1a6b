"""Every registered corpus, a module dropped into `corpora/` included, checked against its own declarations
(`corpus_case.CorpusCase`); what a corpus makes from its fixtures and pinned files is checked in its own test module,
which every corpus must have: a `CorpusCase` that declares its fixtures and spot checks for every config and split."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from corpus_case import CorpusCase, expected_splits

from cohbench.corpora import registry


def case_of(corpus: str) -> type[CorpusCase] | None:
    """The `CorpusCase` of `corpus` among the test modules beside this one (imported here to be looked at)."""
    for module in sorted(Path(__file__).parent.glob("test_*.py")):
        if "(CorpusCase)" in module.read_text(encoding="utf-8"):
            importlib.import_module(module.stem)
    return next((case for case in CorpusCase.__subclasses__() if getattr(case, "CORPUS", None) == corpus), None)


class TestEveryCorpus(CorpusCase):
    @pytest.fixture(params=sorted(registry.corpora()))
    def corpus(self, request):
        return registry.lookup(request.param)

    # these read a corpus's own fixtures and the real files: in each corpus's own module, which the last test requires
    test_the_pinned_files_give_the_expected_counts = None
    test_records_at_fixed_positions_hold_the_values_of_the_upstream_files = None
    test_fixtures_in_the_upstream_format_parse_into_records_of_every_config = None

    def test_has_a_case_of_its_own_with_fixtures_and_spot_checks_of_every_config_and_split(self, corpus):
        case = case_of(corpus.name)
        assert case and case.FIXTURE_PATHS, f"{corpus.name} has no CorpusCase with FIXTURE_PATHS in tests/"
        assert {config: set(splits) for config, splits in case.SPOT_CHECKS.items()} == {
            spec.name: set(expected_splits(spec.name)) for spec in corpus.configs}
