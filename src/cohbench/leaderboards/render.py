"""The leaderboard as people read it: one table of configs x scorers (headline metric, 95% CI, the difference from
the best reference with its paired CI), the macro-averages, the published figures beside each config with its
comparability note, the skipped configs, and a plot per metric family (chance and the published figures marked) and
per metric the papers report instead of the headline."""

from __future__ import annotations

from pathlib import Path

from ..display import coefficient, percent


def _shown(metric: str | None, value, signed: bool = False) -> str:
    if value is None:
        return "-"
    return coefficient(value) if metric and metric.startswith("tau") else percent(value, signed=signed)


def _cell(metric: str | None, figure: dict | None) -> str:
    if not figure or figure["value"] is None:
        return "-"
    ci = figure.get("ci")
    text = _shown(metric, figure["value"]) + (f" [{_shown(metric, ci[0])}, {_shown(metric, ci[1])}]" if ci else "")
    difference = figure.get("difference")
    if difference and difference["value"] is not None:
        low, high = difference["ci"]
        text += f"; Δ {_shown(metric, difference['value'], True)} [{_shown(metric, low, True)}, {_shown(metric, high, True)}]"
    return text


def _paper_cell(entry: dict, figure: dict | None) -> str:
    """The papers' own metric beside the headline: the scorer's value, and the published range of it."""
    paper = entry.get("paper_metric")
    if not paper or not figure or figure["value"] is None:
        return ""
    metric = paper["metric"]
    published = " / ".join(_shown(metric, v) for v in paper["published"])  # in the order of the table below
    published = f"published {published}" if published else f"published only on other data ({paper['on_other_data']}, below)"
    if metric == entry["metric"]:
        return f"; {published}"
    return f"; {metric} {_shown(metric, figure.get('paper_metric'))}, {published}"


def markdown(result: dict) -> list[str]:
    scorers = result["scorers"]
    release = result["release"]
    lines = [
        f"Leaderboard on cohbench {release['version']} (manifest sha256 {release['manifest_sha256'][:12]}), {result['split']} "
        f"split; each config at the version of its records (`+dev`: records no cohbench declares, so no published figure "
        f"beside them); each cell: headline metric [95% CI, {result['samples']} bootstrap samples over documents, seed "
        f"{result['seed']}]; Δ = difference from the config's best reference scorer [paired bootstrap, same documents]; "
        "then the papers' published figures of the metric they report there on the same data, after the scorer's value of "
        "it where it is not the headline (each figure is listed below, in that order, with how it compares; figures on "
        "other data are listed there only). Proportions in percent, Kendall's tau as a coefficient.",
        "",
        "| config | version | metric | docs | best reference | " + " | ".join(f"`{s}`" for s in scorers) + " |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in scorers) + " |",
    ]
    for config, entry in result["configs"].items():
        metric, best = entry["metric"], entry["best_reference"]
        best_cell = f"{best} {_cell(metric, entry['references'][best])}" if best else "-"
        cells = [_cell(metric, entry["scores"].get(s)) + _paper_cell(entry, entry["scores"].get(s)) for s in scorers]
        lines.append(f"| `{config}` | {entry['version']} | {metric or '-'} | {entry['documents'] or '-'} | {best_cell} | " + " | ".join(cells) + " |")
    for metric, configs in sorted(result["macro_configs"].items()):
        cells = [_cell(metric, result["macro"][s].get(metric)) for s in scorers]
        lines.append(f"| macro-average over {len(configs)} | | {metric} | | | " + " | ".join(cells) + " |")
    lines += ["", "Macro-averages are taken only over the configs every scorer compared here covers: "
              + ("; ".join(f"{metric}: {', '.join(configs)}" for metric, configs in sorted(result["macro_configs"].items())) or "none")
              + (f" (left out: {', '.join(result['macro_left_out'])})" if result["macro_left_out"] else "")
              + f". Macro-average CI: {result['macro_interval']}."]
    lines += _published(result)
    if result["not_scored"]:
        lines += ["", "Not scored: " + "; ".join(f"{c} ({why})" for c, why in result["not_scored"].items()) + "."]
    if result["skipped"]:
        lines += ["", f"Skipped ({len(result['skipped'])}):", *(f"- {s['line']}" for s in result["skipped"])]
    return lines


