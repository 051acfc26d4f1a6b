"""Explicit registry of corruption generators and the helpers every generator shares.

A generator is a pure function `fn(records, *, seed, dropped=None, **params) -> records` over records in the one
schema. It may return fewer or more records than it was given: a record it cannot corrupt under its constraints
yields none, and the reason is counted in `dropped` (a Counter) when the caller passes one. Randomness comes only
from `record_rng(seed, key, record_id)`, so output does not depend on batch boundaries or `num_proc`.
`GENERATORS[name]` is its columnar form, a dict of lists in and out, as `datasets.Dataset.map(batched=True)` passes
it; the recipes call `GENERATORS[name].over_records`, with no conversion.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import CorruptionError
from ..names import Registry
from ..schema import CATEGORIES, ERROR, FIELDS, ERROR_TYPES, NO_LABEL, category_of, empty_record


OverRecords = Callable[..., list[dict]]


@dataclass(frozen=True)
class Generator:
    """A registered generator: `over_records` itself, and called, its columnar form for `Dataset.map(batched=True)`."""

    name: str
    over_records: OverRecords

    def __call__(self, batch: dict[str, list], **params) -> dict[str, list]:
        return to_columns(self.over_records(to_records(batch), **params))


GENERATORS: Registry[Generator] = Registry("corruption generator")


def generator(name: str) -> Callable[[OverRecords], OverRecords]:
    """Register a generator over records under `name`; a second generator of the same name is an error."""

    def register(fn: OverRecords) -> OverRecords:
        GENERATORS.register(name, Generator(name, fn))
        return fn

    return register


def record_rng(seed: int, key: str, record_id: str) -> random.Random:
    """The one source of randomness: a generator's stream for one record, fixed by (seed, key, record id)."""
    digest = hashlib.sha256(f"{seed}\x00{key}\x00{record_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


# Several instances of one record take distinct sets of positions in a seeded order: every set is listed and shuffled
# with the record's stream (about a second and 100 MB a million sets), so a record with more is refused, not left to
# take minutes and gigabytes (five of a hundred sentences are 75 million sets).
MAX_POSITION_SETS = 100_000


def seeded_sets(rng: random.Random, listed: Callable[[], list], count: int, instances: int, record: dict) -> list:
    """Up to `instances` of the `count` position sets `listed()` gives, distinct, in `rng`'s order (a shuffle)."""
    if count > MAX_POSITION_SETS:
        raise CorruptionError(f"record {record['id']}: {instances} instances are drawn from its {count:,} sets of positions "
                              f"({len(record['sentences'])} sentences), more than {MAX_POSITION_SETS:,}; lower k or the "
                              "instances, or cut the stories into windows of fewer sentences (--n)")
    sets = listed()
    rng.shuffle(sets)
    return sets[:instances]


def to_records(batch: dict[str, list]) -> list[dict]:
    columns = list(batch)
    size = len(batch[columns[0]]) if columns else 0
    return [{column: batch[column][i] for column in columns} for i in range(size)]


def to_columns(records: Iterable[dict]) -> dict[str, list]:
    records = list(records)
    return {field.name: [record[field.name] for record in records] for field in FIELDS}


def sentence_id(record_id: str, index: int) -> str:
    """Stable id of one sentence of a record (used in provenance of inserted sentences)."""
    return f"{record_id}#s{index}"


def span(sentence: int, text: str, error_type: str, antecedents: tuple[str, ...] = ()) -> dict:
    """A synthetic error span on one sentence. It has no character offsets: generated records have no segments."""
    return {
        "segment": None,
        "start": None,
        "end": None,
        "first_sentence": sentence,
        "last_sentence": sentence,
        "text": text,
        "type": ERROR_TYPES.index(error_type),
        "category": CATEGORIES.index(category_of(error_type)),
        "votes": None,
        "annotator": None,
        "antecedents": list(antecedents),
        "resolved": None,
        "resolution": None,
    }


# Fields of the source that still apply to a corrupted copy; the rest (segments, ratings, claims, ...) describe
# the source's own text and are left empty.
_KEPT_FIELDS = ("corpus", "config", "split", "doc_id", "system", "system_name", "system_extractive", "source_text", "references")


def derived(source: dict, generator_name: str, seed: int, variant: str | None = None, **fields) -> dict:
    """A corrupted record made from `source`: same document and split, a new id, provenance set.

    `fields` sets sentences/labels/spans and the corruption entries (positions, inserted_ids, similarities, ranks,
    replaced).
    """
    record = empty_record()
    for name in _KEPT_FIELDS:
        record[name] = copy.deepcopy(source.get(name))
    provenance = {"positions": [], "inserted_ids": [], "similarities": [], "ranks": [], "replaced": []}
    for name in list(fields):
        if name in provenance:
            provenance[name] = fields.pop(name)
    record.update(
        id=f"{source['id']}:{variant or generator_name}",
        label=ERROR,
        corruption={"generator": generator_name, "seed": seed, "source_id": source["id"], **provenance},
    )
    record.update(fields)
    return record


def context_pair(source: dict, name: str, seed: int, variant: str, context: list[str], sentence: str, label: int,
                 error_type: str, mention: str, position: int, inserted: list[str], antecedents: tuple[str, ...] = (),
                 replaced: tuple[str, ...] = ()) -> dict:
    """One half of a balanced (context, sentence, label) pair (Goyal et al. §5.1): the context unlabelled (-1), the
    sentence labelled, with a span of `error_type` on `mention` where it is the error. `replaced` is the source's
    sentence the labelled one took the place of, where it took one's place."""
    record = derived(source, name, seed, variant=variant, sentences=[*context, sentence],
                     sentence_labels=[NO_LABEL] * len(context) + [label],
                     spans=[span(len(context), mention, error_type, antecedents)] if label == ERROR else [],
                     positions=[position], inserted_ids=inserted, replaced=list(replaced))
    record["label"] = label
    return record


def count(dropped: Counter | None, reason: str) -> None:
    """Count a record a generator yields nothing for, by reason, where the caller keeps an account."""
    if dropped is not None:
        dropped[reason] += 1


def per_record(name: str, make: Callable[..., list[dict] | str]) -> OverRecords:
    """Turn `make(record, rng, seed, **params) -> [records]`, or the reason it yields none, into a registered
    generator. Its `dropped` argument, a Counter, receives those reasons (the builders' accounting)."""

    def over_records(records: list[dict], *, seed: int, dropped: Counter | None = None, **params) -> list[dict]:
        out = []
        for record in records:
            made = make(record, record_rng(seed, name, record["id"]), seed, **params)
            if isinstance(made, str):
                count(dropped, made)
            else:
                out += made
        return out

    over_records.__doc__ = make.__doc__
    over_records.__name__ = make.__name__
    return generator(name)(over_records)
