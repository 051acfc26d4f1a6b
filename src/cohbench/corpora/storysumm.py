"""StorySumm (Subbiah et al., EMNLP 2024): sentence-level faithfulness labels of LLM summaries of short stories.

Upstream quirks handled here and nowhere else:
- the pinned storysumm.json is not valid JSON (a stray `, "` ends line 1455): repaired by erratum
  `storysumm-stray-string-line-1455`, bound to the file's sha256;
- upstream polarity is inverted (label 1 = faithful, errors[i] 1 = consistent): mapped to 1 = has an error;
- `explanations` holds one entry per inconsistent sentence, in sentence order: aligned to those sentences;
- two records disagree with themselves (see `defects`); they are kept as found and counted, never "fixed".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from .errata import Erratum
from ..errors import ParseError
from .registry import ConfigSpec, Corpus, Parsed, register
from ..schema import ERROR, NO_LABEL, OK, empty_record
from . import pinned

SOURCE = pinned("storysumm")["storysumm"]

STRAY_STRING = Erratum(
    id="storysumm-stray-string-line-1455",
    source="storysumm",
    input_sha256=SOURCE.sha256,
    output_sha256="45e9d99d065fd29ac208ed5eb30547d40074f55a9d8417df15abdf478fc630ac",
    old=b'each representing a challenging moment he has faced.", "\n',
    new=b'each representing a challenging moment he has faced.",\n',
    occurrences=1,
    description=(
        "Line 1455 ends a summary sentence with a stray `, \"` that opens a string running across the newline, "
        "so the file does not parse; the stray characters are removed. No text or label changes."
    ),
    records_affected=1,
)

# Upstream's "claude" is two models: Claude-2 wrote the val summaries, Claude-3 the test ones (paper §3.1 and
# Table 1). `system` names one model each; the merged upstream id is kept in `system_upstream`.
SPLIT_SYSTEMS = {("claude", "val"): "claude-2", ("claude", "test"): "claude-3"}
# System ids -> names used in the paper.
SYSTEM_NAMES = {
    "text-davinci-003": "Davinci-3",
    "chatGPT": "ChatGPT",
    "gpt-3.5-turbo-instruct": "GPT-3.5",
    "gpt-4": "GPT-4",
    "claude-2": "Claude-2",
    "claude-3": "Claude-3",
}

CITATION = """@inproceedings{subbiah-etal-2024-storysumm,
  title = {{STORYSUMM}: Evaluating Faithfulness in Story Summarization},
  author = {Subbiah, Melanie and Ladhak, Faisal and Mishra, Akankshya and Adams, Griffin Thomas and Chilton, Lydia and McKeown, Kathleen},
  booktitle = {Proceedings of the 2024 Conference on Empirical Methods in Natural Language Processing},
  year = {2024}
}"""

_FIELDS = ("label", "difficulty", "story", "summary", "errors", "story-id", "explanations", "claims", "split", "model")
SPLITS = ("val", "test")  # upstream's names
UPSTREAM_SPLITS = {"val": "validation"}  # -> cohbench's split vocabulary (schema.SPLITS)


def _load(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_bytes())
    except json.JSONDecodeError as error:
        raise ParseError(
            f"{Path(path).name} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
            "if it is the pinned upstream file, fetch it again so that its erratum is applied, else replace it"
        ) from None
    if not isinstance(data, dict):
        raise ParseError(f"{Path(path).name} must hold a JSON object keyed by summary id, found {type(data).__name__}")
    return data


def _check(key: str, item, filename: str) -> None:
    if not isinstance(item, dict):
        raise ParseError(f"{filename}: record {key} is not an object")
    missing = [f for f in _FIELDS if f not in item]
    if missing:
        raise ParseError(f"{filename}: record {key} lacks field(s) {', '.join(missing)}")
    if item["split"] not in SPLITS or item["label"] not in (0, 1):
        raise ParseError(f"{filename}: record {key} has split {item['split']!r} / label {item['label']!r}, outside val|test / 0|1")
    if not all(isinstance(s, str) for s in item["summary"]) or not all(e in (0, 1) for e in item["errors"]):
        raise ParseError(f"{filename}: record {key} must have string sentences and 0/1 sentence labels")


def _record(key: str, item: dict) -> tuple[dict, list[str]]:
    sentences = item["summary"]
    consistent = item["errors"]
    system = SPLIT_SYSTEMS.get((item["model"], item["split"]), item["model"])
    defects = []
    record = empty_record()
    if len(consistent) == len(sentences):
        record["sentence_labels"] = [OK if flag == 1 else ERROR for flag in consistent]
    else:
        record["sentence_labels"] = [NO_LABEL] * len(sentences)
        defects.append(f"sentence_label_count: {len(sentences)} sentences but {len(consistent)} sentence labels upstream")
    flagged = [i for i, flag in enumerate(consistent) if flag == 0]
    counts_match = len(flagged) == len(item["explanations"])
    aligned = counts_match and len(consistent) == len(sentences)
    if not counts_match:
        defects.append(
            f"explanation_alignment: {len(item['explanations'])} explanation(s) for {len(flagged)} sentence(s) labelled inconsistent"
        )
    if item["label"] == 0 and not flagged:
        defects.append("summary_label_without_sentence_error: unfaithful summary, but no sentence labelled inconsistent")
    record.update(
        id=key,
        corpus="storysumm",
        config="storysumm",
        split=UPSTREAM_SPLITS.get(item["split"], item["split"]),
        doc_id=f"story-{item['story-id']}",
        system=system,
        system_name=SYSTEM_NAMES.get(system, system),
        system_upstream=item["model"] if system != item["model"] else None,
        difficulty=item["difficulty"] or None,
        source_text=item["story"],
        sentences=sentences,
        label=ERROR if item["label"] == 0 else OK,
        explanations=[
            {"sentence": flagged[i] if aligned else None, "text": text} for i, text in enumerate(item["explanations"])
        ],
        claims=item["claims"],
        defects=defects,
    )
    return record, defects


def parse(paths: Mapping[str, Path], config: str = "storysumm") -> Parsed:
    path = Path(paths["storysumm"])
    data = _load(path)
    records, defect_counts = [], Counter()
    for key in sorted(data):
        _check(key, data[key], path.name)
        record, defects = _record(key, data[key])
        defect_counts.update(d.split(":")[0] for d in defects)
        records.append(record)
    notes = {
        "stories": len({r["doc_id"] for r in records}),
        "by_model": dict(sorted(Counter(r["system"] for r in records).items())),
        "by_difficulty": dict(sorted(Counter(r["difficulty"] or "none (faithful)" for r in records).items())),
        "records_with_defects": sum(1 for r in records if r["defects"]),
        "defects": dict(sorted(defect_counts.items())),
        "upstream_splits": {ours: theirs for theirs, ours in UPSTREAM_SPLITS.items()},
    }
    return Parsed(records=records, upstream_records=len(data), notes=notes)


CORPUS = register(
    Corpus(
        name="storysumm",
        description=(
            "LLM summaries of short stories with sentence-level faithfulness labels, written explanations of each "
            "error, and easy/hard difficulty of unfaithful summaries (Subbiah et al., 2024)."
        ),
        citation=CITATION,
        licence="MIT",
        homepage="https://github.com/melaniesubbiah/storysumm",
        licence_id="mit",
        licence_url="https://github.com/melaniesubbiah/storysumm",
        annotators="3 Upwork annotators per summary labelled each sentence and explained errors; summary labels merge the annotator, expert and hybrid protocols",
        sources=(SOURCE,),
        errata=(STRAY_STRING,),
        configs=(
            ConfigSpec(
                name="storysumm", protocol="summary", statistics="summary_labels",
                description="96 summaries of 32 stories; upstream val (33, older generators) and test (63, newer).",
                expected_splits={"validation": 33, "test": 63},
            ),
        ),
        parse=parse,
    )
)
