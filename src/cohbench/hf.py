"""The Hugging Face `datasets` builder every corpus module instantiates with `builder_for(CORPUS)`.

The builder never downloads: it gets verified local paths from the source layer (or from its caller), runs
the corpus's pure `parse`, and yields records in the one schema. Expected split sizes, where a corpus
declares them, are verified by `datasets` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import datasets

from .registry import Corpus, Parsed
from .schema import FEATURES

SPLIT_ORDER = ("train", "dev", "val", "validation", "test")


def split_sort_key(split: str):
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


@dataclass
class CohbenchBuilderConfig(datasets.BuilderConfig):
    # name -> local path; None means: ask the source layer (cache, then mirror).
    paths: Optional[dict] = None


class CohbenchBuilder(datasets.GeneratorBasedBuilder):
    CORPUS: Corpus
    BUILDER_CONFIG_CLASS = CohbenchBuilderConfig

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
        self._parsed: Parsed = self.CORPUS.parse(paths, self.config.name)
        splits = sorted({record["split"] for record in self._parsed.records}, key=split_sort_key)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"split": split}) for split in splits]

    def _generate_examples(self, split):
        records = [record for record in self._parsed.records if record["split"] == split]
        for record in sorted(records, key=lambda r: r["id"]):
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
