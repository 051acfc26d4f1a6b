"""Missing sentence detection (Cai et al. §3): remove K of the M sentences; gap labels mark where."""

from __future__ import annotations

import math
from itertools import combinations

from ..schema import ERROR, OK
from .registry import derived, per_record, seeded_sets


def removable_sets(size: int, k: int) -> list[tuple[int, ...]]:
    """Every admissible choice of K positions: never the first or last sentence, never two adjacent
    (Cai et al., footnote 1)."""
    return [c for c in combinations(range(1, size - 1), k) if all(b - a > 1 for a, b in zip(c, c[1:]))]


def removable_count(size: int, k: int) -> int:
    """len(removable_sets(size, k)), without listing them: K non-adjacent of the inner positions 1 .. size - 2 less
    (0, 1, .., K - 1) are any K of the size - 1 - K positions 1 .. size - 1 - K."""
    return math.comb(max(size - 1 - k, 0), k)


def removable_set_at(index: int, size: int, k: int) -> tuple[int, ...]:
    """removable_sets(size, k)[index], without listing them (the shift above keeps their order): a story of a hundred
    sentences has 68 million sets of five inner positions, of which 55 million are admissible."""
    free, chosen, x = size - 1 - k, [], 0
    for left in range(k, 0, -1):
        while index >= (starting_here := math.comb(free - x - 1, left - 1)):  # sets whose next position is x
            index -= starting_here
            x += 1
        chosen.append(1 + x + len(chosen))
        x += 1
    return tuple(chosen)


def _remove_sentences(record: dict, rng, seed: int, k: int = 1, instances: int = 1) -> list[dict] | str:
    """Remove K sentences, chosen uniformly among the admissible sets. `gap_labels[g]` = 1 when a sentence is
    missing between output sentences g and g+1; `positions` are those gaps, `replaced` the sentence each gap lost;
    `inserted_ids` stay empty.
    Records too short for K non-adjacent inner sentences yield nothing (`too_short_for_removal`). `instances` > 1
    makes up to that many records, each removing a different admissible set (ids end in `#1`, `#2`, ...)."""
    sentences = record["sentences"]
    admissible = removable_count(len(sentences), k)
    if not admissible:
        return "too_short_for_removal"
    if instances == 1:  # the one seeded draw every release config was built with
        chosen = [(None, removable_set_at(rng.randrange(admissible), len(sentences), k))]
    else:
        sets = seeded_sets(rng, lambda: removable_sets(len(sentences), k), admissible, instances, record)
        chosen = [(f"remove_sentences#{j}", removed) for j, removed in enumerate(sets, 1)]
    out = []
    for variant, removed in chosen:
        kept = [i for i in range(len(sentences)) if i not in removed]
        # Output sentence g is source sentence kept[g]; a gap follows it when the next kept sentence is not adjacent.
        gaps = [ERROR if kept[g + 1] - kept[g] > 1 else OK for g in range(len(kept) - 1)]
        out.append(derived(
            record, "remove_sentences", seed, variant=variant,
            sentences=[sentences[i] for i in kept],
            gap_labels=gaps,
            positions=[g for g, label in enumerate(gaps) if label == ERROR],
            replaced=[sentences[i] for i in removed],  # no two removed sentences are adjacent: one per gap, in order
        ))
    return out


remove_sentences = per_record("remove_sentences", _remove_sentences)
