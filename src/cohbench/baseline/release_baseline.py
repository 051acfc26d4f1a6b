"""`cohbench train`: the baseline trained on a release, selected on validation, scored beside the reference scorers
with each config's protocol, and written to `<release>/baseline/` (metrics.json, metrics.md for the card, and the
predictions of the baseline and of every reference scorer on every config it applies to,
predictions/<scorer>/<config>.jsonl, which the leaderboard reads instead of re-running them)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .. import jsonout, numerics, settings
from ..atomic import write_text
from ..display import percent
from ..release.layout import built_configs
from ..release.versions import is_development, provenance
from ..schema import TRAIN_SPLITS
from .data import (BaselineError, baseline_params, dev_split, examples_of, folder_data, release_data, release_vectors,
                   training_sets)


def train(*, release: Path | None = None, params: dict | None = None, progress: bool = True,
          train_data: list[Path] | None = None, evaluate_on: str = "release", output: Path | None = None) -> dict:
    """Train, select on dev, score every applicable config beside the reference scorers; returns (and writes)
    the metrics. Timings of the release's training go to its timings cache (`settings.cache_dir`: the project's
    `.cache/timings/` for its own release), never into the release.

    With `train_data` (folders laid out like a release: `cohbench corrupt` outputs), the detector learns from their
    configs instead of `baseline.train_configs` and scores, for the tasks it learnt, the release's configs
    (`evaluate_on` "release") or the folders' own splits ("own"); every config is scored by that model (no
    sentence-feature head), each figure names its data, and everything is written to `output`, never into the
    release or the folders. Published figures stand only beside the release's own configs, at their declared
    versions."""
    from ..evaluation import evaluate, judged_on_preceding, protocols as declared
    from ..evaluation import references as reference_scorers
    from .. import published
    from .. import sentence_cues
    from . import feature_model, margins
    from . import sentence_level_fit as fit

    release = release or settings.release_dir()
    p = params or baseline_params()
    own = bool(train_data)
    if evaluate_on not in ("release", "own") or (evaluate_on == "own" and not own):
        raise BaselineError(f"--evaluate-on is release, or own with --train-data (the folders' own splits); got {evaluate_on!r}")
    not_scored = {}
    if own:
        out_dir = _outside(output, train_data, release)
        trained, trained_tasks, folders = folder_data(train_data)
        p = p | {"train_configs": sorted(trained)}
        if evaluate_on == "own":
            data, protocols, tasks = trained, dict(trained_tasks), dict(trained_tasks)  # a protocol per task, of its name
        else:
            data, protocols, tasks = release_data(release)
            if not data:
                raise BaselineError(f"{settings.no_release_message()}; or score the folders' own splits with --evaluate-on own")
        not_scored = {c: f"no {t} labels in the training data" for c, t in tasks.items() if t not in trained_tasks.values()}
        tasks = {c: t for c, t in tasks.items() if c not in not_scored}
    else:
        out_dir = settings.user_output(output, release) if output else release / "baseline"
        data, protocols, tasks = release_data(release)
        trained, trained_tasks = data, tasks
    unknown = [c for c in p["train_configs"] if c in trained and c not in trained_tasks]
    if unknown:
        raise BaselineError(
            f"{', '.join(unknown)} has no sentence or gap labels to train on; configs the baseline can train on: "
            f"{', '.join(trained_tasks)}"
        )
    # The sentence-feature head scores the configs it is declared for (SNaC) and learns from their train + validation
    # splits, or from every sentence-labelled config of one's own data: the model `study transfer` trains on synthetic
    # data, so a user's figure and the study's mean the same thing.
    head_configs = list((p.get("sentence_features") or {}).get("train_configs") or [])
    if own:
        head_configs = [c for c in head_configs if c in tasks and evaluate_on == "release"]
        head_sources = [c for c, task in trained_tasks.items() if task == "sentences"] if head_configs else []
    else:
        head_sources = head_configs
    missing = [c for c in [*p["train_configs"], *head_sources] if c not in trained]
    if missing:
        raise BaselineError(f"{', '.join(missing)} (baseline.train_configs or sentence_features) is not built in {release}; "
                            f"build it first or take it out of params.yaml")
    unlabelled = [c for c in head_configs if tasks.get(c) != "sentences"]
    if unlabelled:
        raise BaselineError(f"{', '.join(unlabelled)} has no sentence labels for the sentence-feature head to train on")
    train_configs = list(p["train_configs"])
    train_set, dev_set = training_sets(trained, trained_tasks, train_configs, p)
    head_train, head_dev = training_sets(trained, trained_tasks, head_sources, p | {"max_train_records": None}) if head_sources else ([], [])
    # configs that are only trained on (no split but train) have nothing to score
    scored = {c: task for c, task in tasks.items() if set(data[c]) - set(TRAIN_SPLITS)}
    scored_examples = {
        c: examples_of(c, [r for s, rows in data[c].items() if s not in TRAIN_SPLITS for r in rows], task)
        for c, task in scored.items()
    }
    timings = {}
    started = time.perf_counter()
    # spaCy before any training thread starts: long lists go to forked workers
    analyses = sentence_cues.analyse([s for e in head_train + head_dev for s in e.sentences] + [
        s for c in head_configs for rows in data[c].values() for r in rows for s in r["sentences"]]) if head_sources else {}
    read = (release, *(train_data or ()))  # one's own data: the user's cache, and the checkout's read for its release
    kept, also = settings.cache_dir("embeddings", *read), settings.caches_also_read("embeddings", *read)
    vectors = release_vectors(data, tasks, progress, kept, also)
    if trained is not data:
        vectors |= release_vectors(trained, trained_tasks, progress, kept, also)
    timings["embedding"] = time.perf_counter() - started
    started = time.perf_counter()
    references, reference_lines = {}, {}
    # every config with a split to score (the release ships them all for the leaderboard); on one's own data, those scored
    for config in (c for c in data if set(data[c]) - set(TRAIN_SPLITS) and (not own or c in scored)):
        unit = declared()[protocols[config]].unit
        for name in (n for n in reference_scorers.scorers_for(unit) if reference_scorers.applicable(n, data[config], unit)):
            lines = reference_scorers.predictions(name, data[config], protocols[config], vectors)
            _write_predictions(out_dir, name, config, lines)
            reference_lines.setdefault(config, {})[name] = lines
            references.setdefault(config, {})[name] = evaluate(config, lines, splits=data[config], protocol=protocols[config])
    timings["reference_scorers"] = time.perf_counter() - started
    started = time.perf_counter()
    model, selection = fit.fit(train_set, dev_set, vectors, p, progress)
    head = None
    if head_sources:
        with numerics.training_arithmetic():
            head_params = p["sentence_features"] | {"seed": p["seed"]}
            if own:  # trained on other text than it scores, as the transfer study's synthetic-only rows
                head_params = feature_model.for_other_text(head_params)
            head = feature_model.fit(head_train, head_dev, vectors, analyses, head_params)
    timings["training"] = time.perf_counter() - started
    # test-only configs (no dev split to tune on) take each head's threshold from the training configs' dev splits
    head_thresholds = fit.dev_thresholds(model, dev_set, vectors, p["max_sentences"])
    scores, margin = {}, {}
    for config, task in scored.items():
        examples = scored_examples[config]
        if head is not None and config in head_configs:  # each sentence read against the sentences before it, as SNaC judges it
            with numerics.training_arithmetic():
                predicted = feature_model.predict(head, examples, vectors, analyses)
        else:  # SNaC judges each sentence given the preceding summary only; the other protocols see the whole text
            predicted = (fit.predict_prefixes if judged_on_preceding(protocols[config]) else fit.predict)(model, examples, vectors, p["max_sentences"])
        predictions = [{"id": e.id, "score": [round(float(v), 6) for v in s]} for e, s in zip(examples, predicted)]
        _write_predictions(out_dir, "baseline", config, predictions)
        margin[config] = margins.margin(config, predictions, reference_lines.get(config, {}), data[config], protocols[config])
        threshold = None if dev_split(data[config]) else head_thresholds[task]
        scores[config] = evaluate(config, predictions, threshold=threshold, splits=data[config], protocol=protocols[config])
        if threshold is not None:
            scores[config]["decision"].update(
                tuned_on=f"dev splits of {', '.join(sorted({e.config for e in dev_set if e.task == task}))}",
                criterion="maximum F1 of the error class",
            )
    if evaluate_on == "own":
        scored_on = {"release": None, "configs": {c: {"folder": str(folders[c]), **_provenance(folders[c], c)} for c in data}}
    else:
        scored_on = provenance(release, {name: stats for name, stats in built_configs(release).items() if name in data})
    # a published figure stands beside the release's own data only: the config at the version this checkout declares
    release_own = set() if evaluate_on == "own" else {c for c, v in scored_on["configs"].items() if not is_development(v["version"])}
    metrics = {
        "model": "sentence-level Transformer over all-MiniLM-L6-v2 sentence embeddings (Cai et al. 2020, §4.2)",
        "device": fit.device_name(),
        "settings": {k: v for k, v in p.items() if k not in ("floors", "margin_over_references", "not_validated", "published", "studies", "token_level")},
        "trained_on": {c: sum(1 for e in train_set if e.config == c) for c in train_configs},
        "selection": selection,
        "sentence_features": head and {
            "model": "logistic regression over sentence features and the all-MiniLM-L6-v2 vector (baseline/feature_model.py)",
            "scores": head_configs, "trained_on": {c: sum(1 for e in head_train + head_dev if e.config == c) for c in head_sources},
            "l2": head.l2, "cross_validation": head.cross_validation, "feature_weights": feature_model.weights(head)},
        "scores": scores,
        "references": references,
        "margins": margin,
        "published": {c: figure for c in scores if c in release_own and (figure := published.first(c, "auc"))},
        "data": scored_on,
    }
    if own:  # which data every figure came from: the training folders, and the scored release or folders
        metrics["own_data"] = {
            "trained_on": {c: {"folder": str(folders[c]), **_provenance(folders[c], c)} for c in train_configs},
            "scored_on": f"the release {scored_on['release']} at {release}" if evaluate_on == "release" else "the training folders' own splits",
            "not_scored": not_scored,
        }
    jsonout.write(out_dir / "metrics.json", metrics)
    write_text(out_dir / "metrics.md", metrics_markdown(metrics))
    timings_path = settings.cache_dir("timings", release) / "train.json"
    if not own:  # the release's training time, which the pipeline's notes quote
        jsonout.write(timings_path, {k: round(v, 1) for k, v in timings.items()} | {"device": fit.device_name()})
    if progress:
        print(f"baseline trained in {timings['training']:.0f} s on {fit.device_name()} (embedding {timings['embedding']:.0f} s, "
              f"reference scorers {timings['reference_scorers']:.0f} s{'' if own else f'; {timings_path}'}); metrics in {out_dir / 'metrics.json'}",
              file=sys.stderr)
    return metrics


def _outside(output, folders, release: Path) -> Path:
    """Where training on one's own data writes: the user's --output, outside any release and any training folder."""
    if not output:
        raise BaselineError("training on --train-data writes its metrics and predictions to --output DIR (never into the "
                            "release or the data folders); give one")
    target = settings.user_output(output, release)
    for folder in (Path(f).expanduser().resolve() for f in folders):
        if target == folder or folder in target.parents:
            raise BaselineError(f"--output {output} is inside the training data {folder}; choose a folder outside it")
    return target


def _provenance(folder: Path, config: str) -> dict:
    """A folder config's version and fingerprint (`versions.provenance`: a development version unless its records
    are exactly a declared version's)."""
    return provenance(folder, {config: built_configs(folder)[config]})["configs"][config]


