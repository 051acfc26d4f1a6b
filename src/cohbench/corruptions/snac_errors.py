"""Recipes for the SNaC error types no earlier recipe teaches (Goyal et al. 2022, §3.2 and App. D), each a balanced
(context, sentence, label) pair per instance, as `goyal.py` writes them: the negative's last sentence carries the error
(label 1, a span of the type), its coherent counterpart is the same context with a sentence that is no error.

- `contradiction` (InconE, "contradicting other information in the Context"): a sentence of the context restated with
  one fact turned round (a predicate negated, an attribute or a number swapped for its opposite), set after the
  context; its counterpart is the text's own next sentence. The negative stays on topic: it shares the words of the
  sentence it contradicts, which is what the SNaC annotators' antecedent marks.
- `unintroduced_reference` (RefE, "an event or object mentioned for the first time, but the phrasing implies it was
  introduced previously"): a sentence's indefinite first mention of a thing ("a spinning wheel") made definite ("the
  spinning wheel"); its counterpart is the sentence as written, after the same context. The two differ in one word.
- `scene_jump` (SceneE, "a sudden shift in the narrative"): the context cut off and followed by a sentence from a
  later scene of the same text (at least `jump` sentences on) that names no character the context has not named (the
  characters stay, the scene changes); its counterpart is the text's own next sentence, which names no one new either,
  so that the pair differs in its scene, not in its names.

`instances` pairs are drawn per text with the seed; a text that offers none is counted by reason.
"""

from __future__ import annotations

import re
from collections import Counter

from ..schema import ERROR, OK
from .character_and_scene import character_mentions
from .nlp import per_sentence
from .registry import context_pair, count, generator, record_rng, sentence_id

# Auxiliaries and copulas whose predicate a "not" turns round ("was" -> "was not", "could not" -> "could", "cannot" ->
# "can"); whole words only, so "down" and "island" hold no "do" or "is".
_AUXILIARY = re.compile(r"\b(?:(can)not|(was|were|is|are|had|has|have|could|would|should|will|can|did|does|do|must|might)"
                        r"( not|n't)?)\b", re.IGNORECASE)
# Opposites of attributes, states and outcomes common in narratives; each pair read both ways.
_OPPOSITES = dict(pair for a, b in (
    ("big", "small"), ("old", "young"), ("rich", "poor"), ("happy", "sad"), ("alive", "dead"), ("good", "bad"),
    ("beautiful", "ugly"), ("strong", "weak"), ("first", "last"), ("wise", "foolish"), ("kind", "cruel"),
    ("dark", "bright"), ("always", "never"), ("everything", "nothing"), ("everyone", "nobody"), ("loved", "hated"),
    ("won", "lost"), ("arrived", "left"), ("opened", "closed"), ("remembered", "forgot"), ("agreed", "refused"),
    ("gave", "took"), ("bought", "sold"), ("married", "divorced"), ("friend", "enemy"), ("friends", "enemies"),
    ("before", "after"), ("early", "late"), ("love", "hate"), ("laughed", "wept"), ("brother", "sister"),
    ("son", "daughter"), ("husband", "wife"), ("king", "queen"), ("north", "south"), ("east", "west"),
    ("day", "night"), ("summer", "winter"), ("asleep", "awake"), ("true", "false"), ("safe", "dangerous"),
) for pair in ((a, b), (b, a)))
_NUMBERS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "twenty", "hundred")
_NUMBER = re.compile(r"\b(" + "|".join(_NUMBERS) + r"|\d+)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]+")
# Nouns after "a" that refer to no thing ("once upon a time", "for a while"): never made definite.
_NOT_REFERENTIAL = {"time", "while", "moment", "bit", "lot", "few", "little", "number", "kind", "sort", "way", "word",
                    "day", "night", "year", "week", "minute", "hour", "second", "deal", "long", "great", "good", "half"}
def _cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def contradicted(sentence: str, rng) -> tuple[str, str] | None:
    """`sentence` with one fact turned round, and the words that now contradict it; None where no rule applies.
    One of the rules that apply is drawn: a predicate negated (or its negation dropped), an opposite swapped in, a
    number changed."""
    options = []
    if match := _AUXILIARY.search(sentence):
        negated, verb, negation = match.groups()
        turned = negated or (verb if negation else f"{verb} not")
        options.append((match.start(), match.end(), turned))
    for match in _WORD.finditer(sentence):
        if (opposite := _OPPOSITES.get(match.group().lower())) is not None:
            options.append((match.start(), match.end(), _cased(opposite, match.group())))
    for match in _NUMBER.finditer(sentence):
        word = match.group().lower()
        if word.isdigit():
            other = str(int(word) + 1 + rng.randrange(9))
        else:
            other = rng.choice([n for n in _NUMBERS if n != word])
        options.append((match.start(), match.end(), _cased(other, match.group())))
    if not options:
        return None
    start, end, turned = options[rng.randrange(len(options))]
    return sentence[:start] + turned + sentence[end:], turned


