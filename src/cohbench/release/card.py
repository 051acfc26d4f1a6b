"""The release card (README.md of the Hugging Face dataset folder) and the citations (`cohbench cite`).

The card is for a person: prose first, one table of configs, the licences, the summary of each corpus's own card
from `catalog/cards/` once, its counts, and BibTeX. A corpus card's summary is what precedes its `DETAILS` line
(description, licence, labels, known defects); the whole card ships beside it as `cards/<corpus>.md`, so the card
stays short enough to read (under 40 KB) and no detail leaves the release. Everything per file (URLs, checksums)
lives in manifest.json and croissant.json; every statistic in stats/<config>.json. Nothing in it depends on the run
(no timings, dates, paths).
"""

from __future__ import annotations

import re

import yaml

from .. import settings
from .._version import __version__
from .layout import PLAIN_NAME, annotation_of
from .versions import is_development
from ..corpora.registry import corpora, corpus_of

def cohbench_citation(release: str = __version__, configs: dict | None = None) -> str:
    """BibTeX of cohbench at a release version; with `configs` (name -> {version, fingerprint}), a note naming the
    version and records of each config used, so that a citation says which data a result came from."""
    note = ""
    if configs:
        used = "; ".join(f"{name} {c['version']} (records {(c['fingerprint'] or 'unknown')[:12]})" for name, c in sorted(configs.items()))
        note = f"\n  note = {{configs: {used}}},"
    return ("@software{cohbench,\n"
            "  title = {cohbench: Reference Corpora and Tools for Evaluating the Coherence and Faithfulness of Narrative Summaries},\n"
            "  author = {{cohbench contributors}},\n"
            f"  version = {{{release}}},{note}\n"
            "  year = {2026}\n}")


CITATION = cohbench_citation()

# In a corpus card, the line that ends the summary the release card shows; what follows is in cards/<corpus>.md only.
DETAILS = "<!-- details: in the release's cards/<corpus>.md, not in its README -->"

# Hugging Face's size buckets (the Hub's `size_categories` values).
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def bibtex_entries(bibtex: str) -> list[str]:
    """The entries of a BibTeX string, each from its `@` to its closing brace."""
    starts = [m.start() for m in re.finditer(r"^@", bibtex, flags=re.M)]
    return [bibtex[a:b].strip() for a, b in zip(starts, starts[1:] + [len(bibtex)])]


def citation_keys(bibtex: str) -> list[str]:
    return re.findall(r"^@\w+\{([^,\s]+),", bibtex, flags=re.M)


def citation(config: str, data: dict | None = None) -> str:
    """BibTeX for one config: its corpus's papers, then cohbench itself at the release and config version of `data`
    (`versions.provenance`) where the config is built (`cohbench cite CONFIG`)."""
    own = cohbench_citation(data["release"], {config: data["configs"][config]}) if data and config in data["configs"] else CITATION
    return "\n\n".join([*bibtex_entries(corpus_of(config).bibtex), own]) + "\n"


def licence_of(stats: dict) -> dict:
    """A built config's licence: the Hub identifier (`other` where no single one applies), what it says, and where
    it is stated."""
    corpus = corpora().get(stats["corpus"])  # a corpus this version does not know keeps its stats' words
    if corpus is None:
        return {"id": "other", "text": stats["licence"], "link": "", "research_only": stats["research_only"]}
    return {"id": corpus.licence_id, "text": corpus.licence, "link": corpus.licence_url or corpus.homepage,
            "research_only": stats["research_only"]}  # fmt: skip


def _bibtex_of(corpus: str) -> str:
    known = corpora().get(corpus)
    return known.bibtex if known else ""


def corpus_card(corpus: str) -> tuple[str, str] | None:
    """(summary, whole card) of a corpus's card in `catalog/cards/`, None without one: the summary is what precedes
    its `DETAILS` line (all of it without one); the whole card is every line but that one."""
    path = settings.catalog_dir() / "cards" / f"{corpus}.md"
    if not PLAIN_NAME.fullmatch(corpus) or not path.is_file():  # a stats file's corpus may be anything: never a path
        return None
    summary, _, details = path.read_text(encoding="utf-8").partition(DETAILS)
    summary = summary.rstrip()
    return summary, (summary + "\n\n" + details.strip()).strip() + "\n"


def _size_category(rows: int) -> str:
    return next((name for limit, name in _SIZES if rows < limit), "n>1M")


