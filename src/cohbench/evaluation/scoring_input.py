"""What a reference scorer is given, and the one error it raises: shared by the scorer modules and the registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import CohbenchError


class ScorerError(CohbenchError):
    """A reference scorer cannot score this config."""


@dataclass(frozen=True)
class Scored:
    """The records to score (their sentences in `texts`; in `records`, what the protocol lets a scorer see of each,
    `Protocol.scorer_view`: a source, a system; whole records only for an oracle) and the config's train split
    (sentences and the labels of the unit, for learned priors)."""

    texts: Sequence[Sequence[str]]
    train_texts: Sequence[Sequence[str]]
    train_labels: Sequence[Sequence[int]]  # per train record, the labels of the unit's items
    prefix_only: bool  # the protocol judges a unit on the text before it only (SNaC)
    unit: str  # "sentences", "gaps", "summary" or "ratings" (the protocol's unit)
    records: Sequence[Mapping] = field(default=())  # scorer views of the scored records
    vectors: Mapping[str, np.ndarray] | None = None  # sentence key -> MiniLM vector, where the caller has them

    def units(self, text: Sequence[str]) -> int:
        return len(text) - (1 if self.unit == "gaps" else 0)
