"""The tables great-expectations checks, derived from a release's Parquet files with pandas.

Checks that span several fields of a record (list lengths, span offsets against their text) are computed here
as plain columns, so that each is one column expectation whose failures name the offending rows; the verdict
itself always comes from great-expectations (`suites.py`).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd

from ..release.layout import ConfigData, split_stats
from ..schema import CATEGORIES, ERROR_TYPES, SPLIT_CLASSES, category_of


def _labels_ok(values) -> bool:
    return all(v in (-1, 0, 1) for v in values)


def records_frame(data: ConfigData) -> pd.DataFrame:
    rows = []
    for r in data.records():
        sentences = r["sentences"] or []
        segments = r["segments"] or []
        seg_of = r["sentence_segments"] or []
        rows.append(
            {
                "id": r["id"],
                "corpus": r["corpus"],
                "config": r["config"],
                "split": r["split"],
                "doc_id": r["doc_id"],
                "label": r["label"],
                "n_sentences": len(sentences),
                "n_empty_sentences": sum(1 for s in sentences if not (s or "").strip()),
                "n_gaps": max(len(sentences) - 1, 0),
                "n_segments": len(segments),
                "n_sentence_labels": len(r["sentence_labels"] or []),
                "n_sentence_labels_min2votes": len(r["sentence_labels_min2votes"] or []),
                "n_gap_labels": len(r["gap_labels"] or []),
                "n_sentence_segments": len(seg_of),
                "n_segment_labels": len(r["segment_labels"] or []),
                "n_segment_labels_min2votes": len(r["segment_labels_min2votes"] or []),
                "list_labels_in_set": all(
                    _labels_ok(r[f] or [])
                    for f in ("sentence_labels", "sentence_labels_min2votes", "segment_labels", "segment_labels_min2votes", "gap_labels")
                ),
                # each sentence points into `segments`, in reading order
                "sentence_segments_valid": all(0 <= s < len(segments) for s in seg_of) and seg_of == sorted(seg_of),
                "is_corruption": r["corruption"] is not None,
                "corruption_generator": (r["corruption"] or {}).get("generator"),
                "corruption_source_id": (r["corruption"] or {}).get("source_id"),
            }
        )
    return pd.DataFrame(rows)


def spans_frame(data: ConfigData) -> pd.DataFrame:
    rows = []
    for r in data.records():
        segments = r["segments"] or []
        n_sentences = len(r["sentences"] or [])
        for i, span in enumerate(r["spans"] or []):
            seg, start, end = span["segment"], span["start"], span["end"]
            segment_ok = seg is not None and 0 <= seg < len(segments)
            text = segments[seg] if segment_ok else None
            in_bounds = segment_ok and start is not None and end is not None and 0 <= start < end <= len(text)
            first, last = span["first_sentence"], span["last_sentence"]
            type_name = ERROR_TYPES[span["type"]] if span["type"] in range(len(ERROR_TYPES)) else None
            rows.append(
                {
                    "span_id": f"{r['id']}#{i}",
                    "type": span["type"],
                    "category": span["category"],
                    "category_matches_type": type_name is not None
                    and span["category"] == CATEGORIES.index(category_of(type_name)),
                    "votes": span["votes"],
                    "resolved": bool(span["resolved"]),
                    "resolution": span["resolution"],
                    "resolution_agrees": bool(span["resolved"]) == (span["resolution"] in ("unique", "ambiguous")),
                    "has_segment": seg is not None,
                    "segment_in_range": segment_ok,
                    "offsets_in_bounds": in_bounds,
                    "text_matches_offsets": in_bounds and text[start:end] == span["text"],
                    "sentences_in_range": first is not None
                    and last is not None
                    and 0 <= first <= last < n_sentences,
                }
            )
    return pd.DataFrame(rows, columns=SPAN_COLUMNS)


SPAN_COLUMNS = [
    "span_id", "type", "category", "category_matches_type", "votes", "resolved", "resolution", "resolution_agrees",
    "has_segment", "segment_in_range", "offsets_in_bounds", "text_matches_offsets", "sentences_in_range",
]  # fmt: skip


def ratings_frame(data: ConfigData, ranges: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for r in data.records():
        for i, rating in enumerate(r["ratings"] or []):
            bounds = ranges.get(rating["dimension"])
            score = rating["score"]
            rows.append(
                {
                    "rating_id": f"{r['id']}#{i}",
                    "dimension": rating["dimension"],
                    "annotator_type": rating["annotator_type"],
                    "score": score,
                    "range_declared": bounds is not None,
                    "score_in_range": bounds is not None and score is not None and bounds[0] <= score <= bounds[1],
                }
            )
    return pd.DataFrame(rows, columns=["rating_id", "dimension", "annotator_type", "score", "range_declared", "score_in_range"])


def documents_frame(configs: list[ConfigData]) -> pd.DataFrame:
    """One row per doc_id of the whole release: where it occurs, and in how many split classes.

    Configs that share upstream stories (TimeTravel and Story Cloze, the synthetic configs made from them)
    carry the same doc_id, so a story in the train split of one config and the test split of another shows here."""
    where: dict[str, set] = defaultdict(set)
    for data in configs:
        for split, rows in data.splits.items():
            for r in rows:
                where[r["doc_id"]].add((data.name, split))
    out = []
    for doc_id, places in sorted(where.items()):
        classes = {SPLIT_CLASSES.get(split, split) for _, split in places}
        out.append({"doc_id": doc_id, "split_classes": len(classes), "found_in": ", ".join(f"{c}:{s}" for c, s in sorted(places))})
    return pd.DataFrame(out, columns=["doc_id", "split_classes", "found_in"])


def derivations_frame(configs: list[ConfigData]) -> pd.DataFrame:
    """One row per provenance link of a corruption: its source (`corruption.source_id`, a record id or a doc_id)
    and each inserted sentence (`inserted_ids`, `<doc_id or record id>#...`). A link must stay inside the
    corruption's split class (no confounder pool or source across splits); a discordant sentence (DSD) must come
    from another document. Links to texts the release does not hold cannot be checked and are left out."""
    classes: dict[str, set] = defaultdict(set)
    for data in configs:
        for r in data.records():
            cls = SPLIT_CLASSES.get(r["split"], r["split"])
            classes[r["id"]].add(cls)
            classes[r["doc_id"]].add(cls)
    out = []
    for data in configs:
        for r in data.records():
            corruption = r["corruption"] or {}
            own = SPLIT_CLASSES.get(r["split"], r["split"])
            links = [("source", corruption.get("source_id"))]
            links += [("inserted", inserted.split("#", 1)[0]) for inserted in corruption.get("inserted_ids") or []]
            for kind, target in links:
                if target is None or target not in classes:
                    continue
                out.append(
                    {
                        "id": f"{data.name}/{r['id']}",
                        "generator": corruption.get("generator"),
                        "link": kind,
                        "derived_from": f"{target} ({'/'.join(sorted(classes[target]))})",
                        "same_split_class": classes[target] == {own},
                        "other_document": kind == "source" or target != r["doc_id"],
                    }
                )
    return pd.DataFrame(out, columns=["id", "generator", "link", "derived_from", "same_split_class", "other_document"])


def actual_stats(data: ConfigData) -> dict:
    """The build's per-split statistics (`layout.split_stats`), recomputed from the Parquet files."""
    return {split: split_stats(table) for split, table in data.tables.items()}


