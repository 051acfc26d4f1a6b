"""Stories that synthetic training data made from a user's corpus must not hold (ROCStories, for one, contains
TimeTravel's and Story Cloze's stories): every registered corpus's held-out narratives (`Corpus.held_out_texts`, the
leakage policy's one declaration), recognised by the fingerprint of their normalised full text.

The fingerprints are computed once, when a release is built (`release.build` records each corpus's in its configs'
stats), and ship with the package in `held_out.json`, which `cohbench held-out` rewrites from a release's stats
and a test keeps equal to the checkout's release: checking a story reads no upstream file."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .. import jsonout
from ..corpora import HELD_OUT_FINGERPRINT
from ..errors import CorruptionError

PACKAGED = Path(__file__).with_name("held_out.json")


@functools.lru_cache(maxsize=1)
def held_out_fingerprints() -> dict[str, frozenset[str]]:
    """The packaged fingerprints of every corpus's held-out narratives, by corpus."""
    try:
        recorded = json.loads(PACKAGED.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CorruptionError(f"{PACKAGED} cannot be read ({error}); reinstall cohbench, or rewrite it with `cohbench "
                           "held-out` from a release") from None
    if recorded.get("method") != HELD_OUT_FINGERPRINT:
        raise CorruptionError(f"{PACKAGED} holds fingerprints made another way ({recorded.get('method')!r}); rewrite it "
                           "with `cohbench held-out` from a release built by this version")
    return {corpus: frozenset(fingerprints) for corpus, fingerprints in recorded["corpora"].items()}


def from_release(configs: dict[str, dict]) -> dict:
    """The packaged file's content, gathered from a release's built configs (name -> stats): each corpus's
    fingerprints as its configs' stats record them. Configs of one corpus that record different fingerprints were
    built from different upstream files or code, and are refused."""
    from ..corpora.registry import corpora

    corpora_by_fingerprints, where = {}, {}
    for config, stats in sorted(configs.items()):
        held_out = stats.get("held_out")
        if held_out is None:
            continue
        if held_out.get("method") != HELD_OUT_FINGERPRINT:
            raise CorruptionError(f"stats/{config}.json records held-out fingerprints made another way; rebuild it with "
                               f"`cohbench build {config}`")
        corpus = stats["corpus"]
        if corpus in corpora_by_fingerprints and corpora_by_fingerprints[corpus] != held_out["fingerprints"]:
            raise CorruptionError(f"stats/{config}.json and stats/{where[corpus]}.json record different held-out stories "
                               f"of {corpus}; rebuild both")
        corpora_by_fingerprints[corpus], where[corpus] = held_out["fingerprints"], config
    declared = sorted(c.name for c in corpora().values() if c.held_out_texts)
    missing = [corpus for corpus in declared if corpus not in corpora_by_fingerprints]
    if missing:
        raise CorruptionError(f"the release records no held-out fingerprints of {', '.join(missing)}; build one of "
                           f"{'its' if len(missing) == 1 else 'their'} configs with this version of cohbench")
    return {"method": HELD_OUT_FINGERPRINT, "corpora": {c: corpora_by_fingerprints[c] for c in declared}}


def write_packaged(configs: dict[str, dict], target: Path = PACKAGED) -> dict:
    """Rewrite the packaged fingerprints from a release's built configs; returns what was written."""
    content = from_release(configs)
    jsonout.write(target, content)
    held_out_fingerprints.cache_clear()
    return content
