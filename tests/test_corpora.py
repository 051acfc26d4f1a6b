"""Every registered corpus, a module dropped into `corpora/` included, checked against its own declarations
(`corpus_case.CorpusCase`); what a corpus makes from its pinned files is checked in its own test module."""

from __future__ import annotations

import pytest
from corpus_case import CorpusCase

from cohbench.corpora import registry


class TestEveryCorpus(CorpusCase):
    @pytest.fixture(params=sorted(registry.corpora()))
    def corpus(self, request):
        return registry.lookup(request.param)

    # these read a corpus's own fixtures and the real files: in each corpus's own module
    test_the_pinned_files_give_the_expected_counts = None
    test_records_at_fixed_positions_hold_the_values_of_the_upstream_files = None
    test_fixtures_in_the_upstream_format_parse_into_records_of_every_config = None
