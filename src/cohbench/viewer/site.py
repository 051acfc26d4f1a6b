"""A static site of a release (or of any folder laid out like one, such as a `cohbench corrupt` output): an index
with each config's card, counts and plots (SVG drawn here, so the site needs no plotting library), and a page per
config where every record can be browsed and filtered by split, label, error type, system and votes, with SNaC's
spans highlighted in their summary, generated corruptions marked at their positions and explanations beside their
sentences. Static files only: it opens from disk (records are loaded as scripts, which browsers allow for file://
pages, unlike fetch) or from any web host. Records are read through the release's one reader, so every data file is
checked against its recorded sha256 first."""

from __future__ import annotations

import html
import json
import shutil
from urllib.parse import quote
from collections import Counter
from importlib import resources
from pathlib import Path

from .. import settings
from ..atomic import atomic_dir
from ..errors import CohbenchError
from ..release.layout import PLAIN_NAME, read_config, require_release
from ..release.versions import provenance
from ..schema import BINARY_LABELS, ERROR_TYPES, GAP_LABELS, split_sort_key

ASSETS = ("viewer.js", "viewer.css")
COLOURS = {"ok": "#8ab17d", "error": "#e76f51", "unlabelled": "#bbbbbb"}


def write_site(out: Path, release: Path | None = None, configs: list[str] | None = None) -> dict:
    """Write the site into `out` (a new or empty folder outside every release); returns what it holds."""
    folder, built = require_release(release)
    names = configs or sorted(built)
    unknown = [c for c in names if c not in built]
    if unknown:
        raise CohbenchError(f"config {unknown[0]!r} is not built in {folder}; built: {', '.join(sorted(built))}")
    target = settings.user_output(out, release)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise CohbenchError(f"{out} exists and is not empty; show into a new or empty folder")
    summaries = []
    with atomic_dir(target) as tmp:
        (tmp / "data").mkdir()
        for asset in ASSETS:
            with resources.as_file(resources.files("cohbench.viewer") / "assets" / asset) as path:
                shutil.copyfile(path, tmp / asset)
        for name in names:
            data = read_config(folder, name, built[name])
            records = [_plain(r) for split in data.splits.values() for r in split]
            (tmp / "data" / f"{name}.js").write_text(
                f"window.COHBENCH_RECORDS = {json.dumps(records, ensure_ascii=False, separators=(',', ':'), default=str)};\n",
                encoding="utf-8")
            summary = _summary(name, data.stats, records)
            summaries.append(summary)
            (tmp / f"{name}.html").write_text(_config_page(name, summary), encoding="utf-8")
        release = provenance(folder, {n: built[n] for n in names})["release"]  # never a local path: pages go on web hosts
        release_name = f"cohbench {release}" if release != "unknown" else "configs of no cohbench release (no manifest names one)"
        (tmp / "index.html").write_text(_index_page(release_name, summaries, _cards(folder, built, names)), encoding="utf-8")
    return {"path": str(target), "release": str(folder), "configs": {s["config"]: s["records"] for s in summaries}}


def _plain(record: dict) -> dict:
    """A record as the page reads it: labels by name, empty fields left out (the pages treat missing as empty)."""
    out = {k: v for k, v in record.items() if v not in (None, [], "")}
    if record.get("label") is not None and record["label"] >= 0:
        out["label"] = BINARY_LABELS[record["label"]]
    for span in out.get("spans", []):
        span["type"] = ERROR_TYPES[span["type"]] if span.get("type") is not None else None
    if out.get("gap_labels"):
        out["gap_labels"] = [GAP_LABELS[g] for g in out["gap_labels"]]
    return out


def _summary(name: str, stats: dict, records: list[dict]) -> dict:
    labels = Counter((r.get("split"), r.get("label", "unlabelled")) for r in records)
    types = Counter(s["type"] for r in records for s in r.get("spans", []) if s.get("type"))
    splits = sorted({r["split"] for r in records}, key=split_sort_key)
    return {"config": name, "corpus": stats.get("corpus", ""), "records": len(records), "splits": splits,
            "labels": {split: {label: labels[(split, label)] for label in COLOURS if labels[(split, label)]} for split in splits},
            "types": dict(sorted(types.items())), "systems": len({r.get("system") for r in records if r.get("system")}),
            "licence": stats.get("licence", ""), "generator": (stats.get("notes") or {}).get("recipe") or stats.get("recipe"),
            "annotators": any(s.get("annotator") for r in records for s in r.get("spans", [])),
            "corrupted": any(r.get("corruption") for r in records)}


