"""The reference measures of Steen & Markert (2022, §4.2, Table 1) on SummEval: confounders (capital letters,
transformer architecture), the upper bound and chance. Each gives a (documents, systems) grid in coherence polarity
(higher = more coherent), as the paper's Table 1 reads them; NaN where there is no summary. They are registered,
with every other reference scorer, in the one registry `references.REFERENCES` (as rating references)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .rating_grid import HumanScores, SummaryGrid

# a grid of summaries -> scores; only an oracle (`upper_bound`) needs the ratings of a `HumanScores`
ReferenceMeasure = Callable[[SummaryGrid, np.random.Generator], np.ndarray]
NOISE = 1e-6  # below every gap between distinct values of the base measures (>= 1/300), so it only breaks ties
TRANSFORMER_SYSTEMS = frozenset({"M17", "M20", "M22", "M23"})  # T5, GPT-2, BART, Pegasus (paper fn. 5)


def uppercase(human: SummaryGrid, rng) -> np.ndarray:
    """Number of upper-case letters in the summary (§4.2). The 400 summaries only BARTScore's copy keeps were
    published by SummEval in lower case (paper fn. 4: only BART, GPT-2 and Pegasus dynamic-mix write capitals);
    BARTScore re-capitalised sentence starts, so their SummEval count is that of the lower-cased text, 0."""
    count = np.vectorize(lambda text, variant: 0 if variant else sum(ch.isupper() for ch in text), otypes=[float])
    return np.where(human.present, count(human.texts, human.variants), np.nan)


def architecture(human: SummaryGrid, rng) -> np.ndarray:
    """1 for systems built on pretrained transformers (T5, GPT-2, BART, Pegasus), else 0 (§4.2)."""
    flags = np.array([s in TRANSFORMER_SYSTEMS for s in human.systems], dtype=float)
    return np.where(human.present, flags[None, :], np.nan)


def upper_bound(human: HumanScores, rng) -> np.ndarray:
    """Every summary gets its system's mean human score: perfect system ranking, nothing within a system (§4.2)."""
    means = np.nanmean(human.gold, axis=0)
    return np.where(human.present, means[None, :], np.nan)


def random_scores(human: SummaryGrid, rng) -> np.ndarray:
    """Uniform random scores: the chance baseline (Table 3, RND)."""
    return np.where(human.present, rng.random(human.present.shape), np.nan)


def noised(base: ReferenceMeasure) -> ReferenceMeasure:
    def measure(human, rng):
        return base(human, rng) + rng.random(human.present.shape) * NOISE

    measure.__doc__ = f"{base.__name__} plus tie-breaking noise in [0, {NOISE}) (§4.2, Table 1's (r) variants)."
    return measure
