"""Untrained reference scorers: the floor every trained number is read against.

Each scorer gives every unit of a record (a sentence, or a gap between sentences) a score, higher = more
likely an error, from nothing but the text and, for the position prior, the label rates of the config's train
split. They are scored by the same protocols as any model (`cohbench evaluate CONFIG --scorer NAME`), and the
baseline prints them beside its own scores (`metrics.md`); the gate's floors sit above the best of them.

Context: a sentence is compared with the rest of its text, except under the SNaC protocol, where each sentence is
judged on the preceding summary only (§5); the first sentence then has no context, and its dissimilarity is 0 by
definition (nothing to disagree with). Gap scorers compare the two sentences on either side of a gap: the
"similarity drop" of a gap is the mean similarity of the record's adjacent pairs minus that gap's similarity.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import settings
from ..errors import CohbenchError
from ..schema import TRAIN_SPLITS


class ScorerError(CohbenchError):
    """A reference scorer cannot score this config."""


@dataclass(frozen=True)
class Scored:
    """What a scorer is given: the texts to score (sentences per record) and the config's labelled train split."""

    texts: Sequence[Sequence[str]]
    train_texts: Sequence[Sequence[str]]
    train_labels: Sequence[Sequence[int]]  # per train record, the labels of the task's units
    prefix_only: bool  # SNaC: a sentence's context is what precedes it
    task: str  # "sentences" or "gaps"
    vectors: Mapping[str, np.ndarray] | None = None  # sentence key -> MiniLM vector, where the caller has them

    def units(self, text: Sequence[str]) -> int:
        return len(text) - (1 if self.task == "gaps" else 0)


@dataclass(frozen=True)
class ReferenceScorer:
    name: str
    tasks: frozenset[str]  # "sentences", "gaps"
    description: str
    score: Callable[[Scored], list[list[float]]]
    needs: tuple[str, ...] = ()  # modules an extra installs: imported before any data is read, so a missing one is refused first


def _position_prior(data: Scored) -> list[list[float]]:
    """The train split's error rate at each unit position (the overall rate past the longest train record)."""
    labelled = [(i, v) for labels in data.train_labels for i, v in enumerate(labels) if v != -1]
    if not labelled:
        raise ScorerError("the position prior needs a labelled train split, and this config has none")
    positions = np.array([i for i, _ in labelled])
    values = np.array([v for _, v in labelled], dtype=float)
    overall = float(values.mean())
    rate = {int(p): float(values[positions == p].mean()) for p in np.unique(positions)}
    return [[rate.get(i, overall) for i in range(data.units(t))] for t in data.texts]


def _tfidf(data: Scored):
    """TF-IDF with English stop words removed and sublinear term frequency, IDF fit on the train split's sentences
    (or, where the config has none, on the scored texts themselves: no label is used either way). Stop words
    matter: with them kept, FairytaleQA DSD test AUC drops from 71.6 to 65.1."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    vectorizer.fit([s for t in (data.train_texts or data.texts) for s in t])
    return vectorizer


def _row_cosines(a, b) -> np.ndarray:
    """Cosine of each row of a with the same row of b (sparse rows, l2-normalised by the vectorizer)."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def _per_record(rows, texts: Sequence[Sequence[str]]) -> list:
    """Rows of a matrix over every sentence of `texts` (in order), cut back into one block per record."""
    out, at = [], 0
    for t in texts:
        out.append(rows[at : at + len(t)])
        at += len(t)
    return out


def _tfidf_dissimilarity(data: Scored) -> list[list[float]]:
    """1 - cosine of a sentence to the text of its context (the other, or the preceding, sentences)."""
    vectorizer = _tfidf(data)
    sentences, contexts = [], []
    for t in data.texts:
        sentences += t
        contexts += [" ".join(t[:i] if data.prefix_only else [*t[:i], *t[i + 1 :]]) for i in range(len(t))]
    similarity = _row_cosines(vectorizer.transform(sentences), vectorizer.transform(contexts))
    out = []
    for values in _per_record(1.0 - similarity, data.texts):
        if data.prefix_only and len(values):
            values[0] = 0.0  # no context: nothing to disagree with
        out.append([float(v) for v in values])
    return out


def _tfidf_vectors(data: Scored):
    return _per_record(_tfidf(data).transform([s for t in data.texts for s in t]).tocsr(), data.texts)


