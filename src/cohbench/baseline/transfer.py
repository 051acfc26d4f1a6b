"""`cohbench study transfer`: which synthetic data teaches which human error (Goyal et al. §5, Fig. 7, Table 10).

For each synthetic config of the release and each recipe run over coherent narratives (or recipes pooled, `a+b`),
the baseline's sentence-feature head (`feature_model`) is trained on that data alone and scored on the target's test
split (SNaC), each sentence read against the sentences before it: ROC-AUC over all sentences and per error type (the
sentences of that type against the sentences without an error), each with a 95% CI over resampled test documents,
and recall at precision 0.70 (App. C.3: one threshold for all sentences, recall counted within each type), beside the
head trained on the target's own train split (FT) and the best untrained reference. Each synthetic-only row is also
scored on the target's `choose_on` splits (train + validation, pooled: it never trains on them), and the row highest
there is named the synthetic-only model; its test figures are reported, never read to choose it. Written to
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


def recipe_examples(recipe: str, narratives: list[dict], seed: int, instances: int) -> tuple[list[list[Example]], Counter]:
    """The recipe's records made from each narrative, as sentence examples, and what it could not make, by reason."""
    from ..corruptions import recipes

    outputs, dropped = recipes.run(recipe, narratives, {"seed": seed, "instances": instances})
    return [examples_of(recipe, out, "sentences") for out in outputs], dropped


def mixture_examples(entry: str, made: dict[str, list[list[Example]]], narratives: list[dict], seed: int) -> list[Example]:
    """A mixture's records (`a:0.5+b:0.5`), exactly as `cohbench corrupt --recipe` makes them from the narratives:
    each narrative's records from the one recipe it is drawn to (`recipes.assigned`)."""
    from ..corruptions import recipes

    shares = recipes.proportions(entry)
    return [e for n, story in enumerate(narratives) for e in made[recipes.assigned(seed, story["id"], shares)][n]]


def components(entry: str) -> list[str]:
    """The recipes of a `recipes` entry: `a+b` pools a's and b's records (each at most `max_records`); `a:0.4+b:0.6`
    is a mixture, each narrative given to one recipe with those proportions (`mixture_examples`)."""
    from ..corruptions import recipes

    return list(recipes.proportions(entry)) if ":" in entry else pooled(entry)


def narratives(study: dict) -> tuple[list[dict], int]:
    """Coherent train-split narratives for the recipes, and the instances asked of each: the train windows of the
    `narratives` config (FairytaleQA's stories, the first `max_stories` of their stable order, null: all, cut into
    longer windows; public-domain books, the nearest to SNaC's book summaries in the mirror)."""
    import dataclasses

    from ..corpora.fetch import fetch
    from ..corpora.registry import lookup, spec

    options = spec(study["narratives"]).generator_options()
    options = dataclasses.replace(options, fairytale=dataclasses.replace(options.fairytale, max_stories_per_split=study["max_stories"]))
    records, _, _, _ = options.narratives(fetch(lookup(study["narratives"])), "transfer")
    return [r for r in records if r["split"] == "train"], options.instances


def _units(examples: list[Example], records: dict[str, dict]) -> tuple[list[int], list[int], list[set[str]]]:
    """The gold label, document number and error types of each labelled sentence of `examples`."""
    docs = {doc: n for n, doc in enumerate(sorted({records[e.id]["doc_id"] for e in examples}))}
    gold, document, types_of = [], [], []
    for e in examples:
        typed = sentence_types(records[e.id])
        for i, label in enumerate(e.sentence_labels):
            if label >= 0:
                gold.append(label)
                document.append(docs[records[e.id]["doc_id"]])
                types_of.append(typed[i])
    return gold, document, types_of


def _labelled(examples: list[Example], predicted) -> list[float]:
    return [float(s[i]) for e, s in zip(examples, predicted) for i, label in enumerate(e.sentence_labels) if label >= 0]


