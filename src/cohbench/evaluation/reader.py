"""The one reader of predictions and scores: prediction files (JSONL) and score files (CSV or JSONL), checked
against the protocol's schema before any metric is computed.

A predictions file is JSONL, one object per release record, read line by line: each line is checked and reduced to
a `Prediction` (numpy arrays, resolved spans) at once, so memory grows with the release, not with the file.

    every protocol   "id": a string naming a record of the config
                     "score": a finite number (not a bool, not a string), higher = more likely an error
                     and/or   "label": 0 or 1 (1 = error)
    metaeval         "coherence" instead of "score": higher = more coherent (`Protocol.better_score`)
    summary          "faithfulness" instead of "score": higher = more faithful; never both keys in one line
    summary, ratings one number per record (a rated summary may also be named by "doc_id" and "system")
    sentences, gaps, a list with one entry per unit (sentence, or gap between sentences) of the record
    typed_sentences
    typed_sentences  "types": one list per sentence of error type names (cohbench.schema.ERROR_TYPES)
                     "spans": [{"sentence": i, "type": NAME, "start": a, "end": b} or {..., "text": "..."}], with
                     0 <= i < sentences, 0 <= a <= b <= the sentence's length

Which keys and widths apply is the protocol's declaration (`Protocol.width`, `Protocol.extra_fields`,
`Protocol.better_score`). Other keys are ignored. The first problem stops the reading with one line naming the file
and line. Score files for rating protocols (`score_rows`) may also be CSV with columns `doc_id`, `system` (or `id`)
and one column of scores: `coherence` (higher = more coherent) or `score` / `error` (higher = more likely an error).
"""

from __future__ import annotations

import csv
import json
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import jsonlines
from ..display import escaped, not_a_file
from ..schema import ERROR_TYPES
from .protocol import ERROR_COLUMNS, ERROR_POLARITY, PROTOCOLS, PredictionsError, Protocol, extra_field_names

EXAMPLES = 5
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


@dataclass(frozen=True)
class Prediction:
    score: np.ndarray | None  # float64, one per unit (one entry for record-level protocols)
    label: np.ndarray | None  # int8, 0 or 1, one per unit
    extra: Mapping[str, object] = field(default_factory=dict)  # the protocol's extra fields, parsed
    score_key: str = "score"  # the key the score was given under: "score", or the protocol's `better_score` (negated)


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


def types_field(value, record: Mapping) -> tuple[frozenset[str], ...]:
    """SNaC `types`: per sentence, the predicted error type names."""
    sentences = len(record["sentences"])
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


def spans_field(value, record: Mapping) -> tuple[tuple[int, str, int, int], ...]:
    """SNaC `spans`: (sentence, type, start, end) in sentence coordinates, a `text` resolved in its sentence."""
    sentences = record["sentences"]
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
            # a text that is not in the sentence overlaps nothing: kept as an empty span, its sentence still counts in ov.
            start, end = (start, start + len(span["text"])) if start >= 0 else (0, 0)
        else:
            raise PredictionsError(f"{what} needs start and end offsets or a non-empty text")
        out.append((index, span["type"], start, end))
    return tuple(out)


def check(row, protocol: Protocol, record: Mapping) -> Prediction:
    """One prediction checked against the protocol's schema for `record` (the release record it names); a score
    given in the protocol's `better_score` polarity is turned into the error polarity here, once."""
    units = protocol.width(record)
    better = protocol.better_score[0] if protocol.better_score else None
    if better in row and "score" in row:
        raise PredictionsError(f'gives both "score" ({ERROR_POLARITY}) and "{better}" ({protocol.better_score[1]}); '
                               "give one: the direction is never guessed")
    misplaced = sorted(k for k in extra_field_names() - set(protocol.own_keys()) if k in row)
    if misplaced:
        owners = " or ".join(name for name, p in PROTOCOLS.items() if misplaced[0] in p.own_keys())
        raise PredictionsError(f'"{misplaced[0]}" is only scored by the {owners} protocol, not {protocol.name}')
    key = better if better in row else "score"
    if key not in row and "label" not in row:
        raise PredictionsError('needs a "score" or a "label"' + (f' (or a "{better}", {protocol.better_score[1]})' if better else ""))
    score = np.array(_per_unit(row[key], key, units, _number), dtype=float) if key in row else None
    if score is not None and key == better:
        score = -score
    label = np.array(_per_unit(row["label"], "label", units, _label), dtype=np.int8) if "label" in row else None
    extra = {key: parse(row[key], record) for key, parse in protocol.extra_fields.items() if key in row}
    return Prediction(score, label, extra, key)


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


def read_predictions(source, protocol: Protocol, records: Mapping[str, Mapping], config: str = "this config") -> dict[str, Prediction]:
    """id -> checked prediction, from a JSONL path (streamed) or an iterable of dicts, for `records` (id -> release
    record). Malformed entries, unknown and duplicate ids are errors."""
    out: dict[str, Prediction] = {}
    unknown, duplicates = Tally(), Tally()  # counted, a few kept: a file of unknown ids must not fill the memory
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
        raise PredictionsError(f"{name}: {duplicates.count} line(s) repeat an id: {duplicates}")
    if unknown:
        raise PredictionsError(f"{unknown.count} prediction line(s) name ids that are not records of {config}: {unknown}")
    return out