def flatten(stats: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in stats.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def stats_frame(config: str, actual: dict, expected: dict | None) -> pd.DataFrame:
    """One row per statistic of either record; `expected` None (nothing recorded) is one failing row."""
    if expected is None:
        hint = f"none recorded (run `cohbench validate {config} --record-expected`, review, commit)"
        return pd.DataFrame([{"statistic": "snapshot", "expected": "recorded", "actual": hint}])
    got, want = flatten(actual), flatten(expected)
    rows = [
        {
            "statistic": key,
            "expected": json.dumps(want[key]) if key in want else "absent",
            "actual": json.dumps(got[key]) if key in got else "absent",
        }
        for key in sorted(set(got) | set(want))
    ]
    return pd.DataFrame(rows, columns=["statistic", "expected", "actual"])


def cross_checks_frame(notes: dict) -> pd.DataFrame:
    """Cross-source checks a corpus records in its stats notes: every count (or list of ids) under a key that
    names a mismatch, e.g. SummEval's expert means against BARTScore's."""
    rows = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, path + [str(key)])
        elif any("mismatch" in p.lower() for p in path):
            if isinstance(node, list):
                rows.append({"check": ".".join(path), "mismatches": len(node), "examples": json.dumps(node[:5])})
            elif isinstance(node, (int, float)) and not isinstance(node, bool):
                rows.append({"check": ".".join(path), "mismatches": node, "examples": ""})

    walk(notes or {}, [])
    return pd.DataFrame(rows, columns=["check", "mismatches", "examples"])