def choice_splits(study: dict, target_splits: dict) -> list[str]:
    """The target's splits the synthetic-only model is chosen on: never test, which it is reported on."""
    splits = study.get("choose_on") or []
    if not splits or "test" in splits or any(s not in target_splits for s in splits):
        raise BaselineError(f"baseline.studies.transfer.choose_on must name {study['target']}'s splits other than test "
                            f"({', '.join(s for s in target_splits if s != 'test')}); it names {', '.join(splits) or 'none'}")
    return list(splits)


def _masks(units, types) -> dict[str, np.ndarray]:
    """The units each AUC is taken over: all, and per type that type's errors with the clean units."""
    gold, _, types_of = units
    clean = np.asarray(gold) == 0
    return {"all": np.ones(len(gold), dtype=bool)} | {t: clean | np.array([t in ts for ts in types_of], dtype=bool) for t in types}


def paired(units, scores_a, scores_b, types) -> dict:
    """B's AUC minus A's, overall and per type, with a 95% CI from resampling the same documents for both."""
    from ..evaluation import bootstrap, metrics

    gold, document, _ = units
    gold, document = np.asarray(gold), np.asarray(document)
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    masks = _masks(units, types)
    statistics = [bootstrap.auc_statistic(gold[m], side[m], document[m]) for side in (a, b) for m in masks.values()]
    values = bootstrap.resample(statistics, [int(document.max()) + 1], samples=SAMPLES, seed=0)
    out = {}
    for k, (name, m) in enumerate(masks.items()):
        sides = [metrics.roc_auc(gold[m].tolist(), side[m].tolist()) for side in (a, b)]
        if None in sides:  # no error of this type among the units: no figure, no difference
            out[name] = {"difference": None, "ci": None}
            continue
        out[name] = {"difference": sides[1] - sides[0], "ci": bootstrap.percentile_interval(values[len(masks) + k] - values[k])}
    return out


def _score(units, scores, types) -> dict:
    """AUC overall and per type with 95% CIs over resampled documents, and recall at P=0.70, of `units` (`_units`)."""
    from ..evaluation import bootstrap, metrics

    gold, document, types_of = units
    gold, scores, document = np.asarray(gold), np.asarray(scores, dtype=float), np.asarray(document)
    report = {"all": {"units": int(len(gold)), "errors": int(gold.sum())} | metrics.ranking_report(gold, scores)}
    masks = _masks(units, types)
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


def _capped(made: list[Example], limit: int, rng: np.random.Generator) -> list[Example]:
    """At most `limit` of `made`, drawn with the study's generator (in the order rows are made)."""
    if len(made) <= limit:
        return made
    return [made[i] for i in sorted(rng.choice(len(made), limit, replace=False))]


def pooled(entry: str) -> list[str]:
    """The recipes of a `recipes` entry: `a+b` trains on a's and b's records together (cohbench's pooling; Goyal et al.
    train one model per method), each recipe's at most `max_records`."""
    return entry.split("+")


