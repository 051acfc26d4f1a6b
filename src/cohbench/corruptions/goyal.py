"""Goyal et al.'s synthetic training data (SNaC, 2022, §5.1 and App. C.1) as the paper writes it: balanced (context,
sentence, label) triples, each a record whose last sentence alone is labelled (the context is unlabelled, -1).

- `goyal_coref` (targets CharE): for an entity whose first and second mentions are in s_i and s_j (j > i), the
  negative is s_j after the context without its introduction, s_1..s_{i-1} s_{i+1}..s_{j-1}; the positive is s_j
  after its original context s_1..s_{j-1}.
- `goyal_next_sentence` (targets SceneE): for a context s_1..s_i, the negative continues it with a sentence s_j
  drawn from the rest of the same text (j > i + 1), the positive with s_{i+1}.

Where the paper runs a neural coreference model (Lee et al. 2018), none is packaged here: an entity's chain is
approximated by its named mentions (spaCy NER of people, places, organisations and works, and proper nouns outside
them), merged by a shared name token (titles ignored); pronouns and descriptions are not linked. `instances` entities
or context lengths are drawn per text with the seed; each gives one negative and its positive.
"""

from __future__ import annotations

from collections import Counter

from ..schema import ERROR, OK
from .character_and_scene import TITLES, first_and_second_mentions
from .nlp import per_sentence
from .registry import context_pair, count, generator, record_rng, sentence_id

ENTITY_TYPES = {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART"}
# spaCy's entities take a royal title or an article into a name ("King Arthur", "the Smiths"): neither says who is meant.
NOT_NAME_WORDS = TITLES | {"king", "queen", "prince", "princess", "the"}


def _mentions(doc) -> list[tuple[str, frozenset[str]]]:
    """(mention text, name tokens) of each named mention of a sentence."""
    found = [(e.text, e) for e in doc.ents if e.label_ in ENTITY_TYPES]
    covered = {t.i for e in doc.ents for t in e}
    found += [(t.text, [t]) for t in doc if t.pos_ == "PROPN" and t.i not in covered]
    out = []
    for text, tokens in found:
        names = frozenset(t.text.lower() for t in tokens if t.is_alpha and t.text.lower() not in NOT_NAME_WORDS and t.text[0].isupper())
        if names:
            out.append((text, names))
    return out


@generator("goyal_coref")
def goyal_coref(records: list[dict], *, seed: int, instances: int = 1, dropped: Counter | None = None) -> list[dict]:
    """Per text, up to `instances` entities named twice with a non-empty context left without the introduction
    (j >= 2): a CharE negative and its positive each. Texts without one: `no_entity_named_twice`, or
    `second_mention_opens_text` when every second mention is in the first two sentences."""
    out = []
    for record, mentions in zip(records, per_sentence(records, _mentions)):
        sentences = record["sentences"]
        chains = first_and_second_mentions(mentions)
        pairs = {}  # entities introduced and named again in the same sentences make the same triple: one each
        for i, j, text in chains:
            if j >= 2:
                pairs.setdefault((i, j), text)
        options = [(i, j, text) for (i, j), text in pairs.items()]
        if not options:
            count(dropped, "second_mention_opens_text" if chains else "no_entity_named_twice")
            continue
        rng = record_rng(seed, "goyal_coref", record["id"])
        for n, (i, j, mention) in enumerate(sorted(rng.sample(options, min(instances, len(options))))):
            without = sentences[:i] + sentences[i + 1 : j]
            out.append(context_pair(record, "goyal_coref", seed, f"goyal_coref{n}", without, sentences[j], ERROR, "CharE",
                               mention, j - 1, []))
            out.append(context_pair(record, "goyal_coref", seed, f"goyal_coref{n}:coherent", sentences[:j], sentences[j], OK,
                               "CharE", mention, j, []))
    return out


@generator("goyal_next_sentence")
def goyal_next_sentence(records: list[dict], *, seed: int, instances: int = 1, dropped: Counter | None = None) -> list[dict]:
    """Per text, up to `instances` context lengths i (1 <= i, with a sentence beyond s_{i+1}): s_1..s_i followed by
    a later s_j (SceneE negative) and by s_{i+1} (positive). Texts under 3 sentences: `too_short_for_next_sentence`."""
    out = []
    for record in records:
        sentences = record["sentences"]
        lengths = list(range(1, len(sentences) - 1))  # context s_1..s_i, some s_j with j > i + 1 left after it
        if not lengths:
            count(dropped, "too_short_for_next_sentence")
            continue
        rng = record_rng(seed, "goyal_next_sentence", record["id"])
        for n, i in enumerate(sorted(rng.sample(lengths, min(instances, len(lengths))))):
            j = rng.randrange(i + 1, len(sentences))  # 0-based index of s_j, j > i + 1 counted from 1
            out.append(context_pair(record, "goyal_next_sentence", seed, f"goyal_next_sentence{n}", sentences[:i], sentences[j],
                               ERROR, "SceneE", sentences[j], i, [sentence_id(record["id"], j)], replaced=(sentences[i],)))
            out.append(context_pair(record, "goyal_next_sentence", seed, f"goyal_next_sentence{n}:coherent", sentences[:i],
                               sentences[i], OK, "SceneE", sentences[i], i, []))
    return out
