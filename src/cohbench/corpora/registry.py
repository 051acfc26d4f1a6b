"""Explicit registry of corpora and their configs: the one place a config is declared. Each corpus module under
`cohbench.corpora` calls `register` once at import; a second corpus or config of the same name is an error.

Everything else looks a config up here (`spec(config).protocol`, `.statistics`, `.options`) instead of keeping a
table of config names: evaluation, the baseline, agreement statistics, the report and the DVC pipeline
(`cohbench.pipeline`). What a model predicts on a config (a label per sentence, per gap, per summary, or a score
correlated with ratings) is its protocol's unit, declared once with the protocol in `cohbench.evaluation`."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errata import Erratum
from ..errors import RegistryError
from ..names import Registry
from .sources import Source


@dataclass(frozen=True)
class Parsed:
    """What `parse` made of the upstream files: records in the schema, and an account of every upstream record."""

    records: list[dict]
    upstream_records: int
    dropped: Mapping[str, int] = field(default_factory=dict)  # reason -> count
    notes: Mapping[str, object] = field(default_factory=dict)  # corpus-specific statistics for the card

    def __post_init__(self):
        accounted = len(self.records) + sum(self.dropped.values())
        if accounted != self.upstream_records:
            raise RegistryError(
                f"{self.upstream_records} upstream records but {len(self.records)} built + "
                f"{sum(self.dropped.values())} dropped; every record must be built or dropped with a reason"
            )


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    description: str
    # The name of the evaluation protocol that scores predictions (declared in `cohbench.evaluation`), which also
    # declares the unit a model predicts (sentence, gap, summary, rating).
    protocol: str
    statistics: str = "generic"  # the statistics kind of its annotations (`cohbench.statistics`: agreement, report)
    expected_splits: Mapping[str, int] | None = None  # verified by the Hugging Face builder when given
    research_only: bool = False  # excluded from any publishing/export unless asked for
    # Generator options: a frozen dataclass type with `from_params(params.yaml dict)`. Its instance reaches
    # `parse(paths, config, options)` through the builder config, so the Hugging Face fingerprint sees it.
    options: type | None = None

    def generator_options(self, params: Mapping | None = None):
        """The typed generator options from params.yaml (or `params`), or None where the config takes none."""
        from .. import settings

        return self.options.from_params(settings.params() if params is None else params) if self.options else None


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    citation: str
    licence: str
    homepage: str
    sources: tuple[Source, ...]
    configs: tuple[ConfigSpec, ...]
    parse: Callable[[Mapping[str, Path], str], Parsed]
    errata: tuple[Erratum, ...] = ()
    licence_id: str = "other"  # the Hugging Face Hub's licence identifier; "other" where no single licence applies
    licence_url: str = ""  # where the licence is stated (default: the homepage)
    annotators: str = ""  # who gave the human labels, and how many per item; empty where a generator made them
    # The leakage policy's one declaration: full texts of the corpus's narratives that training data must never hold
    # (those of its evaluation splits). The training-only configs built from the upstream files drop any story whose
    # normalised text is among them (`corpora.held_out`). Each build records their fingerprints in its stats, which
    # `cohbench held-out` gathers into the package's `user_corruption/held_out.json`: `cohbench corrupt` checks a
    # user's stories against those shipped fingerprints and reads no upstream file.
    held_out_texts: Callable[[Mapping[str, Path]], list[str]] | None = None
    # Its coherent narratives in the schema, each with its split: `(paths, config, options) -> records`, what other
    # corpora are made from or split by (and the BERTScore calibration reads).
    narratives: Callable[..., list[dict]] | None = None
    # The corpora whose files and declarations its parse reads (the narratives it is made from, the stories it must
    # split with or leave out), named here and found with `used`, never imported: their files are its inputs too.
    uses: tuple[str, ...] = ()
    # The corpora whose BibTeX comes before its own (those its records are made from, or one paper for two corpora).
    cites: tuple[str, ...] = ()

    @property
    def inputs(self) -> tuple[Source, ...]:
        """Every upstream file its parse reads: its own sources, then those of the corpora it uses, each once."""
        return tuple(dict.fromkeys(source for corpus in self.used_corpora() for source in corpus.sources))

    def used_corpora(self) -> tuple["Corpus", ...]:
        """This corpus, then every corpus its parse reads through `uses`, directly or not, each once, depth first."""
        found = {self.name: self}
        for name in self.uses:
            found.update((corpus.name, corpus) for corpus in lookup(name).used_corpora())
        return tuple(found.values())

    @property
    def bibtex(self) -> str:
        """What citing it means: the BibTeX of the corpora it cites, then its own."""
        return "\n".join(text for text in (*(lookup(name).bibtex for name in self.cites), self.citation) if text)

    def used(self, name: str) -> "Corpus":
        """A corpus this one declares in `uses`."""
        if name not in self.uses:
            raise RegistryError(f"corpus {self.name} reads corpus {name} without declaring it in `uses`")
        return lookup(name)

    def config(self, name: str) -> ConfigSpec:
        for spec in self.configs:
            if spec.name == name:
                return spec
        raise RegistryError(f"corpus {self.name} has no config {name!r}")

    def source(self, name: str) -> Source:
        for source in self.sources:
            if source.name == name:
                return source
        raise RegistryError(f"corpus {self.name} has no source {name!r}")


def _discover() -> None:
    """Every module of `corpora/` is imported, and each corpus module declares its corpus at import: adding a corpus
    is adding a module (no import statement names a corpus module; one corpus needing another says so in `uses`)."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__package__}.{module.name}")


_CORPORA: Registry[Corpus] = Registry("corpus", _discover)
_CONFIGS: Registry[Corpus] = Registry("config", _discover)  # config name -> the corpus that declares it


def register(corpus: Corpus) -> Corpus:
    for erratum in corpus.errata:
        if corpus.source(erratum.source).sha256 != erratum.input_sha256:
            raise RegistryError(f"erratum {erratum.id} is bound to a different sha256 than source {erratum.source}")
    _CORPORA.register(corpus.name, corpus)
    for spec in corpus.configs:
        _CONFIGS.register(spec.name, corpus)
    return corpus


def corpora() -> dict[str, Corpus]:
    return dict(sorted(_CORPORA.items()))


def config_names() -> list[str]:
    return _CONFIGS.names()


def corpus_of(config: str) -> Corpus:
    return _CONFIGS[config]


def spec(config: str) -> ConfigSpec:
    """The declaration of a registered config."""
    return corpus_of(config).config(config)


def is_config(name: str) -> bool:
    return name in _CONFIGS


def configs_where(**fields) -> list[str]:
    """Registered configs whose declaration has these field values, e.g. `configs_where(protocol="metaeval")`."""
    return [name for name in config_names() if all(getattr(spec(name), k) == v for k, v in fields.items())]


def lookup(name: str) -> Corpus:
    """A corpus by its own name or by one of its configs' names."""
    return _CORPORA[name] if name in _CORPORA else corpus_of(name)
