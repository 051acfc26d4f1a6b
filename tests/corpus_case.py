"""What every corpus must satisfy, read from its declarations instead of written out per corpus (the habit of TFDS's
`DatasetBuilderTestCase` and of ir_datasets' integration tests). A corpus's test module subclasses `CorpusCase` with
`CORPUS` and gives `from_mirror`; `tests/test_corpora.py` runs the declaration checks for every registered corpus, so
a corpus module dropped into `corpora/` is covered with no assertion written for it.

A config's split sizes are stated once: its `ConfigSpec.expected_splits` where the upstream files fix them, else the
rows of its declared version (`catalog/versions/<config>.json`, recorded by `cohbench version --record` from a build
with the shipped params.yaml); what each split counts beyond its rows (labels, sentences, spans, ...) is its recorded
expectation (`catalog/expected/<config>.json`, recorded by `cohbench validate --record-expected`).

What a corpus holds is checked the way ir_datasets checks it: the records at positions 0, 9 and last of every split
of every config (`SPOT_CHECKS`), against values read by hand from the upstream files."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import datasets
import pytest
from conftest import _required_mirror, upstream_paths

from cohbench.corpora import registry
from cohbench.corpora import CHECKSUMS
from cohbench.evaluation import protocols
from cohbench.release.layout import split_stats
from cohbench.release.versions import declared
from cohbench.schema import FEATURES
from cohbench.corpora.sources import read_table
from cohbench.statistics.kind import KINDS
from cohbench.validation import expected_dir

FIXTURES = Path(__file__).parent / "fixtures"


def expected_splits(config: str) -> dict[str, int]:
    """The rows per split a build of `config` from the pinned files with the shipped params.yaml must give."""
    spec = registry.spec(config)
    if spec.expected_splits:
        return dict(spec.expected_splits)
    version = declared(config)
    assert version, f"{config} has no declared version; run `cohbench version {config} --record`"
    return dict(version["rows"])


@functools.cache
def _tables() -> dict:
    """Each corpus's checksum table: corpus name -> its sources."""
    return {table.stem: read_table(table) for table in CHECKSUMS.glob("*.tsv")}


def expected_counts(config: str) -> dict[str, dict]:
    """What each split of `config` counts (rows, labels, sentences, spans, ...), as its expectations record it."""
    recorded = json.loads((expected_dir() / f"{config}.json").read_text(encoding="utf-8"))["splits"]
    assert {split: counts["rows"] for split, counts in recorded.items()} == expected_splits(config)
    return recorded


def counts_of(records) -> dict[str, dict]:
    """What each split of parsed records counts, as a build's stats count it (`release.layout.split_stats`)."""
    by_split = {}
    for record in records:
        by_split.setdefault(record["split"], []).append(record)
    return {split: split_stats(datasets.Dataset.from_list(group, features=FEATURES).data.table) for split, group in by_split.items()}


def parse_config_from_mirror(config: str):
    """`config` parsed by its corpus's module from the pinned files with the shipped params.yaml (no build, no cache)."""
    corpus, spec = registry.corpus_of(config), registry.spec(config)
    options = (spec.generator_options(),) if spec.options else ()  # as the build passes them (`hf_builder`)
    return corpus.parse(upstream_paths(corpus, _required_mirror()), config, *options)


def mirror_parse_fixtures(config: str):
    """A corpus case module's fixtures for what its parse makes of the pinned files, to assign at module level:

        parsed_from_mirror, from_mirror = mirror_parse_fixtures("timetravel_msd")

    `parsed_from_mirror` is `config` parsed once for the module (other tests of the module may read it too), and
    `from_mirror` its counts per split, which `CorpusCase` checks; `CorpusCase.records_from_mirror` reuses the parse."""

    @pytest.fixture(scope="module")
    def parsed_from_mirror():
        return parse_config_from_mirror(config)

    @pytest.fixture(scope="module")
    def from_mirror(parsed_from_mirror):
        return config, counts_of(parsed_from_mirror.records)

    return parsed_from_mirror, from_mirror


def in_release_order(records) -> dict[str, list[dict]]:
    """Split -> its records in the order a build writes them and `cohbench.load` gives them: by id (`hf_builder`)."""
    by_split = {}
    for record in sorted(records, key=lambda r: r["id"]):
        by_split.setdefault(record["split"], []).append(record)
    return by_split


def spot_positions(rows: int) -> set[int]:
    """The positions a split's spot checks cover: the first, the tenth and the last record (ir_datasets' choice)."""
    return {0, -1} | ({9} if rows > 10 else set())


@dataclasses.dataclass(frozen=True)
class Opening:
    """An expected text given by its first words, enough to tell it from its neighbours in the upstream file."""

    words: str

    def __eq__(self, text) -> bool:
        return isinstance(text, str) and text.startswith(self.words)


@dataclasses.dataclass(frozen=True)
class Removed:
    """The sentences of an upstream text less `count` of them, the others in order: which ones a generator removed is
    generated (seeded), so left open."""

    upstream: tuple
    count: int

    def __eq__(self, sentences) -> bool:
        rest = list(sentences)
        for sentence in self.upstream:
            if rest and sentence == rest[0]:
                rest.pop(0)
        return len(sentences) == len(self.upstream) - self.count and not rest


@dataclasses.dataclass(frozen=True)
class Replaced:
    """The sentences of an upstream text with `count` of them replaced, the others in place: which ones a generator
    replaced, and by what, is generated (seeded), so left open."""

    upstream: tuple
    count: int

    def __eq__(self, sentences) -> bool:
        return len(sentences) == len(self.upstream) and sum(u != s for u, s in zip(self.upstream, sentences)) == self.count


