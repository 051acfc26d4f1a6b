"""SNaC's spans located in their segment: upstream gives each span as a string, so each is placed by one documented
rule (`_preference`), and how it resolved (unique, ambiguous, failed) is recorded with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ...schema import CATEGORIES, ERROR_TYPES, category_of

# Types whose span repeats or contradicts an earlier antecedent: the error is the occurrence after it.
AFTER_ANTECEDENT = ("RepE", "InconE")


def _word_aligned(text: str, start: int, span: str) -> bool:
    end = start + len(span)
    left = not span[0].isalnum() or start == 0 or not text[start - 1].isalnum()
    right = not span[-1].isalnum() or end == len(text) or not text[end].isalnum()
    return left and right


def _candidates(text: str, span: str) -> list[int]:
    """Start offsets where `span` may be meant: its word-aligned occurrences, or, for a span the annotator cut
    inside a word, all its occurrences. None for an empty (or all-whitespace) span."""
    if not span.strip():
        return []
    starts, at = [], text.find(span)
    while at != -1:
        starts.append(at)
        at = text.find(span, at + 1)
    aligned = [start for start in starts if _word_aligned(text, start, span)]
    return aligned or starts


def _preference(text: str, span: str, error_type: str, antecedents: Iterable[str]) -> list[int]:
    """Candidate offsets in the order the rule prefers them.

    A RepE or InconE is the text that repeats or contradicts its antecedent, so when an antecedent occurs in
    the segment, occurrences starting after the end of the earliest antecedent come first. Every other type
    (CharE, RefE: the first mention is the unintroduced one; SceneE, GramE, CorefE) prefers text order."""
    found = _candidates(text, span)
    if error_type in AFTER_ANTECEDENT:
        ends = [_candidates(text, a)[0] + len(a) for a in antecedents if _candidates(text, a)]
        if ends:
            anchor = min(ends)
            return [c for c in found if c >= anchor] + [c for c in found if c < anchor]
    return found


def _covered(sentences: list[tuple[int, int]], start: int, end: int) -> list[int]:
    return [i for i, (s, e) in enumerate(sentences) if max(s, start) < min(e, end)]


def resolve_segment(segment: int, text: str, errors: list[dict], sentences: list[tuple[int, int]], first: int, tally: Counter):
    """Spans of one segment. `sentences` are the segment's sentence offsets; `first` the global index of its first."""
    spans, defects, taken = [], [], {}
    for error in errors:
        span, error_type = error["span"], error["error_type"]
        antecedents = list(error.get("antecedants", []))
        order = _preference(text, span, error_type, antecedents)
        entry = {
            "segment": segment,
            "start": None,
            "end": None,
            "first_sentence": None,
            "last_sentence": None,
            "text": span,
            "type": ERROR_TYPES.index(error_type),
            "category": CATEGORIES.index(category_of(error_type)),
            "votes": error["votes"],
            "annotator": None,
            "antecedents": antecedents,
            "resolved": bool(order),
            "resolution": "failed" if not order else "unique" if len(order) == 1 else "ambiguous",
        }
        tally[entry["resolution"]] += 1
        if order:
            used = taken.setdefault((span, error_type), set())
            start = next((c for c in order if c not in used), None)
            if start is None:  # more identical entries than occurrences; never seen upstream
                start = order[0]
                defects.append(f"repeated_entry_without_occurrence: segment {segment}: {span!r} ({error_type})")
            used.add(start)
            covered = _covered(sentences, start, start + len(span))
            entry.update(start=start, end=start + len(span), first_sentence=first + covered[0], last_sentence=first + covered[-1])
            if not _word_aligned(text, start, span):
                tally["partial_word"] += 1
                defects.append(f"partial_word_span: segment {segment}: {span!r} ({error_type}) starts or ends inside a word")
            if len(covered) > 1:
                tally["crossing_sentences"] += 1
        else:
            why = "empty" if not span.strip() else "not_a_substring"
            tally[f"failed_{why}"] += 1
            if len(sentences) == 1:  # the best guess is certain only for a one-sentence segment
                entry.update(first_sentence=first, last_sentence=first)
                tally["failed_in_one_sentence_segment"] += 1
            defects.append(f"unresolved_span: segment {segment}: {span!r} ({error_type}) is {why.replace('_', ' ')}")
        spans.append(entry)
    return spans, defects
