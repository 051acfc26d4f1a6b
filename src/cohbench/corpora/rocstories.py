"""ROCStories (Mostafazadeh et al., NAACL 2016), a 5,000-story sample, as extra *training* data for narrative
incoherence detection: `rocstories_msd` and `rocstories_dsd`, train split only, several corrupted instances per
story (each removing or replacing a different sentence), made exactly as the TimeTravel configs are.

Upstream quirks handled here and nowhere else:
- the file is JSON lines, each a one-element list holding one story as a single string, with no id: a story's id
  is `roc-` + the first 12 hex digits of the sha256 of its text (stable, derived from the upstream content);
- stories are split with the project's sentence splitter; those that do not give 5 sentences (abbreviations, a
  missing final period) are dropped and counted;
- ROCStories is also where TimeTravel and the Story Cloze Test come from: every story whose normalised full text
  is a TimeTravel story, or a Story Cloze story with either ending, is dropped and counted, so nothing trained on
  these configs has seen a story of any evaluation split (the pinned sample has none; the check stays).

Accounting: each story stands for `instances` records (one per corrupted instance); a story dropped, or an
instance without an admissible confounder, is counted per instance.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ..errors import ParseError
from .registry import Corpus, Parsed, register
from ..schema import OK, empty_record
from ..text import normalise, split_sentences
from . import held_out, incoherence as inc
from . import json_lines, pinned

(SAMPLE,) = pinned("rocstories").values()

SENTENCES = 5
# The corpora ROCStories shares stories with (TimeTravel and the Story Cloze Test were written from it).
SHARES_STORIES_WITH = ("timetravel", "storycloze")


@dataclasses.dataclass(frozen=True)
class RocStoriesOptions(inc.GeneratorOptions):
    k: int  # sentences altered per 5-sentence story
    msd_instances: int  # records per story for MSD, each removing a different sentence
    dsd_instances: int  # records per story for DSD, each replacing a different sentence

    SECTION = "rocstories"

    def recorded(self, recipe: str) -> dict:
        """The options, less the instance count of the other recipe (msd_instances means nothing to DSD)."""
        return {k: v for k, v in super().recorded(recipe).items() if not k.endswith("_instances") or k == f"{recipe}_instances"}


def normalised(sentences) -> str:
    return normalise(" ".join(sentences))


def story_id(text: str) -> str:
    return "roc-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _stories(path: Path) -> list[str]:
    stories = []
    for number, item in json_lines(path):
        if not (isinstance(item, list) and len(item) == 1 and isinstance(item[0], str) and item[0].strip()):
            raise ParseError(f"{path.name} line {number} is not a one-element list holding a story; is this the "
                             "ROCStories sample?")
        stories.append(item[0].strip())
    return stories


def coherent_records(paths: Mapping[str, Path], config: str) -> tuple[list[dict], int, Counter]:
    """One coherent train record per usable story; upstream story count; drops per story."""
    texts = _stories(Path(paths["rocstories_sample"]))
    ids = [story_id(t) for t in texts]
    if len(set(ids)) != len(ids):
        raise ParseError("the ROCStories sample repeats a story; the pinned file does not, so fetch it again")
    held_out_stories = set().union(*held_out([CORPUS.used(name) for name in SHARES_STORIES_WITH], lambda corpus: paths).values())
    dropped, records = Counter(), []
    for sid, sentences in zip(ids, split_sentences(texts)):
        sentences = [s.strip() for s in sentences]
        if len(sentences) != SENTENCES:
            dropped["not_five_sentences"] += 1
            continue
        if normalised(sentences) in held_out_stories:
            dropped["story_in_timetravel_or_story_cloze"] += 1
            continue
        record = empty_record()
        record.update(id=sid, corpus="rocstories", config=config, split="train", doc_id=sid,
                      sentences=sentences, sentence_labels=[OK] * SENTENCES)
        records.append(record)
    if not records:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(dropped.items()))
        raise ParseError(f"every story of {Path(paths['rocstories_sample']).name} was dropped ({reasons}), so there is "
                         "nothing to train on; the leakage filter drops stories of TimeTravel and the Story Cloze Test")
    return records, len(texts), dropped


PAIR = inc.CorruptedPair(
    "rocstories", RocStoriesOptions, research_only=True,
    msd="Missing sentence detection training data: 4 of 5 sentences shown, one instance per removable sentence; "
        "train only.",
    dsd="Discordant sentence detection training data: 1 of 5 sentences replaced by a confounder from another story, "
        "several positions per story; train only.",
)


def parse(paths: Mapping[str, Path], config: str, opts: RocStoriesOptions) -> Parsed:
    coherent, stories, dropped = coherent_records(paths, config)
    count = getattr(opts, f"{PAIR.recipe(config)}_instances")
    dropped = Counter({reason: n * count for reason, n in dropped.items()})
    return PAIR.parsed(config, opts, coherent, stories * count, dropped, instances=count,
                       stories=stories, stories_used=len(coherent))


CORPUS = register(
    Corpus(
        name="rocstories",
        description=(
            "A 5,000-story sample of ROCStories (Mostafazadeh et al., 2016) turned into extra training data for "
            "narrative incoherence detection as in Cai et al. (2020): several instances per story, each with one "
            "sentence removed (MSD) or replaced by a confounder (DSD). Train split only."
        ),
        citation="",  # the Story Cloze paper is ROCStories' paper
        cites=("storycloze",),
        licence="research only (ROCStories terms: on request from its authors, cite Mostafazadeh et al., 2016); repository Apache-2.0",
        homepage="https://cs.rochester.edu/nlp/rocstories/",
        sources=(SAMPLE,),
        uses=SHARES_STORIES_WITH,
        configs=PAIR.configs,
        parse=parse,
    )
)