@generator("contradiction")
def contradiction(records: list[dict], *, seed: int, instances: int = 1, reach: int = 8,
                  dropped: Counter | None = None) -> list[dict]:
    """Per text, up to `instances` positions j >= 2 (a context of at least two sentences, and a next sentence s_j
    for the counterpart): an earlier sentence s_i (i >= j - `reach`) contradicted after s_0..s_{j-1} (InconE,
    antecedent s_i), and s_j after the same context. Texts with no sentence a rule can turn round:
    `nothing_to_contradict`; under 3 sentences: `too_short_for_contradiction`."""
    out = []
    for record in records:
        sentences = record["sentences"]
        if len(sentences) < 3:
            count(dropped, "too_short_for_contradiction")
            continue
        rng = record_rng(seed, "contradiction", record["id"])
        made = []
        for j in rng.sample(range(2, len(sentences)), len(sentences) - 2):
            earlier = list(range(max(0, j - reach), j))
            rng.shuffle(earlier)
            turned = next(((i, t) for i in earlier if (t := contradicted(sentences[i], rng))), None)
            if turned is not None:
                made.append((j, *turned))
            if len(made) == instances:
                break
        if not made:
            count(dropped, "nothing_to_contradict")
            continue
        for n, (j, i, (sentence, words)) in enumerate(sorted(made)):
            context = sentences[:j]
            out.append(context_pair(record, "contradiction", seed, f"contradiction{n}", context, sentence, ERROR,
                                    "InconE", words, j, [sentence_id(record["id"], i)], antecedents=(sentences[i],),
                                    replaced=(sentences[j],)))
            out.append(context_pair(record, "contradiction", seed, f"contradiction{n}:coherent", context, sentences[j],
                                    OK, "InconE", words, j, []))
    return out


def _indefinites(doc) -> list[tuple[int, int, int, str]]:
    """(article start, article end, noun end, noun) of each "a"/"an" opening a noun phrase of a sentence: the
    article, optional adjectives, a common noun that refers to a thing (not "a while")."""
    tokens = list(doc)
    out = []
    for n, token in enumerate(tokens):
        if token.lower_ not in ("a", "an"):
            continue
        k = n + 1
        while k < len(tokens) and tokens[k].pos_ in ("ADJ", "ADV") and k - n <= 3:
            k += 1
        if k < len(tokens) and tokens[k].pos_ == "NOUN" and tokens[k].is_alpha and tokens[k].lower_ not in _NOT_REFERENTIAL:
            out.append((token.idx, token.idx + len(token.text), tokens[k].idx + len(tokens[k].text), tokens[k].lower_))
    return out


@generator("unintroduced_reference")
def unintroduced_reference(records: list[dict], *, seed: int, instances: int = 1,
                           dropped: Counter | None = None) -> list[dict]:
    """Per text, up to `instances` sentences s_j (j >= 1) with an indefinite first mention "a X" of a noun the
    context never used: s_j with "the X" (RefE) and s_j as written, each after s_0..s_{j-1}. Texts without one:
    `no_first_mention_to_make_definite`."""
    out = []
    for record, indefinites in zip(records, per_sentence(records, _indefinites)):
        sentences = record["sentences"]
        seen: set[str] = set()
        options = []
        for j, sentence in enumerate(sentences):
            if j >= 1:
                options += [(j, *found) for found in indefinites[j] if found[-1] not in seen]
            seen |= {w.lower() for w in _WORD.findall(sentence)}
        if not options:
            count(dropped, "no_first_mention_to_make_definite")
            continue
        rng = record_rng(seed, "unintroduced_reference", record["id"])
        by_sentence = {}
        for option in rng.sample(options, len(options)):  # one change per sentence: a pair differs in one word
            by_sentence.setdefault(option[0], option)
        chosen = sorted(rng.sample(sorted(by_sentence.values()), min(instances, len(by_sentence))))
        for n, (j, start, end, noun_end, _) in enumerate(chosen):
            sentence, context = sentences[j], sentences[:j]
            article = _cased("the", sentence[start:end])
            mention = article + sentence[end:noun_end]
            out.append(context_pair(record, "unintroduced_reference", seed, f"unintroduced_reference{n}", context,
                                    sentence[:start] + article + sentence[end:], ERROR, "RefE", mention, j, [],
                                    replaced=(sentence,)))
            out.append(context_pair(record, "unintroduced_reference", seed, f"unintroduced_reference{n}:coherent",
                                    context, sentence, OK, "RefE", mention, j, []))
    return out


@generator("scene_jump")
def scene_jump(records: list[dict], *, seed: int, instances: int = 1, jump: int = 8,
               dropped: Counter | None = None) -> list[dict]:
    """Per text, up to `instances` context lengths i >= 1 where s_i names only characters s_0..s_{i-1} named:
    that context followed by a sentence s_j at least `jump` sentences on (j >= i + `jump`) that names only those
    characters too (SceneE), and by s_i. Texts too short for a jump: `too_short_for_scene_jump`; none that qualifies:
    `no_later_scene_with_the_same_characters`."""
    out = []
    for record, mentions in zip(records, per_sentence(records, character_mentions)):
        sentences = record["sentences"]
        names = [set().union(*(tokens for _, tokens in found)) for found in mentions]
        if len(sentences) < jump + 2:
            count(dropped, "too_short_for_scene_jump")
            continue
        rng = record_rng(seed, "scene_jump", record["id"])
        options = []
        for i in range(1, len(sentences) - jump):
            named = set().union(*names[:i])
            if not names[i] <= named:  # the counterpart names no one new either: the pair differs in scene alone
                continue
            later = [j for j in range(i + jump, len(sentences)) if names[j] <= named]
            if later:
                options.append((i, later))
        if not options:
            count(dropped, "no_later_scene_with_the_same_characters")
            continue
        for n, (i, later) in enumerate(sorted(rng.sample(options, min(instances, len(options))))):
            j = later[rng.randrange(len(later))]
            context = sentences[:i]
            out.append(context_pair(record, "scene_jump", seed, f"scene_jump{n}", context, sentences[j], ERROR,
                                    "SceneE", sentences[j], i, [sentence_id(record["id"], j)], replaced=(sentences[i],)))
            out.append(context_pair(record, "scene_jump", seed, f"scene_jump{n}:coherent", context, sentences[i], OK,
                                    "SceneE", sentences[i], i, []))
    return out