def transfer(*, release: Path | None = None, seed: int = 0, types=TYPES, recipes: list[str] | None = None,
             progress: bool = True) -> dict:
    from ..corruptions import recipes as recipes_module
    from ..corruptions.recipes import RECIPES
    from ..evaluation import references
    from .. import sentence_cues
    from . import feature_model
    from .. import numerics

    types = check_types(types)
    release = release or settings.release_dir()
    study = _study()
    entries = study["recipes"] if recipes is None else recipes
    for recipe in {r for entry in entries for r in components(entry)}:
        RECIPES[recipe]  # an unknown name, or a mixture that does not add up, is refused before the narratives are read
    p = baseline_params()
    head_params = p["sentence_features"] | {"seed": seed}
    synthetic_params = feature_model.for_other_text(head_params)
    data, protocols, tasks = release_data(release)
    target = study["target"]
    for config in [target, *study["synthetic"]]:
        if config not in data:
            raise BaselineError(f"the transfer study needs {config}; build it first")
        if tasks.get(config) != "sentences":
            raise BaselineError(f"{config} has no sentence labels for the transfer study")
    test = examples_of(target, data[target]["test"], "sentences")
    choose_on = choice_splits(study, data[target])
    choice = [e for split in choose_on for e in examples_of(target, data[target][split], "sentences")]
    sources: dict[str, tuple[list[Example], dict]] = {}
    own_train, own_dev = training_sets(data, tasks, [target], p | {"max_train_records": None})
    ft_row = f"FT ({target} train)"
    sources[ft_row] = (own_train + own_dev, {})
    rng = np.random.default_rng(seed)
    for config in study["synthetic"]:
        train, _ = training_sets(data, tasks, [config], p | {"max_train_records": study["max_records"]})
        sources[config] = (train, {})
    stories, instances = narratives(study) if entries else ([], 0)
    per_story: dict[str, list[list[Example]]] = {}  # each recipe run once, whichever rows pool or mix it
    made_by: dict[str, tuple[list[Example], Counter]] = {}
    for entry in entries:
        for recipe in components(entry):
            if recipe not in made_by:
                per_story[recipe], dropped = recipe_examples(recipe, stories, seed, instances)
                made_by[recipe] = _capped([e for out in per_story[recipe] for e in out], study["max_records"], rng), dropped
        account = {"narratives": len(stories), "dropped": {r: dict(made_by[r][1]) for r in components(entry)}}
        if ":" in entry:
            examples = _capped(mixture_examples(entry, per_story, stories, seed), study["max_records"], rng)
            account["proportions"] = recipes_module.proportions(entry)
        else:
            examples = [e for r in pooled(entry) for e in made_by[r][0]]
        sources[f"recipe {entry}"] = (examples, account)
    from ..embedding_store import sentence_vectors

    sentences = {s for examples, _ in sources.values() for e in examples for s in e.sentences} | {s for e in test + choice for s in e.sentences}
    vectors = sentence_vectors(sentences, progress=progress)
    analyses = sentence_cues.analyse(sorted(sentences))
    by_id = {r["id"]: r for split in ["test", *choose_on] for r in data[target][split]}
    test_units, choice_units = _units(test, by_id), _units(choice, by_id)
    rows, test_scores = {}, {}
    for name, (examples, account) in sources.items():
        classes = {label for e in examples for label in e.sentence_labels if label >= 0}
        if classes != {0, 1}:
            why = "made no labelled record" if not classes else "made records of one class only: nothing to tell apart"
            rows[name] = account | {"records": len(examples), "why": why}
            if progress:
                print(f"{name}: {why}; left out", file=sys.stderr)
            continue
        synthetic_only = name != ft_row  # FT trains on the choice splits: a figure there would be in-sample
        with numerics.training_arithmetic():
            head = feature_model.fit(examples, [], vectors, analyses, head_params if name == ft_row else synthetic_params)
            predicted = feature_model.predict(head, test, vectors, analyses)
            on_choice = feature_model.predict(head, choice, vectors, analyses) if synthetic_only else None
        rows[name] = account | {"records": len(examples), "l2": head.l2}
        if synthetic_only:
            rows[name]["choice"] = _score(choice_units, _labelled(choice, on_choice), types)
        test_scores[name] = _labelled(test, predicted)
        rows[name] |= _score(test_units, test_scores[name], types)
        if progress:
            print(f"{name}: {target} test AUC {percent(rows[name]['all']['auc'])}", file=sys.stderr)
    lines = {n: references.predictions(n, data[target], protocols[target], vectors)
             for n in references.scorers_for("sentences") if references.applicable(n, data[target], "sentences")
             and not references.REFERENCES[n].oracle}
    reference_rows, reference_scores = {}, {}
    for name, predictions in lines.items():
        by_unit = {x["id"]: x["score"] for x in predictions}
        reference_scores[name] = _labelled(test, [by_unit[e.id] for e in test])
        reference_rows[name] = {"records": 0} | _score(test_units, reference_scores[name], types)
    best = max(reference_rows, key=lambda n: reference_rows[n]["all"]["auc"] or 0) if reference_rows else None
    if best:
        rows[f"best reference: {best}"] = reference_rows[best]
    stories_used = f"the train windows of {study['narratives']} (FairytaleQA stories: {study['max_stories'] or 'all'}), {instances} instances each"
    candidates = [n for n, row in rows.items() if "choice" in row and row["choice"]["all"]["auc"] is not None]
    chosen = max(candidates, key=lambda n: rows[n]["choice"]["all"]["auc"]) if candidates else None  # first of a tie
    combined = chosen and study.get("synthetic_weights") and _synthetic_plus_human(
        chosen, sources, own_train + own_dev, test, test_units, test_scores[ft_row], vectors, analyses, head_params,
        study["synthetic_weights"], types)
    if combined:
        rows[combined["row"]] = combined.pop("result")
    out = {"seed": seed, "target": target, "types": list(types), "model": "the baseline's sentence-feature head",
           "synthetic_head": {"l2": synthetic_params["l2"][0], "centred_on": "novelty_count", "length": synthetic_params["prior"]},
           "narratives": stories_used, "choose_on": choose_on,
           "synthetic_only_model": chosen and {
               "row": chosen, "rule": f"the highest {target} {'+'.join(choose_on)} AUC among the synthetic-only rows",
               "choice_auc": rows[chosen]["choice"]["all"]["auc"], "choice_auc_ci": rows[chosen]["choice"]["all"]["auc_ci"],
               "test_auc": rows[chosen]["all"]["auc"], "test_auc_ci": rows[chosen]["all"]["auc_ci"],
               "test_recall_at_p70": rows[chosen]["all"]["recall_at_p70"],
               # what the synthetic data adds to the best untrained heuristic (its head is centred on novelty_count)
               "minus_best_reference_on_test": best and {"reference": best} | paired(
                   test_units, reference_scores[best], test_scores[chosen], types)},
           "synthetic_plus_human": combined or None, "results": rows}
    folder = settings.catalog_dir() / "baseline"
    jsonout.write(folder / f"{target}_transfer.json", out)
    write_text(folder / f"{target}_transfer.md", table(out))
    heatmap(out, folder / f"{target}_transfer.png")
    return out


