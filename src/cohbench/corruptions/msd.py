"""Missing sentence detection (Cai et al. §3): remove K of the M sentences; gap labels mark where."""

from __future__ import annotations

from itertools import combinations

from ..schema import ERROR, OK
from .registry import derived, per_record


def removable_sets(size: int, k: int) -> list[tuple[int, ...]]:
    """Every admissible choice of K positions: never the first or last sentence, never two adjacent
    (Cai et al., footnote 1)."""
    return [c for c in combinations(range(1, size - 1), k) if all(b - a > 1 for a, b in zip(c, c[1:]))]


def _remove_sentences(record: dict, rng, seed: int, k: int = 1, instances: int = 1) -> list[dict] | str:
    """Remove K sentences, chosen uniformly among the admissible sets. `gap_labels[g]` = 1 when a sentence is
    missing between output sentences g and g+1; `positions` are those gaps, `replaced` the sentence each gap lost;
    `inserted_ids` stay empty.
    Records too short for K non-adjacent inner sentences yield nothing (`too_short_for_removal`). `instances` > 1
    makes up to that many records, each removing a different admissible set (ids end in `#1`, `#2`, ...)."""
    sentences = record["sentences"]
    admissible = removable_sets(len(sentences), k)
    if not admissible:
        return "too_short_for_removal"
    if instances == 1:  # the one seeded draw every release config was built with
        chosen = [(None, admissible[rng.randrange(len(admissible))])]
    else:
        rng.shuffle(admissible)
        chosen = [(f"remove_sentences#{j}", removed) for j, removed in enumerate(admissible[:instances], 1)]
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
