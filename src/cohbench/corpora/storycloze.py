"""Story Cloze Test, spring 2016 (Mostafazadeh et al., NAACL 2016): human-written discordant endings, the
non-synthetic check of discordant sentence detection models (config `storycloze_dsd`, test only).

Each story row gives four sentences, a right and a wrong fifth sentence. It becomes two records: the story with
its wrong ending (sentence 5 labelled 1) and the same story with its right ending (all 0). Both share
`doc_id` = the upstream story id, which is also TimeTravel's story id (the Story Cloze stories are the
TimeTravel dev and test stories). A test-only config must not hold a story that a release config trains or
tunes on, so stories in TimeTravel's train or dev split are dropped with a counted reason.
Licence: none stated, distributed by its authors on request: research only.
"""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ..errors import ParseError
from .registry import ConfigSpec, Corpus, Parsed, register
from ..schema import ERROR, OK, empty_record
from . import pinned
from .incoherence import TimeTravelOptions

LICENCE = "none stated; distributed by the authors on request"  # the config is research_only: says so once
VAL, TEST = pinned("storycloze").values()

HEADER = ["InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
          "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding"]

CITATION = """@inproceedings{mostafazadeh-etal-2016-corpus,
  title = {A Corpus and Cloze Evaluation for Deeper Understanding of Commonsense Stories},
  author = {Mostafazadeh, Nasrin and Chambers, Nathanael and He, Xiaodong and Parikh, Devi and Batra, Dhruv and Vanderwende, Lucy and Kohli, Pushmeet and Allen, James},
  booktitle = {Proceedings of NAACL-HLT 2016},
  year = {2016}
}"""


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows or rows[0] != HEADER:
        raise ParseError(f"{path.name} does not start with the Story Cloze header ({', '.join(HEADER)}); fetch the pinned file again")
    out = []
    for number, row in enumerate(rows[1:], 2):
        if len(row) != len(HEADER) or row[7] not in ("1", "2") or not all(cell.strip() for cell in row):
            raise ParseError(f"{path.name} line {number} does not have 8 non-empty fields with AnswerRightEnding 1|2; "
                             "the file is truncated or corrupt: fetch the pinned file again")
        out.append(dict(zip(HEADER, row)))
    return out


def parse(paths: Mapping[str, Path], config: str, opts: TimeTravelOptions) -> Parsed:
    """`opts`: TimeTravel's, whose split of the stories (every story: no size limit) decides which Story Cloze
    stories a test may use."""
    stories = CORPUS.used("timetravel").narratives(paths, config, dataclasses.replace(opts, max_stories_per_split=None))
    tt_split = {s["doc_id"]: s["split"] for s in stories}
    tt_text = {s["doc_id"]: s["sentences"] for s in stories}
    records, seen, where, same_text, dropped, upstream = [], set(), Counter(), 0, Counter(), 0
    for name in ("storycloze_val", "storycloze_test"):
        for row in _rows(Path(paths[name])):
            story_id = row["InputStoryid"]
            if story_id in seen:
                raise ParseError(f"story {story_id} occurs twice in the Story Cloze files; fetch the pinned files again")
            seen.add(story_id)
            upstream += 2  # a story row holds two upstream endings; each ending is one record
            where[tt_split.get(story_id, "not in TimeTravel configs")] += 1
            context = [row[f"InputSentence{i}"].strip() for i in range(1, 5)]
            same_text += tt_text.get(story_id, [None])[:4] == context
            if tt_split.get(story_id) in ("train", "validation"):
                dropped[f"story_in_timetravel_{tt_split[story_id]}"] += 2
                continue
            right = row[f"RandomFifthSentenceQuiz{row['AnswerRightEnding']}"].strip()
            wrong = row[f"RandomFifthSentenceQuiz{3 - int(row['AnswerRightEnding'])}"].strip()
            for ending, text, label in (("wrong_ending", wrong, ERROR), ("right_ending", right, OK)):
                record = empty_record()
                record.update(id=f"{story_id}:{ending}", corpus="storycloze", config=config, split="test",
                              doc_id=story_id, system="human", sentences=[*context, text],
                              sentence_labels=[OK] * 4 + [label], label=label)
                records.append(record)
    notes = {
        "stories": len(seen),
        "stories_by_timetravel_split": dict(sorted(where.items())),
        "first_four_sentences_identical_to_timetravel": same_text,
        "upstream_file_origin": {"val": "cloze_test_ALL_val (1,871 stories)", "test": "test_spring2016 (1,871 stories)"},
    }
    return Parsed(records=records, upstream_records=upstream, dropped=dict(dropped), notes=notes)


def held_out_texts(paths: Mapping[str, Path]) -> list[str]:
    """Every story of both files, once with each ending: the test config draws on both, and which of their stories it
    keeps depends on TimeTravel's split."""
    return [" ".join([*(row[f"InputSentence{i}"] for i in range(1, 5)), row[f"RandomFifthSentenceQuiz{q}"]])
            for name in ("storycloze_val", "storycloze_test") for row in _rows(Path(paths[name])) for q in (1, 2)]


CORPUS = register(
    Corpus(
        name="storycloze",
        description=(
            "Story Cloze Test spring 2016 (Mostafazadeh et al., 2016): four-sentence stories with a human-written wrong "
            "and right ending, as a non-synthetic discordant sentence detection test."
        ),
        citation=CITATION,
        licence=LICENCE,
        homepage="https://cs.rochester.edu/nlp/rocstories/",
        sources=(VAL, TEST),
        uses=("timetravel",),  # its split of the stories both hold
        configs=(
            ConfigSpec(
                options=TimeTravelOptions,
                name="storycloze_dsd", protocol="sentences",
                description=(
                    "1,888 stories (those in no TimeTravel train/dev split) x {wrong ending (sentence 5 labelled 1), "
                    "right ending (all 0)}; test only."
                ),
                expected_splits={"test": 3776},
                research_only=True,
            ),
        ),
        parse=parse,
        held_out_texts=held_out_texts,
    )
)
