"""Tiny release folders written in the release layout (data/<config>/<split>.parquet + stats/<config>.json),
with records made through the schema, so that the SQL views, agreement and report run without a real build."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import datasets

from cohbench.schema import CATEGORIES, ERROR, ERROR_TYPES, FEATURES, OK, category_of, empty_record


def write_release(root: Path, configs: dict[str, tuple[str, dict[str, list[dict]]]]) -> Path:
    """configs: name -> (corpus, {split: records}). Returns the release folder."""
    for config, (corpus, splits) in configs.items():
        files = {}
        for split, records in splits.items():
            for record in records:
                record.update(corpus=corpus, config=config, split=split)
            path = root / "data" / config / f"{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            datasets.Dataset.from_list(records, features=FEATURES).to_parquet(str(path))
            files[split] = {"path": f"data/{config}/{split}.parquet", "rows": len(records)}
        stats = {"config": config, "corpus": corpus, "files": files}
        (root / "stats").mkdir(parents=True, exist_ok=True)
        (root / "stats" / f"{config}.json").write_text(json.dumps(stats), encoding="utf-8")
    return root


def snac_record(record_id: str, system: str, segments: list[list[str]], marks: list[tuple[int, str, str]]) -> dict:
    """A SNaC-like record. segments: the sentences of each segment; marks: one (segment, span text, type) per
    annotator mark. Identical marks are merged into one span with their count as votes, as upstream does."""
    record = empty_record()
    sentences, sentence_segments, starts = [], [], []
    for index, segment in enumerate(segments):
        offset = 0
        for sentence in segment:
            sentences.append(sentence)
            sentence_segments.append(index)
            starts.append(offset)
            offset += len(sentence) + 1
    texts = [" ".join(segment) for segment in segments]
    spans = []
    for (segment, text, error_type), votes in sorted(Counter(marks).items()):
        start = texts[segment].find(text)
        resolved = start >= 0
        in_segment = [i for i, s in enumerate(sentence_segments) if s == segment]
        covered = [i for i in in_segment if resolved and starts[i] < start + len(text) and start < starts[i] + len(sentences[i])]
        spans.append(
            {
                "segment": segment,
                "start": start if resolved else None,
                "end": start + len(text) if resolved else None,
                "first_sentence": covered[0] if covered else None,
                "last_sentence": covered[-1] if covered else None,
                "text": text,
                "type": ERROR_TYPES.index(error_type),
                "category": CATEGORIES.index(category_of(error_type)),
                "votes": votes,
                "annotator": None,
                "antecedents": [],
                "resolved": resolved,
                "resolution": "unique" if resolved else "failed",
            }
        )
    coherent = [s for s in spans if category_of(ERROR_TYPES[s["type"]]) == "coherence" and s["first_sentence"] is not None]
    flagged = {i for s in coherent for i in range(s["first_sentence"], s["last_sentence"] + 1)}
    record.update(
        id=record_id,
        doc_id=record_id,
        system=system,
        sentences=sentences,
        segments=texts,
        sentence_segments=sentence_segments,
        sentence_labels=[ERROR if i in flagged else OK for i in range(len(sentences))],
        segment_labels=[ERROR if any(s["segment"] == g for s in coherent) else OK for g in range(len(texts))],
        label=ERROR if coherent else OK,
        spans=spans,
    )
    return record


def summeval_record(record_id: str, system: str, ratings: dict[str, dict[str, float]]) -> dict:
    """ratings: annotator id (expert_1, crowd_3, expert_mean) -> {dimension: score}."""
    record = empty_record()
    record.update(
        id=record_id,
        doc_id=record_id.split("-")[0],
        system=system,
        sentences=["A summary."],
        ratings=[
            {"annotator": annotator, "annotator_type": annotator.rsplit("_", 1)[0] if "mean" not in annotator else "expert_mean",
             "dimension": dimension, "score": score}
            for annotator, scores in ratings.items()
            for dimension, score in scores.items()
        ],
    )
    return record


def plain_record(record_id: str, label: int, sentence_labels: list[int], **fields) -> dict:
    record = empty_record()
    record.update(id=record_id, doc_id=record_id, sentences=[f"Sentence {i}." for i in range(len(sentence_labels))],
                  sentence_labels=sentence_labels, label=label, **fields)
    return record