def _write_predictions(out_dir: Path, scorer: str, config: str, lines: list[dict]) -> None:
    """predictions/<scorer>/<config>.jsonl under the output folder (the release's `baseline/`: `shipped_predictions`)."""
    write_text(out_dir / "predictions" / scorer / f"{config}.jsonl", "".join(json.dumps(x) + "\n" for x in lines))


def _headline(result: dict) -> dict:
    """The test-split (else last split) binary metrics of a result, whatever its protocol."""
    splits = result["splits"]
    block = splits.get("test") or list(splits.values())[-1]
    return block.get("sentence", block)


def _f1(m: dict) -> str:
    if m.get("f1") is None:
        return "-"
    if m.get("degenerate"):
        return f"{percent(m['f1'])} (flags {percent(m['predicted_error_rate'])}%)"
    return percent(m["f1"])


def _untrained(metrics: dict, config: str) -> str:
    """What the best untrained reference scores on `config`: the figure a published one on other data is read beside."""
    best = _best_reference(metrics["references"].get(config, {}))
    if not best:
        return ""
    encoder = ", on the baseline's own MiniLM encoder" if best[0].startswith("embedding_") else ""
    return f"; the best untrained reference here, {best[0]}{encoder}, scores AUC {percent(best[1]['auc'])}"