@dataclasses.dataclass(frozen=True)
class Lost:
    """`count` sentences of an upstream text, in its order: the ones a generator removed or replaced
    (`corruption.replaced`, what the viewer shows beside the change); which ones is generated, so left open."""

    upstream: tuple
    count: int

    def __eq__(self, sentences) -> bool:
        found = [next((i for i, u in enumerate(self.upstream) if u == s), None) for s in sentences]
        return len(sentences) == self.count and None not in found and found == sorted(found)


def field_at(record: dict, path: str):
    """The value at `path` in a record: a field, then `[index]` or `.key` steps (`sentences[-1]`, `corruption.source_id`)."""
    value = record
    for key, index in re.findall(r"\.?(\w+)|\[(-?\d+)\]", path):
        value = value[int(index)] if index else value[key]
    return value


def assert_no_story_in_two_splits(records):
    splits = {}
    for r in records:
        splits.setdefault(r["doc_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in splits.values())


class CorpusCase:
    CORPUS: str  # the corpus's name in the registry
    # source name -> its file in tests/fixtures, in the upstream format: what `parse` reads in the fixture check
    FIXTURE_PATHS: dict[str, Path]
    # config -> split -> position (`spot_positions`) -> field path (`field_at`) -> the value the upstream file gives
    SPOT_CHECKS: dict[str, dict[str, dict[int, dict[str, object]]]]

    @pytest.fixture
    def corpus(self):
        return registry.lookup(self.CORPUS)

    def test_every_source_is_pinned_in_a_checksum_table(self, corpus):
        # read_table refuses a row without size, sha256 or licence; a corpus's own files are its table, in order (a
        # corpus made only from other corpora's files, synthetic_coherence, has none), and the files of the corpora
        # it uses are theirs
        assert corpus.sources == tuple(_tables().get(corpus.name, ()))
        assert set(corpus.inputs) <= {source for sources in _tables().values() for source in sources}
        assert all(registry.lookup(name).name == name for name in (*corpus.uses, *corpus.cites))

    def test_every_config_names_a_declared_protocol_and_statistics_kind(self, corpus):
        for spec in corpus.configs:
            assert spec.protocol in protocols() and spec.statistics in KINDS, spec.name

    def test_every_config_has_a_version_and_expectations_that_give_its_expected_splits(self, corpus):
        for spec in corpus.configs:
            version = declared(spec.name)
            assert version, f"{spec.name} has no declared version"
            assert version["rows"] == expected_splits(spec.name)
            expected_counts(spec.name)

    def parse_fixtures(self, corpus, config: str):
        """`config` parsed by the corpus's own `parse` from `FIXTURE_PATHS` (a case overrides it where `parse` needs more)."""
        options = (registry.spec(config).generator_options(),) if registry.spec(config).options else ()
        return corpus.parse(self.FIXTURE_PATHS, config, *options)

    def test_fixtures_in_the_upstream_format_are_there(self, corpus):
        """For every corpus whose pinned files it reads (its own, or those it is made from)."""
        readers = {name for name, sources in _tables().items() if set(sources) & set(corpus.inputs)}
        assert readers and all(any((FIXTURES / name).iterdir()) for name in readers)

    def test_fixtures_in_the_upstream_format_parse_into_records_of_every_config(self, corpus, small_params):
        if not hasattr(self, "FIXTURE_PATHS"):
            pytest.skip(f"{self.CORPUS}'s test case declares no FIXTURE_PATHS yet")
        for spec in corpus.configs:
            assert self.parse_fixtures(corpus, spec.name).records, spec.name

    @pytest.mark.integration
    def test_the_pinned_files_give_the_expected_counts(self, from_mirror):
        """`from_mirror`: (config, counts per split) that the module made from the real files, by a build or a parse."""
        config, counts = from_mirror
        assert registry.corpus_of(config).name == self.CORPUS
        assert counts == expected_counts(config)

    @pytest.fixture
    def records_from_mirror(self, request):
        """Config -> split -> its records parsed from the pinned files, in release order; the config the module's
        `parsed_from_mirror` holds (`mirror_parse_fixtures`) is not parsed again. A case whose module builds its
        configs instead overrides this to read the build."""
        try:
            parsed = request.getfixturevalue("parsed_from_mirror").records
        except pytest.FixtureLookupError:
            parsed = []
        held = {parsed[0]["config"]: parsed} if parsed else {}
        return {config: in_release_order(held[config] if config in held else parse_config_from_mirror(config).records)
                for config in self.SPOT_CHECKS}

    @pytest.mark.integration
    def test_records_at_fixed_positions_hold_the_values_of_the_upstream_files(self, corpus, request):
        if not hasattr(self, "SPOT_CHECKS"):  # rocstories, timetravel, fairytaleqa, synthetic_coherence: to come
            pytest.skip(f"{self.CORPUS}'s test case declares no SPOT_CHECKS yet")
        records_from_mirror = request.getfixturevalue("records_from_mirror")
        assert set(self.SPOT_CHECKS) == {spec.name for spec in corpus.configs}
        for config, splits in self.SPOT_CHECKS.items():
            sizes = expected_splits(config)
            assert set(splits) == set(sizes) and set(records_from_mirror[config]) == set(sizes), config
            for split, positions in splits.items():
                records = records_from_mirror[config][split]
                assert len(records) == sizes[split] and set(positions) == spot_positions(len(records)), (config, split)
                for position, fields in positions.items():
                    for path, expected in fields.items():
                        assert expected == field_at(records[position], path), (config, split, position, path)
