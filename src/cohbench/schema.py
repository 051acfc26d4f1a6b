"""The one Arrow schema of every cohbench config.

Each field is declared once, with its documentation beside its type; `FEATURES` (a `datasets.Features`)
and the pyarrow schema follow from it, and `catalog/SCHEMA.md` is rendered from it (`schema_markdown`).
Fields that do not apply to a config are null or empty. Polarity is the same everywhere: 1 = has an error. What a
record's coherence spans say per sentence is defined here too: the labels they project to (`project`, how SNaC's labels
are made) and the paper's sentence-level examples (`sentence_examples`, Goyal et al. §5).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

# SNaC's taxonomy (Goyal et al. 2022, §3.2): the first four are coherence errors, the rest language errors.
ERROR_TYPES = ("CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE")
COHERENCE_ERROR_TYPES = ("CharE", "RefE", "SceneE", "InconE")
CATEGORIES = ("coherence", "language")
BINARY_LABELS = ("ok", "error")
GAP_LABELS = ("ok", "missing")
RESOLUTIONS = ("unique", "ambiguous", "failed")
ANNOTATOR_TYPES = ("expert", "crowd", "expert_mean")

# The one precision at which cohbench keeps and compares floats: a value a release stores or decides on (a confounder's
# similarity) is rounded to it, its fingerprint and `cohbench diff` compare at it, and below it a difference is the
# noise of one CPU's kernels against another's, not content.
FLOAT_DECIMALS = 4

# Each ClassLabel field (a dotted path from its column, through lists) and its names, declared without `datasets` so
# that a reader checks a file's values cheaply (`release.vocabulary`); `_declared` types these fields from it.
CLASS_LABELS = {
    "spans.type": ERROR_TYPES,
    "spans.category": CATEGORIES,
    "sentence_labels": BINARY_LABELS,
    "sentence_labels_min2votes": BINARY_LABELS,
    "segment_labels": BINARY_LABELS,
    "segment_labels_min2votes": BINARY_LABELS,
    "gap_labels": GAP_LABELS,
    "label": BINARY_LABELS,
}

ERROR = BINARY_LABELS.index("error")
OK = BINARY_LABELS.index("ok")
NO_LABEL = -1  # ClassLabel's own encoding of "no label"


def category_of(error_type: str) -> str:
    return "coherence" if error_type in COHERENCE_ERROR_TYPES else "language"


def named(record: dict) -> dict:
    """`record` with every ClassLabel value (`CLASS_LABELS`: labels, span types and categories) as its name, and no
    label (-1) as None: the names `cohbench sql` shows, for a pandas user (`Dataset.to_pandas()` keeps integers)."""
    out = dict(record)
    for path, names in CLASS_LABELS.items():
        column, *keys = path.split(".")
        if column in out:
            out[column] = _named_at(out[column], keys, names)
    return out


def _named_at(value, keys: list[str], names: tuple[str, ...]):
    if value is None:
        return None
    if isinstance(value, list):
        return [_named_at(item, keys, names) for item in value]
    if keys:
        return {**value, keys[0]: _named_at(value[keys[0]], keys[1:], names)}
    return names[value] if value >= 0 else None


# --- what a record's coherence spans say per sentence (SNaC's labels, and the paper's unit of evaluation) ---------


def _span_type(value) -> str:
    return value if isinstance(value, str) else ERROR_TYPES[value]


def _counts(span: dict, min_votes: int) -> bool:
    return category_of(_span_type(span["type"])) == "coherence" and span["votes"] >= min_votes


def project(spans: list[dict], sentences: int, segments: int, min_votes: int = 1) -> tuple[list[int], list[int]]:
    """Sentence and segment labels (1 = at least one coherence error with >= min_votes votes). A span covering
    several sentences marks each; an unresolved span without a sentence counts for its segment only."""
    sentence_labels, segment_labels = [OK] * sentences, [OK] * segments
    for span in spans:
        if not _counts(span, min_votes):
            continue
        segment_labels[span["segment"]] = ERROR
        if span["first_sentence"] is not None:
            for i in range(span["first_sentence"], span["last_sentence"] + 1):
                sentence_labels[i] = ERROR
    return sentence_labels, segment_labels


def sentence_examples(record: Mapping, min_votes: int = 1) -> list[dict]:
    """The paper's unit of evaluation (§5): one example per summary sentence, with all preceding sentences of
    the summary as context and the coherence label and types projected from spans with >= min_votes votes.
    Works on records from `parse` and on rows of the built dataset alike."""
    sentences = record["sentences"]
    found: list[list[dict]] = [[] for _ in sentences]
    for span in record["spans"]:
        if _counts(span, min_votes) and span["first_sentence"] is not None:
            for i in range(span["first_sentence"], span["last_sentence"] + 1):
                found[i].append(span)
    examples = []
    for i, sentence in enumerate(sentences):
        types = {_span_type(span["type"]) for span in found[i]}
        examples.append(
            {
                "id": f"{record['id']}/{i}",
                "summary_id": record["id"],
                "split": record["split"],
                "system": record["system"],
                "sentence_index": i,
                "segment": record["sentence_segments"][i],
                "context": " ".join(sentences[:i]),
                "sentence": sentence,
                "label": ERROR if types else OK,
                "error_types": [t for t in COHERENCE_ERROR_TYPES if t in types],
                "error_spans": [{"type": _span_type(span["type"]), "text": span["text"]} for span in found[i]],
            }
        )
    return examples


@dataclass(frozen=True)
class Field:
    name: str
    feature: object
    doc: str


def _struct(fields: tuple[Field, ...]) -> dict:
    return {field.name: field.feature for field in fields}


@functools.cache
def _declared() -> dict:
    """The fields, declared in `datasets` types. Built on first use, not at import: importing `datasets` costs
    about half a second, which `cohbench sql` and the label constants above never need."""
    from datasets import ClassLabel, Features, List, Value

    def labels(path: str) -> ClassLabel:
        return ClassLabel(names=list(CLASS_LABELS[path]))

    SPAN_FIELDS = (
        Field("segment", Value("int32"), "Index into `segments` of the text the offsets refer to."),
        Field("start", Value("int32"), "Start character offset in `segments[segment]`; null when unresolved."),
        Field("end", Value("int32"), "End offset (exclusive): `segments[segment][start:end] == text` when resolved."),
        Field("first_sentence", Value("int32"), "Index into `sentences` of the first sentence the span covers."),
        Field("last_sentence", Value("int32"), "Index of the last sentence the span covers (inclusive)."),
        Field("text", Value("string"), "The span as the annotators marked it."),
        Field("type", labels("spans.type"), "Error type (SNaC taxonomy)."),
        Field("category", labels("spans.category"), "coherence or language error (SNaC §3.2)."),
        Field("votes", Value("int32"), "How many annotators marked this span with this type."),
        Field("annotator", Value("string"), "Annotator id where upstream gives one, else null."),
        Field("antecedents", List(Value("string")), "Antecedent spans (InconE/RepE: the text contradicted or repeated)."),
        Field("resolved", Value("bool"), "Whether the span string was located in its segment."),
        Field("resolution", Value("string"), "unique, ambiguous (several matches; a documented rule chose) or failed."),
    )

    RATING_FIELDS = (
        Field("annotator", Value("string"), "Annotator id (a documented convention where upstream gives list positions)."),
        Field("annotator_type", Value("string"), "expert, crowd, or expert_mean (a mean over experts, no single rater)."),
        Field("dimension", Value("string"), "What was rated, e.g. coherence."),
        Field("score", Value("float32"), "The rating on the dimension's scale."),
    )

    EXPLANATION_FIELDS = (
        Field("sentence", Value("int32"), "Index into `sentences` the explanation is about; null if not alignable."),
        Field("text", Value("string"), "The annotators' explanation of the error."),
    )

    CORRUPTION_FIELDS = (
        Field("generator", Value("string"), "Registered corruption generator that made this record."),
        Field("seed", Value("int64"), "Seed the generator ran with."),
        Field("source_id", Value("string"), "`id` of the coherent record the corruption was made from."),
        Field("positions", List(Value("int32")), "Sentence (or gap) positions the generator altered."),
        Field("inserted_ids", List(Value("string")), "Ids of sentences inserted from elsewhere, one per position."),
        Field("similarities", List(Value("float32")), "Similarity of each inserted sentence to the one it replaced."),
        Field("ranks", List(Value("int32")), "Retrieval rank of each inserted sentence among its candidates."),
        Field(
            "replaced",
            List(Value("string")),
            "The source's sentence each position lost, one per position: the sentence a replacement took the place of, "
            "or the one removed from that gap; empty where no sentence lost its place (a reordering, a repetition, "
            "dropped context, a coherent counterpart).",
        ),
    )


    FIELDS = (
        Field("id", Value("string"), "Stable id derived from upstream keys; join predictions on it."),
        Field("corpus", Value("string"), "Corpus module the record comes from (snac, summeval, storysumm, ...)."),
        Field("config", Value("string"), "Release config the record belongs to."),
        Field("split", Value("string"), "train, validation or test (every config; upstream names are in the card)."),
        Field("doc_id", Value("string"), "Leakage unit: the source document or story. Never in two splits."),
        Field("system", Value("string"), "Generating system or model id (e.g. SummEval M8, StorySumm gpt-4)."),
        Field("system_name", Value("string"), "Human-readable name of the system, where known."),
        Field(
            "system_upstream",
            Value("string"),
            "The system id as upstream writes it, where it names more than one model (StorySumm's `claude`); else null.",
        ),
        Field("system_extractive", Value("bool"), "Whether the system is extractive; null where not applicable."),
        Field("difficulty", Value("string"), "Corpus-defined difficulty of detecting the error (StorySumm: easy/hard)."),
        Field("source_text", Value("string"), "The text that was summarised, where its licence allows; else null."),
        Field("references", List(Value("string")), "Reference summaries."),
        Field("text_variant", Value("string"), "How the evaluated text was obtained when not verbatim (e.g. tokenised)."),
        Field("sentences", List(Value("string")), "The evaluated text, one entry per sentence."),
        Field("segments", List(Value("string")), "Annotation units (SNaC: 2-4 sentence segments), where they exist."),
        Field("sentence_segments", List(Value("int32")), "Index into `segments` of each sentence."),
        Field("sentence_labels", List(labels("sentence_labels")), "Per sentence: 1 = has an error."),
        Field(
            "sentence_labels_min2votes",
            List(labels("sentence_labels_min2votes")),
            "Per sentence, counting only errors marked by at least 2 annotators.",
        ),
        Field("segment_labels", List(labels("segment_labels")), "Per segment: 1 = has an error."),
        Field(
            "segment_labels_min2votes",
            List(labels("segment_labels_min2votes")),
            "Per segment, counting only errors marked by at least 2 annotators.",
        ),
        Field("gap_labels", List(labels("gap_labels")), "Per gap between sentences i and i+1: 1 = missing."),
        Field("label", labels("label"), "Whole text: 1 = has an error; -1 = no label."),
        Field("spans", List(_struct(SPAN_FIELDS)), "Error spans."),
        Field("ratings", List(_struct(RATING_FIELDS)), "Ratings, one entry per annotator and dimension."),
        Field("explanations", List(_struct(EXPLANATION_FIELDS)), "Written explanations of errors."),
        Field("claims", List(Value("string")), "Atomic claims of the evaluated text, where upstream gives them."),
        Field("corruption", _struct(CORRUPTION_FIELDS), "Provenance of a synthetic corruption; null for real texts."),
        Field("defects", List(Value("string")), "Upstream inconsistencies in this record, kept as found."),
    )

    FEATURES = Features(_struct(FIELDS))

    nested = {"spans": SPAN_FIELDS, "ratings": RATING_FIELDS, "explanations": EXPLANATION_FIELDS, "corruption": CORRUPTION_FIELDS}
    return {
        "SPAN_FIELDS": SPAN_FIELDS,
        "RATING_FIELDS": RATING_FIELDS,
        "EXPLANATION_FIELDS": EXPLANATION_FIELDS,
        "CORRUPTION_FIELDS": CORRUPTION_FIELDS,
        "FIELDS": FIELDS,
        "FEATURES": FEATURES,
        "ARROW_SCHEMA": FEATURES.arrow_schema,
        "NESTED": nested,
    }


# The release's split vocabulary, in reading order, each with its class: a document sits in one class only
# (leakage), thresholds are tuned on the dev class, models train on the train class. Change the vocabulary here.
SPLIT_CLASSES = {"train": "train", "validation": "dev", "test": "test"}  # the names HF tooling and trainers expect
SPLITS = tuple(SPLIT_CLASSES)
TRAIN_SPLITS = tuple(split for split, kind in SPLIT_CLASSES.items() if kind == "train")
DEV_SPLITS = tuple(split for split, kind in SPLIT_CLASSES.items() if kind == "dev")


def split_sort_key(split: str):
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), split)


def __getattr__(name: str):
    """FIELDS, FEATURES, ARROW_SCHEMA and the nested field tuples, declared on first access (PEP 562)."""
    if name in ("SPAN_FIELDS", "RATING_FIELDS", "EXPLANATION_FIELDS", "CORRUPTION_FIELDS", "FIELDS", "FEATURES", "ARROW_SCHEMA"):
        return _declared()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def empty_record() -> dict:
    """A record with every field null or empty; builders fill in what applies."""
    from datasets import List

    record = {}
    for field in _declared()["FIELDS"]:
        is_list = isinstance(field.feature, List)
        record[field.name] = [] if is_list else None
    record["label"] = NO_LABEL
    return record


def _type_name(feature) -> str:
    from datasets import ClassLabel, List, Value

    if isinstance(feature, ClassLabel):
        return "ClassLabel(" + ", ".join(f"{i}={name}" for i, name in enumerate(feature.names)) + ")"
    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, List):
        return f"list<{_type_name(feature.feature)}>"
    if isinstance(feature, dict):
        return "struct"
    raise TypeError(feature)


def schema_markdown() -> str:
    """catalog/SCHEMA.md, rendered from FIELDS so that the documentation cannot drift from the schema."""
    lines = [
        "# cohbench schema",
        "",
        "One Arrow schema for every config (generated from `src/cohbench/schema.py`; do not edit by hand).",
        "Fields that do not apply to a config are null or empty lists. Polarity everywhere: **1 = has an error**;",
        "`-1` is ClassLabel's encoding of *no label* (used where upstream gives none).",
        "",
        "| field | type | meaning |",
        "| --- | --- | --- |",
    ]
    declared = _declared()
    for field in declared["FIELDS"]:
        lines.append(f"| `{field.name}` | {_type_name(field.feature)} | {field.doc} |")
    for name, fields in declared["NESTED"].items():
        lines += ["", f"## `{name}` entries", "", "| field | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{f.name}` | {_type_name(f.feature)} | {f.doc} |" for f in fields]
    return "\n".join(lines) + "\n"
