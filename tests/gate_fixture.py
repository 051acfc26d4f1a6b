"""Tiny releases for the release-gate tests: records made through the schema, written in the release layout
(data/<config>/<split>.parquet + stats/<config>.json with the build's own `split_stats`)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets

from cohbench.release import split_stats
from cohbench.sources import sha256_of
from cohbench.schema import CATEGORIES, ERROR_TYPES, FEATURES, category_of, empty_record


def write_config(release: Path, config: str, corpus: str, splits: dict[str, list[dict]], notes: dict | None = None) -> Path:
    datasets.disable_progress_bars()
    files, per_split = {}, {}
    for split, records in splits.items():
        for record in records:
            record.update(corpus=corpus, config=config, split=split)
        path = release / "data" / config / f"{split}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        ds = datasets.Dataset.from_list(records, features=FEATURES)
        ds.to_parquet(str(path))
        files[split] = {"path": f"data/{config}/{split}.parquet", "rows": len(records), "bytes": path.stat().st_size, "sha256": sha256_of(path)}
        per_split[split] = split_stats(ds)
    rows = sum(len(records) for records in splits.values())
    stats = {
        "config": config, "corpus": corpus, "version": "0.0.0", "licence": "test fixture", "research_only": False,
        "upstream_records": rows, "built_records": rows, "dropped": {}, "errata": [], "inputs": [],
        "files": files, "splits": per_split, "notes": notes or {},
    }  # fmt: skip
    (release / "stats").mkdir(parents=True, exist_ok=True)
    (release / "stats" / f"{config}.json").write_text(json.dumps(stats), encoding="utf-8")
    return release


def record(record_id: str, doc_id: str, sentences: list[str], **fields) -> dict:
    out = empty_record()
    out.update(id=record_id, doc_id=doc_id, sentences=sentences, **fields)
    return out


def span(segments: list[str], segment: int, text: str, error_type: str, sentence: int, votes: int = 1) -> dict:
    start = segments[segment].find(text)
    return {
        "segment": segment,
        "start": start,
        "end": start + len(text),
        "first_sentence": sentence,
        "last_sentence": sentence,
        "text": text,
        "type": ERROR_TYPES.index(error_type),
        "category": CATEGORIES.index(category_of(error_type)),
        "votes": votes,
        "annotator": None,
        "antecedents": [],
        "resolved": True,
        "resolution": "unique",
    }


def snac_like(record_id: str, doc_id: str) -> dict:
    """Two segments, three sentences, one CharE span in the second segment."""
    segments = ["Anna met Tom. They talked.", "Bob left the farm."]
    return record(
        record_id,
        doc_id,
        ["Anna met Tom.", "They talked.", "Bob left the farm."],
        segments=segments,
        sentence_segments=[0, 0, 1],
        sentence_labels=[0, 0, 1],
        sentence_labels_min2votes=[0, 0, 1],
        segment_labels=[0, 1],
        spans=[span(segments, 1, "Bob", "CharE", 2, votes=2)],
        label=1,
    )
