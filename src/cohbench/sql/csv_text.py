"""A query's result as CSV in the bytes pyarrow's CSV writer wrote, without pyarrow, whose import alone took longer
than a small query (0.12 s of 0.3 s): DuckDB renders each row's text, streamed batch by batch, and the float and
decimal columns are laid out here as Arrow lays them out (the shortest digits that read back, `1e+16`, `0.000001`)."""

from __future__ import annotations

import functools
import math
import struct
from decimal import Decimal

import duckdb

from ..errors import QueryError
from .errors import query_errors


# How each DuckDB type a CSV holds is written, as pyarrow's CSV writer wrote it: text quoted (quotes doubled), integers
# and booleans as DuckDB's text, NULL empty; floats and decimals laid out here from the Python value (DuckDB 2.0.0's own
# text of a double is wrong for some: 2**81 reads 4.835703278458517e+24, 8.535058474086213e+242 A.070116948172427e+242).
_QUOTED = frozenset({"varchar", "uuid", "enum"})
_PLAIN = frozenset({"boolean", "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint",
                   "uinteger", "ubigint", "null"})


def _laid_out(negative: bool, digits: str, point: int) -> str:
    """A float's shortest significant digits (no zeros at either end) with `point` digits before the decimal point,
    as pyarrow wrote it (double-conversion's shortest form): plain for decimal exponents -6 to 9 (`0.000001`, `2`),
    else `1.5e+16`, `1e-7`."""
    sign = "-" if negative else ""
    if not -6 <= point - 1 < 10:
        rest = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{rest}e{'+' if point > 0 else '-'}{abs(point - 1)}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _double_text(value: float) -> str:
    """A double as pyarrow wrote it: Python's repr has the same shortest digits that read back as the value."""
    text = repr(value)
    if "e" not in text and -1e10 < value < 1e10:  # plain in both (from 1e-4), but for a whole number's ".0"
        return text[:-2] if text.endswith(".0") else text
    if value != value:
        return "nan"  # without a sign, as pyarrow wrote every NaN
    if value in (math.inf, -math.inf):
        return text
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(whole) + len(fraction) - len(digits))  # digits before the point
    return _laid_out(value < 0, digits.rstrip("0"), point)


def _float_text(value: float) -> str:
    """A FLOAT (single precision; `value` holds it exactly) as pyarrow wrote it: the fewest digits that read back as
    the same single, the closest of them to it."""
    if value != value or value in (math.inf, -math.inf) or value == 0:
        return _double_text(value)  # not cached: 0.0 and -0.0 are one key
    return ("-" if value < 0 else "") + _shortest_single(abs(value))


_SINGLE, _BITS = struct.Struct("<f"), struct.Struct("<I")
_DIGITS = {length: f".{length - 1}e" for length in range(1, 10)}  # a decimal of `length` significant digits


@functools.lru_cache(maxsize=1 << 16)
def _shortest_single(single: float) -> str:
    """`_float_text` of a positive single. Python prints only a double's shortest digits, so lengths are tried (a
    binary search: a length that reads back still does with more digits). A decimal reads back as the single when it
    lies between the midpoints to its neighbours, a midpoint itself when the single's significand is even."""
    (bits,) = _BITS.unpack(_SINGLE.pack(single))
    below, above = _SINGLE.unpack(_BITS.pack(bits - 1))[0], _SINGLE.unpack(_BITS.pack(bits + 1))[0]
    above = min(above, 2.0**128)  # past the largest single, where a decimal reads back as infinity
    low, high = (single + below) / 2, (single + above) / 2  # exact: 25 bits in a double's 53

    def reads_back(text: str) -> bool:
        near = float(text)
        if near == low or near == high:  # on a midpoint, or rounded onto one: compared exactly
            exact, midpoint = Decimal(text), Decimal(near)
            return exact == midpoint and bits % 2 == 0 or (exact > midpoint if near == low else exact < midpoint)
        return low < near < high

    def closest(length: int) -> str | None:
        """The closest decimal of `length` digits that reads back as the single, if any."""
        nearest = format(single, _DIGITS[length])
        if reads_back(nearest):
            return nearest
        if single - low < high - single:  # the neighbour below is the nearer (just above a power of two): one step up
            mantissa, _, power = nearest.partition("e")
            step = f"{int(mantissa.replace('.', '')) + 1}e{int(power) - length + 1}"
            return step if reads_back(step) else None
        return None

    shortest, longest = 1, 9  # nine digits always read back
    while shortest < longest:
        middle = (shortest + longest) // 2
        shortest, longest = (shortest, middle) if closest(middle) else (middle + 1, longest)
    return _double_text(float(closest(shortest)))  # its digits are the double's shortest too, laid out alike


