"""`cohbench study transfer`: which synthetic data teaches which human error (Goyal et al. §5, Fig. 7, Table 10).

For each synthetic config of the release and each recipe run over coherent narratives (or recipes pooled, `a+b`),
the baseline's sentence-feature head (`feature_model`) is trained on that data alone and scored on the target's test
split (SNaC), each sentence read against the sentences before it: ROC-AUC over all sentences and per error type (the
sentences of that type against the sentences without an error), each with a 95% CI over resampled test documents,
and recall at precision 0.70 (App. C.3: one threshold for all sentences, recall counted within each type), beside the
head trained on the target's own train split (FT) and the best untrained reference. Written to
`catalog/baseline/<target>_transfer.json`, a heatmap `<target>_transfer.png` and the card's table
`<target>_transfer.md`.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from .. import jsonout, settings
from ..atomic import atomic_path, write_text
from ..display import percent
from ..schema import COHERENCE_ERROR_TYPES, ERROR_TYPES
from .data import BaselineError, Example, baseline_params, examples_of, release_data, training_sets

TYPES = ("CharE", "SceneE", "RefE", "InconE")  # SNaC's coherence error types that Table 10 reports
SAMPLES = 1000


def _study() -> dict:
    study = (baseline_params().get("studies") or {}).get("transfer")
    if not study:
        raise BaselineError("params.yaml has no `baseline.studies.transfer`; restore it from the repository")
    return study


def check_types(types) -> tuple[str, ...]:
    unknown = [t for t in types if t not in COHERENCE_ERROR_TYPES]
    if unknown:
        raise BaselineError(f"{', '.join(unknown)} is no error type SNaC counts; choose from {', '.join(COHERENCE_ERROR_TYPES)}")
    return tuple(types)


def sentence_types(record: dict) -> list[set[str]]:
    """The error types of each sentence, from the record's spans."""
    out = [set() for _ in record["sentences"]]
    for span in record["spans"]:
        if span["first_sentence"] is not None:
            for i in range(span["first_sentence"], span["last_sentence"] + 1):
                out[i].add(ERROR_TYPES[span["type"]])
    return out


def recipe_examples(recipe: str, narratives: list[dict], seed: int, instances: int) -> tuple[list[Example], Counter]:
    """The recipe's records over the narratives, as sentence examples, and what it could not make, by reason."""
    from ..corruptions import recipes

    outputs, dropped = recipes.run(recipe, narratives, {"seed": seed, "instances": instances})
    made = [r for out in outputs for r in out]
    return examples_of(recipe, made, "sentences"), dropped


def narratives(study: dict) -> list[dict]:
    """Coherent train-split narratives for the recipes: FairytaleQA's stories (the first `max_stories` of its stable
    order, null: all) cut into windows of `narrative_window` sentences (public-domain books, the nearest to SNaC's
    book summaries in the mirror)."""
    import dataclasses

    from ..builders.fairytaleqa import FairytaleOptions, windows
    from ..fetch import fetch
    from ..registry import lookup

    options = dataclasses.replace(FairytaleOptions.from_params(settings.params()), window=study["narrative_window"],
                                  max_stories_per_split=study["max_stories"])
    records, _, _, _ = windows(fetch(lookup("fairytaleqa")), "transfer", options)
    return [r for r in records if r["split"] == "train"]


