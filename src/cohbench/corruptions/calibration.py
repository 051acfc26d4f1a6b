"""Remake the shipped BERTScore rescaling baseline (`bertscore_baseline.json`) from random sentence pairs of the
narrative corpora's training splits, as bert-score's authors did for their encoders (with Common Crawl)."""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic import write_text
from .bertscore import BASELINE_FILE, compute_baseline, load_baseline


def training_sentences() -> dict[str, list[str]]:
    """Sentences of the TimeTravel train split (the coherent stories, before any corruption), by corpus."""
    from ..builders import timetravel
    from ..fetch import fetch

    records, _, _ = timetravel.coherent_records(fetch(timetravel.CORPUS), "calibration")
    return {"timetravel/train": [s for r in records if r["split"] == "train" for s in r["sentences"]]}


def calibrate(pairs: int = 5000, seed: int = 13, target: Path = BASELINE_FILE) -> dict:
    sources = training_sentences()
    sentences = [s for group in sources.values() for s in group]
    baseline = compute_baseline(sentences, pairs=pairs, seed=seed)
    baseline["sentences_from"] = {name: len(group) for name, group in sources.items()}
    write_text(target, json.dumps(baseline, indent=2, sort_keys=True) + "\n")
    load_baseline.cache_clear()
    return baseline

