"""The bundled baseline: Cai et al.'s sentence-level detector trained on every release, scored with the
evaluation protocols, and held to floors (the gate) before a release is accepted.

`train()` reads the train splits of the incoherence configs named in `params.yaml` (`baseline.train_configs`; one
not built or without labels is refused), selects the epoch with the best mean dev AUC over those configs, and scores
every built config that a sentence or gap head applies to (its dev and test splits; test-only configs such as
`storycloze_dsd` get the threshold tuned on the training configs' dev splits), except the configs of
`baseline.sentence_features` (SNaC), which the sentence-feature head (`feature_model`) trains on and scores.
Outputs in `<release>/baseline/`: metrics.json, metrics.md (rendered into the card), predictions/<scorer>/<config>.jsonl
(the baseline's and every reference scorer's).
"""

from .data import BaselineError, Example, baseline_params
from .release_baseline import metrics_markdown, train

__all__ = ["BaselineError", "Example", "baseline_params", "metrics_markdown", "train"]
