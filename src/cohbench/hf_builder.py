"""The Hugging Face `datasets` builder of a corpus, `builder_for(corpus)`: the one way a config is built.

The builder never downloads: it gets verified local paths from the source layer (or from its caller), runs
the corpus's pure `parse` with the config's typed options (both part of the builder config, so the fingerprint
sees them), hands each split's records to `_generate_examples` through `gen_kwargs`, and keeps the parse's
account (upstream records, drops by reason, notes) public as `builder.account`. Expected split sizes, where a
corpus declares them, are verified by `datasets` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import datasets

from .registry import Corpus, parse
from .schema import FEATURES, split_sort_key

@dataclass
class CohbenchBuilderConfig(datasets.BuilderConfig):
    # name -> local path; None means: ask the source layer (cache, then mirror).
    paths: Optional[dict] = None
    # the config's typed generator options (ConfigSpec.options); None means: from params.yaml.
    options: Optional[object] = None


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
        from .fetch import fetch

        paths = self.config.paths or fetch(self.CORPUS)
        parsed = parse(self.CORPUS, self.config.name, paths, self.config.options)
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
                CohbenchBuilderConfig(name=spec.name, version=datasets.Version(corpus.version), description=spec.description)
                for spec in corpus.configs
            ],
        },
    )