_LAID_OUT = {"float": _float_text, "double": _double_text, "decimal": str}  # str(Decimal): pyarrow's text, `0E-10` too


def batches(relation, con: duckdb.DuckDBPyConnection):
    """The relation's CSV, computed as it is read: (text, rows) per batch, the first text led by the header. DuckDB
    renders each row, in runs of columns joined into one text, with each float and decimal column between them laid
    out here. Lists, structs and types CSV has no text for are refused here, before anything runs."""
    kinds = [kind.id for kind in relation.types]
    nested = [name for name, kind in zip(relation.columns, kinds) if kind in ("list", "array", "struct", "map", "union")]
    if nested:  # DuckDB's COPY writes text that no reader parses back
        raise QueryError(f"CSV cannot hold the list or struct column(s) {', '.join(nested)}; use --format parquet or json, "
                         "or turn them into text in the query (e.g. array_to_string(col, '|'))")
    other = [f"{name} ({kind.upper()})" for name, kind in zip(relation.columns, kinds)
             if kind not in _QUOTED | _PLAIN | _LAID_OUT.keys()]  # fmt: skip
    if other:
        raise QueryError(f"CSV has no text for the column(s) {', '.join(other)}; CAST them AS VARCHAR in the query")
    pieces, layouts, run = [], [], []  # each piece one SQL text: a run of columns, or one column laid out here

    def end_run():
        if run:
            pieces.append(f"concat({', '.join(run)})")
            layouts.append(None)
            run.clear()

    for i, kind in enumerate(kinds, 1):
        if i > 1:
            run.append("','")
        if kind in _LAID_OUT:
            end_run()
            pieces.append(f"#{i}")
            layouts.append(_LAID_OUT[kind])
        else:
            run.append(f"""'"' || replace(CAST(#{i} AS VARCHAR), '"', '""') || '"'""" if kind in _QUOTED else f"CAST(#{i} AS VARCHAR)")
    run.append("chr(10)")
    end_run()
    header = ",".join('"' + name.replace('"', '""') + '"' for name in relation.columns) + "\n"
    return _rendered(relation.project(", ".join(pieces)), layouts, header, con)


def _rendered(relation, layouts: list, header: str, con: duckdb.DuckDBPyConnection, rows: int = 10_000):
    with query_errors(con):
        con.execute(relation.sql_query())  # a streamed result, read batch by batch
        while batch := con.fetchmany(rows):
            pieces = list(zip(*batch))  # column by column, which is quicker than row by row
            for i, layout in enumerate(layouts):
                if layout is not None:
                    pieces[i] = ["" if value is None else layout(value) for value in pieces[i]]
            yield header + "".join(map("".join, zip(*pieces))), len(batch)
            header = ""


def write(batches, sink) -> int:
    """CSV from `batches` to a binary stream; returns the rows written. A result with no rows writes nothing, not even
    the header, as pyarrow's writer did."""
    rows = 0
    for text, count in batches:
        sink.write(text.encode("utf-8"))
        rows += count
    sink.flush()
    return rows
