"""A toy SNaC release whose per-annotator marks are known, so that what the agreement code reconstructs from
merged vote counts can be checked against the truth."""

from __future__ import annotations

import re

import numpy as np

from release_fixture import snac_record, write_release

# record id -> (system, segments as sentences, {annotator: [(segment, span text, type)]})
TOY = {
    "book_175b0": (
        "book_175b",
        [
            ["Gabriel leases a sheep farm near Weatherbury.", "He meets Bathsheba at the farm."],
            ["Her husband's suicide shocks everyone.", "Troy returns from the sea."],
        ],
        {
            "a1": [(0, "Gabriel", "CharE"), (0, "Bathsheba", "CharE"), (1, "Her husband's suicide", "RefE"),
                   (1, "Troy returns from the sea.", "SceneE")],
            "a2": [(0, "Gabriel", "CharE"), (1, "husband's suicide", "RefE"), (1, "Troy", "CharE"), (0, "a sheep farm", "GramE")],
            "a3": [(0, "Gabriel", "CharE"), (0, "Bathsheba", "CharE"), (0, "the farm", "RefE"),
                   (1, "Troy returns from the sea.", "SceneE")],
        },
    ),
    "tripod7": (
        "tripod",
        # the second segment has irregular whitespace (two spaces, a tab): the exact, slower token count runs there
        [["Anna sings at the club.", "The war ends."], ["Anna leaves  with\tMax."]],
        {
            "a1": [(0, "Anna", "CharE"), (0, "The war ends.", "SceneE"), (1, "Max", "CharE")],
            "a2": [(0, "Anna", "CharE")],
            "a3": [(0, "Anna", "CharE"), (1, "Max", "CharE")],
            "a4": [(0, "Anna", "CharE")],  # a fourth vote: this summary has 4 coders
        },
    ),
}
TOKEN = re.compile(r"[^ \t\n\r\f]+")


def toy_records() -> list[dict]:
    return [
        snac_record(rid, system, segments, [mark for marks in annotators.values() for mark in marks])
        for rid, (system, segments, annotators) in TOY.items()
    ]


def write_toy_release(root):
    records = toy_records()
    return write_release(root, {"snac": ("snac", {"train": records[:1], "test": records[1:]})})


def true_token_matrix(error_type: str) -> np.ndarray:
    """Coders x tokens (all records side by side): 1 where that annotator's marks of the type cover the token,
    0 where they do not, NaN for coders a summary did not have."""
    width = max(len(annotators) for _, _, annotators in TOY.values())
    columns = []
    for _, segments, annotators in TOY.values():
        texts = [" ".join(segment) for segment in segments]
        for index, text in enumerate(texts):
            for token in TOKEN.finditer(text):
                column = []
                for marks in annotators.values():
                    covered = False
                    for segment, span, kind in marks:
                        start = texts[segment].find(span)
                        if segment == index and kind == error_type and start < token.end() and token.start() < start + len(span):
                            covered = True
                    column.append(1.0 if covered else 0.0)
                columns.append(column + [np.nan] * (width - len(column)))
    return np.array(columns).T
