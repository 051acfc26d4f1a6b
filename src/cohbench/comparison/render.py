"""The leaderboard as people read it: one table of configs x scorers (headline metric, 95% CI, the difference from
the best reference with its paired CI), the macro-averages, the published figures beside each config with its
comparability note, the skipped configs, and a plot of scorers x configs with CI bars."""

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


def markdown(result: dict) -> list[str]:
    scorers = result["scorers"]
    release = result["release"]
    lines = [
        f"Leaderboard on cohbench {release['version']} (manifest sha256 {release['manifest_sha256'][:12]}), {result['split']} "
        f"split; each cell: headline metric [95% CI, {result['samples']} bootstrap samples over documents, seed "
        f"{result['seed']}]; Δ = difference from the config's best reference scorer [paired bootstrap, same documents]. "
        "Proportions in percent, Kendall's tau as a coefficient.",
        "",
        "| config | metric | docs | best reference | " + " | ".join(f"`{s}`" for s in scorers) + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in scorers) + " |",
    ]
    for config, entry in result["configs"].items():
        metric, best = entry["metric"], entry["best_reference"]
        best_cell = f"{best} {_cell(metric, entry['references'][best])}" if best else "-"
        cells = [_cell(metric, entry["scores"].get(s)) for s in scorers]
        lines.append(f"| `{config}` | {metric or '-'} | {entry['documents'] or '-'} | {best_cell} | " + " | ".join(cells) + " |")
    metrics = sorted({m for per in result["macro"].values() for m in per})
    for metric in metrics:
        cells = []
        for s in scorers:
            m = result["macro"][s].get(metric)
            cells.append(f"{_cell(metric, m)} ({m['configs']} configs)" if m else "-")
        lines.append(f"| macro-average | {metric} | | | " + " | ".join(cells) + " |")
    lines += ["", f"Macro-average CI: {result['macro_interval']}."]
    lines += _published(result)
    if result["not_scored"]:
        lines += ["", "Not scored: " + "; ".join(f"{c} ({why})" for c, why in result["not_scored"].items()) + "."]
    if result["skipped"]:
        lines += ["", f"Skipped ({len(result['skipped'])}):", *(f"- {s['line']}" for s in result["skipped"])]
    return lines


def _published(result: dict) -> list[str]:
    lines = []
    for config, entry in result["configs"].items():
        if not entry["published"]:
            continue
        lines += ["", f"Published beside `{config}` — {entry['note'] or 'no comparability note'}", "",
                  "| paper | table | model | metric | split | value | trained on | test verified |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for f in entry["published"]:
            value = _shown(f["metric"], f["value"]) if f["value"] is not None else f"none: {f['why_missing']}"
            lines.append(f"| {f['paper']} | {f['table']} | {f['model']} | {f['metric']} | {f['split']} | {value} | "
                         f"{f['train_size']} | {'yes' if f['test_verified'] else 'no'} |")
    return lines


def plot(result: dict, path: Path) -> None:
    """Grouped bars: per config, one bar per scorer (headline metric) with its 95% CI as an error bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ..atomic import atomic_path

    configs, scorers = list(result["configs"]), result["scorers"]
    width = 0.8 / max(len(scorers), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(configs) * max(1, len(scorers) / 3)), 4))
    for i, scorer in enumerate(scorers):
        x, y, low, high = [], [], [], []
        for j, config in enumerate(configs):
            figure = result["configs"][config]["scores"].get(scorer)
            if figure and figure["value"] is not None and figure["ci"]:
                x.append(j + (i - (len(scorers) - 1) / 2) * width)
                y.append(figure["value"])
                low.append(figure["value"] - figure["ci"][0])
                high.append(figure["ci"][1] - figure["value"])
        ax.bar(x, y, width, yerr=[low, high], capsize=2, label=scorer)
    ax.set_xticks(np.arange(len(configs)))
    ax.set_xticklabels([f"{c}\n({result['configs'][c]['metric']})" for c in configs], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"headline metric, {result['split']} split (95% CI)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