def _best_reference(references: dict) -> tuple[str, dict] | None:
    scored = {name: _headline(r) for name, r in references.items() if _headline(r).get("auc") is not None}
    if not scored:
        return None
    name = max(scored, key=lambda n: scored[n]["auc"])
    return name, scored[name]


def _margin(m: dict | None) -> str:
    """The baseline's paired difference from the best reference with its 95% CI; no margin is claimed when the CI
    covers zero."""
    from .margins import claimed

    if not m or not m["ci"]:
        return "-"
    shown = f"{percent(m['difference'], signed=True)} [{percent(m['ci'][0], signed=True)}, {percent(m['ci'][1], signed=True)}]"
    if claimed(m):
        return f"{shown} over {m['best_reference']}"
    return f"none: {shown} " + ("covers 0" if m["ci"][1] >= 0 else f"below {m['best_reference']}")


def _head_lines(head: dict | None) -> list[str]:
    if not head:
        return []
    strongest = sorted(head["feature_weights"].items(), key=lambda kv: -abs(kv[1]))[:6]
    return ["", f"{', '.join(f'`{c}`' for c in head['scores'])} scored by the sentence-feature head instead: "
            f"{head['model']}, trained on {', '.join(f'{c} train + validation ({n})' for c, n in head['trained_on'].items())}, "
            f"each sentence read against the sentences before it; L2 {head['l2']} chosen by {head['cross_validation']['folds']}-fold "
            "document-grouped cross-validation (never on test). Strongest weights (per standard deviation): "
            + ", ".join(f"{name} {w:+.2f}" for name, w in strongest) + "."]


