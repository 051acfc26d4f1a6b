"""Tiny release folders written through the release's one writer (`layout.write_config`, as a build writes), with
records made through the schema, so that the SQL views, agreement, report, validation, evaluation and gate run
without a real build."""

from __future__ import annotations

from collections import Counter
import os
from pathlib import Path

import datasets

from cohbench.corpora import snac
from cohbench.release import versions
from cohbench.release.layout import write_config as write_records
from cohbench.schema import CATEGORIES, ERROR, ERROR_TYPES, FEATURES, OK, category_of, empty_record


def write_config(
    release: Path, config: str, corpus: str, splits: dict[str, list[dict]], notes: dict | None = None, research_only: bool = False,
    declare: bool = True,
) -> Path:
    """Write a config through the release's writer; `declare` also declares its records as a version (in the test's
    COHBENCH_VERSIONS folder, where the test has one: never in the checkout's catalog/versions), as a released config's
    are."""
    datasets.disable_progress_bars()
    for split, records in splits.items():
        for record in records:
            record.update(corpus=corpus, config=config, split=split)
    rows = sum(len(records) for records in splits.values())
    described = {
        "corpus": corpus, "licence": "test fixture", "research_only": research_only,
        "upstream_records": rows, "built_records": rows, "dropped": {}, "errata": [], "inputs": [], "notes": notes or {},
    }  # fmt: skip
    stats = write_records(release, config, {split: datasets.Dataset.from_list(records, features=FEATURES)
                                            for split, records in splits.items()}, described)
    if declare and os.environ.get("COHBENCH_VERSIONS"):  # only in a test's own folder (the `workspace` fixture), never the checkout's
        versions.record(config, stats)
    return release


def write_release(root: Path, configs: dict[str, tuple[str, dict[str, list[dict]]]]) -> Path:
    """configs: name -> (corpus, {split: records}). Returns the release folder."""
    for config, (corpus, splits) in configs.items():
        write_config(root, config, corpus, splits)
    return root


def record(record_id: str, doc_id: str, sentences: list[str], **fields) -> dict:
    out = empty_record()
    out.update(id=record_id, doc_id=doc_id, sentences=sentences, **fields)
    return out


def span(segment: int, start: int | None, text: str, error_type: str, sentences: list[int], votes: int = 1) -> dict:
    """A SNaC-style span: `start` None when it could not be located; `sentences` the ones it covers."""
    resolved = start is not None
    return {
        "segment": segment,
        "start": start,
        "end": start + len(text) if resolved else None,
        "first_sentence": sentences[0] if sentences else None,
        "last_sentence": sentences[-1] if sentences else None,
        "text": text,
        "type": ERROR_TYPES.index(error_type),
        "category": CATEGORIES.index(category_of(error_type)),
        "votes": votes,
        "annotator": None,
        "antecedents": [],
        "resolved": resolved,
        "resolution": "unique" if resolved else "failed",
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
        spans=[span(1, 0, "Bob", "CharE", [2], votes=2)],
        label=1,
    )


def snac_record(record_id: str, system: str, segments: list[list[str]], marks: list[tuple[int, str, str]]) -> dict:
    """A SNaC-like record. segments: the sentences of each segment; marks: one (segment, span text, type) per
    annotator mark. Identical marks are merged into one span with their count as votes, as upstream does."""
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
        spans.append(span(segment, start if resolved else None, text, error_type, covered, votes))
    sentence_labels, segment_labels = snac.project(spans, len(sentences), len(texts))  # the builder's own projection
    return record(
        record_id,
        record_id,
        sentences,
        system=system,
        segments=texts,
        sentence_segments=sentence_segments,
        sentence_labels=sentence_labels,
        segment_labels=segment_labels,
        label=ERROR if ERROR in segment_labels else OK,
        spans=spans,
    )


def summeval_record(record_id: str, system: str, ratings: dict[str, dict[str, float]]) -> dict:
    """ratings: annotator id (expert_1, crowd_3, expert_mean) -> {dimension: score}."""
    return record(
        record_id,
        record_id.split("-")[0],
        ["A summary."],
        system=system,
        ratings=[
            {"annotator": annotator, "annotator_type": annotator.rsplit("_", 1)[0] if "mean" not in annotator else "expert_mean",
             "dimension": dimension, "score": score}
            for annotator, scores in ratings.items()
            for dimension, score in scores.items()
        ],
    )


def plain_record(record_id: str, label: int, sentence_labels: list[int], **fields) -> dict:
    sentences = [f"Sentence {i}." for i in range(len(sentence_labels))]
    return record(record_id, record_id, sentences, sentence_labels=sentence_labels, label=label, **fields)


def write_every_protocol(root: Path) -> Path:
    """A tiny release with one config per evaluation protocol (summary, snac, sentences, gaps, metaeval), each with
    a dev split where the protocol tunes thresholds, plus its card and manifest."""
    from cohbench.release.index import write_index

    def summary(i, label, difficulty=None):
        return record(f"s{i}", f"story-{i}", ["One.", "Two."], label=label, difficulty=difficulty, sentence_labels=[0, label])

    write_config(root, "storysumm", "storysumm", {
        "validation": [summary(1, 1, "easy"), summary(2, 0), summary(3, 1, "hard"), summary(4, 0)],
        "test": [summary(5, 1, "easy"), summary(6, 1, "hard"), summary(7, 1, "hard"), summary(8, 0), summary(9, 0)],
    })  # fmt: skip
    write_config(root, "snac", "snac", {"validation": [snac_like("n1", "b1")], "test": [snac_like("n2", "b2"), snac_like("n3", "b3")]})
    write_config(root, "timetravel_dsd", "timetravel", {
        "validation": [plain_record("d1", 1, [0, 1, 0]), plain_record("d2", 0, [0, 0, 0])],
        "test": [plain_record("d3", 1, [0, 0, 1]), plain_record("d4", 1, [1, 0, 0])],
    })  # fmt: skip
    gaps = lambda rid, labels: record(rid, rid, [f"{i}." for i in range(len(labels) + 1)], gap_labels=labels)  # noqa: E731
    write_config(root, "timetravel_msd", "timetravel", {"validation": [gaps("g1", [0, 1, 0]), gaps("g2", [1, 0, 0])], "test": [gaps("g3", [0, 0, 1])]})
    rows = []
    for d in range(3):
        for s, system in enumerate(["M1", "M2", "M3"]):
            coherence = 1 + (d + 2 * s) % 5
            ratings = [{"annotator": f"e{k}", "annotator_type": "expert", "dimension": "coherence", "score": coherence} for k in range(3)]
            rows.append(record(f"d{d}/{system}", f"d{d}", ["A summary."], system=system, system_name=system, ratings=ratings))
    write_config(root, "summeval", "summeval", {"test": rows})
    write_index(root)
    return root


def rewrite_split(release: Path, config: str, split: str, table) -> dict:
    """Replace one split of a built config with `table` through the release's writer, as a rebuild that gave other
    records would: the other splits and the build's description stay."""
    from cohbench.release.layout import read_config

    data = read_config(release, config)
    tables = {**data.tables, split: table}
    described = {k: v for k, v in data.stats.items() if k not in ("config", "splits", "files", "records_altered")}
    return write_records(release, config, {s: datasets.Dataset(t) for s, t in tables.items()}, described)
