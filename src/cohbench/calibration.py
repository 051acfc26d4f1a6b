"""The BERTScore rescaling baseline that `incoherence.tau` applies to, remade from the release's own sentences
(`cohbench calibrate`): random pairs of TimeTravel train sentences (coherent stories, before any corruption, under
params.yaml's TimeTravel options), as bert-score's authors drew theirs from Common Crawl for their encoders."""

from __future__ import annotations

from pathlib import Path

from . import jsonout, settings
from .corpora.fetch import fetch
from .corpora.registry import lookup
from .corruptions.bertscore import BASELINE_FILE, compute_baseline, load_baseline


def calibration_sentences(params: dict | None = None) -> dict[str, list[str]]:
    """The sentences the rescaling baseline is drawn from, by source."""
    timetravel = lookup("timetravel")
    opts = timetravel.configs[0].generator_options(params)  # its configs cut and split the stories alike
    records = timetravel.narratives(fetch(timetravel), "calibration", opts)
    return {"timetravel/train": [s for r in records if r["split"] == "train" for s in r["sentences"]]}


def calibrate(pairs: int = 5000, seed: int = 13, target: Path = BASELINE_FILE, params: dict | None = None) -> dict:
    """Remake `bertscore_baseline.json` from `pairs` random pairs of `calibration_sentences` (measured: reproduces
    the shipped file). A `target` inside a release is refused before any work (`settings.user_output`)."""
    target = settings.user_output(target)
    sources = calibration_sentences(params)
    baseline = compute_baseline([s for group in sources.values() for s in group], pairs=pairs, seed=seed)
    baseline["sentences_from"] = {name: len(group) for name, group in sources.items()}
    jsonout.write(target, baseline)
    load_baseline.cache_clear()
    return baseline