def _own_lines(own: dict | None) -> list[str]:
    if not own:
        return []
    folders = sorted({entry["folder"] for entry in own["trained_on"].values()})
    lines = ["", f"Trained on data that is not the release's ({', '.join(folders)}); scored on {own['scored_on']}. "
             "Published figures stand only beside the release's own configs at their declared versions."]
    if own["not_scored"]:
        lines[-1] += " Not scored: " + "; ".join(f"{c} ({why})" for c, why in own["not_scored"].items()) + "."
    return lines


def _config_cell(metrics: dict, config: str) -> str:
    """A scored config named with its data where the model did not train on the release's own."""
    if not metrics.get("own_data"):
        return f"`{config}`"
    entry = metrics["data"]["configs"][config]
    where = f"{entry['folder']}, not the release's" if "folder" in entry else f"release {metrics['data']['release']}"
    return f"`{config}` ({where}, {entry['version']})"


def metrics_markdown(metrics: dict) -> str:
    """The card's baseline section: per config, the trained model beside the best untrained reference scorer on
    the same split and the baseline's margin over it (every scorer's result is in metrics.json, its predictions in
    predictions/<scorer>/, and `cohbench leaderboard` puts any scorer beside them)."""
    selection = metrics["selection"]
    own = metrics.get("own_data")
    trained_on = ", ".join(f"{c} train ({n})" + (f" from {own['trained_on'][c]['folder']} ({own['trained_on'][c]['version']})" if own else "")
                           for c, n in metrics["trained_on"].items())
    lines = [
        "## Baseline (machine-written)",
        "",
        f"{metrics['model']}; trained on {trained_on}; "
        f"epoch {selection['epoch']} selected by mean validation AUC {percent(selection['dev_auc'])} (seed "
        f"{metrics['settings']['seed']}, {metrics['device']}). Test split (else the only scored split), error class, "
        "percent. *Best untrained* is the best reference scorer on that split (`cohbench evaluate CONFIG --scorer "
        "NAME`); a trained number means something only beside it. *Margin* is the baseline's test AUC minus the best "
        "reference's, with a 95% paired-bootstrap CI over the same resampled test documents (1,000 samples, seed 0); "
        "no margin is claimed where the CI covers 0. F1 at the threshold tuned on validation; "
        "\"flags\" marks a threshold that calls (nearly) every unit an error.",
        *_head_lines(metrics.get("sentence_features")),
        *_own_lines(own),
        "",
        "| config | units | AUC | AP | R@P70 | F1 | best untrained: AUC / AP | margin [95% CI] | published AUC |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for config, result in metrics["scores"].items():
        m = _headline(result)
        best = _best_reference(metrics["references"].get(config, {}))
        rival = f"{best[0]} {percent(best[1]['auc'])} / {percent(best[1].get('average_precision'))}" if best else "-"
        ref = metrics["published"].get(config)
        published = f"{percent(ref['value'])}, {ref['comparability']} ({ref['paper']}, {ref['table']}, {ref['model']})" if ref else "-"
        lines.append(
            f"| {_config_cell(metrics, config)} | {m['units']} | {percent(m.get('auc'))} | {percent(m.get('average_precision'))} "
            f"| {percent(m.get('recall_at_p70'))} | {_f1(m)} | {rival} | {_margin(metrics['margins'].get(config))} | {published} |"
        )
    differs = {c: f for c, f in metrics["published"].items() if f["differs"]}
    lines += ["", *(f"- `{c}`'s published AUC ({f['comparability']}): {f['differs']}{_untrained(metrics, c)}." for c, f in differs.items())] if differs else []
    return "\n".join(lines) + "\n"
