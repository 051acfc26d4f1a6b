"""The baseline's margin over the best reference scorer on a config: the paired-bootstrap difference of the two
headline figures on the same resampled test documents, with its 95% CI. The train stage writes it into the card
(`metrics.md`, no margin claimed where the CI covers zero); the gate asks its lower bound to clear
`baseline.margin_over_references`, so a heuristic within noise of the baseline fails."""

from __future__ import annotations

from collections.abc import Mapping

SPLIT = "test"
SAMPLES, SEED = 1000, 0


def margin(config: str, baseline, references: Mapping[str, object], splits: Mapping[str, list[dict]],
           protocol: str | None = None) -> dict | None:
    """{best_reference, metric, baseline, reference, difference, ci, documents, samples, split} for the baseline's
    predictions against the best non-oracle reference (highest headline on the split); None when the config has no
    such split or no reference with a defined headline."""
    from ..evaluation import headline, paired_difference
    from ..evaluation import references as reference_scorers

    if SPLIT not in splits:
        return None
    figures = {name: headline(config, lines, splits=splits, split=SPLIT, samples=0, seed=SEED, protocol=protocol)["value"]
               for name, lines in references.items() if not reference_scorers.REFERENCES[name].oracle}
    defined = {name: value for name, value in figures.items() if value is not None}
    if not defined:
        return None
    best = max(defined, key=defined.get)
    paired = paired_difference(config, baseline, references[best], splits=splits, split=SPLIT, samples=SAMPLES, seed=SEED,
                               protocol=protocol)
    return {"best_reference": best, "metric": paired["metric"], "split": SPLIT, "baseline": paired["value_a"],
            "reference": paired["value_b"], "difference": paired["difference"], "ci": paired["ci"],
            "documents": paired["documents"], "samples": paired["samples"], "seed": SEED}  # fmt: skip


def claimed(m: dict | None) -> bool:
    """Whether the card may claim a margin: the whole 95% CI of the difference lies above zero."""
    return bool(m and m["ci"] and m["ci"][0] > 0)