def _labelled(stats: dict) -> str:
    """What a config labels, read from its counts."""
    total = {key: 0 for key in ("labels", "sentence_labels", "gap_labels", "spans", "ratings")}
    for s in stats["splits"].values():
        total["labels"] += s["labels"]["ok"] + s["labels"]["error"]
        total["sentence_labels"] += s["sentence_labels"]["ok"] + s["sentence_labels"]["error"]
        total["gap_labels"] += s["gap_labels"]["ok"] + s["gap_labels"]["missing"]
        total["spans"] += s["spans"]
        total["ratings"] += s["ratings"]
    names = {"labels": "text", "sentence_labels": "sentences", "gap_labels": "gaps", "spans": "error spans", "ratings": "ratings"}
    return ", ".join(names[key] for key, n in total.items() if n)


def front_matter(configs: dict[str, dict], data: dict) -> dict:
    rows = sum(f["rows"] for stats in configs.values() for f in stats["files"].values())
    return {
        "pretty_name": "cohbench: coherence and faithfulness of narrative summaries",
        "language": ["en"],
        "license": "other",
        "license_name": "per-config",
        "license_link": "README.md#configs",
        "task_categories": ["text-classification", "token-classification", "summarization"],
        "task_ids": ["fact-checking", "text-scoring"],
        "size_categories": [_size_category(rows)],
        "annotations_creators": ["expert-generated", "crowdsourced", "machine-generated"],
        "tags": ["coherence", "faithfulness", "narrative", "summarization-evaluation", "synthetic"],
        # Each config's version, which `load_dataset` gives its DatasetInfo (a development version, whose records no
        # version declares, has no X.Y.Z to give).
        "configs": [
            {"config_name": name, **({"version": v} if not is_development(v := data["configs"][name]["version"]) else {}),
             "data_files": [{"split": split, "path": f["path"]} for split, f in stats["files"].items()]}
            for name, stats in configs.items()
        ],
        # The data files' sha256 in the YAML: `load_dataset` keys its cache on the card's YAML, so a rebuilt file
        # (even of the same size) gets a fresh cache instead of the rows cached before (huggingface/datasets#2956).
        # `datasets` (5.2) never checks them itself, not even under verification_mode="all_checks" (only
        # `datasets-cli test` records a file's checksum); what it does check, by default, is each split's row count,
        # so a data file with other rows than the card says is refused. `num_bytes`, which it requires and does not
        # compare, is the Parquet file's size.
        "dataset_info": [
            {"config_name": name,
             "splits": [{"name": split, "num_bytes": f["bytes"], "num_examples": f["rows"]} for split, f in stats["files"].items()],
             "download_checksums": {f["path"]: {"num_bytes": f["bytes"], "checksum": f["sha256"]} for f in stats["files"].values()}}
            for name, stats in configs.items()
        ],
    }


