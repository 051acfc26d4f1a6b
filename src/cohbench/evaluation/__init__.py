"""One evaluation contract: every protocol is one declaration (`protocol.Protocol`, the built-ins in
`declarations`), read by one predictions/scores reader (`reader`), scored by `run.evaluate`, and summarised by a
headline metric with a bootstrap CI over documents (`headline`, `paired_difference`).

Modules: `protocol` (the declaration and registry), `declarations` (the built-in protocols), `reader` (prediction
and score files), `metrics` (binary and ranking metrics), `detection` (units and detection metrics), `snac_types`
(SNaC's per-type scores), `bootstrap` (vectorised resampling), `run` (`evaluate`, `summary_lines`), `headline`;
the SummEval meta-evaluation: `rating_grid` (the document x system grid), `kendall` (τ-b arithmetic), `bias` (the
bias matrix and its plot), `rating_references` (the paper's reference measures, registered in `references`, the one registry of reference scorers of every unit), `ratings` (the full report).
"""

from .declarations import judged_on_preceding, protocol_of, protocols, unit_of
from .headline import headline, paired_difference
from .protocol import PROTOCOLS, Criterion, Headline, PredictionsError, Protocol, declare
from .run import evaluate, summary_lines

__all__ = [
    "PROTOCOLS", "Criterion", "Headline", "PredictionsError", "Protocol", "declare", "evaluate", "headline", "judged_on_preceding",
    "paired_difference", "protocol_of", "protocols", "summary_lines", "unit_of",
]  # fmt: skip