def _published(result: dict) -> list[str]:
    withheld = [entry["published_withheld"] for entry in result["configs"].values() if "published_withheld" in entry]
    lines = ["", "No published figures: " + "; ".join(withheld) + "."] if withheld else []
    for config, entry in result["configs"].items():
        if not entry["published"]:
            continue
        lines += ["", f"Published beside `{config}` — {entry['note'] or 'no comparability note'}", "",
                  "| paper | table | model | metric | split | value | compares | trained on | test verified |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for f in entry["published"]:
            value = _shown(f["metric"], f["value"]) if f["value"] is not None else f"none: {f['why_missing']}"
            lines.append(f"| {f['paper']} | {f['table']} | {f['model']} | {f['metric']} | {f['split']} | {value} | "
                         f"{f['comparability']} | {f['train_size']} | {'yes' if f['test_verified'] else 'no'} |")
        differs = {f["paper"]: (f["comparability"], f["differs"]) for f in entry["published"] if f["differs"]}
        lines += ["", *(f"- {paper} ({flag}): {what}." for paper, (flag, what) in differs.items())] if differs else []
    return lines


# Metric families plotted together, each with its chance level; a headline metric of another kind gets a plot of its
# own with no chance line drawn. Every axis holds one metric.
FAMILIES = (
    ("auc", "AUC", 0.5, lambda metric: metric == "auc"),
    ("balanced_accuracy", "balanced accuracy", 0.5, lambda metric: metric == "balanced_accuracy"),
    ("tau", "Kendall's τ", 0.0, lambda metric: metric.startswith("tau")),
)


def families(result: dict) -> dict[str, tuple[str, float | None, list[str]]]:
    """name -> (title, chance level, configs) of every family the result's configs fall in."""
    out: dict[str, tuple[str, float | None, list[str]]] = {}
    for config, entry in result["configs"].items():
        metric = entry["metric"]
        if metric is None:
            continue
        name, title, chance = next(((n, t, c) for n, t, c, member in FAMILIES if member(metric)), (metric, metric, None))
        out.setdefault(name, (title, chance, []))[2].append(config)
    return out


def papers_metrics(result: dict) -> dict[str, list[str]]:
    """metric -> configs where the papers report another metric than the headline (SNaC's recall at precision 0.70):
    each gets a plot of its own, the scorers' values beside the published ones."""
    out: dict[str, list[str]] = {}
    for config, entry in result["configs"].items():
        paper = entry.get("paper_metric")
        if paper and paper["metric"] != entry["metric"]:
            out.setdefault(paper["metric"], []).append(config)
    return out


def _data_line(result: dict) -> str:
    release = result["release"]
    return f"cohbench {release['version']} (manifest sha256 {release['manifest_sha256'][:12]}), {result['split']} split"


def _labels(result: dict, configs: list[str]) -> list[str]:
    """Each config under its plot slot with the version of its records."""
    return [f"{config}\n{result['configs'][config]['version']}" for config in configs]


def _axes(plt, configs: list[str]):
    return plt.subplots(figsize=(max(6.0, 1.4 * len(configs) + 3.5), 4.9))


def _published_marks(ax, fig, result: dict, configs: list[str], metric_of) -> list[float]:
    """Each published figure of the plotted metric at its config's right (a black diamond; a grey cross for one on
    other data), numbered P1, P2, ..., the numbers named under the plot with how each compares; returns the values
    drawn."""
    values, notes = [], []
    for j, config in enumerate(configs):
        entry = result["configs"][config]
        for f in (f for f in entry["published"] if f["metric"] == metric_of(entry) and f["value"] is not None
                  and f["split"] == result["split"]):
            other = f["comparability"] == "other data"
            notes.append(f"P{len(notes) + 1}: {f['paper']}, {f['model']} ({config}, {_shown(f['metric'], f['value'])}; {f['comparability']})")
            labelled = {line.get_label() for line in ax.get_lines()}
            label = "published, other data (not a rival)" if other else "published (papers' models)"
            ax.plot([j + 0.4], [f["value"]], "x" if other else "D", color="grey" if other else "black", markersize=6,
                    markerfacecolor="none", label=None if label in labelled else label)
            ax.annotate(f"P{len(notes)}", (j + 0.4, f["value"]), xytext=(4, 2), textcoords="offset points", fontsize=6)
            values.append(f["value"])
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=6, va="bottom", ha="left", wrap=True)
        fig.subplots_adjust(bottom=0.12 + 0.025 * len(notes))
    return values


