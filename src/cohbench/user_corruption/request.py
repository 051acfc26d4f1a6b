"""What a `cohbench corrupt` run is asked to make (`CorruptRequest`), and the checks of what a user names in it
before anything is read: the splits and their ratios, the config's and the corpus's names. `split_of` places a story
in a split by its id alone."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CorruptionError
from ..release.layout import PLAIN_NAME
from ..schema import SPLITS


@dataclass
class CorruptRequest:
    """What one `cohbench corrupt` run is asked to make: the recipe and its parameters, how the input is read and
    split, and where the work runs."""

    recipe: str
    params: dict = field(default_factory=dict)  # seed, k, tau, window, ... (recipes.OPTIONS)
    splits: dict = field(default_factory=lambda: {"train": 0.8, "validation": 0.1, "test": 0.1})
    corpus: str = "custom"
    config: str | None = None  # default: the recipe's name
    sentences_per_record: int | None = None  # N: cut documents into windows of N sentences
    id_column: str = "id"
    text_column: str | None = None
    drop_test_overlap: bool = True
    partition_size: int = 2000
    engine: str = "local"
    device: str = "auto"  # where the encoder runs: auto, cpu or cuda (the bytes do not depend on it)
    workers: int | None = None
    address: str | None = None
    resume: bool = False
    progress: bool = True
    release: Path | None = None  # the release in use, inside which --out may not lie (default: `settings.release_dir()`)


def parse_splits(text: str) -> dict[str, float]:
    """`train=0.8,validation=0.1,test=0.1` -> {split: ratio}, checked by `check_splits`."""
    ratios = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            ratio = float(value)
        except ValueError:
            raise CorruptionError(f"--splits must look like train=0.8,validation=0.1,test=0.1, got {text!r}") from None
        if name.strip() in ratios:  # the last would win, and the ratios given would not be the ones used
            raise CorruptionError(f"--splits names {name.strip()!r} twice, got {text!r}")
        ratios[name.strip()] = ratio
    return ratios


def check_splits(ratios: dict[str, float]) -> None:
    """Known split names with finite, positive ratios that sum to 1 (a split that gets nothing is left out: a zero
    or NaN ratio would leave `split_of` no split to choose, or write NaN into the stats)."""
    unknown = sorted(set(ratios) - set(SPLITS))
    if unknown:
        raise CorruptionError(f"--splits names {unknown[0]!r}; the splits are {', '.join(SPLITS)}")
    shown = ",".join(f"{name}={ratio}" for name, ratio in ratios.items())
    if not all(math.isfinite(v) and v > 0 for v in ratios.values()):
        raise CorruptionError(f"--splits ratios must be finite and positive (leave out a split that gets nothing), got {shown}")
    if abs(sum(ratios.values()) - 1) > 1e-9:
        raise CorruptionError(f"--splits ratios must sum to 1, got {shown}")


def split_of(doc_id: str, ratios: dict[str, float]) -> str:
    """The split of a document, fixed by the sha256 of its id: the same story always lands in the same split."""
    point = int(hashlib.sha256(f"cohbench-corrupt-split\x00{doc_id}".encode()).hexdigest()[:15], 16) / 16**15
    total = 0.0
    for name, ratio in ratios.items():
        total += ratio
        if point < total:
            return name
    return next(reversed(ratios))  # a point that rounding left past the last bound


def check_corpus_name(corpus: str) -> None:
    """The corpus column's value names the corpus card (cards/<corpus>.md) that a release's index and viewer read."""
    if not PLAIN_NAME.fullmatch(corpus):
        raise CorruptionError(f"--corpus {corpus!r} is not a corpus name: use lowercase letters, digits and _, starting with a "
                              "letter, at most 64")


def check_config_name(config: str) -> None:
    """A config name becomes OUT/data/<config>/, OUT/stats/<config>.json and a view of `cohbench sql --release OUT`
    (`sql.config_name_refusal`)."""
    from ..sql import config_name_refusal

    refusal = config_name_refusal(config)
    if refusal:
        raise CorruptionError(f"--config {config!r} {refusal}")