def _synthetic_plus_human(chosen, sources, human, test, test_units, ft_scores, vectors, analyses, head_params, weights,
                          types) -> dict:
    """SYN+FT: the head trained on the target's train + validation pooled with the chosen synthetic-only row's records,
    their weight chosen by cross-validation on the human folds (`feature_model.fit_with_synthetic`, where weight 0 is
    FT), scored on test beside FT with a paired CI over the same resampled documents, overall and per type."""
    from .. import numerics
    from . import feature_model

    with numerics.training_arithmetic():
        head = feature_model.fit_with_synthetic(human, sources[chosen][0], vectors, analyses, head_params, weights)
        scores = _labelled(test, feature_model.predict(head, test, vectors, analyses))
    row = f"SYN+FT ({chosen.removeprefix('recipe ')} + FT)"
    weight = head.cross_validation["synthetic_weight"]
    return {"row": row, "synthetic": chosen, "synthetic_weight": weight, "weights_tried": list(weights),
            "chosen_on": "document-grouped folds of the target's train + validation (weight 0 is FT)",
            "cross_validation": head.cross_validation["mean_auc_by_weight_and_l2"],
            "minus_ft_on_test": paired(test_units, ft_scores, scores, types),
            "result": {"records": len(human) + len(sources[chosen][0]), "l2": head.l2, "synthetic_weight": weight}
            | _score(test_units, scores, types)}


