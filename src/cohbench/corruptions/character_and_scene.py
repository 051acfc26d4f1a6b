"""SNaC's synthetic recipes (Goyal et al. 2022, §5.1), each producing a context plus one labelled sentence:
the corrupted record is the context followed by the target sentence, which alone carries a label (1, with a
span of the targeted error type); context sentences are unlabelled (-1), as SNaC's detectors see them."""

from __future__ import annotations

from collections import Counter

from ..schema import ERROR, NO_LABEL
from .nlp import per_sentence
from .registry import count, derived, generator, per_record, record_rng, sentence_id, span

TITLES = {"mr", "mrs", "ms", "miss", "dr", "sir", "madam", "mister", "lady", "lord", "st", "saint"}


def _name_tokens(text: str) -> frozenset[str]:
    words = [w.strip(".,'\u2019").removesuffix("'s").removesuffix("\u2019s") for w in text.split()]
    return frozenset(w.lower() for w in words if w and w.lower() not in TITLES and w[0].isupper())


def character_mentions(doc) -> list[tuple[str, frozenset[str]]]:
    """Mentions of characters in one sentence: PERSON entities, and proper nouns outside other entity types
    (spaCy's small model misses many fairy-tale names). Returns (mention text, name tokens)."""
    mentions = [(e.text, _name_tokens(e.text)) for e in doc.ents if e.label_ == "PERSON"]
    covered = {t.i for e in doc.ents for t in e}
    mentions += [(t.text, _name_tokens(t.text)) for t in doc if t.pos_ == "PROPN" and t.i not in covered]
    return [(text, tokens) for text, tokens in mentions if tokens]


def first_and_second_mentions(mentions_per_sentence) -> list[tuple[int, int, str]]:
    """Characters as alias groups (mentions sharing a name token, titles ignored: "Mr. Lorry" = "Lorry"), each as
    (sentence of first mention, sentence of the next mention, mention text there). This approximates coreference:
    pronouns and descriptions ("the old man") are not linked, and namesakes are merged."""
    characters: list[dict] = []  # {"tokens": set, "sentences": [(index, text)]}
    for index, mentions in enumerate(mentions_per_sentence):
        for text, tokens in mentions:
            match = next((c for c in characters if c["tokens"] & tokens), None)
            if match is None:
                characters.append({"tokens": set(tokens), "sentences": [(index, text)]})
            else:
                match["tokens"] |= tokens
                if match["sentences"][-1][0] != index:
                    match["sentences"].append((index, text))
    return [(c["sentences"][0][0], c["sentences"][1][0], c["sentences"][1][1]) for c in characters if len(c["sentences"]) > 1]


@generator("entity_first_mention")
def entity_first_mention(records: list[dict], *, seed: int, dropped: Counter | None = None) -> list[dict]:
    """SNaC's coref-based recipe (targets CharE): drop the sentence s_i that first mentions a character, keep the
    context up to the next sentence s_j that mentions them, now without introduction; s_j is labelled 1 with a
    CharE span on the mention. One character per record, drawn by the seed; records with no character mentioned
    in two sentences (`no_character_named_twice`), or where s_j would open the text (`second_mention_opens_text`),
    yield nothing."""
    out = []
    for record, mentions in zip(records, per_sentence(records, character_mentions)):
        mentioned_twice = first_and_second_mentions(mentions)
        options = [(i, j, text) for i, j, text in mentioned_twice if j >= 2]
        if not options:
            count(dropped, "second_mention_opens_text" if mentioned_twice else "no_character_named_twice")
            continue
        i, j, mention = options[record_rng(seed, "entity_first_mention", record["id"]).randrange(len(options))]
        kept = [s for index, s in enumerate(record["sentences"][: j + 1]) if index != i]
        out.append(derived(
            record, "entity_first_mention", seed, sentences=kept,
            sentence_labels=[NO_LABEL] * (len(kept) - 1) + [ERROR],
            spans=[span(len(kept) - 1, mention, "CharE")], positions=[len(kept) - 1],
        ))
    return out


def _next_sentence_swap(record: dict, rng, seed: int) -> list[dict] | str:
    """SNaC's next-sentence recipe (targets SceneE): keep the context s_1..s_i (i >= 1) and put a later sentence
    s_j (j > i + 1) of the same text where s_{i+1} was; s_j is labelled 1 with a SceneE span."""
    sentences = record["sentences"]
    pairs = [(i, j) for i in range(1, len(sentences) - 1) for j in range(i + 1, len(sentences))]
    if not pairs:
        return "too_short_for_swap"
    i, j = pairs[rng.randrange(len(pairs))]
    return [derived(
        record, "next_sentence_swap", seed, sentences=sentences[:i] + [sentences[j]],
        sentence_labels=[NO_LABEL] * i + [ERROR], spans=[span(i, sentences[j], "SceneE")],
        positions=[i], inserted_ids=[sentence_id(record["id"], j)], replaced=[sentences[i]],
    )]


next_sentence_swap = per_record("next_sentence_swap", _next_sentence_swap)
