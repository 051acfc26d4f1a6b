"""Prediction files, checked against one schema per protocol before any metric is computed.

A predictions file is JSONL, one object per release record, read line by line: each line is checked and reduced to
a `Prediction` (numpy arrays, resolved spans) at once, so memory grows with the release, not with the file.

    every protocol   "id": a string naming a record of the config
                     "score": a finite number (not a bool, not a string)   and/or   "label": 0 or 1
    summary,         one number per record
    metaeval
    sentences, gaps, a list with one entry per unit (sentence, or gap between sentences) of the record
    typed_sentences
    typed_sentences  "types": one list per sentence of error type names (cohbench.schema.ERROR_TYPES)
                     "spans": [{"sentence": i, "type": NAME, "start": a, "end": b} or {..., "text": "..."}], with
                     0 <= i < sentences, 0 <= a <= b <= the sentence's length

Other keys are ignored. The first problem stops the reading with one line naming the file and line.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import jsonlines
from ..display import escaped, not_a_file
from ..errors import CohbenchError
from ..schema import ERROR_TYPES

UNIT_PROTOCOLS = ("typed_sentences", "sentences", "gaps")
SNAC_KEYS = ("types", "spans")
EXAMPLES = 5


class PredictionsError(CohbenchError):
    """A predictions file does not fit the config it is evaluated on."""


@dataclass(frozen=True)
class Prediction:
    score: np.ndarray | None  # float64, one per unit (one entry for record-level protocols)
    label: np.ndarray | None  # int8, 0 or 1, one per unit
    types: tuple[frozenset[str], ...] | None = None  # snac: predicted error types per sentence
    spans: tuple[tuple[int, str, int, int], ...] = ()  # snac: (sentence, type, start, end) in sentence coordinates


def examples(items) -> str:
    items = sorted(escaped(str(item)) for item in items)
    return ", ".join(items[:EXAMPLES]) + (", ..." if len(items) > EXAMPLES else "")


def finite(value) -> float | None:
    """A real number (not a bool) as a finite float, else None; an integer beyond the float range (one given in
    Python: the JSON reader refuses it first) is not finite."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PredictionsError(f"{what} must be a number, found {json.dumps(value)[:40]}")
    number = finite(value)
    if number is None:
        shown = "an integer beyond the float range" if isinstance(value, int) else value
        raise PredictionsError(f"{what} must be a finite number, found {shown}")
    return number


def _label(value, what: str) -> int:
    if isinstance(value, bool) or value not in (0, 1) or not isinstance(value, int):
        raise PredictionsError(f"{what} must be 0 (no error) or 1 (error), found {json.dumps(value)[:40]}")
    return value


def _per_unit(value, key: str, units: int | None, convert) -> list:
    if units is None:
        if isinstance(value, list):
            raise PredictionsError(f"{key} must be one value for this protocol, found a list")
        return [convert(value, key)]
    if not isinstance(value, list) or len(value) != units:
        found = f"{len(value)} values" if isinstance(value, list) else "one value"
        raise PredictionsError(f"{key} needs one value per unit ({units}), found {found}")
    return [convert(v, f"{key}[{i}]") for i, v in enumerate(value)]


def _types(value, sentences: int) -> tuple[frozenset[str], ...]:
    if not isinstance(value, list) or len(value) != sentences:
        raise PredictionsError(f"types needs one list per sentence ({sentences})")
    out = []
    for i, names in enumerate(value):
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PredictionsError(f"types[{i}] must be a list of error type names")
        unknown = set(names) - set(ERROR_TYPES)
        if unknown:
            raise PredictionsError(f"types[{i}] has unknown error type(s) {examples(unknown)}; known: {', '.join(ERROR_TYPES)}")
        out.append(frozenset(names))
    return tuple(out)