class Tally:
    """How many prediction lines something happened to, and the first EXAMPLES ids (shortened) to show: memory stays
    bounded whatever the file holds."""

    def __init__(self):
        self.count, self.shown = 0, []

    def add(self, item: str) -> None:
        self.count += 1
        if len(self.shown) < EXAMPLES and (shown := escaped(item)) not in self.shown:
            self.shown.append(shown)

    def __bool__(self) -> bool:
        return self.count > 0

    def __str__(self) -> str:
        return ", ".join(self.shown) + (", ..." if self.count > len(self.shown) else "")


# --- score files of rating protocols: one score per rated summary, some possibly missing ---------------------


def value_column(columns, better: tuple[str, str] | None, where: str) -> str:
    """The one column of a score file (or row) holding its scores: `better`'s key (higher = better, read negated) or
    `score` / `error` (higher = more likely an error). None of them, or more than one, is refused: the direction of
    a score is never guessed."""
    given = [c for c in (*(better[:1] if better else ()), *ERROR_COLUMNS) if c in columns]
    wanted = (f"`{better[0]}` ({better[1]}) or " if better else "") + f"`score` / `error` ({ERROR_POLARITY})"
    if len(given) != 1:
        found = f"has {' and '.join(f'`{c}`' for c in given)}" if given else "has no score column"
        raise PredictionsError(f"{where} {found}; give one column of scores, {wanted}: the direction of a score is never guessed")
    return given[0]


def directed_rows(rows: Iterable[tuple[str, Mapping]], better: tuple[str, str] | None) -> Iterator[tuple[str, dict]]:
    """(where, row) pairs of score rows, each given its "score" in the error polarity (a `better` column negated) and
    its "column"; every row must use the one column the first used."""
    column = None
    for where, row in rows:
        found = value_column(row, better, where)
        if column not in (None, found):
            raise PredictionsError(f"{where} gives `{found}` where the rows before gave `{column}`; "
                                   "give one column of scores: the direction of a score is never guessed")
        column, value = found, row[found]
        if value is not None and better and found == better[0] and finite(value) is not None:
            value = -float(value)
        yield where, {**row, "score": value, "column": found}


def score_rows(path: Path, better: tuple[str, str] | None) -> Iterator[dict]:
    """Rows `{"id", "score", "column"}` of a CSV or JSON-lines file with `doc_id`, `system` (or `id`) and one column
    of scores (`value_column`), read line by line; "score" is in the error polarity (a `better` column negated). A
    score is a finite number; an empty CSV cell or a JSON null is no score (see --allow-missing); anything else stops
    the reading with one line naming the file and line."""
    path = Path(path)
    problem = not_a_file(path)
    if problem:
        raise PredictionsError(f"scores file {path} {problem}; give the path of a CSV or JSONL file")
    rows = 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # a spreadsheet's CSV may start with a BOM
            lines = _jsonl_rows(path) if path.suffix.lower() in JSONL_SUFFIXES else _csv_rows(path, handle, better)
            for where, row in directed_rows(((f"{path.name}: line {number}", row) for number, row in lines), better):
                rows += 1
                yield _score_row(where, row)
    except UnicodeDecodeError:
        raise PredictionsError(f"{path.name} is not UTF-8 text; save it as UTF-8") from None
    if not rows:
        raise PredictionsError(f"scores file {path.name} is empty; write one score per summary")


def _jsonl_rows(path: Path):
    for number, row in jsonlines.read(path, PredictionsError, "write one JSON object per line"):
        if not isinstance(row, dict):
            raise PredictionsError(f"{path.name} line {number} must be a JSON object; the file holds one object per line")
        yield number, row


def _csv_rows(path: Path, handle, better):
    reader = csv.DictReader(handle)
    try:
        columns = reader.fieldnames or []
        if not columns:
            return
        if twice := sorted({name for name in columns if columns.count(name) > 1}):  # a row would keep the last's cell
            raise PredictionsError(f"{path.name} names the column {escaped(twice[0])} twice in its header; name each column once")
        if not ("id" in columns or {"doc_id", "system"} <= set(columns)):
            raise PredictionsError(f"{path.name} needs columns `doc_id`, `system` (or `id`) and one column of scores; "
                                   f"it has {escaped(', '.join(columns))}")
        column = value_column(columns, better, path.name)
        for row in reader:
            if None in row or None in row.values():
                raise PredictionsError(f"{path.name}: line {reader.line_num} has {'more' if None in row else 'fewer'} cells than the header")
            score = row[column].strip()
            try:
                row[column] = None if not score else float(score)
            except ValueError:
                raise PredictionsError(f"{path.name}: line {reader.line_num}: {column} {escaped(score[:30])!r} is not a number") from None
            yield reader.line_num, row
    except csv.Error as error:
        raise PredictionsError(f"{path.name} is not readable as CSV ({error})") from None


def _score_row(where: str, row: dict) -> dict:
    keys = ("id",) if "id" in row else ("doc_id", "system")
    if any(k not in row for k in keys):
        raise PredictionsError(f"{where} needs `doc_id` and `system`, or `id`")
    if not all(isinstance(row[k], str) and row[k] for k in keys):
        raise PredictionsError(f"{where}: {' and '.join(keys)} must be non-empty strings")
    if row["score"] is not None and finite(row["score"]) is None:
        raise PredictionsError(f"{where}: {row['column']} {escaped(json.dumps(row['score'])[:30])} is not a finite number")
    return {"id": row["id"] if "id" in row else f"{row['doc_id']}/{row['system']}", "score": row["score"], "column": row["column"]}