def table(out: dict) -> str:
    """The card's table: each row's AUC on the choice splits (synthetic-only rows), then its test figures; the
    synthetic-only model chosen on the former is marked."""
    chosen = (out["synthetic_only_model"] or {}).get("row")
    on = "+".join(out["choose_on"])
    head = ["trained on", "records", f"{out['target']} {on} AUC [95% CI]", f"{out['target']} test AUC [95% CI]", *out["types"], "R@P70"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    cell = lambda b: f"{percent(b['auc'])} [{percent(b['auc_ci'][0])}, {percent(b['auc_ci'][1])}]" if b.get("auc_ci") else percent(b.get("auc"))  # noqa: E731
    for name, row in out["results"].items():
        if "all" not in row:
            lines.append(f"| {name} | {row['records']} | {row['why']} |" + " |" * (len(head) - 3))
            continue
        label = f"**{name}** (chosen)" if name == chosen else name
        choice = cell(row["choice"]["all"]) if "choice" in row else ""
        lines.append(f"| {label} | {row['records']} | {choice} | {cell(row['all'])} | " + " | ".join(cell(row[t]) for t in out["types"])
                     + f" | {percent(row['all']['recall_at_p70'])} |")
    signed = lambda d: "no figure" if d["difference"] is None else (  # noqa: E731
        f"{percent(d['difference'], signed=True)} [{percent(d['ci'][0], signed=True)}, {percent(d['ci'][1], signed=True)}]")
    over = (out["synthetic_only_model"] or {}).get("minus_best_reference_on_test")
    if over:
        prior = out["synthetic_head"]
        lines += ["", f"The chosen synthetic-only row minus the untrained {over['reference']} on {out['target']} test (paired; "
                  f"the synthetic head's L2 {prior['l2']:g} is centred on novelty_count at length {prior['length']:g}, so this is "
                  "what the synthetic data adds to that prior): " + "; ".join(
                      f"{name} {signed(d)}" for name, d in over.items() if name != "reference") + "."]
    combined = out.get("synthetic_plus_human")
    if combined:
        lines += ["", f"{combined['row']} minus FT on {out['target']} test (paired, the same resampled documents; synthetic "
                  f"weight {combined['synthetic_weight']} of {combined['weights_tried']}, chosen on {combined['chosen_on']}): "
                  + "; ".join(f"{name} {signed(d)}" for name, d in combined["minus_ft_on_test"].items()) + "."]
    return "\n".join(lines) + "\n"


def _heatmap_place(item: tuple[str, dict]) -> tuple:
    """The heatmap's row order, a function of the saved figures (not of the order the study ran them): the model
    trained on the target first, then the synthetic-only rows from the best choice AUC down, the untrained
    reference last."""
    name, row = item
    if "choice" in row:
        return 1, -(row["choice"]["all"]["auc"] or 0), name
    return (0 if "l2" in row else 2), 0, name


def heatmap(out: dict, path: Path) -> None:
    """The study's figures (`out`, or its saved JSON) as a heatmap of AUCs, the chosen synthetic-only row boxed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = (out["synthetic_only_model"] or {}).get("row")
    rows = dict(sorted(((n, row) for n, row in out["results"].items() if "all" in row), key=_heatmap_place))
    names = [f"{n}  [chosen]" if n == chosen else n for n in rows]
    on = "+".join(out["choose_on"])
    columns = [f"{on} (choice)", "test: all", *out["types"]]
    values = np.array([[100 * ((row["choice"]["all"]["auc"] if "choice" in row else None) or np.nan)]
                       + [100 * (row[c]["auc"] or np.nan) for c in ["all", *out["types"]]] for row in rows.values()])
    fig, ax = plt.subplots(figsize=(0.75 * len(columns) + 0.08 * max(map(len, names)) + 1.5, 0.45 * len(names) + 1.5))
    image = ax.imshow(values, cmap="RdYlGn", vmin=40, vmax=90)
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8)
    if chosen:  # the synthetic-only model, chosen on the first column alone
        row = list(rows).index(chosen)
        ax.add_patch(plt.Rectangle((-0.5, row - 0.5), len(columns), 1, fill=False, edgecolor="black", linewidth=2))
        ax.get_yticklabels()[row].set_fontweight("bold")
    ax.set_title(f"{out['target']} ROC-AUC, trained on the row alone;\nboxed: chosen on {on}")
    fig.colorbar(image, ax=ax, fraction=0.03)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")  # no margin beside the longest row label
    plt.close(fig)