def _finish(ax, fig, plt, configs: list[str], values: list[float], path: Path, tag: str, ylabel: str, title: str,
            written: list[Path], labels: list[str]) -> None:
    from ..atomic import atomic_path

    low, high = min(values), max(values)
    pad = max(0.05, (high - low) * 0.08)
    ax.set_ylim(low - pad, high + pad)
    ax.set_xticks(range(len(configs)))
    ax.set_xlim(-0.5, len(configs) - 0.5)
    ax.set_xticklabels(labels, fontsize=8)
    for j in range(1, len(configs)):
        ax.axvline(j - 0.5, color="lightgrey", linewidth=0.6)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    target = path.with_name(f"{path.stem}-{tag}{path.suffix or '.png'}")
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=130, bbox_inches="tight")
    plt.close(fig)
    written.append(target)


def plot(result: dict, path: Path) -> list[Path]:
    """One PNG per metric family beside `path` (`board.png` -> `board-auc.png`, `board-tau.png`): per config, each
    scorer's headline with its 95% CI, the chance level dashed, and the published figures of that metric as numbered
    black diamonds; then one per metric the papers report instead of the headline (`board-recall_at_p70.png`), the
    scorers' values beside the published ones. Each names the release and split it was measured on. Returns the files
    written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scorers, written = result["scorers"], []
    colours = plt.get_cmap("tab10" if len(scorers) <= 10 else "tab20")  # tab20 pairs close hues: only when needed
    for family, (title, chance, configs) in families(result).items():
        fig, ax = _axes(plt, configs)
        values = [] if chance is None else [chance]
        points: dict[str, list[tuple[float, dict]]] = {}
        for j, config in enumerate(configs):  # each config's scorers spread over its own slot, published figures at its right
            present = [(n, f) for n in scorers if (f := result["configs"][config]["scores"].get(n)) and f["value"] is not None and f["ci"]]
            step = 0.7 / max(len(present), 1)
            for k, (name, figure) in enumerate(present):
                points.setdefault(name, []).append((j - 0.4 + step * (k + 0.5), figure))
                values += figure["ci"]
        for i, name in enumerate(n for n in scorers if n in points):
            x = [at for at, _ in points[name]]
            y = [f["value"] for _, f in points[name]]
            error = [[f["value"] - f["ci"][0] for _, f in points[name]], [f["ci"][1] - f["value"] for _, f in points[name]]]
            ax.errorbar(x, y, yerr=error, fmt="o", markersize=4, capsize=3, color=colours(i % 20), label=name)
        values += _published_marks(ax, fig, result, configs, lambda entry: entry["metric"])
        if chance is not None:
            ax.axhline(chance, color="grey", linestyle="--", linewidth=1, label=f"chance ({chance:g})")
        _finish(ax, fig, plt, configs, values, path, family, f"{title}, {result['split']} split",
                f"{title}: headline with 95% bootstrap CI\n{_data_line(result)}", written, _labels(result, configs))
    for metric, configs in papers_metrics(result).items():
        fig, ax = _axes(plt, configs)
        values = []
        for i, name in enumerate(scorers):
            shown = [(j, v) for j, c in enumerate(configs) if (v := (result["configs"][c]["scores"].get(name) or {}).get("paper_metric")) is not None]
            if shown:
                step = 0.7 / len(scorers)
                ax.plot([j - 0.4 + step * (i + 0.5) for j, _ in shown], [v for _, v in shown], "o", markersize=4, color=colours(i % 20), label=name)
                values += [v for _, v in shown]
        values += _published_marks(ax, fig, result, configs, lambda entry: entry["paper_metric"]["metric"])
        if values:
            _finish(ax, fig, plt, configs, values, path, metric, f"{metric}, {result['split']} split",
                    f"{metric}, the metric the papers report (no CI: a point value)\n{_data_line(result)}", written, _labels(result, configs))
        else:
            plt.close(fig)
    return written