def _score(gold, scores, document, types_of, types) -> dict:
    from ..evaluation import bootstrap, metrics

    gold, scores, document = np.asarray(gold), np.asarray(scores, dtype=float), np.asarray(document)
    report = {"all": {"units": int(len(gold)), "errors": int(gold.sum())} | metrics.ranking_report(gold, scores)}
    clean = gold == 0
    masks = {"all": np.ones(len(gold), dtype=bool)} | {t: clean | np.array([t in ts for ts in types_of]) for t in types}
    statistics = [bootstrap.auc_statistic(gold[m], scores[m], document[m]) for m in masks.values()]
    intervals = bootstrap.resample(statistics, [int(document.max()) + 1], samples=SAMPLES, seed=0)
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], np.cumsum(gold[order])
    tie_ends = np.r_[ranked[1:] != ranked[:-1], True]  # a threshold flags a whole run of tied scores
    reached = np.flatnonzero(tie_ends & (hits / np.arange(1, len(gold) + 1) >= metrics.RECALL_AT_PRECISION))
    # the most sentences flagged at precision >= 0.70, one threshold for every type (App. C.3)
    flagged = scores >= ranked[reached.max()] if len(reached) else np.zeros(len(gold), dtype=bool)
    for (name, mask), values in zip(masks.items(), intervals):
        typed = mask & (gold == 1)
        block = report.setdefault(name, {"units": int(typed.sum())})
        block["auc"] = metrics.roc_auc(gold[mask].tolist(), scores[mask].tolist())
        block["auc_ci"] = bootstrap.percentile_interval(values)
        block["recall_at_p70"] = float(flagged[typed].mean()) if typed.any() else None
    return report


def pooled(entry: str) -> list[str]:
    """The recipes of a `recipes` entry: `a+b` trains on a's and b's records together (cohbench's pooling; Goyal et al.
    train one model per method), each recipe's at most `max_records`."""
    return entry.split("+")


def transfer(*, release: Path | None = None, seed: int = 0, types=TYPES, recipes: list[str] | None = None,
             progress: bool = True) -> dict:
    from ..corruptions.recipes import RECIPES
    from ..evaluation import references
    from . import feature_model, features
    from .. import numerics

    types = check_types(types)
    release = release or settings.release_dir()
    study = _study()
    entries = study["recipes"] if recipes is None else recipes
    for recipe in {r for entry in entries for r in pooled(entry)}:
        RECIPES[recipe]  # an unknown name is refused before the narratives are read
    p = baseline_params()
    head_params = p["sentence_features"] | {"seed": seed}
    data, protocols, tasks = release_data(release)
    target = study["target"]
    for config in [target, *study["synthetic"]]:
        if config not in data:
            raise BaselineError(f"the transfer study needs {config}; build it first")
        if tasks.get(config) != "sentences":
            raise BaselineError(f"{config} has no sentence labels for the transfer study")
    test = examples_of(target, data[target]["test"], "sentences")
    sources: dict[str, tuple[list[Example], dict]] = {}
    own_train, own_dev = training_sets(data, tasks, [target], p | {"max_train_records": None})
    sources[f"FT ({target} train)"] = (own_train + own_dev, {})
    rng = np.random.default_rng(seed)
    for config in study["synthetic"]:
        train, _ = training_sets(data, tasks, [config], p | {"max_train_records": study["max_records"]})
        sources[config] = (train, {})
    stories = narratives(study) if entries else []
    made_by: dict[str, tuple[list[Example], Counter]] = {}  # each recipe run once, whichever rows pool it
    for entry in entries:
        for recipe in pooled(entry):
            if recipe not in made_by:
                made, dropped = recipe_examples(recipe, stories, seed, study["instances"])
                if len(made) > study["max_records"]:
                    made = [made[i] for i in sorted(rng.choice(len(made), study["max_records"], replace=False))]
                made_by[recipe] = made, dropped
        sources[f"recipe {entry}"] = ([e for r in pooled(entry) for e in made_by[r][0]],
                                      {"narratives": len(stories), "dropped": {r: dict(made_by[r][1]) for r in pooled(entry)}})
    from ..embedding_store import sentence_vectors

    sentences = {s for examples, _ in sources.values() for e in examples for s in e.sentences} | {s for e in test for s in e.sentences}
    vectors = sentence_vectors(sentences, progress=progress)
    analyses = features.analyse(sorted(sentences))
    by_id = {r["id"]: r for r in data[target]["test"]}
    docs = {doc: n for n, doc in enumerate(sorted({r["doc_id"] for r in by_id.values()}))}
    gold, document, types_of = [], [], []
    for e in test:
        typed = sentence_types(by_id[e.id])
        for i, label in enumerate(e.sentence_labels):
            if label >= 0:
                gold.append(label)
                document.append(docs[by_id[e.id]["doc_id"]])
                types_of.append(typed[i])
    rows = {}
    for name, (examples, account) in sources.items():
        classes = {label for e in examples for label in e.sentence_labels if label >= 0}
        if classes != {0, 1}:
            why = "made no labelled record" if not classes else "made records of one class only: nothing to tell apart"
            rows[name] = account | {"records": len(examples), "why": why}
            if progress:
                print(f"{name}: {why}; left out", file=sys.stderr)
            continue
        with numerics.training_arithmetic():
            head = feature_model.fit(examples, [], vectors, analyses, head_params)
            predicted = feature_model.predict(head, test, vectors, analyses)
        scores = [float(s[i]) for e, s in zip(test, predicted) for i, label in enumerate(e.sentence_labels) if label >= 0]
        rows[name] = account | {"records": len(examples), "l2": head.l2} | _score(gold, scores, document, types_of, types)
        if progress:
            print(f"{name}: {target} test AUC {percent(rows[name]['all']['auc'])}", file=sys.stderr)
    lines = {n: references.predictions(n, data[target], protocols[target], vectors)
             for n in references.scorers_for("sentences") if references.applicable(n, data[target], "sentences")
             and not references.REFERENCES[n].oracle}
    reference_rows = {}
    for name, predictions in lines.items():
        by_unit = {x["id"]: x["score"] for x in predictions}
        scores = [float(by_unit[e.id][i]) for e in test for i, label in enumerate(e.sentence_labels) if label >= 0]
        reference_rows[f"untrained {name}"] = {"records": 0} | _score(gold, scores, document, types_of, types)
    if reference_rows:
        best = max(reference_rows, key=lambda n: reference_rows[n]["all"]["auc"] or 0)
        rows[f"best reference: {best.removeprefix('untrained ')}"] = reference_rows[best]
    stories_used = f"FairytaleQA train stories ({study['max_stories'] or 'all'}) in windows of {study['narrative_window']} sentences"
    out = {"seed": seed, "target": target, "types": list(types), "model": "the baseline's sentence-feature head",
           "narratives": stories_used, "results": rows}
    folder = settings.catalog_dir() / "baseline"
    jsonout.write(folder / f"{target}_transfer.json", out)
    write_text(folder / f"{target}_transfer.md", table(out))
    _heatmap(out, folder / f"{target}_transfer.png")
    return out