def _spans(value, sentences: list[str]) -> tuple[tuple[int, str, int, int], ...]:
    if not isinstance(value, list):
        raise PredictionsError("spans must be a list of objects")
    out = []
    for k, span in enumerate(value):
        what = f"spans[{k}]"
        if not isinstance(span, dict):
            raise PredictionsError(f"{what} must be an object with sentence, type and start/end or text")
        index = span.get("sentence")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(sentences):
            raise PredictionsError(f"{what}.sentence must be a sentence index from 0 to {len(sentences) - 1}, found {json.dumps(index)}")
        if span.get("type") not in ERROR_TYPES:
            raise PredictionsError(f"{what}.type must be one of {', '.join(ERROR_TYPES)}, found {json.dumps(span.get('type'))[:40]}")
        sentence = sentences[index]
        if "start" in span or "end" in span:
            start, end = span.get("start"), span.get("end")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)) or not 0 <= start <= end <= len(sentence):
                raise PredictionsError(f"{what} needs integer start <= end within the sentence (0..{len(sentence)}), found {start}..{end}")
        elif isinstance(span.get("text"), str) and span["text"]:
            start = sentence.find(span["text"])
            if start < 0:
                continue  # a predicted span that is not in the sentence overlaps nothing
            end = start + len(span["text"])
        else:
            raise PredictionsError(f"{what} needs start and end offsets or a non-empty text")
        out.append((index, span["type"], start, end))
    return tuple(out)


def check(row, protocol: str, record: Mapping) -> Prediction:
    """One prediction checked against the protocol's schema for `record` (the release record it names)."""
    units = _width(protocol, record)
    if "score" not in row and "label" not in row:
        raise PredictionsError('needs a "score" or a "label"')
    misplaced = [k for k in SNAC_KEYS if k in row and protocol != "typed_sentences"]
    if misplaced:
        raise PredictionsError(f'"{misplaced[0]}" is only scored by the typed_sentences protocol (SNaC), not {protocol}')
    score = np.array(_per_unit(row["score"], "score", units, _number), dtype=float) if "score" in row else None
    label = np.array(_per_unit(row["label"], "label", units, _label), dtype=np.int8) if "label" in row else None
    if protocol != "typed_sentences":
        return Prediction(score, label)
    types = _types(row["types"], len(record["sentences"])) if "types" in row else None
    spans = _spans(row["spans"], record["sentences"]) if "spans" in row else ()
    return Prediction(score, label, types, spans)


def _width(protocol: str, record: Mapping) -> int | None:
    """How many entries a prediction's lists need (None: one number per record)."""
    if protocol not in UNIT_PROTOCOLS:
        return None
    n = len(record["sentences"])
    return n - 1 if protocol == "gaps" else n


def _rows(source) -> Iterable[tuple[str, object]]:
    """(where, parsed row) from a JSONL path, line by line, or from an iterable of dicts."""
    if not isinstance(source, (str, Path)):
        for number, row in enumerate(source, 1):
            yield f"predictions entry {number}", row
        return
    path = Path(source)
    problem = not_a_file(path)
    if problem:
        raise PredictionsError(f"predictions file {path} {problem}; give the path of a JSONL file")
    lines = 0
    for number, row in jsonlines.read(path, PredictionsError, "write one JSON object per line", name=str(path)):
        lines += 1
        yield f"{path} line {number}", row
    if not lines:
        raise PredictionsError(f"predictions file {path} is empty; write one JSON object per record")


def read_predictions(source, protocol: str, records: Mapping[str, Mapping], config: str = "this config") -> dict[str, Prediction]:
    """id -> checked prediction, from a JSONL path (streamed) or an iterable of dicts, for `records` (id -> release
    record). Malformed entries, unknown and duplicate ids are errors."""
    out: dict[str, Prediction] = {}
    unknown, duplicates = set(), set()
    for where, row in _rows(source):
        if not isinstance(row, dict):
            raise PredictionsError(f"{where}: must be a JSON object with \"id\" and \"score\" or \"label\"; found {json.dumps(row)[:60]}")
        record_id = row.get("id")
        if not isinstance(record_id, str):
            raise PredictionsError(f"{where}: \"id\" must be a string naming a record, found {json.dumps(record_id)[:60]}")
        if record_id not in records:
            unknown.add(record_id)
            continue
        if record_id in out:
            duplicates.add(record_id)
            continue
        try:
            out[record_id] = check(row, protocol, records[record_id])
        except PredictionsError as error:
            raise PredictionsError(f"{where} ({escaped(record_id)}): {error}") from None
    if not out and not unknown and not duplicates:
        raise PredictionsError("the predictions are empty; give one prediction per record")
    name = str(source) if isinstance(source, (str, Path)) else "predictions"
    if duplicates:
        raise PredictionsError(f"{name}: {len(duplicates)} duplicate id(s): {examples(duplicates)}")
    if unknown:
        raise PredictionsError(f"{len(unknown)} prediction id(s) are not records of {config}: {examples(unknown)}")
    return out
