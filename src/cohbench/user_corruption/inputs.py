"""Reading a user's narratives: JSONL, Parquet, a folder of them, or a folder saved by `datasets.save_to_disk`.

Each row has an id and either a text (split into sentences with `cohbench.text`) or a list of sentences.
File-level problems (missing path or column, duplicate ids, bytes that are not UTF-8, malformed JSON) are errors
of one line; a row with no text is returned with no sentences, for the caller to drop and count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import jsonlines
from ..display import not_a_file
from ..errors import CohbenchError
from ..corpora.sources import sha256_of

SUFFIXES = (".jsonl", ".json", ".parquet")
# The sentence splitter's limit (spaCy's `nlp.max_length`, which `cohbench.text` keeps at its default). A longer
# text is refused rather than cut: where it were cut would decide sentence boundaries, and a list of sentences
# (the `sentences` column) is never split, whatever its length.
MAX_TEXT_CHARS = 1_000_000


class InputError(CohbenchError):
    """The input to `cohbench corrupt` cannot be read as narratives."""


@dataclass
class Story:
    id: str
    text: str | None  # to be split into sentences
    sentences: list[str] | None  # given already split


def files_of(path: Path) -> list[Path]:
    if not path.is_dir():
        problem = not_a_file(path)  # a FIFO could not be read twice (hashed, then read)
        if problem:
            raise InputError(f"input {path} {problem}; give a JSONL or Parquet file, a folder of them, or a saved dataset")
        if path.suffix not in SUFFIXES:
            raise InputError(f"input {path} is not .jsonl, .json or .parquet; convert it to one of them")
        return [path]
    if (path / "dataset_info.json").is_file() and (path / "state.json").is_file():
        return sorted(path.glob("*.arrow"))
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith("."))
    if not found:
        raise InputError(f"input folder {path} holds no .jsonl, .json or .parquet file and is not a saved dataset")
    return found


def fingerprint(files: list[Path], root: Path) -> list[dict]:
    """Name (relative to the input) and sha256 of every input file: what a resumed run must find unchanged."""
    return [{"file": file.name if file == root else str(file.relative_to(root)), "sha256": sha256_of(file)} for file in files]


def _opens_an_array(path: Path) -> bool:
    with open(path, "rb") as handle:
        while chunk := handle.read(4096):
            if chunk.strip():
                return chunk.lstrip()[:1] == b"["
    return False


def _jsonl_rows(path: Path):
    if path.suffix == ".json" and _opens_an_array(path):
        yield from _json_array_rows(path)
        return
    for number, row in jsonlines.read(path, InputError, "write one JSON object per line, in UTF-8"):
        if not isinstance(row, dict):
            raise InputError(f"{path.name} line {number} is a JSON {type(row).__name__}, not an object with an id "
                             "and a text; write one object per line")
        yield f"line {number}", row


def _json_array_rows(path: Path):
    """A .json file holding one array of objects (rather than one object per line)."""
    try:
        rows = jsonlines.parse(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(f"{path.name} is not UTF-8 (byte {error.start}); re-encode the file as UTF-8") from None
    except ValueError as error:
        raise InputError(f"{path.name} is not valid JSON ({error})") from None
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise InputError(f"{path.name} item {number} is a JSON {type(row).__name__}, not an object with an id and a text")
        yield f"item {number}", row


def _table_rows(path: Path, columns: list[str]):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.suffix == ".arrow":
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
        else:
            table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(f"{path.name} cannot be read as {path.suffix[1:]} ({str(error).splitlines()[0]})") from None
    for number, row in enumerate(table.select(columns).to_pylist(), 1):
        yield number, row


def _text_column(available, wanted: str | None) -> str:
    if wanted:
        return wanted
    return "sentences" if "sentences" in available else "text"


def read(path: Path, id_column: str = "id", text_column: str | None = None) -> list[Story]:
    """Every row of the input as a Story, in file order then row order."""
    stories, seen = [], {}
    for file in files_of(path):
        name = file.name  # once a file, not once a row: a path works its name out anew each time it is asked
        for where, row, available in _rows(file, id_column, text_column):
            column = _text_column(available, text_column)
            missing = [c for c in (id_column, column) if c not in available]
            if missing:
                raise InputError(f"{name}{' ' + where if where else ''} has no column {missing[0]!r} "
                                 f"(columns: {', '.join(map(str, available)) or 'none'}); "
                                 "name the columns with --id-column and --text-column")
            rid = row.get(id_column)
            if (rid is None or (isinstance(rid, str) and not rid.strip()) or not isinstance(rid, (str, int))
                    or isinstance(rid, bool)):
                raise InputError(f"{name} {where} has no usable {id_column!r} (a non-empty string or integer)")
            rid = str(rid)
            _check_unicode([rid], lambda: f"{name} {where}: the {id_column!r}")
            if rid in seen:
                raise InputError(f"id {rid!r} occurs twice ({' '.join(seen[rid])} and {name} {where}); ids must be unique")
            seen[rid] = (name, where)
            value = row.get(column)
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                raise InputError(f"{name} {where} (id {rid!r}): the text has {len(value):,} characters, more than the "
                                 f"sentence splitter takes ({MAX_TEXT_CHARS:,}); cut it into several stories, or give its "
                                 "sentences as a list (a `sentences` column)")
            texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            _check_unicode([text for text in texts if isinstance(text, str)],
                           lambda: f"{name} {where} (id {rid!r}): the {column!r}")
            if isinstance(value, str) or value is None:
                stories.append(Story(rid, value or "", None))
            elif isinstance(value, list) and all(isinstance(s, str) for s in value):
                stories.append(Story(rid, None, [s.strip() for s in value if s.strip()]))
            else:
                raise InputError(f"{name} {where}: {column!r} must be a text or a list of sentences, "
                                 f"not {type(value).__name__}")
    return stories


def _check_unicode(texts: list[str], what: Callable[[], str]) -> None:
    """Refuse text that cannot be written as UTF-8: a lone surrogate, which JSON's \\ud800 escapes can carry (UTF-8
    refuses every surrogate, so `texts` joined encode exactly when each does: one encode a row, and the text at
    fault looked for only when it fails; `what()` names where they came from)."""
    try:
        "".join(texts).encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(f"{what()} holds a lone surrogate (U+{ord(text[error.start]):04X} at character "
                             f"{error.start}), which is not text; fix the input") from None


def _rows(file: Path, id_column: str, text_column: str | None):
    """(where, row, columns available) for each row of one file."""
    if file.suffix in (".jsonl", ".json"):
        for where, row in _jsonl_rows(file):
            yield where, row, list(row)
        return
    import pyarrow.parquet as pq

    if file.suffix == ".parquet":
        try:
            available = pq.read_schema(file).names
        except Exception as error:  # pyarrow raises several types for a file that is not Parquet
            raise InputError(f"{file.name} cannot be read as Parquet ({str(error).splitlines()[0]})") from None
    else:
        import pyarrow as pa

        try:
            with pa.memory_map(str(file)) as source:
                available = pa.ipc.open_stream(source).schema.names
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(f"{file.name} cannot be read as arrow ({str(error).splitlines()[0]})") from None
    column = _text_column(available, text_column)
    if id_column not in available or column not in available:
        yield "", {}, available
        return
    for number, row in _table_rows(file, [id_column, column]):
        yield f"row {number}", row, available
