"""What an evaluation protocol is, and the one registry of them: each protocol is one `Protocol` declaration, and
everything that scores, reads or prints predictions asks the declaration instead of switching on protocol names.

A config names its protocol in the registry (`registry.spec(config).protocol`); its unit (what a model predicts:
a value per sentence, per gap between sentences, per summary, or a score per rated summary) is the protocol's.
The built-in declarations, and looking a config's protocol up, are in `declarations`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import CohbenchError
from ..names import Registry

# What a prediction line holds per record under each unit: one value per sentence, one per gap between adjacent
# sentences, or one number for the whole record.
UNITS = ("sentences", "gaps", "summary", "ratings")
CONTEXTS = ("whole text", "preceding")  # what a unit is judged with: the rest of the text, or the text before it
ERROR_POLARITY = "higher = more likely an error"
ERROR_COLUMNS = ("score", "error")  # a score file's columns read in ERROR_POLARITY (a predictions line: `score`)
# What every scorer sees of a record: the config it scores (which names the task) and the text, one entry per
# sentence. Never its id (some ids name the answer: Story Cloze's `:wrong_ending`, synthetic `:coherent`), its
# labels, spans, ratings, corruption provenance or split.
SCORER_INPUTS = ("config", "sentences")


class PredictionsError(CohbenchError):
    """Predictions (or a scores file) do not fit the config they are evaluated on."""


@dataclass(frozen=True)
class Criterion:
    """How a score threshold is tuned on the validation split: the threshold maximising `value(gold, pred)`."""

    value: Callable  # (gold, pred) -> float | None, higher is better
    description: str  # e.g. "maximum F1 of the error class"


@dataclass(frozen=True)
class Headline:
    """The one figure a protocol is ranked by, where it sits in a split's metrics, and how it is resampled."""

    name: str  # e.g. "auc"
    path: tuple[str, ...]  # keys into a split's metrics, e.g. ("sentence", "auc")
    higher_is_better: bool = True
    thresholded: bool = False  # needs a binary decision (labels, or a threshold not tuned on the reported split)


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol, declared once.

    `metrics(rows, predictions, threshold) -> dict` scores one split's records (threshold None: the predictions'
    labels if they have them, else only the threshold-free metrics). `headline_statistic(rows, predictions,
    threshold) -> (sizes, statistic)` gives the resampled dimensions (documents first) and a `bootstrap.Statistic`
    of the headline figure over them. `criterion` is None where no threshold applies (correlation protocols).
    `extra_fields` are prediction keys beyond `score`/`label` that this protocol reads: key -> parser(value, record).
    `lines(split, metrics) -> list[str]` prints one split's metrics.
    """

    name: str
    unit: str  # one of UNITS
    description: str  # the paper and what is measured
    metrics: Callable[..., dict]
    headline: Headline
    headline_statistic: Callable
    lines: Callable[[str, dict], list[str]]
    criterion: Criterion | None = None
    context: str = "whole text"  # one of CONTEXTS
    scores: str = ERROR_POLARITY  # what a higher score means for this protocol's unit
    # (key, meaning): a score in the polarity this corpus's users think in, higher = better (SummEval's coherence),
    # accepted beside `score` under its own name and negated on reading; a line or file giving both is refused
    better_score: tuple[str, str] | None = None
    extra_fields: Mapping[str, Callable] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()  # record fields a scorer also sees beyond SCORER_INPUTS (a source, a system)
    combined_row: bool = False  # also report the evaluation splits together as "full" (StorySumm's Tables 7-8)

    def __post_init__(self):
        if self.unit not in UNITS:
            raise CohbenchError(f"protocol {self.name!r} declares unit {self.unit!r}; units: {', '.join(UNITS)}")
        if self.context not in CONTEXTS:
            raise CohbenchError(f"protocol {self.name!r} declares context {self.context!r}; contexts: {', '.join(CONTEXTS)}")
        if self.headline.thresholded and self.criterion is None:
            raise CohbenchError(f"protocol {self.name!r} has a thresholded headline metric but no criterion to tune a threshold")

    def own_keys(self) -> tuple[str, ...]:
        """Prediction keys this protocol reads besides `score` and `label`."""
        return (*self.extra_fields, *(self.better_score[:1] if self.better_score else ()))

    def scorer_view(self, record: Mapping) -> dict:
        """What a scorer is given of `record`: SCORER_INPUTS and this protocol's `inputs`, copied, so that no scorer
        sees an answer or changes what another is scored against."""
        return {key: copy.deepcopy(record.get(key)) for key in (*SCORER_INPUTS, *self.inputs)}

    def width(self, record: Mapping) -> int | None:
        """How many entries a prediction's lists need for `record` (None: one number per record)."""
        if self.unit in ("summary", "ratings"):
            return None
        n = len(record["sentences"])
        return n - 1 if self.unit == "gaps" else n


PROTOCOLS: Registry[Protocol] = Registry("protocol")


def declare(protocol: Protocol) -> Protocol:
    """Add a protocol to the registry; configs then name it in their `ConfigSpec.protocol`."""
    return PROTOCOLS.register(protocol.name, protocol)


def extra_field_names() -> set[str]:
    """Prediction keys some declared protocol reads besides score and label (a key meant for another protocol is
    an error)."""
    return {key for p in PROTOCOLS.values() for key in p.own_keys()}
