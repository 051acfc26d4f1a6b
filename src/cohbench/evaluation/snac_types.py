"""SNaC's typed-sentence scores (Goyal et al. 2022, §5, Table 11): per error type P/R/F1 and span overlap."""

from __future__ import annotations

from ..schema import COHERENCE_ERROR_TYPES, ERROR_TYPES
from .detection import unit_metrics
from .protocol import PredictionsError
from .reader import Prediction


def _sentence_starts(record: dict) -> list[int | None]:
    """Offset of each sentence inside its segment (sentences are cut from their segment in order)."""
    starts, cursor = [], {}
    for sentence, segment in zip(record["sentences"], record["sentence_segments"]):
        at = record["segments"][segment].find(sentence, cursor.get(segment, 0))
        starts.append(at if at >= 0 else None)
        if at >= 0:
            cursor[segment] = at + len(sentence)
    return starts


def _predicted_spans(prediction: Prediction) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(sentence, type) -> predicted character ranges in that sentence (resolved when the file was read)."""
    out: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for sentence, error_type, start, end in prediction.extra.get("spans", ()):
        out.setdefault((sentence, error_type), []).append((start, end))
    return out


def _gold_spans(record: dict) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(sentence, type) -> gold character ranges, in sentence coordinates, of every resolved span."""
    starts = _sentence_starts(record)
    out: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for span in record["spans"]:
        if span["start"] is None or span["first_sentence"] is None:
            continue
        for i in range(span["first_sentence"], span["last_sentence"] + 1):
            if starts[i] is None:
                continue
            local = (span["start"] - starts[i], span["end"] - starts[i])
            out.setdefault((i, ERROR_TYPES[span["type"]]), []).append(local)
    return out


def typed_sentence_metrics(rows, predictions, threshold) -> dict:
    """SNaC (Goyal et al. §5, Table 11): sentence-level metrics on the labels and on the >=2-vote labels; with
    `types`, per-type P/R/F1; with `spans`, ov. = the share of correctly typed sentences whose predicted span of
    that type overlaps a gold span of that type."""
    from ..schema import sentence_examples

    out = {"sentence": unit_metrics("sentences")(rows, predictions, threshold)}
    min2 = [dict(r, sentence_labels=r["sentence_labels_min2votes"]) for r in rows]
    out["sentence_min2votes"] = unit_metrics("sentences")(min2, predictions, threshold)
    typed = [r for r in rows if "types" in predictions[r["id"]].extra]
    if not typed:
        return out
    if len(typed) < len(rows):  # P/R/F1 over the typed records alone would read as the split's
        raise PredictionsError(f"types are given for {len(typed)} of the {len(rows)} records scored; give types for "
                               "every record (an empty list for a sentence with no error), or for none")
    counts = {t: {"tp": 0, "fp": 0, "fn": 0, "overlap": 0, "with_spans": 0} for t in ERROR_TYPES}
    for record in typed:
        prediction = predictions[record["id"]]
        gold_types = [set(e["error_types"]) for e in sentence_examples(record)]
        predicted_spans, gold_spans = _predicted_spans(prediction), _gold_spans(record)
        for i, (gold, predicted) in enumerate(zip(gold_types, prediction.extra["types"])):
            for t in set(predicted) | gold:
                c = counts[t]
                if t in predicted and t in gold:
                    c["tp"] += 1
                    if (i, t) in predicted_spans:
                        c["with_spans"] += 1
                        c["overlap"] += any(
                            ps < ge and gs < pe for ps, pe in predicted_spans[(i, t)] for gs, ge in gold_spans.get((i, t), [])
                        )
                elif t in predicted:
                    c["fp"] += 1
                else:
                    c["fn"] += 1
    per_type = {}
    for t, c in counts.items():
        if t not in COHERENCE_ERROR_TYPES and not (c["tp"] or c["fp"]):
            continue  # gold types are coherence errors only (§5); language types appear when predicted
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        per_type[t] = {
            "precision": p,
            "recall": r,
            "f1": (2 * p * r / (p + r) if p + r else 0.0) if p is not None and r is not None else None,
            "ov": c["overlap"] / c["with_spans"] if c["with_spans"] else None,
            "gold": c["tp"] + c["fn"],
            "predicted": c["tp"] + c["fp"],
        }
    out["per_type"] = per_type
    return out
