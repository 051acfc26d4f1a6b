"""Surface corruptions of SNaC App. B that ROUGE and BERTScore fail to penalise: shuffling, repetition, and
named entities + frequent bigrams."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..schema import ERROR, OK
from ..text import words as text_words
from .nlp import analyse
from ..errors import CorruptionError
from .registry import derived, per_record, sentence_id, span, generator


def _permutation(sentences: list[str], window: int, rng) -> list[int]:
    """A permutation of the sentences' indices, within consecutive windows, whose text is not the original's (some
    window must hold two different sentences)."""
    size = len(sentences)
    while True:
        order = []
        for start in range(0, size, window):
            block = list(range(start, min(start + window, size)))
            rng.shuffle(block)
            order += block
        if any(sentences[source] != sentence for source, sentence in zip(order, sentences)):
            return order


def _shuffle(record: dict, rng, seed: int, window: int | None = None) -> list[dict]:
    """Permute all sentences (window=None, SNaC App. B) or only within consecutive windows of `window` sentences.
    A sentence other than the one the source has at its position is labelled 1 (one of two equal sentences swapped
    is no error); `positions[i]` is the source index of sentence i. A text no permutation changes makes nothing."""
    sentences = record["sentences"]
    if window is not None and window < 2:
        raise CorruptionError(f"shuffle window must be at least 2, got {window}")
    width = window or len(sentences)
    if not any(len(set(sentences[start : start + width])) > 1 for start in range(0, len(sentences), width)):
        return []
    order = _permutation(sentences, width, rng)
    return [
        derived(
            record, "shuffle", seed, variant=f"shuffle-w{window}" if window else None,
            sentences=[sentences[i] for i in order],
            sentence_labels=[ERROR if sentences[source] != sentence else OK for source, sentence in zip(order, sentences)],
            positions=order,
        )
    ]


shuffle = per_record("shuffle", _shuffle)


def _repetition(record: dict, rng, seed: int, ratio: float = 0.5) -> list[dict]:
    """Repeat a random `ratio` of the sentences (SNaC App. B: 50%); each copy goes to a random place after its
    original. Copies are labelled 1 with a RepE span whose antecedent is the original sentence."""
    sentences = record["sentences"]
    if not sentences:
        return []
    chosen = sorted(rng.sample(range(len(sentences)), max(1, round(ratio * len(sentences)))))
    # A copy of sentence i goes right before source slot s, i < s <= len(sentences) (len = at the end).
    slots = {i: rng.randint(i + 1, len(sentences)) for i in chosen}
    out, labels, spans, positions, inserted = [], [], [], [], []
    for slot in range(len(sentences) + 1):
        for i in chosen:
            if slots[i] == slot:
                positions.append(len(out))
                inserted.append(sentence_id(record["id"], i))
                spans.append(span(len(out), sentences[i], "RepE", antecedents=(sentences[i],)))
                out.append(sentences[i])
                labels.append(ERROR)
        if slot < len(sentences):
            out.append(sentences[slot])
            labels.append(OK)
    return [derived(record, "repetition", seed, sentences=out, sentence_labels=labels, spans=spans,
                    positions=positions, inserted_ids=inserted)]


repetition = per_record("repetition", _repetition)

def top_bigrams(texts: Iterable[str], n: int = 200) -> list[str]:
    """The `n` most frequent lower-cased word bigrams of `texts` (ties broken alphabetically), SNaC App. B's list."""
    counts = Counter()
    for text in texts:
        words = text_words(text)
        counts.update(zip(words, words[1:]))
    return [" ".join(pair) for pair, _ in sorted(counts.items(), key=lambda item: (-item[1], item))[:n]]


def entity_texts(doc) -> list[str]:
    return [entity.text for entity in doc.ents]


@generator("ne_bigram")
def ne_bigram(records: list[dict], *, seed: int, bigrams: list[str]) -> list[dict]:
    """SNaC App. B's degenerate text: every named entity of the text, as often as it occurs, followed by the
    corpus-wide top bigrams (`top_bigrams` over the whole corpus, passed in so output is batch-independent).
    The result is one nonsensical "sentence", labelled 1 with a GramE span. Deterministic; `seed` is recorded."""
    found = analyse([" ".join(r["sentences"]) for r in records], entity_texts) if records else []
    out = []
    for record, entities in zip(records, found):
        text = " ".join(entities + list(bigrams))
        if not text:
            continue
        out.append(derived(record, "ne_bigram", seed, sentences=[text], sentence_labels=[ERROR],
                           spans=[span(0, text, "GramE")], positions=[0]))
    return out
