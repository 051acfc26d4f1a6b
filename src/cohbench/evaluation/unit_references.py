"""Reference scorers of sentences and gaps: the untrained floor every trained unit-level number is read against.

Each gives every unit of a record (a sentence, or a gap between sentences) a score, higher = more likely an error,
from nothing but the text and, for the position prior, the label rates of the config's train split.

Context: a sentence is compared with the rest of its text, except under a protocol that judges a sentence on the
preceding text only (SNaC, §5); the first sentence then has no context, and its dissimilarity is 0 by definition
(nothing to disagree with). Gap scorers compare the two sentences on either side of a gap: the "similarity drop" of
a gap is the mean similarity of the record's adjacent pairs minus that gap's similarity. The entity cue reads only
what precedes a sentence, under every protocol: a name is new when no earlier sentence used it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from .scoring_input import Scored, ScorerError


def position_prior(data: Scored) -> list[list[float]]:
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
    try:
        vectorizer.fit([s for t in (data.train_texts or data.texts) for s in t])
    except ValueError:  # scikit-learn's "empty vocabulary": nothing but stop words and numbers to weigh
        raise ScorerError("TF-IDF finds no word outside the stop words in this config's sentences") from None
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


def tfidf_dissimilarity(data: Scored) -> list[list[float]]:
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
    from ..embedding_store import sentence_key, sentence_vectors
    from ..encoder import DIMENSIONS

    flat = [s for t in data.texts for s in t]
    by_key = data.vectors if data.vectors is not None else sentence_vectors(flat)
    vectors = np.stack([by_key[sentence_key(s)] for s in flat]) if flat else np.zeros((0, DIMENSIONS), np.float32)
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


def _closest_dissimilarity(vectors_of: Callable) -> Callable[[Scored], list[list[float]]]:
    """1 - the highest cosine of each sentence to any one sentence of its context (the other, or preceding, ones): a
    sentence with no close neighbour stands out, where a mean over the context blurs it."""

    def score(data: Scored) -> list[list[float]]:
        out = []
        for rows, _ in zip(vectors_of(data), data.texts):
            x = _dense(rows)
            n = len(x)
            similarity = _cosine(x[:, None, :], x[None, :, :])  # elementwise, never a BLAS product: the same bytes anywhere
            others = ~np.eye(n, dtype=bool) if not data.prefix_only else np.tri(n, k=-1, dtype=bool)
            closest = np.where(others, similarity, -np.inf).max(axis=1, initial=-np.inf) if n else np.zeros(0)
            out.append([0.0 if v == -np.inf else float(1.0 - v) for v in closest])  # no context: nothing to stand out from
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


WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
# weight of a new definite reference ("the duke") beside a new capitalised name; chosen on SNaC's train and
# validation splits (AUC 71.0 / 67.0 at 0.5, against 69.0 / 63.9 for names alone), never on test
DEFINITE_WEIGHT = 0.5


def _mentions(sentence: str) -> tuple[set[str], set[str], set[str]]:
    """(capitalised names, heads of definite references, every word) of a sentence, lower-cased. A capitalised
    stop word ("She", "The") is no name; a sentence's first word counts as a name unless it is a stop word."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as STOP

    words = WORD.findall(sentence)
    lowered = [w.lower() for w in words]
    names = {lw for w, lw in zip(words, lowered) if w[0].isupper() and lw not in STOP}
    definites = {lowered[i + 1] for i, lw in enumerate(lowered[:-1]) if lw == "the" and lowered[i + 1] not in STOP}
    return names, definites, set(lowered)


def entity_cue(data: Scored) -> list[list[float]]:
    """New names a sentence introduces (never seen in the sentences before it) plus DEFINITE_WEIGHT per definite
    reference whose head word is new: a reader meets a character or thing the text has not set up (SNaC's
    CharE / RefE errors)."""
    out = []
    for text in data.texts:
        seen: set[str] = set()
        scores = []
        for sentence in text:
            names, definites, words = _mentions(sentence)
            scores.append(float(len(names - seen) + DEFINITE_WEIGHT * len(definites - seen)))
            seen |= words
        out.append(scores)
    return out


def novelty_count(data: Scored) -> list[list[float]]:
    """The sum of five counts of what a sentence brings that the sentences before it have not set up (new names, names
    absent from the last two sentences, new PERSON and other entities, new definite references; spaCy's tagger and
    NER, `sentence_cues.NOVELTY`): the baseline head's own cues with no weight learnt."""
    from ..sentence_cues import analyse, novelty

    analyses = analyse([s for t in data.texts for s in t])
    return [[float(v) for v in novelty(text, analyses)] for text in data.texts]


embedding_dissimilarity = _dissimilarity(_embedding_vectors)
embedding_closest_dissimilarity = _closest_dissimilarity(_embedding_vectors)
tfidf_gap_drop = _similarity_drop(_tfidf_vectors)
embedding_gap_drop = _similarity_drop(_embedding_vectors)
