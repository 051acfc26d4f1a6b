"""Registered recipes: what `cohbench corrupt` and the builders make from coherent narratives, with one code path.

A recipe runs registered generators over coherent records in three steps, so that an engine can spread them:
- `prepare(records, params)`: what every batch shares, built once over the whole input (a confounder pool per
  split, corpus-wide bigrams);
- `plan(batch, shared, params, device)`: work per record (BM25 candidates), or nothing;
- `make(batch, plans, shared, params, device)`: the records made from each source record (a list per source; empty
  when the recipe does not apply to it). This is where BERTScore encoding happens.
Both run on `device` (`encoder.Device`); the bytes do not depend on it.
Every random choice is drawn from (seed, record id), so the output does not depend on how records are batched.
A recipe and its parameters are resolved once (`resolve`); an engine (`engines`) runs the resolved recipe.

    outputs, dropped = recipes.run("msd", records, {"seed": 13, "k": 1})   # in one process, as the builders do
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..encoder import AUTO, Device
from ..names import Registry
from ..schema import NO_LABEL, OK, empty_record
from .dsd import ConfounderPool, plan_replacements, replace_planned
from ..errors import CorruptionError
from .registry import GENERATORS, record_rng
from .retrieval import RETRIEVERS
from .surface import top_bigrams


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    options: tuple[str, ...]  # parameters beyond `seed` that the recipe reads
    min_sentences: Callable[[dict], int]  # shorter records are dropped before any work
    not_applicable: str  # drop reason of a record the recipe made nothing from
    make: Callable[..., list[list[dict]]]
    prepare: Callable[[Sequence[dict], dict], object] | None = None
    plan: Callable[..., list] | None = None
    # whether plan and make use the device (BM25, the encoder, BERTScore's matching): only then do they go to GPUs
    on_device: bool = False
    # the drop reason of a record made nothing from, where it depends on the record (a mixture: that of the recipe the
    # story was drawn to); None: `not_applicable`
    reason: Callable[[dict, dict], str] | None = None

    def made_nothing(self, record: dict, params: dict) -> str:
        """Why the recipe made nothing from `record`."""
        return self.reason(record, params) if self.reason else self.not_applicable


RECIPES: Registry[Recipe] = Registry("recipe")


@dataclass(frozen=True)
class Option:
    """An option a recipe may read: its default, the type a value given as text is read as, and what it does (the
    help of `cohbench corrupt`'s flag of that name)."""

    default: object
    type: type
    help: str
    choices: tuple[str, ...] | None = None


# Every option a recipe may read (defaults: Cai et al. §3: K = 1, tau on rescaled BERTScore; SNaC App. B).
OPTIONS = {
    "k": Option(1, int, "K: sentences altered per record (msd, dsd)"),
    "tau": Option(0.5, float, "confounders' rescaled BERTScore F1 must be below tau (dsd, synthetic)"),
    "top_k": Option(100, int, "BM25 candidates per replaced sentence"),
    "retriever": Option("bm25s", str, "BM25 implementation: bm25s (default, exhaustive), rank_bm25 (reference), tantivy (an "
                        "inverted index on disk; extra cohbench[tantivy])", RETRIEVERS),
    "window": Option(None, int, "shuffle only within windows of this many sentences (default: whole text)"),
    "ratio": Option(0.5, float, "repetition: share of sentences repeated"),
    "seed": Option(13, int, "seed; each record draws from (seed, its id)"),
    "pool_shards": Option(1, int, "cut each confounder pool's BM25 index into this many shards"),
    "instances": Option(1, int, "records made per story (default 1)"),
}


def register(recipe: Recipe) -> Recipe:
    return RECIPES.register(recipe.name, recipe)


def parameters(recipe: Recipe, given: dict) -> dict:
    """The recipe's parameters: `given` over the defaults, only those it reads, checked."""
    params = {key: given.get(key, OPTIONS[key].default) for key in ("seed", *recipe.options)}
    if params.get("k") is not None and params["k"] < 1:
        raise CorruptionError(f"K (sentences altered per record) must be at least 1, got {params['k']}")
    if params.get("top_k") is not None and params["top_k"] < 1:
        raise CorruptionError(f"top_k must be at least 1, got {params['top_k']}")
    if params.get("window") is not None and params["window"] < 2:
        raise CorruptionError(f"the shuffle window must be at least 2 sentences, got {params['window']}")
    if params.get("instances") is not None and params["instances"] < 1:
        raise CorruptionError(f"instances (records made per story) must be at least 1, got {params['instances']}")
    if params.get("pool_shards") is not None and params["pool_shards"] < 1:
        raise CorruptionError(f"pool_shards must be at least 1, got {params['pool_shards']}")
    if "ratio" in params and not (isinstance(params["ratio"], (int, float)) and 0 < params["ratio"] <= 1):
        raise CorruptionError(f"the repetition ratio (share of sentences repeated) must be above 0 and at most 1, got {params['ratio']}")
    if "tau" in params and not (isinstance(params["tau"], (int, float)) and math.isfinite(params["tau"])):
        raise CorruptionError(f"tau (the rescaled BERTScore F1 a confounder must stay below) must be a finite number, got {params['tau']}")
    return params


@dataclass(frozen=True)
class Resolved:
    """A recipe with its parameters, checked once: what every engine and every worker runs. It travels between
    processes as (name, parameters) and is looked up, not checked again, on arrival."""
    recipe: Recipe
    params: dict

    def __reduce__(self):
        return _arrived, (self.recipe.name, self.params)


def _arrived(name: str, params: dict) -> Resolved:
    return Resolved(lookup(name), params)


def lookup(name: str) -> Recipe:
    """A registered recipe, or the mixture a name such as `goyal_coref:0.5+scene_jump:0.5` writes out."""
    return mixture(name, proportions(name)) if ":" in name else RECIPES[name]


def resolve(name: str, given: dict) -> Resolved:
    recipe = lookup(name)
    return Resolved(recipe, parameters(recipe, given))


def by_source(records: Sequence[dict], made: Sequence[dict]) -> list[list[dict]]:
    """Generator output regrouped per source record, in the sources' order."""
    groups = {r["id"]: [] for r in records}
    for record in made:
        groups[record["corruption"]["source_id"]].append(record)
    return [groups[r["id"]] for r in records]


def _generator_recipe(name: str, generator: str, description: str, options: tuple[str, ...], min_sentences,
                      not_applicable: str, arguments=lambda params: {}) -> Recipe:
    def make(batch, plans, shared, params, device=AUTO):
        made = GENERATORS[generator].over_records(batch, seed=params["seed"], **arguments(params))
        return by_source(batch, made)

    return register(Recipe(name, description, options, min_sentences, not_applicable, make))


def pools(records: Sequence[dict], params: dict) -> dict[str, ConfounderPool]:
    """One confounder pool per split (no confounder crosses splits), each indexed once."""
    splits: dict[str, list[dict]] = {}
    for record in records:
        splits.setdefault(record["split"], []).append(record)
    return {split: ConfounderPool.from_records(group, retriever=params["retriever"], top_k=params["top_k"],
                                               shards=params.get("pool_shards") or 1)
            for split, group in sorted(splits.items())}


def _plan_dsd(batch, shared, params, device=AUTO, min_position=0):
    plans = [None] * len(batch)
    for split, pool in shared.items():
        members = [n for n, r in enumerate(batch) if r["split"] == split]
        for n, plan in zip(members, plan_replacements([batch[n] for n in members], pool, seed=params["seed"],
                                                      k=params.get("k", 1), min_position=min_position,
                                                      instances=params.get("instances") or 1, device=device)):
            plans[n] = plan
    return plans


def _make_dsd(batch, plans, shared, params, device=AUTO, error_type=None):
    out = [[] for _ in batch]
    for split, pool in shared.items():
        members = [n for n, r in enumerate(batch) if r["split"] == split]
        made = replace_planned([batch[n] for n in members], [plans[n] for n in members], pool,
                               seed=params["seed"], tau=params["tau"], error_type=error_type, device=device)
        for n, records in zip(members, made):
            out[n] = records
    return out


_generator_recipe(
    "msd", "remove_sentences", "Missing sentence detection (Cai et al.): K non-adjacent inner sentences removed; "
    "gap_labels mark where.", ("k", "instances"), lambda p: 2 * p["k"] + 1, "not_applicable",
    lambda p: {"k": p["k"], "instances": p["instances"]})

register(Recipe(
    "dsd", "Discordant sentence detection (Cai et al.): K sentences replaced by BM25-retrieved confounders from "
    "other documents of the same split whose rescaled BERTScore F1 is below tau.",
    ("k", "tau", "top_k", "retriever", "pool_shards", "instances"), lambda p: p["k"], "no_confounder_below_tau",
    make=_make_dsd, prepare=pools, plan=_plan_dsd, on_device=True))

_generator_recipe(
    "shuffle", "shuffle", "SNaC App. B: sentences permuted (whole text, or within windows of `window` sentences); "
    "a sentence other than the source's at its position labelled 1.", ("window",), lambda p: 2,
    "no_permutation_changes_the_text", lambda p: {"window": p["window"]})

_generator_recipe(
    "repetition", "repetition", "SNaC App. B: a `ratio` of the sentences repeated after their original (RepE).",
    ("ratio",), lambda p: 1, "not_applicable", lambda p: {"ratio": p["ratio"]})

_generator_recipe(
    "entity_first_mention", "entity_first_mention", "SNaC §5.1 coref recipe (CharE): the sentence introducing a "
    "character dropped, context up to their next mention.", (), lambda p: 3, "no_character_named_twice")

_generator_recipe(
    "next_sentence_swap", "next_sentence_swap", "SNaC §5.1 next-sentence recipe (SceneE): a later sentence put "
    "right after the context.", (), lambda p: 3, "not_applicable")

_generator_recipe(
    "goyal_coref", "goyal_coref", "Goyal et al. §5.1 coref-based (CharE), as written: s_j after its context without the "
    "entity's introduction s_i, and after its original context (balanced).", ("instances",), lambda p: 3,
    "no_entity_named_twice", lambda p: {"instances": p["instances"]})

_generator_recipe(
    "goyal_next_sentence", "goyal_next_sentence", "Goyal et al. §5.1 next-sentence (SceneE), as written: a context "
    "followed by a later sentence of the same text, and by its own next one (balanced).", ("instances",),
    lambda p: 3, "too_short_for_next_sentence", lambda p: {"instances": p["instances"]})

_generator_recipe(
    "contradiction", "contradiction", "SNaC InconE: an earlier sentence of the context restated with one fact turned "
    "round (negated, an opposite or another number), after the context; and the text's own next sentence (balanced).",
    ("instances",), lambda p: 3, "nothing_to_contradict", lambda p: {"instances": p["instances"]})

_generator_recipe(
    "unintroduced_reference", "unintroduced_reference", "SNaC RefE: a sentence's indefinite first mention of a thing "
    "made definite (\"a wheel\" -> \"the wheel\") after a context that never introduced it; and the sentence as "
    "written (balanced).", ("instances",), lambda p: 2, "no_first_mention_to_make_definite",
    lambda p: {"instances": p["instances"]})

_generator_recipe(
    "scene_jump", "scene_jump", "SNaC SceneE: the context cut off and followed by a sentence of a later scene (8 or "
    "more sentences on) that names only the context's characters; and the text's own next sentence, which names no one "
    "new either (balanced).", ("instances",), lambda p: 10, "no_later_scene_with_the_same_characters",
    lambda p: {"instances": p["instances"]})

def _make_ne_bigram(batch, plans, shared, params, device=AUTO):
    made = [record for split in sorted({r["split"] for r in batch}) for record in GENERATORS["ne_bigram"].over_records(
        [r for r in batch if r["split"] == split], seed=params["seed"], bigrams=shared[split])]
    return by_source(batch, made)


register(Recipe(
    "ne_bigram", "SNaC App. B degenerate text: the text's named entities followed by the 200 most frequent bigrams "
    "of the stories of its split (GramE).", (), lambda p: 1, "not_applicable",
    make=_make_ne_bigram,
    # per split, as the confounder pools: a train record never carries words only a test story has
    prepare=lambda records, params: {split: top_bigrams(s for r in records if r["split"] == split for s in r["sentences"])
                                     for split in {r["split"] for r in records}}))


# The SNaC-format synthetic mix (Goyal et al. §5.1, App. C.1), in the order its examples are made: the generators that
# need only the record, then discordant replacement, which draws from the batch's confounder pool (`_make_dsd`).
RECORD_ONLY_GENERATORS = ("entity_first_mention", "next_sentence_swap")
SYNTHETIC_GENERATORS = (*RECORD_ONLY_GENERATORS, "discordant_replace")


def _example(source: dict, sentences: list[str], label: int, rid: str, spans=(), corruption=None) -> dict:
    record = empty_record()
    record.update(
        id=rid, corpus=source["corpus"], config=source["config"], split=source["split"], doc_id=source["doc_id"],
        sentences=sentences, sentence_labels=[NO_LABEL] * (len(sentences) - 1) + [label], label=label,
        spans=list(spans), corruption=corruption,
    )
    return record


def snac_pair(negative: dict, source: dict) -> list[dict]:
    """The negative as context + labelled sentence, and its positive: the source's own sentence at that point."""
    generator = negative["corruption"]["generator"]
    (position,) = negative["corruption"]["positions"]
    # Source index of the labelled sentence: entity_first_mention dropped one earlier sentence.
    original = position + 1 if generator == "entity_first_mention" else position
    negative = _example(source, negative["sentences"][: position + 1], 1, negative["id"],
                        negative["spans"], negative["corruption"])
    positive = _example(source, source["sentences"][: original + 1], OK, f"{negative['id']}:coherent")
    return [negative, positive]


def _make_synthetic(batch, plans, shared, params, device=AUTO):
    seed = params["seed"]
    negatives = [by_source(batch, GENERATORS[g].over_records(batch, seed=seed)) for g in RECORD_ONLY_GENERATORS]
    negatives.append(_make_dsd(batch, plans, shared, params, device, error_type="SceneE"))
    return [[r for per_generator in negatives for negative in per_generator[n] for r in snac_pair(negative, source)]
            for n, source in enumerate(batch)]


register(Recipe(
    "synthetic", "SNaC-format (context, sentence, label) pairs, balanced: entity_first_mention (CharE), "
    "next_sentence_swap (SceneE) and a discordant confounder after position 0 (SceneE), each with its coherent "
    "positive.", ("tau", "top_k", "retriever", "pool_shards"), lambda p: 2, "no_recipe_applicable",
    make=_make_synthetic, prepare=pools,
    plan=lambda batch, shared, params, device=AUTO: _plan_dsd(batch, shared, {**params, "k": 1}, device, min_position=1),
    on_device=True))


# Mixtures: each story goes to one recipe, drawn with the mixture's proportions from (seed, story id) alone, so a
# story's recipe does not depend on the batch, and the records a mixture makes from a story are exactly those its
# recipe makes from it (the transfer study assembles mixtures from each recipe's records with `assigned`). A story
# its recipe made nothing from is dropped with that recipe's reason, `<recipe>:<reason>`.


def proportions(spec: str) -> dict[str, float]:
    """`a:0.5+b:0.5` as {recipe: proportion}, checked: known recipes made per story (no shared pool), each once,
    proportions finite, non-negative and summing to 1."""
    parts = {}
    for part in spec.split("+"):
        name, _, value = part.partition(":")
        try:
            share = float(value)
        except ValueError:
            raise CorruptionError(f"mixture {spec!r}: {part!r} is not RECIPE:PROPORTION (e.g. goyal_coref:0.5)") from None
        if name in parts:
            raise CorruptionError(f"mixture {spec!r} names {name} twice")
        recipe = RECIPES[name]  # an unknown name lists the registered ones
        if recipe.prepare or recipe.plan:
            raise CorruptionError(f"mixture {spec!r}: {name} shares a pool across stories and cannot be mixed per story")
        if not math.isfinite(share) or share < 0:
            raise CorruptionError(f"mixture {spec!r}: the proportion of {name} must be a number of at least 0, got {value}")
        parts[name] = share
    if abs(sum(parts.values()) - 1) > 1e-9:
        raise CorruptionError(f"mixture {spec!r}: the proportions sum to {sum(parts.values()):g}, not 1")
    return {name: share for name, share in sorted(parts.items()) if share > 0}


def assigned(seed: int, record_id: str, shares: dict[str, float]) -> str:
    """The recipe of a mixture that a story goes to: one uniform draw per (seed, story), the same for every mixture,
    placed on the recipes' cumulative proportions in name order."""
    draw, total = record_rng(seed, "mixture", record_id).random(), 0.0
    for name, share in shares.items():
        total += share
        if draw < total:
            return name
    return name  # a draw above a total rounded below 1


def mixture(name: str, shares: dict[str, float], prefix: str = "A mixture") -> Recipe:
    """A recipe that gives each story to one of `shares`' recipes (`assigned`) and keeps what that recipe makes."""
    parts = {recipe: RECIPES[recipe] for recipe in shares}

    def make(batch, plans, shared, params, device=AUTO):
        out = [[] for _ in batch]
        for recipe, part in parts.items():
            members = [n for n, r in enumerate(batch) if assigned(params["seed"], r["id"], shares) == recipe
                       and long_enough(part, params, r)]
            made = part.make([batch[n] for n in members], None, None, params, device) if members else []
            for n, records in zip(members, made):
                out[n] = records
        return out

    def reason(record, params):
        drawn = assigned(params["seed"], record["id"], shares)
        part = parts[drawn]
        return f"{drawn}:{part.made_nothing(record, params) if long_enough(part, params, record) else TOO_SHORT}"

    options = tuple(sorted({option for part in parts.values() for option in part.options}))
    text = f"{prefix}: each story goes to one recipe, drawn with these proportions: "
    return Recipe(name, text + ", ".join(f"{r} {share:g}" for r, share in shares.items()), options,
                  lambda p: min(part.min_sentences(p) for part in parts.values()), "its_recipe_made_nothing", make,
                  reason=reason)


# The mixture `cohbench study transfer` chose on SNaC train + validation (seed 2; its figures: catalog/baseline/
# snac_transfer.md), under one name for `cohbench corrupt --recipe` and the README's loop.
register(mixture("snac_mixture", proportions("goyal_coref:0.2+unintroduced_reference:0.8"),
                 "SNaC-style training pairs, the mixture the transfer study chose on SNaC train + validation"))


TOO_SHORT = "too_short_for_recipe"  # the drop reason of a record with fewer sentences than the recipe needs


def long_enough(recipe: Recipe, params: dict, record: dict) -> bool:
    """Whether `record` has as many sentences as the recipe needs (`min_sentences`); shorter records are dropped,
    before any work, as `TOO_SHORT`."""
    return len(record["sentences"]) >= recipe.min_sentences(params)


def run(name: str, records: Sequence[dict], params: dict, shared=None) -> tuple[list[list[dict]], Counter]:
    """Run recipe `name` over coherent `records` in this process (`apply`), as the builders do."""
    return apply(resolve(name, params), records, shared)


def apply(resolved: Resolved, records: Sequence[dict], shared=None, device: Device = AUTO) -> tuple[list[list[dict]], Counter]:
    """Run a resolved recipe over coherent `records` in this process: the records made from each source (in order)
    and the sources dropped, by reason. `shared` is `prepare`'s result when the caller already has it; `device`
    where the encoder runs."""
    recipe, params = resolved.recipe, resolved.params
    fits = [long_enough(recipe, params, record) for record in records]
    usable = [record for record, ok in zip(records, fits) if ok]
    dropped = Counter({TOO_SHORT: len(fits) - len(usable)})
    if shared is None and recipe.prepare:
        shared = recipe.prepare(usable, params)
    plans = recipe.plan(usable, shared, params, device) if recipe.plan else None
    made = iter(recipe.make(usable, plans, shared, params, device) if usable else [])
    outputs = [next(made) if ok else [] for ok in fits]
    dropped.update(recipe.made_nothing(r, params) for r, out, ok in zip(records, outputs, fits) if ok and not out)
    return outputs, +dropped