def _embedding_vectors(data: Scored):
    from .embeddings import sentence_key, sentence_vectors

    flat = [s for t in data.texts for s in t]
    if data.vectors is not None:
        vectors = np.stack([data.vectors[sentence_key(s)] for s in flat]) if flat else np.zeros((0, 384), np.float32)
    else:
        vectors = sentence_vectors(flat)
    return _per_record(vectors, data.texts)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine; 0 where either side is all zeros (a sentence of stop characters, an empty context)."""
    num = np.sum(a * b, axis=-1)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)


def _dense(rows) -> np.ndarray:
    return rows.toarray() if hasattr(rows, "toarray") else np.asarray(rows, dtype=float)


def _dissimilarity(vectors_of: Callable) -> Callable[[Scored], list[list[float]]]:
    """1 - cosine of each sentence to its context: the sum of the other (or preceding) sentences' vectors."""

    def score(data: Scored) -> list[list[float]]:
        out = []
        for rows, _ in zip(vectors_of(data), data.texts):
            x = _dense(rows)
            if data.prefix_only:
                context = np.cumsum(x, axis=0) - x  # everything before sentence i
                similarity = _cosine(x, context)
                similarity[0] = 1.0  # no context: nothing to disagree with
            else:
                similarity = _cosine(x, x.sum(axis=0, keepdims=True) - x)
            out.append([float(v) for v in 1.0 - similarity])
        return out

    return score


def _similarity_drop(vectors_of: Callable) -> Callable[[Scored], list[list[float]]]:
    """Per gap k: mean cosine of the record's adjacent sentence pairs minus the cosine of pair (k, k+1)."""

    def score(data: Scored) -> list[list[float]]:
        out = []
        for rows, _ in zip(vectors_of(data), data.texts):
            x = _dense(rows)
            adjacent = _cosine(x[:-1], x[1:])
            out.append([float(v) for v in adjacent.mean() - adjacent] if len(adjacent) else [])
        return out

    return score


SENTENCES, GAPS = frozenset({"sentences"}), frozenset({"gaps"})
BOTH = SENTENCES | GAPS
SCORERS: dict[str, ReferenceScorer] = {
    s.name: s
    for s in (
        ReferenceScorer("position_prior", BOTH, "train error rate at each unit position", _position_prior),
        ReferenceScorer("tfidf_dissimilarity", SENTENCES, "1 - TF-IDF cosine of a sentence to its context", _tfidf_dissimilarity, ("sklearn",)),
        ReferenceScorer("embedding_dissimilarity", SENTENCES, "1 - all-MiniLM-L6-v2 cosine of a sentence to its context", _dissimilarity(_embedding_vectors), ("torch",)),
        ReferenceScorer("tfidf_gap_drop", GAPS, "TF-IDF similarity drop across a gap", _similarity_drop(_tfidf_vectors), ("sklearn",)),
        ReferenceScorer("embedding_gap_drop", GAPS, "all-MiniLM-L6-v2 similarity drop across a gap", _similarity_drop(_embedding_vectors), ("torch",)),
    )
}


def scorer(name: str) -> ReferenceScorer:
    if name not in SCORERS:
        raise ScorerError(f"unknown reference scorer {name!r}; known scorers: {', '.join(SCORERS)}")
    return SCORERS[name]


def scorers_for(task: str) -> list[str]:
    return [name for name, s in SCORERS.items() if task in s.tasks]


def applicable(name: str, splits: dict[str, list[dict]]) -> bool:
    """Whether scorer `name` can score a config with these splits (the position prior needs a train split)."""
    return name != "position_prior" or bool(set(TRAIN_SPLITS) & set(splits))


def predictions(name: str, splits: dict[str, list[dict]], protocol: str, task: str, vectors=None) -> list[dict]:
    """Scores of scorer `name` for every record outside the train split, as prediction lines for the protocol."""
    from ..evaluation import judged_on_preceding

    chosen = scorer(name)
    if task not in chosen.tasks:
        raise ScorerError(
            f"{name} scores {' and '.join(sorted(chosen.tasks))}, but this config's task is {task}; "
            f"scorers for it: {', '.join(scorers_for(task))}"
        )
    train = [r for split in TRAIN_SPLITS for r in splits.get(split, [])]
    scored = [r for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows]
    label_field = "sentence_labels" if task == "sentences" else "gap_labels"
    data = Scored(
        texts=[r["sentences"] for r in scored],
        train_texts=[r["sentences"] for r in train],
        train_labels=[r[label_field] or [] for r in train],
        prefix_only=judged_on_preceding(protocol),
        task=task,
        vectors=vectors,
    )
    return [{"id": r["id"], "score": [round(v, 6) for v in values]} for r, values in zip(scored, chosen.score(data))]


def config_predictions(config: str, name: str, release=None) -> list[dict]:
    """`predictions` for a built config of the release, its protocol and task looked up."""
    from ..evaluation import unit_of
    from ..registry import spec
    from ..release.layout import read_config
    from .data import TASKS

    for module in scorer(name).needs:  # an unknown name, or a missing extra (ModuleNotFoundError), before the release is read
        importlib.import_module(module)
    declared, task = spec(config), unit_of(config)
    if task not in TASKS:
        raise ScorerError(f"reference scorers score sentences or gaps; {config}'s task is {task}")
    splits = read_config(release or settings.release_dir(), config).splits
    if not applicable(name, splits):
        raise ScorerError(f"{name} needs a labelled train split, and {config} has none")
    return predictions(name, splits, declared.protocol, task)
