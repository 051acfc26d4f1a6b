"""SNaC (Goyal, Li, Durrett 2022): span-level coherence errors in book and movie summaries.

Upstream quirks handled here and nowhere else:
- spans are strings, not offsets: each is located in its segment by a documented rule (`spans._preference`), and the
  resolution (unique / ambiguous / failed) is recorded per span;
- 3 spans are not substrings of their segment and 5 SceneE spans are empty: kept unresolved, never dropped;
- 91 spans start or end inside a word (the annotators' selection was cut): kept exactly as marked;
- a string may be listed several times with the same type in one segment: upstream merged votes per marked
  occurrence, so such entries are distinct occurrences and are given distinct offsets;
- the antecedent key is spelled `antecedants`;
- book_175bN and book_6bN summarise the same book, and three books appear under two indices each
  (`SAME_BOOK`): the leakage unit is the book, so all summaries of a book share one `doc_id` and one split;
- the file has no split: cohbench's own (`assign_splits`) approximates the paper's sentence counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ...errors import ParseError
from ..registry import ConfigSpec, Corpus, Parsed, register
from ...schema import ERROR, ERROR_TYPES, OK, empty_record, project
from .. import pinned
from .spans import resolve_segment
from ...text import sentence_offsets

LICENCE = "CC BY-SA 4.0"
SOURCE = pinned("snac")["snac"]

# Upstream id prefix -> (the paper's name, domain). The domain is the split stratum.
SYSTEMS = {
    "book_175b": ("BOOK-175B", "book"),
    "book_6b": ("BOOK-6B", "book"),
    "tripod": ("MOVIE-BART", "movie"),
}
_ID = re.compile(r"^(book_175b|book_6b|tripod)(\d+)$")

# Book indices that summarise the same book as a lower index, in both systems (shared characters and plot):
# 86 and 13 Much Ado About Nothing, 59 and 18 Antony and Cleopatra, 91 and 19 Timon of Athens.
SAME_BOOK = {86: 13, 59: 18, 91: 19}

# The paper's split in sentences (§5: train 4.2k, dev 230, test 1.8k); cohbench's own split aims at these shares.
PAPER_SPLIT_SENTENCES = {"train": 4200, "validation": 230, "test": 1800}
SPLIT_SALT = "cohbench-snac-split-v1"

CITATION = """@inproceedings{goyal-etal-2022-snac,
  title = {{SNaC}: Coherence Error Detection for Narrative Summarization},
  author = {Goyal, Tanya and Li, Junyi Jessy and Durrett, Greg},
  booktitle = {Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing},
  pages = {444--463},
  year = {2022}
}"""


def _load(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        where = f" at line {error.lineno}, column {error.colno}" if isinstance(error, json.JSONDecodeError) else ""
        raise ParseError(
            f"{Path(path).name} is not valid JSON ({getattr(error, 'msg', error)}{where}); "
            f"replace it with the pinned file from {SOURCE.url}"
        ) from None
    if not isinstance(data, dict):
        raise ParseError(f"{Path(path).name} must hold a JSON object keyed by summary id, found {type(data).__name__}")
    return data


def _check(key: str, summary, filename: str) -> None:
    """Stop on anything the format does not allow, naming the file and the record."""

    def fail(what: str):
        raise ParseError(f"{filename}: summary {key} {what}; replace the file with the pinned version")

    if not _ID.match(key):
        fail("has an id outside book_175bN / book_6bN / tripodN")
    if not isinstance(summary, dict) or not summary:
        fail("is not a non-empty object of units")
    if sorted(summary) != sorted(str(i) for i in range(len(summary))):
        fail(f"has unit keys {sorted(summary)[:5]}..., not 0..{len(summary) - 1}")
    for unit_key, unit in summary.items():
        if not isinstance(unit, dict) or not isinstance(unit.get("text"), str) or not isinstance(unit.get("errors"), list):
            fail(f"unit {unit_key} lacks a string `text` or an `errors` list")
        for error in unit["errors"]:
            if not isinstance(error, dict) or not isinstance(error.get("span"), str):
                fail(f"unit {unit_key} has an error without a string `span`")
            if error.get("error_type") not in ERROR_TYPES:
                fail(f"unit {unit_key} has error type {error.get('error_type')!r}, outside {', '.join(ERROR_TYPES)}")
            votes = error.get("votes")
            if not isinstance(votes, int) or isinstance(votes, bool) or votes < 1:
                fail(f"unit {unit_key} has votes {votes!r}, not a positive integer")
            antecedents = error.get("antecedants", [])
            if not isinstance(antecedents, list) or not all(isinstance(a, str) for a in antecedents):
                fail(f"unit {unit_key} has `antecedants` that are not a list of strings")


def doc_id_of(summary_id: str) -> str:
    """The leakage unit: the book (shared by both GPT-3 systems and by duplicate indices) or the movie."""
    prefix, number = _ID.match(summary_id).groups()
    number = int(number)
    if SYSTEMS[prefix][1] == "movie":
        return f"movie-{number}"
    return f"book-{SAME_BOOK.get(number, number)}"


# --- splits -----------------------------------------------------------------------------------------


def assign_splits(units: Mapping[str, tuple[str, int]]) -> dict[str, str]:
    """Leakage unit -> split. `units` maps each unit to (stratum, size).

    Within each stratum, units are ordered by sha256 of a fixed salt and their id; dev, then test, take in
    that order every unit that brings their size closer to their share of the stratum (the paper's 230 and
    1.8k of 6.23k sentences); train takes the rest. Deterministic, and no unit is ever divided. The size is
    the number of upstream segments, so the split does not move when the sentence splitter changes."""
    total = sum(PAPER_SPLIT_SENTENCES.values())
    out = {}
    for stratum in sorted({s for s, _ in units.values()}):
        members = sorted(
            (u for u, (s, _) in units.items() if s == stratum),
            key=lambda u: hashlib.sha256(f"{SPLIT_SALT}:{u}".encode()).hexdigest(),
        )
        size = sum(units[u][1] for u in members)
        for split in ("validation", "test"):
            target, taken = size * PAPER_SPLIT_SENTENCES[split] / total, 0
            for unit in members:
                if unit not in out and abs(taken + units[unit][1] - target) < abs(taken - target):
                    out[unit] = split
                    taken += units[unit][1]
        out.update({unit: "train" for unit in members if unit not in out})
    return out


# --- parse ------------------------------------------------------------------------------------------


def _record(key: str, summary: dict, offsets: list[list[tuple[int, int]]], tally: Counter) -> dict:
    prefix = _ID.match(key).group(1)
    segments = [summary[str(i)]["text"] for i in range(len(summary))]
    sentences, sentence_segments, spans, defects = [], [], [], []
    for segment, (text, spans_at) in enumerate(zip(segments, offsets)):
        first = len(sentences)
        sentences += [text[s:e] for s, e in spans_at]
        sentence_segments += [segment] * len(spans_at)
        found, problems = resolve_segment(segment, text, summary[str(segment)]["errors"], spans_at, first, tally)
        spans += found
        defects += problems
    sentence_labels, segment_labels = project(spans, len(sentences), len(segments))
    sentence_labels_2, segment_labels_2 = project(spans, len(sentences), len(segments), min_votes=2)
    record = empty_record()
    record.update(
        id=key,
        corpus="snac",
        config="snac",
        doc_id=doc_id_of(key),
        system=prefix,
        system_name=SYSTEMS[prefix][0],
        system_extractive=False,
        sentences=sentences,
        segments=segments,
        sentence_segments=sentence_segments,
        sentence_labels=sentence_labels,
        sentence_labels_min2votes=sentence_labels_2,
        segment_labels=segment_labels,
        segment_labels_min2votes=segment_labels_2,
        label=ERROR if ERROR in segment_labels else OK,
        spans=spans,
        defects=defects,
    )
    return record


def _notes(records: list[dict], tally: Counter) -> dict:
    spans = [span for record in records for span in record["spans"]]
    by_split = {}
    for split in ("train", "validation", "test"):
        members = [r for r in records if r["split"] == split]
        by_split[split] = {
            "summaries": len(members),
            "by_source": dict(sorted(Counter(r["system"] for r in members).items())),
            "leakage_units": len({r["doc_id"] for r in members}),
            "sentences": sum(len(r["sentences"]) for r in members),
            "sentences_with_coherence_error": sum(r["sentence_labels"].count(ERROR) for r in members),
            "sentences_with_coherence_error_min2votes": sum(r["sentence_labels_min2votes"].count(ERROR) for r in members),
            "spans": sum(len(r["spans"]) for r in members),
            "spans_by_type": _by_type([s for r in members for s in r["spans"]]),
            "spans_by_votes": _by_votes([s for r in members for s in r["spans"]]),
        }
    segments = sum(len(r["segments"]) for r in records)
    return {
        "summaries_by_source": dict(sorted(Counter(r["system"] for r in records).items())),
        "leakage_units": dict(sorted(Counter(doc.split("-")[0] for doc in {r["doc_id"] for r in records}).items())),
        "segments": segments,
        "segments_without_spans": sum(1 for r in records for i in range(len(r["segments"])) if not any(s["segment"] == i for s in r["spans"])),
        "segments_with_coherence_error": sum(r["segment_labels"].count(ERROR) for r in records),
        "segments_with_coherence_error_min2votes": sum(r["segment_labels_min2votes"].count(ERROR) for r in records),
        "sentences": sum(len(r["sentences"]) for r in records),
        "sentences_by_source": _sum_by(records, "system", lambda r: len(r["sentences"])),
        "spans": len(spans),
        "votes_sum": sum(s["votes"] for s in spans),
        "spans_by_source": _sum_by(records, "system", lambda r: len(r["spans"])),
        "spans_by_type": _by_type(spans),
        "spans_by_votes": _by_votes(spans),
        "spans_with_antecedents": sum(1 for s in spans if s["antecedents"]),
        "resolution": {
            "unique": tally["unique"],
            "ambiguous": tally["ambiguous"],
            "failed": tally["failed"],
            "failed_not_a_substring": tally["failed_not_a_substring"],
            "failed_empty_span": tally["failed_empty"],
            "failed_with_sentence_from_one_sentence_segment": tally["failed_in_one_sentence_segment"],
            "partial_word_spans": tally["partial_word"],
            "spans_crossing_sentence_boundaries": tally["crossing_sentences"],
        },
        "splits": by_split,
        "defects": dict(sorted(Counter(d.split(":")[0] for r in records for d in r["defects"]).items())),
    }


def _by_type(spans: list[dict]) -> dict:
    return {t: sum(1 for s in spans if s["type"] == i) for i, t in enumerate(ERROR_TYPES)}


def _by_votes(spans: list[dict]) -> dict:
    return {str(v): n for v, n in sorted(Counter(s["votes"] for s in spans).items())}


def _sum_by(records: list[dict], field: str, value) -> dict:
    out = Counter()
    for record in records:
        out[record[field]] += value(record)
    return dict(sorted(out.items()))


def parse(paths: Mapping[str, Path], config: str = "snac") -> Parsed:
    path = Path(paths["snac"])
    data = _load(path)
    for key in sorted(data):
        _check(key, data[key], path.name)
    keys = sorted(data)
    texts = [data[key][str(i)]["text"] for key in keys for i in range(len(data[key]))]
    offsets = iter(sentence_offsets(texts))
    tally, records = Counter(), []
    for key in keys:
        records.append(_record(key, data[key], [next(offsets) for _ in range(len(data[key]))], tally))
    units = {}
    for record in records:
        stratum, size = SYSTEMS[record["system"]][1], len(record["segments"])
        units[record["doc_id"]] = (stratum, units.get(record["doc_id"], (stratum, 0))[1] + size)
    splits = assign_splits(units)
    for record in records:
        record["split"] = splits[record["doc_id"]]
    return Parsed(records=records, upstream_records=len(data), notes=_notes(records, tally))


CORPUS = register(
    Corpus(
        name="snac",
        description=(
            "GPT-3 (175B, 6B) book summaries and BART movie-screenplay summaries with crowd-annotated span-level "
            "coherence and language errors in a seven-type taxonomy (Goyal, Li and Durrett, 2022), with spans "
            "located in the text and projected to sentence and segment labels."
        ),
        citation=CITATION,
        licence=LICENCE,
        homepage="https://github.com/tagoyal/snac",
        licence_id="cc-by-sa-4.0",
        licence_url="https://creativecommons.org/licenses/by-sa/4.0/",
        annotators="3 Amazon Mechanical Turk workers per summary marked error spans segment by segment (merged per span and type; `votes` counts them)",
        sources=(SOURCE,),
        configs=(
            ConfigSpec(
                name="snac", protocol="typed_sentences", statistics="error_spans",
                description=(
                    "150 summaries (BOOK-175B 55, BOOK-6B 55, MOVIE-BART 40) split by book or movie into cohbench's "
                    "own train/validation/test (the file carries no split; the paper's dev is validation), sized like the paper's 4.2k/230/1.8k sentences."
                ),
                expected_splits={"train": 98, "validation": 7, "test": 45},
            ),
        ),
        parse=parse,
    )
)