def _cards(folder: Path, built: dict, names: list[str]) -> dict[str, str]:
    """Each config's card: the corpus card the release ships (cards/<corpus>.md), else what its stats describe."""
    cards = {}
    for name in names:
        corpus = built[name].get("corpus", "")
        card = folder / "cards" / f"{corpus}.md"
        if PLAIN_NAME.fullmatch(corpus) and card.is_file():  # a stats file's corpus may be anything: never a path
            cards[name] = card.read_text(encoding="utf-8")
        else:
            described = {k: v for k, v in built[name].items() if k in ("corpus", "licence", "notes", "dropped", "upstream_records", "built_records")}
            cards[name] = json.dumps(described, indent=2, ensure_ascii=False, default=str)
    return cards


def _bars(title: str, counts: dict[str, int], colours: dict[str, str] | None = None) -> str:
    """A horizontal bar chart as inline SVG."""
    if not counts:
        return ""
    width, row = 420, 22
    top = max(counts.values()) or 1
    rows = []
    for i, (label, count) in enumerate(counts.items()):
        length = round(260 * count / top)
        colour = (colours or {}).get(label, "#4c78a8")
        rows.append(f'<text x="0" y="{i * row + 15}">{html.escape(label)}</text>'
                    f'<rect x="110" y="{i * row + 4}" width="{length}" height="14" fill="{colour}"></rect>'
                    f'<text x="{116 + length}" y="{i * row + 15}">{count}</text>')
    return (f'<figure><figcaption>{html.escape(title)}</figcaption><svg class="bars" width="{width}" height="{len(counts) * row + 4}" '
            f'role="img" aria-label="{html.escape(title)}">{"".join(rows)}</svg></figure>')


def _local(path: str) -> str:
    """A link to a file of the site: percent-encoded and starting with ./, so a config name (a `derive` or `corrupt`
    output names its own) is never read as a scheme such as javascript: or as another host."""
    return html.escape("./" + quote(path))


def _page(title: str, body: str, script: str = "") -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<link rel="icon" href="data:,"><link rel="stylesheet" href="viewer.css"></head>\n<body>\n{body}\n{script}</body></html>\n')


def _index_page(release_name: str, summaries: list[dict], cards: dict[str, str]) -> str:
    sections = []
    for s in summaries:
        counts = ", ".join(f"{split} {sum(s['labels'][split].values())}" for split in s["splits"])
        plots = "".join(_bars(f"{split}: labels", s["labels"][split], COLOURS) for split in s["splits"])
        plots += _bars("error spans by type", s["types"])
        sections.append(
            f'<section class="config" id="{html.escape(s["config"])}"><h2><a href="{_local(s["config"] + ".html")}">{html.escape(s["config"])}</a></h2>'
            f'<p>{s["records"]} records ({html.escape(counts)}); corpus {html.escape(s["corpus"])}; {s["systems"]} system(s); '
            f'licence {html.escape(str(s["licence"]))}</p><div class="plots">{plots}</div>'
            f'<details><summary>card</summary><pre class="card">{html.escape(cards[s["config"]])}</pre></details></section>')
    body = (f'<header><h1>cohbench</h1><p>{html.escape(release_name)}: {len(summaries)} config(s); '
            'open a config to browse and filter its records.</p></header>\n<main>' + "\n".join(sections) + "</main>")
    return _page("cohbench", body)


def _legend(summary: dict) -> str:
    """What each colour on the page means: the error types its spans have, and the marks of generated corruptions."""
    keys = [f'<mark class="span type-{html.escape(t)}">{html.escape(t)}</mark>' for t in summary["types"]]
    if summary["corrupted"]:
        keys += ['<mark class="corruption">a sentence a generator put there</mark>', '<mark class="gap">a removed sentence</mark>',
                 '<del class="replaced">the sentence it replaced or removed</del>']
    keys += ['<span class="label label-error">error</span>', '<span class="label label-ok">ok</span>']
    return '<p class="legend">legend: ' + " ".join(keys) + "</p>"


def _config_page(name: str, summary: dict) -> str:
    hover = "votes and annotators" if summary["annotators"] else "votes; the data names no annotator"
    marks = [f"Spans are coloured by error type (hover for {hover})." if summary["types"] else "",
             "Generated corruptions are marked at their positions." if summary["corrupted"] else ""]
    body = (f'<header><p><a href="index.html">all configs</a></p><h1>{html.escape(name)}</h1>'
            f'<p>{summary["records"]} records. {" ".join(filter(None, marks))}</p>' + _legend(summary) + '</header>\n'
            '<form id="filters"></form><p id="count"></p><main id="records"></main><nav id="pages"></nav>')
    # "<" escaped: a name holding "<!--" or "</script>" must not end or hide the inline script
    constants = json.dumps({"config": name, "errorTypes": list(ERROR_TYPES)}).replace("<", "\\u003c")
    script = (f'<script>window.COHBENCH = {constants};</script>\n<script src="{_local("data/" + name + ".js")}"></script>\n'
              '<script src="viewer.js"></script>\n')
    return _page(f"cohbench: {name}", body, script)
