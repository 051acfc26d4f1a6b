"""What SNaC's errors need and sentence vectors cannot give from ~100 summaries: per sentence, read against the
sentences before it only (SNaC §5 judges a sentence on the preceding summary), the novelty of its names and
entities (CharE: a character never introduced), its pronoun cues (RefE: a pronoun with no one to point at), its
position and length, its word overlap and tense against what came before (SceneE, InconE) and its cosines to the
previous sentence and to the context.

Every value comes from spaCy's tagger and NER (deterministic) and from the rounded MiniLM vectors, and is rounded
to `DECIMALS`: the same bytes on any machine, before any float32 arithmetic touches them."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DECIMALS = 4
PRONOUNS = {"he", "she", "they", "him", "her", "them", "his", "hers", "their", "theirs", "himself", "herself",
            "themselves", "it", "its"}  # third person: the ones that point back at someone the text introduced
TRANSITIONS = {"then", "later", "meanwhile", "after", "afterwards", "eventually", "finally", "when", "soon", "next",
               "suddenly", "however", "back", "that", "the", "one", "years", "days", "months", "at", "in"}
NAMES = ("log_position", "first", "log_words", "names", "new_names", "has_new_name", "names_new_to_last_two",
         "new_name_share", "new_persons", "new_other_entities", "entities", "new_definites", "returning_names",
         "pronouns", "opens_with_pronoun", "pronoun_after_nameless", "opens_with_new_name", "new_word_share",
         "log_new_words", "overlap_previous", "past_tense_share", "tense_change", "quote", "transition_opening",
         "log_context_names", "pronoun_without_any_name", "cos_previous", "cos_context", "cos_closest", "cos_last_three",
         "cos_drop", "entity_cue")
WIDTH = len(NAMES)


@dataclass(frozen=True)
class Analysis:
    """What one sentence says, as the features read it (lower-cased)."""

    words: frozenset[str]
    content: frozenset[str]  # words that are no stop word
    names: frozenset[str]  # tokens of proper nouns and PERSON entities
    persons: tuple[frozenset[str], ...]  # each PERSON entity's tokens
    others: tuple[frozenset[str], ...]  # each other entity's tokens
    definites: frozenset[str]  # heads of "the X"
    pronouns: int
    opens_with_pronoun: bool
    first_word: str
    past: int  # verbs in the past tense
    verbs: int
    quote: bool
    length: int


@functools.lru_cache(maxsize=1)
def _pipeline():
    from .text import load_pipeline

    return load_pipeline(exclude=["parser", "lemmatizer", "senter"])


def _analyse(doc) -> Analysis:
    tokens = [t for t in doc if not t.is_space]
    words = [t.text.lower() for t in tokens if t.is_alpha]
    persons = tuple(frozenset(t.text.lower() for t in e if t.is_alpha) for e in doc.ents if e.label_ == "PERSON")
    others = tuple(frozenset(t.text.lower() for t in e if t.is_alpha and not t.is_stop) for e in doc.ents
                   if e.label_ not in ("PERSON", "CARDINAL", "ORDINAL", "DATE", "TIME", "QUANTITY", "PERCENT", "MONEY"))
    names = {t.text.lower() for t in tokens if t.pos_ == "PROPN" and t.is_alpha and not t.is_stop}
    names |= {w for p in persons for w in p}
    lowered = [t.text.lower() for t in tokens]
    definites = {lowered[i + 1] for i, w in enumerate(lowered[:-1]) if w == "the" and tokens[i + 1].is_alpha
                 and not tokens[i + 1].is_stop}
    first = tokens[0] if tokens else None
    return Analysis(
        words=frozenset(words), content=frozenset(t.text.lower() for t in tokens if t.is_alpha and not t.is_stop),
        names=frozenset(names), persons=tuple(p for p in persons if p), others=tuple(o for o in others if o),
        definites=frozenset(definites), pronouns=sum(1 for w in lowered if w in PRONOUNS),
        opens_with_pronoun=bool(first is not None and first.text.lower() in PRONOUNS),
        first_word=first.text.lower() if first is not None else "",
        past=sum(1 for t in tokens if t.tag_ in ("VBD", "VBN")), verbs=sum(1 for t in tokens if t.pos_ in ("VERB", "AUX")),
        quote=any(c in doc.text for c in "\"\u201c\u201d"), length=len(words),
    )


def analyse(sentences: Sequence[str]) -> dict[str, Analysis]:
    """sentence -> its Analysis, each distinct sentence run through spaCy once."""
    from .text import pipe

    distinct = sorted(set(sentences))
    return dict(zip(distinct, pipe(_pipeline, distinct, _analyse, 256)))


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


def text_features(sentences: Sequence[str], analyses: dict[str, Analysis], vectors: np.ndarray) -> np.ndarray:
    """len(sentences) x WIDTH features, row i read against sentences[:i] only; `vectors` holds the sentences'
    unit MiniLM vectors in order (float64 here: a cosine is the same on every machine before it is rounded)."""
    rows = []
    seen_words: set[str] = set()
    seen_names: set[str] = set()
    context_sum = np.zeros(vectors.shape[1] if len(vectors) else 0)
    for i, sentence in enumerate(sentences):
        a = analyses[sentence]
        previous = [analyses[s] for s in sentences[max(0, i - 2) : i]]
        recent_words = set().union(*(p.words for p in previous)) if previous else set()
        last_five = set().union(*(analyses[s].words for s in sentences[max(0, i - 5) : i])) if i else set()
        new_names = a.names - seen_words
        new_persons = sum(1 for p in a.persons if not p & seen_words)
        new_others = sum(1 for o in a.others if not o & seen_words)
        new_definites = len(a.definites - seen_words)
        new_words = a.content - seen_words
        before = analyses[sentences[i - 1]] if i else None
        v = vectors[i].astype(np.float64)
        if i:
            earlier = vectors[:i].astype(np.float64)
            cosines = earlier @ v / np.maximum(np.linalg.norm(earlier, axis=1) * np.linalg.norm(v), 1e-12)
            cos_previous, cos_context = float(cosines[-1]), _cos(context_sum, v)
            cos_closest, cos_last_three = float(cosines.max()), float(cosines[-3:].mean())
        else:
            cos_previous = cos_context = cos_closest = cos_last_three = 0.0
        past_share = a.past / a.verbs if a.verbs else 0.0
        before_past = (before.past / before.verbs if before.verbs else past_share) if before else past_share
        rows.append([
            np.log1p(i), float(i == 0), np.log1p(a.length), len(a.names), len(new_names), float(bool(new_names)),
            len(a.names - recent_words) if i else 0.0, len(new_names) / len(a.names) if a.names else 0.0,
            new_persons, new_others, len(a.persons) + len(a.others), new_definites,
            len((a.names & seen_words) - last_five), a.pronouns, float(a.opens_with_pronoun),
            float(bool(a.pronouns) and before is not None and not before.names), float(a.first_word in new_names),
            len(new_words) / len(a.content) if a.content else 0.0, np.log1p(len(new_words)),
            len(a.content & before.content) / len(a.content) if before and a.content else 0.0,
            past_share, abs(past_share - before_past), float(a.quote), float(a.first_word in TRANSITIONS),
            np.log1p(len(seen_names)), float(bool(a.pronouns) and not seen_names), cos_previous, cos_context, cos_closest, cos_last_three,
            cos_closest - cos_previous, len(new_names) + 0.5 * new_definites,
        ])
        seen_words |= a.words
        seen_names |= a.names
        context_sum = context_sum + v if i else v.copy()
    return np.round(np.array(rows, dtype=np.float64).reshape(len(sentences), WIDTH), DECIMALS)


# What a sentence brings that the text before it has not set up, as five of the counts above (CharE, RefE): their sum
# is the untrained `novelty_count` reference scorer, the head's cues without a learned weight.
NOVELTY = ("new_names", "names_new_to_last_two", "new_persons", "new_other_entities", "new_definites")
NOVELTY_COLUMNS = [NAMES.index(name) for name in NOVELTY]


def novelty(sentences: Sequence[str], analyses: dict[str, Analysis]) -> np.ndarray:
    """Per sentence, the sum of the NOVELTY counts, read against the sentences before it (no vector is read: the
    cosines come out 0 and are not summed)."""
    rows = text_features(sentences, analyses, np.zeros((len(sentences), 1)))
    return rows[:, NOVELTY_COLUMNS].sum(axis=1)

