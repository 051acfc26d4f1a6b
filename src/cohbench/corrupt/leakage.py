"""Stories that synthetic training data made from a user's corpus must not hold (ROCStories, for one, contains
TimeTravel's and Story Cloze's stories): every registered corpus's held-out narratives (`Corpus.held_out_texts`, the
leakage policy's one declaration), matched by normalised full text."""

from __future__ import annotations


def held_out_texts(progress: bool = False) -> dict[str, set[str]]:
    """Normalised held-out texts of every registered corpus, by corpus, parsed from the pinned upstream files."""
    from ..builders import held_out
    from ..fetch import fetch
    from ..registry import corpora

    return held_out(corpora().values(), lambda corpus: fetch(corpus, progress=progress))
