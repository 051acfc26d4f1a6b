"""The one reader of JSON-lines files, upstream or a user's: each non-blank line parsed on its own (memory grows
with a line, not with the file), and every way a line can fail becomes one sentence naming the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

MAX_INTEGER_DIGITS = 18  # beyond int64; a number that long is a mistake in any file cohbench reads


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is out of range")
    return int(text)


def _object(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are distinct: of {"score": 0.9, "score": 0.1} a dict keeps the last, a value guessed."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"the key {twice!r} occurs twice in one object")
    return value


def parse(text: str):
    """One JSON value; NaN and Infinity are refused (they are not JSON), as are integers beyond 64 bits, a key twice
    in one object and nesting deeper than Python's recursion allows. Raises ValueError with the reason."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_int=_integer, object_pairs_hook=_object)
    except json.JSONDecodeError as error:
        raise ValueError(error.msg) from None
    except RecursionError:
        raise ValueError("it is nested too deeply") from None


def read(path: Path, error: type[Exception], advice: str, name: str | None = None) -> Iterator[tuple[int, object]]:
    """(line number, value) of every non-blank line of `path`; a line that is not UTF-8 or not JSON raises `error`
    naming the file (`name`, default its file name) and the line, followed by `advice` (what to do)."""
    name = name or Path(path).name
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a byte-order mark (Windows editors) is no data
            except UnicodeDecodeError as failure:
                raise error(f"{name} line {number} is not UTF-8 text (byte {failure.start} of the line); {advice}") from None
            if not line.strip():
                continue
            try:
                yield number, parse(line)
            except ValueError as failure:
                raise error(f"{name} line {number} is not valid JSON ({failure}); {advice}") from None
