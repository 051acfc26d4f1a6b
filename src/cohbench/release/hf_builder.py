"""The Hugging Face `datasets` builder of a corpus, `builder_for(corpus)`: the one way a config is built.

The builder never downloads: its caller (`release.build`) gives it verified local paths (`fetch`) and the config's
typed options (`ConfigSpec.generator_options`), both part of the builder config, so the fingerprint sees them. It runs the corpus's pure
`parse`, hands each split's records to `_generate_examples` through `gen_kwargs`, and keeps the parse's
account (upstream records, drops by reason, notes) public as `builder.account`. Expected split sizes, where a
corpus declares them, are verified by `datasets` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import datasets

from ..errors import RegistryError
from ..corpora.registry import Corpus
from ..schema import FEATURES, split_sort_key
from .versions import declared


@dataclass
class CohbenchBuilderConfig(datasets.BuilderConfig):
    paths: Optional[dict] = None  # source name -> verified local path
    options: Optional[object] = None  # the config's typed generator options (ConfigSpec.options), where it has some


class CohbenchBuilder(datasets.GeneratorBasedBuilder):
    CORPUS: Corpus
    BUILDER_CONFIG_CLASS = CohbenchBuilderConfig
    account: dict | None = None  # upstream_records, built_records, dropped, notes: set by a build that ran

    def _info(self) -> datasets.DatasetInfo:
        spec = self.CORPUS.config(self.config.name)
        splits = None
        if spec.expected_splits:
            splits = datasets.SplitDict()
            for name, count in spec.expected_splits.items():
                splits.add(datasets.SplitInfo(name=name, num_examples=count))
        return datasets.DatasetInfo(
            description=f"{self.CORPUS.description}\n\n{spec.description}",
            citation=self.CORPUS.citation,
            homepage=self.CORPUS.homepage,
            license=self.CORPUS.licence,
            features=FEATURES,
            splits=splits,
        )

    def _split_generators(self, dl_manager):
        spec = self.CORPUS.config(self.config.name)
        if self.config.paths is None or (spec.options is None) != (self.config.options is None):
            raise RegistryError(f"the builder of {spec.name} needs paths=fetch(corpus)"
                                + (" and options=spec.generator_options()" if spec.options else ""))
        arguments = (self.config.options,) if spec.options else ()
        parsed = self.CORPUS.parse(self.config.paths, spec.name, *arguments)
        by_split: dict[str, list[dict]] = {}
        for record in parsed.records:
            by_split.setdefault(record["split"], []).append(record)
        self.account = {"upstream_records": parsed.upstream_records, "built_records": len(parsed.records),
                        "dropped": dict(sorted(parsed.dropped.items())), "notes": parsed.notes}
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"records": sorted(by_split[split], key=lambda r: r["id"])})
            for split in sorted(by_split, key=split_sort_key)
        ]

    def _generate_examples(self, records):
        for record in records:
            yield record["id"], record


def builder_for(corpus: Corpus) -> type[CohbenchBuilder]:
    """A `datasets` builder class with one BuilderConfig per config of `corpus`."""
    return type(
        f"{corpus.name.title().replace('_', '')}Builder",
        (CohbenchBuilder,),
        {
            "CORPUS": corpus,
            "BUILDER_CONFIGS": [
                CohbenchBuilderConfig(name=spec.name, version=datasets.Version((declared(spec.name) or {"version": "0.0.0"})["version"]),
                                      description=spec.description)
                for spec in corpus.configs
            ],
        },
    )
