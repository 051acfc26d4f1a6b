"""The one registry of reference scorers: untrained scorers, keyed by the unit they score (sentence, gap, summary,
rating), that every measured number is read against. A config's protocol says its unit, so every config has
references; each scorer declares what it needs of the data (a labelled train split, a source text), and
`applicable` asks the data, never the scorer's name.

A reference scorer's predictions are prediction lines like any model's (`{"id", "score"}`, higher = more likely an
error; a list per record for sentence and gap units, one number for summary and rating units), scored by the same
protocol: `cohbench evaluate CONFIG --scorer NAME`, `cohbench leaderboard --scorer NAME`. Oracles (a scorer that reads
the gold ratings, as Steen & Markert's upper bound does) are references to read a number against, never the best
reference a scorer must beat.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .. import settings
from ..names import Registry
from ..schema import TRAIN_SPLITS
from . import rating_references as rating
from . import summary_references as summary
from . import unit_references as unit
from .protocol import PROTOCOLS, PredictionsError
from .scoring_input import Scored, ScorerError

# unit -> the record field holding the gold label of each unit, for scorers that learn a prior from train
UNIT_LABELS = {"sentences": "sentence_labels", "gaps": "gap_labels"}


def _has_labelled_train(splits: Mapping[str, list[dict]], unit_name: str) -> bool:
    field = UNIT_LABELS.get(unit_name)
    return field is not None and any(
        label != -1 for split in TRAIN_SPLITS for r in splits.get(split, []) for label in (r[field] or [])
    )


def _has_source(splits: Mapping[str, list[dict]], unit_name: str) -> bool:
    scored = [r for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows]
    return bool(scored) and all(r.get("source_text") for r in scored)


# what a scorer may need of a config's data -> (the check, what to say when it fails)
NEEDS: dict[str, tuple[Callable[[Mapping, str], bool], str]] = {
    "labelled_train": (_has_labelled_train, "needs a train split labelled for its unit"),
    "source": (_has_source, "needs a source text on every scored record"),
}


@dataclass(frozen=True)
class ReferenceScorer:
    name: str
    units: frozenset[str]  # "sentences", "gaps", "summary", "ratings"
    description: str
    score: Callable[[Scored], list]  # per record: a list per unit (sentence, gap), or one number (summary, rating)
    needs: frozenset[str] = frozenset()  # keys of NEEDS
    modules: tuple[str, ...] = ()  # modules an extra installs: imported before any data is read, so a missing one is refused first
    oracle: bool = False  # reads the gold labels: a ceiling to read numbers against, never the reference to beat
    grid: rating.ReferenceMeasure | None = None  # rating measures: the document x system grid, higher = more coherent


def _rating_measure(grid: rating.ReferenceMeasure, oracle: bool) -> Callable[[Scored], list[float]]:
    """A meta-evaluation measure (a score per cell of the rated corpus's document x system grid, higher = more
    coherent, seed 0 where it draws) as record scores in the error polarity every prediction uses: negated. Only an
    oracle is given the ratings (whole records); the others lay the scorer views on the grid."""

    def score(data: Scored) -> list[float]:
        from .rating_grid import human_scores, summary_grid

        layout = human_scores(data.records) if oracle else summary_grid(data.records)
        values = grid(layout, np.random.default_rng(0))
        doc, system = {d: i for i, d in enumerate(layout.docs)}, {s: i for i, s in enumerate(layout.systems)}
        return [float(-values[doc[r["doc_id"]], system[r["system"]]]) for r in data.records]

    return score


SENTENCE, GAP, SUMMARY, RATING = (frozenset({u}) for u in ("sentences", "gaps", "summary", "ratings"))
_RATING_MEASURES = {  # Steen & Markert §4.2's reference measures (rating_references), as rating references
    "uppercase": ("number of upper-case letters (Steen & Markert §4.2)", rating.uppercase),
    "architecture": ("1 for systems built on pretrained transformers (Steen & Markert §4.2)", rating.architecture),
    "upper-bound": ("the system's mean human score (Steen & Markert §4.2; an oracle)", rating.upper_bound),
    "random": ("uniform random scores, seed 0", rating.random_scores),
    "uppercase-noised": ("uppercase with tie-breaking noise", rating.noised(rating.uppercase)),
    "architecture-noised": ("architecture with tie-breaking noise", rating.noised(rating.architecture)),
    "upper-bound-noised": ("upper-bound with tie-breaking noise (an oracle)", rating.noised(rating.upper_bound)),
}
REFERENCES: Registry[ReferenceScorer] = Registry("reference scorer")
for _scorer in (
        ReferenceScorer("position_prior", SENTENCE | GAP, "train error rate at each unit position", unit.position_prior,
                        frozenset({"labelled_train"})),
        ReferenceScorer("tfidf_dissimilarity", SENTENCE, "1 - TF-IDF cosine of a sentence to its context", unit.tfidf_dissimilarity, modules=("sklearn",)),
        ReferenceScorer("embedding_dissimilarity", SENTENCE, "1 - all-MiniLM-L6-v2 cosine of a sentence to its context", unit.embedding_dissimilarity, modules=("torch",)),
        ReferenceScorer("embedding_closest_dissimilarity", SENTENCE, "1 - all-MiniLM-L6-v2 cosine of a sentence to the "
                        "closest sentence of its context", unit.embedding_closest_dissimilarity, modules=("torch",)),
        ReferenceScorer("novelty_count", SENTENCE, "new names, PERSON and other entities, names absent from the last two "
                        "sentences and new definites a sentence brings", unit.novelty_count, modules=("spacy",)),
        ReferenceScorer("entity_cue", SENTENCE, "new capitalised names (+ half per new definite reference) a sentence introduces",
                        unit.entity_cue, modules=("sklearn",)),
        ReferenceScorer("tfidf_gap_drop", GAP, "TF-IDF similarity drop across a gap", unit.tfidf_gap_drop, modules=("sklearn",)),
        ReferenceScorer("embedding_gap_drop", GAP, "all-MiniLM-L6-v2 similarity drop across a gap", unit.embedding_gap_drop, modules=("torch",)),
        ReferenceScorer("summary_length", SUMMARY | RATING, "words in the summary", summary.summary_length),
        ReferenceScorer("source_novelty", SUMMARY | RATING, "share of the summary's content words absent from its source",
                        summary.source_novelty, frozenset({"source"}), ("sklearn",)),
        *(ReferenceScorer(name, RATING, text, _rating_measure(grid, name.startswith("upper-bound")),
                          oracle=name.startswith("upper-bound"), grid=grid)
          for name, (text, grid) in _RATING_MEASURES.items()),
):
    REFERENCES.register(_scorer.name, _scorer)


def reference_scores(name: str, human, seed: int = 0) -> np.ndarray:
    """The document x system grid (higher = more coherent) of rating reference `name`, for `cohbench metaeval --measure`."""
    chosen = REFERENCES[name] if name in REFERENCES else None
    if chosen is None or chosen.grid is None:
        measures = [n for n, s in REFERENCES.items() if s.grid is not None]
        raise PredictionsError(f"unknown reference measure {name!r}; choose one of {', '.join(measures)}")
    return chosen.grid(human, np.random.default_rng(seed))


def scorers_for(unit_name: str) -> list[str]:
    return [name for name, s in REFERENCES.items() if unit_name in s.units]


def unmet(name: str, splits: Mapping[str, list[dict]], unit_name: str) -> str | None:
    """Why scorer `name` cannot score a config with these splits and unit, or None when it can."""
    chosen = REFERENCES[name]
    if unit_name not in chosen.units:
        return f"scores {' and '.join(sorted(chosen.units))} units, and this config's unit is {unit_name}"
    for need in sorted(chosen.needs):
        check, why = NEEDS[need]
        if not check(splits, unit_name):
            return why
    return None


def applicable(name: str, splits: Mapping[str, list[dict]], unit_name: str) -> bool:
    return unmet(name, splits, unit_name) is None


def predictions(name: str, splits: Mapping[str, list[dict]], protocol: str, vectors=None) -> list[dict]:
    """Scores of scorer `name` for every record outside the train split, as prediction lines for the protocol."""
    unit_name = PROTOCOLS[protocol].unit
    if (why := unmet(name, splits, unit_name)) is not None:
        raise ScorerError(f"{name} {why}; scorers for {unit_name} units: {', '.join(scorers_for(unit_name))}")
    chosen, declared = REFERENCES[name], PROTOCOLS[protocol]
    train = [r for split in TRAIN_SPLITS for r in splits.get(split, [])]
    scored = [r for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows]
    views = scored if chosen.oracle else [declared.scorer_view(r) for r in scored]  # an oracle reads the answers by definition
    label_field = UNIT_LABELS.get(unit_name)
    data = Scored(
        texts=[v["sentences"] for v in views],
        train_texts=[r["sentences"] for r in train],
        train_labels=[(r[label_field] or []) if label_field else [] for r in train],
        prefix_only=declared.context == "preceding",
        unit=unit_name,
        records=views,
        vectors=vectors,
    )
    values = chosen.score(data)
    if unit_name in UNIT_LABELS:
        return [{"id": r["id"], "score": [round(float(v), 6) for v in per_unit]} for r, per_unit in zip(scored, values)]
    return [{"id": r["id"], "score": round(float(v), 6)} for r, v in zip(scored, values)]


def import_modules(name: str) -> None:
    """Import what scorer `name` needs (an unknown name, or a missing extra as ModuleNotFoundError) before any
    release is read: failing after the read made the light install abort instead of printing one line."""
    for module in REFERENCES[name].modules:
        importlib.import_module(module)


def config_predictions(config: str, name: str, release=None) -> list[dict]:
    """`predictions` for a built config of the release, its protocol looked up."""
    from ..corpora.registry import spec
    from ..release.layout import read_config

    import_modules(name)
    release = release or settings.release_dir()
    splits = read_config(release, config).splits
    vectors = None
    if "torch" in REFERENCES[name].modules:  # kept in this release's cache (settings.cache_dir), never another's
        from ..embedding_store import sentence_vectors

        scored = {s for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows for s in r["sentences"]}
        vectors = sentence_vectors(scored, settings.cache_dir("embeddings", release))
    return predictions(name, splits, spec(config).protocol, vectors)


__all__ = ["REFERENCES", "ReferenceScorer", "Scored", "ScorerError", "applicable", "config_predictions", "predictions",
           "reference_scores", "scorer", "scorers_for", "unmet"]
