"""`cohbench index`: what a release says about itself, rendered from every config built into it: the card
(README.md, with each corpus card's summary; the whole cards in cards/), croissant.json and manifest.json, written
last, which records the sha256 of every data file and every shipped file (`layout.SHIPPED`), the card included,
and so ends the build state of each config built since the last index (`build_state`)."""

from __future__ import annotations

from pathlib import Path

from .. import jsonout, settings
from ..atomic import atomic_dir, write_text
from .card import card_markdown, corpus_card
from .croissant import croissant
from .build_state import clear_build_state
from .files import MANIFEST, read_text
from .layout import built_configs, remove_leftovers, shipped_files
from .versions import provenance
from ..corpora.sources import sha256_of


def manifest(configs: dict[str, dict], data: dict, shipped: dict[str, str] | None = None) -> dict:
    return {
        "cohbench_version": data["release"],
        "configs": {
            name: {
                "corpus": s["corpus"],
                "version": data["configs"][name]["version"],
                "fingerprint": s["fingerprint"],
                "licence": s["licence"],
                "research_only": s["research_only"],
                "files": s["files"],
                "inputs": s["inputs"],
                "errata": s["errata"],
            }
            for name, s in configs.items()
        },
        "shipped": shipped or {},
    }


def write_index(release: Path | None = None) -> None:
    """Render README.md, cards/, croissant.json and manifest.json from every config built into the release folder."""
    release = release or settings.release_dir()
    remove_leftovers(release)
    # the stats as their records (manifest or build state) have them: a tampered file is refused, never recorded;
    # a lost manifest is rewritten from the stats as they are
    configs = built_configs(release, recorded=False)
    data = provenance(release, configs)
    # everything read and rendered before the first file is written: a refused input leaves the release as it was
    described = croissant(configs, data)
    corpus_cards = {corpus: card[1] for corpus in sorted({stats["corpus"] for stats in configs.values()}) if (card := corpus_card(corpus))}
    card = card_markdown(configs, data)
    baseline = release / "baseline" / "metrics.md"  # written by `cohbench train` (the release gate)
    if baseline.is_file():
        card += "\n" + read_text(baseline, "rewrite it with `cohbench train` (or restore it from the release)")
    jsonout.write(release / "croissant.json", described)
    with atomic_dir(release / "cards") as cards:  # the whole folder, so that a corpus no longer built leaves no card
        for corpus, text in corpus_cards.items():
            write_text(cards / f"{corpus}.md", text)
    write_text(release / "README.md", card)
    shipped = {p.relative_to(release).as_posix(): sha256_of(p) for p in shipped_files(release)}
    jsonout.write(release / MANIFEST, manifest(configs, data, shipped))
    clear_build_state(release, shipped)
