"""Reference scorers of whole summaries (StorySumm's faithfulness labels, SummEval's coherence ratings): one number
per record, higher = more likely an error (unfaithful, or less coherent), from the summary's text and, where the
record carries one, its source.

- length: words in the summary: how far a measure only tracks how much a summary says (on the 0.2.0 release,
  StorySumm test AUC 40.4, so unfaithful summaries are if anything shorter; SummEval tau_sum -0.060).
- source novelty: the share of the summary's content words (not stop words) absent from the source, so a summary
  that invents what the source does not say scores high. It needs a source (`source_text`).
"""

from __future__ import annotations

import re

from .scoring_input import Scored

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def summary_length(data: Scored) -> list[float]:
    return [float(len(_words(" ".join(text)))) for text in data.texts]


def source_novelty(data: Scored) -> list[float]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as STOP

    out = []
    for text, record in zip(data.texts, data.records):
        source = set(_words(record["source_text"]))
        content = [w for w in _words(" ".join(text)) if w not in STOP]
        out.append(sum(w not in source for w in content) / len(content) if content else 0.0)
    return out
