"""Stories of cohbench test splits, so that synthetic training data made from a user's corpus cannot hold them
(ROCStories, for one, contains TimeTravel's and Story Cloze's test stories). Matched by normalised full text."""

from __future__ import annotations

from ..text import normalise


def test_split_texts(progress: bool = False) -> dict[str, set[str]]:
    """Normalised texts of every registered corpus's test split, by corpus, parsed from the pinned upstream files."""
    from ..fetch import fetch
    from ..registry import corpora

    out = {}
    for name, corpus in corpora().items():
        if corpus.test_texts:
            paths = fetch(corpus, progress=progress)
            out[name] = {normalise(text) for text in corpus.test_texts(paths)}
    return out