def _count_table(configs: dict[str, dict]) -> list[str]:
    """One row per config, over all its splits (rows per split are in the configs table; per split in stats/)."""
    lines = [
        "| config | documents | text ok / error / none | sentence ok / error / none | spans |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, stats in configs.items():
        total = lambda key, label: sum(s[key].get(label, 0) for s in stats["splits"].values())  # noqa: E731
        documents = sum(s["documents"] for s in stats["splits"].values())
        text = " / ".join(str(total("labels", label)) for label in ("ok", "error", "no_label"))
        sentence = " / ".join(str(total("sentence_labels", label)) for label in ("ok", "error", "no_label"))
        lines.append(f"| `{name}` | {documents} | {text} | {sentence} | {sum(s['spans'] for s in stats['splits'].values())} |")
    return lines


def card_markdown(configs: dict[str, dict], data: dict) -> str:
    """The card of the configs built in a release; `data` is their provenance (`versions.provenance`): the release
    version and each config's version and fingerprint."""
    from ..schema import split_sort_key

    configs = {name: stats | {"files": dict(sorted(stats["files"].items(), key=lambda item: split_sort_key(item[0])))}
               for name, stats in configs.items()}  # fmt: skip
    # flow style for the innermost mappings and lists: one line per split instead of three
    front = yaml.safe_dump(front_matter(configs, data), sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None)
    lines = [
        "---", front.rstrip(), "---", "",
        "# cohbench",
        "",
        "Corpora for evaluating the **coherence and faithfulness of narrative summaries** and of stories: expert and",
        "crowd annotations of LLM-written book, movie, story and news summaries (SNaC, StorySumm, SummEval), and",
        "synthetic incoherence (a sentence removed or replaced) made from TimeTravel, FairytaleQA and Story Cloze",
        f"stories. This is cohbench {data['release']}. Every config has the same schema (`catalog/SCHEMA.md` of the project),",
        "built from pinned upstream files; labels mean the same everywhere: **1 = has an error**, -1 = no label.",
        "",
        "Each config has its own version, bound to a fingerprint of its records (`manifest.json`): a major version when",
        "records or labels change, a minor one when fields are added, a patch for anything else; a config whose records",
        "differ from its declared version shows `+dev`. Cite a result with the release and config versions",
        "(`cohbench cite CONFIG`); the project's CHANGELOG.md says what changed from one release to the next.",
        "",
        "Human and synthetic labels are never mixed silently: a record made by a corruption generator has a non-null",
        "`corruption`, and a config holding any such record is `synthetic` (its unaltered records are labelled by the",
        "same recipe); the SQL views' `annotation` column and the table below say `human` or `synthetic`.",
        "",
        "```python",
        "from datasets import load_dataset",
        'load_dataset("path/to/this/folder", "snac")      # or: import cohbench; cohbench.load("snac")',
        "```",
        "",
        "`cohbench sql` answers questions over every config with DuckDB; `cohbench cite CONFIG` prints the BibTeX",
        "to cite. `manifest.json` lists every upstream file (URL, sha256) and release file; `croissant.json` describes",
        "the release in Croissant; `stats/<config>.json` holds every count.",
        "",
        "## Configs",
        "",
        "| config | version | labels on | rows | annotations | licence | cite |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for name, stats in configs.items():
        rows = ", ".join(f"{split} {f['rows']}" for split, f in stats["files"].items())
        licence = licence_of(stats)
        research = " (research only)" if stats["research_only"] else ""
        named = f"[{licence['id']}]({licence['link']})" if licence["link"] else licence["id"]
        keys = ", ".join(f"`{key}`" for key in citation_keys(_bibtex_of(stats["corpus"])))
        lines.append(f"| `{name}` | {data['configs'][name]['version']} | {_labelled(stats)} | {rows} | {annotation_of(stats)} "
                     f"| {named}{research} | {keys} |")
    renamed = [f"`{name}` " + ", ".join(f"{ours} = {theirs}" for ours, theirs in stats["notes"]["upstream_splits"].items())
               for name, stats in configs.items() if stats["notes"].get("upstream_splits")]  # fmt: skip
    lines += ["", "Splits are `train`, `validation`, `test` everywhere" + (f"; upstream names: {'; '.join(renamed)}" if renamed else "") + ".",
              "Each corpus's section below says what its licence covers; research-only configs must not be redistributed."]
    by_corpus: dict[str, list[str]] = {}
    for name, stats in configs.items():
        by_corpus.setdefault(stats["corpus"], []).append(name)
    for corpus, names in by_corpus.items():
        lines += ["", f"## {corpus} ({', '.join(f'`{n}`' for n in names)})", ""]
        card = corpus_card(corpus)
        if card:
            lines += [re.sub(r"^(#+) ", r"#\1 ", card[0], flags=re.M), "",
                      f"The whole card (fields, splits, construction, every known defect): [`cards/{corpus}.md`](cards/{corpus}.md).", ""]
    lines += ["", "## Counts (machine-written)", "", *_count_table(configs), ""]
    for name, stats in configs.items():
        account = f"- `{name}`: {stats['upstream_records']} upstream records, {stats['built_records']} built"
        account += "".join(f", {n} dropped ({reason})" for reason, n in stats["dropped"].items())
        lines.append(account + "".join(f"; erratum `{e['id']}` ({e['records_affected']} record(s), see manifest.json)" for e in stats["errata"]))
    lines.append("")
    entries = {"cohbench": cohbench_citation(data["release"])}  # one entry per key: configs share papers
    for corpus in by_corpus:
        for entry in bibtex_entries(_bibtex_of(corpus)):
            entries.setdefault(citation_keys(entry)[0], entry)
    lines += ["## Citation", "", "```bibtex", "\n\n".join(entries.values()), "```"]
    return "\n".join(lines) + "\n"