def table(out: dict) -> str:
    head = ["trained on", "records", f"{out['target']} test AUC [95% CI]", *out["types"], "R@P70"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, row in out["results"].items():
        if "all" not in row:
            lines.append(f"| {name} | {row['records']} | {row['why']} |" + " |" * (len(head) - 3))
            continue
        cell = lambda b: f"{percent(b['auc'])} [{percent(b['auc_ci'][0])}, {percent(b['auc_ci'][1])}]" if b.get("auc_ci") else percent(b.get("auc"))  # noqa: E731
        lines.append(f"| {name} | {row['records']} | {cell(row['all'])} | " + " | ".join(cell(row[t]) for t in out["types"])
                     + f" | {percent(row['all']['recall_at_p70'])} |")
    return "\n".join(lines) + "\n"


def _heatmap(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, row in out["results"].items() if "all" in row]
    columns = ["all", *out["types"]]
    values = np.array([[100 * (out["results"][n][c]["auc"] or np.nan) for c in columns] for n in names])
    fig, ax = plt.subplots(figsize=(1.3 * len(columns) + 3, 0.45 * len(names) + 1.5))
    image = ax.imshow(values, cmap="RdYlGn", vmin=40, vmax=90)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(names)), names)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8)
    ax.set_title(f"{out['target']} test ROC-AUC by error type (trained on the row alone)")
    fig.colorbar(image, ax=ax, fraction=0.03)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
