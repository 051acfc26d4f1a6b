"""Synthetic training data for sentence-level coherence classifiers in SNaC's format (Goyal et al. 2022, §5.1 and
App. C.1): a context, one sentence, a label and the targeted error type, balanced 1:1 positive/negative.

Made from the coherent narratives of the incoherence configs — TimeTravel 5-sentence stories and FairytaleQA
8-sentence windows — with three recipes:
- `entity_first_mention` (SNaC's coref-based recipe, CharE): context without the sentence that introduced a
  character, sentence = the next one naming them;
- `next_sentence_swap` (SNaC's next-sentence recipe, SceneE): sentence = a later sentence of the same text;
- `discordant_replace` (Cai et al.'s confounder, K = 1, never at position 0): sentence = a confounder from
  another story of the same split and corpus; typed SceneE (an abrupt change of setting and characters).
Each negative is paired with a positive from the same narrative: the original context and the original
sentence at that point. A record is context + sentence: `sentence_labels` are -1 on the context and the label
on the last sentence; `label` is that label; negatives carry a span of the targeted type and provenance.
Splits follow the narratives' splits (TimeTravel train/dev/test; FairytaleQA train/val/test with val -> dev).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ..corruptions import recipes
from .registry import ConfigSpec, Corpus, Parsed, register
from ..schema import ERROR_TYPES
from . import incoherence as inc
from .incoherence import FairytaleOptions, TimeTravelOptions

RECIPES = recipes.SYNTHETIC_GENERATORS


@dataclasses.dataclass(frozen=True)
class SyntheticOptions(inc.GeneratorOptions):
    max_narratives_per_split: tuple  # ((split, limit), ...) per source corpus
    timetravel: TimeTravelOptions  # how the source narratives are cut and split
    fairytale: FairytaleOptions

    SECTION = "synthetic_coherence"


def _narratives(paths: Mapping[str, Path], opts: SyntheticOptions) -> tuple[dict[str, list[dict]], Counter]:
    """Coherent narratives by source corpus, at most `max_narratives_per_split[split]` per corpus and split."""
    stories = CORPUS.used("timetravel").narratives(paths, "synthetic_coherence", opts.timetravel)
    windows = CORPUS.used("fairytaleqa").narratives(paths, "synthetic_coherence", opts.fairytale)
    limits = dict(opts.max_narratives_per_split)
    out, dropped = {}, Counter()
    for corpus, records in (("timetravel", stories), ("fairytaleqa", windows)):
        kept = []
        for split, group in inc.by_split(records).items():
            limit = limits[split]
            chosen = set(inc.stable_order([r["id"] for r in group], f"synthetic-{corpus}")[:limit])
            dropped["narratives_beyond_max_narratives_per_split"] += len(group) - len(chosen)
            kept += [{**r, "split": split} for r in group if r["id"] in chosen]
        out[corpus] = kept
    return out, dropped


def parse(paths: Mapping[str, Path], config: str, opts: SyntheticOptions) -> Parsed:
    """Accounting unit: an example. Every (narrative, recipe) can give two (negative + positive); those beyond the
    size limits, or where a recipe does not apply (no character named twice, no confounder below tau), are dropped."""
    narratives, beyond = _narratives(paths, opts)
    records, made, dropped = [], Counter(), Counter()
    for corpus, sources in narratives.items():
        outputs, _ = recipes.run("synthetic", sources, opts.recipe_params("synthetic"))
        # Examples generator by generator, each in narrative order (the recipe gives them narrative by narrative).
        pairs = sorted(((RECIPES.index(out[i]["corruption"]["generator"]), n, out[i : i + 2])
                        for n, out in enumerate(outputs) for i in range(0, len(out), 2)), key=lambda p: p[:2])
        for generator, _, pair in pairs:
            for record in pair:
                record["corpus"] = "synthetic_coherence"
            records += pair
            made[(corpus, RECIPES[generator])] += 1
        for recipe in RECIPES:
            dropped[f"{recipe}_not_applicable"] += 2 * (len(sources) - made[(corpus, recipe)])
    dropped["beyond_max_narratives_per_split"] = 2 * len(RECIPES) * beyond["narratives_beyond_max_narratives_per_split"]
    available = sum(len(s) for s in narratives.values()) + beyond["narratives_beyond_max_narratives_per_split"]
    notes = {
        "narratives_used": {c: dict(sorted(Counter(r["split"] for r in s).items())) for c, s in narratives.items()},
        "pairs_by_corpus_and_recipe": {f"{c}/{g}": n for (c, g), n in sorted(made.items())},
        "examples_by_split_and_label": {
            split: dict(sorted(Counter("negative" if r["label"] == 1 else "positive" for r in records if r["split"] == split).items()))
            for split in ("train", "validation", "test")
        },
        "targeted_types": dict(sorted(Counter(ERROR_TYPES[s["type"]] for r in records for s in r["spans"]).items())),
        "parameters": opts.recorded("synthetic"),
    }
    return Parsed(records=records, upstream_records=2 * len(RECIPES) * available, dropped=+dropped, notes=notes)


CORPUS = register(
    Corpus(
        name="synthetic_coherence",
        description=(
            "SNaC-format (context, sentence, label, targeted error type) synthetic coherence training data made from "
            "TimeTravel stories and FairytaleQA windows with SNaC's coref-based and next-sentence recipes and Cai et "
            "al.'s discordant confounders, balanced positive/negative."
        ),
        citation="""@inproceedings{goyal-etal-2022-snac,
  title = {{SN}a{C}: Coherence Error Detection for Narrative Summarization},
  author = {Goyal, Tanya and Li, Junyi Jessy and Durrett, Greg},
  booktitle = {Proceedings of EMNLP 2022},
  year = {2022}
}""",
        licence="as its sources: TimeTravel (Apache-2.0 repositories, story terms unstated) and FairytaleQA (Apache-2.0, public-domain stories)",
        homepage="https://github.com/tagoyal/snac",
        sources=(),
        uses=("timetravel", "fairytaleqa"),  # the narratives it is made from
        cites=("timetravel", "fairytaleqa"),
        configs=(ConfigSpec(options=SyntheticOptions, name="synthetic_coherence", protocol="sentences", description="Balanced synthetic (context, sentence) coherence "
                            "examples for CharE (entity_first_mention) and SceneE (next_sentence_swap, discordant_replace)."),),
        parse=parse,
    )
)
