"""Studies of the baseline that answer "is data what limits the score?" and "does synthetic data transfer?".

- learning curve: test AUC on TimeTravel DSD and MSD against the number of training stories (all instances of a
  story go together), for the sentence-level model (and the token-level model where a budget is given);
- transfer to SNaC (`transfer.py`): which synthetic data teaches which human error.

They train many models, so they are commands (`cohbench study ...`) whose results are committed to `catalog/`
(JSON + plot), not stages of every release build.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .. import jsonout, settings
from ..atomic import atomic_path
from ..display import percent
from ..evaluation import metrics
from .data import BaselineError, Example, baseline_params, examples_of, labelled_units, release_data, release_vectors, training_sets



def _study(name: str):
    studies = baseline_params().get("studies") or {}
    if name not in studies:
        raise BaselineError(f"params.yaml has no `baseline.studies.{name}`; restore it from the repository")
    return studies[name]


def _stories(examples: list[Example], data: dict) -> dict[str, str]:
    """record id -> story (doc_id), so that the instances of one story are sampled together."""
    doc = {r["id"]: r["doc_id"] for c in {e.config for e in examples} for r in data[c]["train"]}
    return {e.id: doc[e.id] for e in examples}


def _unit_scores(examples: list[Example], predicted) -> tuple[np.ndarray, np.ndarray]:
    """Gold labels and scores of one config's labelled units, as arrays."""
    gold, scores = [], []
    for g, s in labelled_units(examples, predicted).values():
        gold += g
        scores += [float(score) for score in s]
    return np.array(gold), np.array(scores)


def _sentence_model(train_set, dev_set, scored: dict[str, list[Example]], p: dict, vectors: dict, prefix: bool = False) -> dict:
    from . import sentence_level_fit as fit

    model, selection = fit.fit(train_set, dev_set, vectors, p, False)
    score = fit.predict_prefixes if prefix else fit.predict
    return {c: _unit_scores(ex, score(model, ex, vectors, p["max_sentences"])) for c, ex in scored.items()} | {
        "_selection": selection
    }


def _token_model(train_set, dev_set, scored: dict[str, list[Example]], p: dict, vectors=None, prefix: bool = False) -> dict:
    from . import token_level

    model, selection = token_level.fit(train_set, dev_set, p, False)
    return {c: _unit_scores(ex, token_level.predict(model, ex, prefix=prefix)) for c, ex in scored.items()} | {
        "_selection": selection
    }


def _summary(gold: np.ndarray, scores: np.ndarray) -> dict:
    return {"units": int(len(gold)), "errors": int(gold.sum())} | metrics.ranking_report(gold, scores)


def learning_curve(*, release: Path | None = None, sizes=(500, 1500, 3000, None), seeds=(0,), token_sizes=(),
                   token_params: dict | None = None, progress: bool = True) -> dict:
    """Test AUC/AP on TimeTravel DSD and MSD against the number of training stories drawn (with the seed) from
    the baseline's training configs; `None` = all of them. The token-level model runs only at `token_sizes`."""
    release = release or settings.release_dir()
    p = baseline_params()
    curve_configs = list(_study("learning_curve"))
    data, _, tasks = release_data(release)
    train_configs = [c for c in p["train_configs"] if c in data]
    missing = [c for c in curve_configs if c not in data]
    if missing:
        raise BaselineError(f"the learning curve is scored on {', '.join(curve_configs)}; build {', '.join(missing)} first")
    full_train, dev_set = training_sets(data, tasks, train_configs, p | {"max_train_records": None})
    story_of = _stories(full_train, data)
    all_stories = sorted(set(story_of.values()))
    scored = {c: examples_of(c, data[c]["test"], tasks[c]) for c in curve_configs}
    vectors = release_vectors(data, tasks, progress)
    points = []
    for seed in seeds:
        order = [all_stories[i] for i in np.random.default_rng(seed).permutation(len(all_stories))]
        for size in sizes:
            chosen = set(order[: size or len(order)])
            train_set = [e for e in full_train if story_of[e.id] in chosen]
            runs = [("sentence-level", _sentence_model, p)]
            if size in token_sizes:
                runs.append(("token-level", _token_model, token_params or {}))
            for model_name, run, params in runs:
                result = run(train_set, dev_set, scored, params | {"seed": seed}, vectors)
                point = {"model": model_name, "seed": seed, "stories": len(chosen), "records": len(train_set),
                         "selected_epoch": result["_selection"]["epoch"]}
                point |= {c: _summary(*result[c]) for c in curve_configs}
                points.append(point)
                if progress:
                    print(f"{model_name} seed {seed}, {len(chosen)} stories: "
                          + ", ".join(f"{c} AUC {percent(point[c]['auc'])}" for c in curve_configs), file=sys.stderr)
    folder = settings.catalog_dir() / "baseline"
    out = {"train_configs": train_configs, "scored_on": curve_configs, "stories_available": len(all_stories),
           "points": _merged(folder / "learning_curve.json", train_configs, points)}
    jsonout.write(folder / "learning_curve.json", out)
    _plot_curve(out, folder / "learning_curve.png")
    return out


def _merged(path: Path, train_configs: list[str], points: list[dict]) -> list[dict]:
    """This run's points, plus those of an earlier run on the same training configs at other (model, seed, size):
    the token-level model's costly points can be added without training the rest again."""
    key = lambda pt: (pt["model"], pt["seed"], pt["stories"])  # noqa: E731
    earlier = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    kept = [pt for pt in earlier.get("points", []) if earlier.get("train_configs") == train_configs
            and key(pt) not in {key(p) for p in points}]
    return sorted(kept + points, key=key)


def _plot_curve(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(result["scored_on"]), figsize=(10, 4), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, config in zip(axes, result["scored_on"]):
        for model in sorted({pt["model"] for pt in result["points"]}):
            pts = sorted((pt["stories"], 100 * pt[config]["auc"]) for pt in result["points"] if pt["model"] == model)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=model)
        ax.set_xscale("log")
        sizes = sorted({pt["stories"] for pt in result["points"]})
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_title(f"{config} (test)")
        ax.set_xlabel("training stories")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ROC-AUC, error class (%)")
    axes[0].legend()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)

