"""SummEval (Fabbri et al., TACL 2021): Likert ratings of coherence, consistency, fluency and relevance for
100 CNN/DailyMail articles x 16 summarisation systems.

No reachable copy keeps every rating, so two upstream copies are joined on (CNN/DM id, system id):
- DAMO-NLP-SG/LLM_summeval: SummEval's own records, per annotator (3 experts, 5 crowd workers), for the
  12 abstractive systems; their text is SummEval's verbatim text and is preferred;
- neulab/BARTScore `SUM/SummEval/data.pkl`: the mean of the 3 experts for all 16 systems, with texts that
  BARTScore re-tokenised and re-cased (first letter of each sentence upper-cased, `''` -> ``, -lrb- -> "(").
  It is the only copy of the 4 extractive systems' summaries, whose records say so in `text_variant`.

Upstream quirks handled here and nowhere else:
- the pickle is untrusted input: it is read by an unpickler that refuses every global, so it can build
  only plain containers, strings and numbers and can run no code;
- annotators have no ids upstream; list position is used as the id (`expert_1`..`expert_3`,
  `crowd_1`..`crowd_5`). That position k is the same person in every record is a convention, not a fact;
- on summaries present in both copies, the mean of DAMO's 3 expert ratings must equal BARTScore's score
  in every dimension; mismatches are counted in the notes and listed in the records' `defects`.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ..errors import ParseError
from .registry import ConfigSpec, Corpus, Parsed, register
from ..schema import empty_record
from . import json_lines, pinned
from ..text import split_sentences


# SummEval system ids -> names in the SummEval paper; the first four are extractive.
SYSTEM_NAMES = {
    "M0": "LEAD-3",
    "M1": "NEUSUM",
    "M2": "BanditSum",
    "M5": "RNES",
    "M8": "Pointer-Generator",
    "M9": "Fast-abs-rl",
    "M10": "Bottom-Up",
    "M11": "Improve-abs",
    "M12": "Unified-ext-abs",
    "M13": "ROUGESal",
    "M14": "Multi-task (Ent + QG)",
    "M15": "Closed book decoder",
    "M17": "T5",
    "M20": "GPT-2 (zero-shot)",
    "M22": "BART",
    "M23": "Pegasus",
}
EXTRACTIVE = frozenset({"M0", "M1", "M2", "M5"})
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
EXPERTS, CROWD = 3, 5
BARTSCORE_TEXT = "bartscore_tokenised_sentence_case"

_PINNED = pinned("summeval")
DAMO_SOURCES = tuple(source for name, source in _PINNED.items() if name.startswith("damo_"))
BARTSCORE_SOURCE = _PINNED["bartscore"]

CITATION = """@article{fabbri-etal-2021-summeval,
  title = {{S}umm{E}val: Re-evaluating Summarization Evaluation},
  author = {Fabbri, Alexander R. and Kry{\\'s}ci{\\'n}ski, Wojciech and McCann, Bryan and Xiong, Caiming and Socher, Richard and Radev, Dragomir},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {9},
  pages = {391--409},
  year = {2021}
}"""


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Builds dicts, lists, strings and numbers only: any class or function reference is refused."""

    def find_class(self, module, name):
        raise ParseError(
            f"{self.filename} asks to load the Python object {module}.{name}; a SummEval score file holds only plain "
            "data, so it was refused and nothing was executed. Replace the file with the pinned upstream version"
        )

    def persistent_load(self, pid):
        raise ParseError(f"{self.filename} uses pickle persistent ids, which plain data never needs; replace the file")


def load_pickle(path: Path) -> object:
    """Load an untrusted pickle that may only contain plain data; anything else is a ParseError naming the file."""
    path = Path(path)
    with open(path, "rb") as handle:
        unpickler = _NoGlobalsUnpickler(handle)
        unpickler.filename = path.name
        try:
            return unpickler.load()
        except ParseError:
            raise
        except Exception as error:  # a corrupt pickle can raise almost anything (EOFError, UnpicklingError, ...)
            raise ParseError(f"{path.name} is not a readable pickle ({type(error).__name__}: {error}); it may be truncated, replace it") from None


def _fail(filename: str, where: str, problem: str) -> ParseError:
    return ParseError(f"{filename}: {where} {problem}; replace the file with the pinned upstream version")


def _is_score(value, low=1, high=5) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


def _check_ratings(ratings, count: int, what: str, filename: str, where: str) -> None:
    if not isinstance(ratings, list) or len(ratings) != count:
        raise _fail(filename, where, f"must have {count} {what} ratings")
    for rating in ratings:
        if not isinstance(rating, dict) or set(rating) != set(DIMENSIONS) or not all(
            isinstance(rating[d], int) and _is_score(rating[d]) for d in DIMENSIONS
        ):
            raise _fail(filename, where, f"has a {what} rating that is not integers 1-5 for {', '.join(DIMENSIONS)}")


def load_damo(path: Path) -> list[dict]:
    """One SummEval record per line, checked for the fields the build uses."""
    path = Path(path)
    records = []
    for number, item in json_lines(path):
        where = f"line {number}"
        if not isinstance(item, dict):
            raise _fail(path.name, where, "is not a JSON object")
        missing = [f for f in ("id", "model_id", "decoded", "text", "references", "expert_annotations", "turker_annotations") if f not in item]
        if missing:
            raise _fail(path.name, where, f"lacks field(s) {', '.join(missing)}")
        if not all(isinstance(item[f], str) for f in ("id", "model_id", "decoded", "text")) or not (
            isinstance(item["references"], list) and all(isinstance(r, str) for r in item["references"])
        ):
            raise _fail(path.name, where, "has a non-string id, model_id, summary, article or reference")
        _check_ratings(item["expert_annotations"], EXPERTS, "expert", path.name, where)
        _check_ratings(item["turker_annotations"], CROWD, "crowd", path.name, where)
        records.append(item)
    return records


def load_bartscore(path: Path) -> dict:
    """`{doc_id: {src, ref_summs, sys_summs: {system: {sys_summ, scores}}}}`, checked for the fields used."""
    path = Path(path)
    data = load_pickle(path)
    if not isinstance(data, dict):
        raise _fail(path.name, "the top level", f"must be a dict keyed by document id, not {type(data).__name__}")
    for doc_id, doc in data.items():
        where = f"document {doc_id!r}"
        if not isinstance(doc_id, str) or not isinstance(doc, dict) or not {"src", "ref_summs", "sys_summs"} <= set(doc):
            raise _fail(path.name, where, "must be a dict with src, ref_summs and sys_summs")
        if not isinstance(doc["src"], str) or not isinstance(doc["ref_summs"], list) or not isinstance(doc["sys_summs"], dict):
            raise _fail(path.name, where, "has a src, ref_summs or sys_summs of the wrong type")
        for system, summary in doc["sys_summs"].items():
            scores = summary.get("scores") if isinstance(summary, dict) else None
            if not isinstance(summary, dict) or not isinstance(summary.get("sys_summ"), str) or not isinstance(scores, dict):
                raise _fail(path.name, f"{where}, system {system!r},", "must have a sys_summ string and a scores dict")
            if set(scores) != set(DIMENSIONS) or not all(_is_score(scores[d]) for d in DIMENSIONS):
                raise _fail(path.name, f"{where}, system {system!r},", f"must score {', '.join(DIMENSIONS)} within 1-5")
    return data


def _annotator_ratings(item: dict) -> list[dict]:
    ratings = []
    for kind, key in (("expert", "expert_annotations"), ("crowd", "turker_annotations")):
        for position, rating in enumerate(item[key], 1):
            ratings += [
                {"annotator": f"{kind}_{position}", "annotator_type": kind, "dimension": d, "score": float(rating[d])}
                for d in DIMENSIONS
            ]
    return ratings


def _mean_ratings(scores: dict) -> list[dict]:
    return [{"annotator": "expert_mean", "annotator_type": "expert_mean", "dimension": d, "score": float(scores[d])} for d in DIMENSIONS]


def _crosscheck(item: dict, scores: dict) -> list[str]:
    """Dimensions where the mean of DAMO's experts differs from BARTScore's (a multiple of 1/3, so compare x3)."""
    problems = []
    for dim in DIMENSIONS:
        total = sum(rating[dim] for rating in item["expert_annotations"])
        if abs(3 * scores[dim] - total) > 1e-6:
            problems.append(f"expert_mean_mismatch: {dim} mean of experts {total / 3:.4f}, BARTScore {scores[dim]:.4f}")
    return problems


def _damo_by_key(paths: Mapping[str, Path]) -> tuple[dict, Counter]:
    by_key, duplicates = {}, Counter()
    for name in sorted(p for p in paths if p.startswith("damo_")):
        path = Path(paths[name])
        for item in load_damo(path):
            expected = name.removeprefix("damo_")
            if item["model_id"] != expected:
                raise _fail(path.name, f"record {item['id']}", f"has model_id {item['model_id']!r}, but the file holds {expected}")
            key = (item["id"], item["model_id"])
            if key in by_key:
                duplicates[key] += 1
            else:
                by_key[key] = item
    return by_key, duplicates


def parse(paths: Mapping[str, Path], config: str = "summeval") -> Parsed:
    damo, duplicates = _damo_by_key(paths)
    bartscore = load_bartscore(Path(paths["bartscore"]))
    bart_keys = {(doc_id, system) for doc_id, doc in bartscore.items() for system in doc["sys_summs"]}
    keys = sorted(bart_keys | set(damo))
    articles = {doc_id: (item["text"], item["references"]) for (doc_id, _), item in sorted(damo.items())}
    dropped = Counter({"duplicate line in a DAMO file (first kept)": sum(duplicates.values())})
    kept, texts, defect_counts = [], [], Counter()
    mismatched, compared = [], 0
    for doc_id, system in keys:
        if system not in SYSTEM_NAMES:
            dropped[f"system {system} is not one of SummEval's 16 annotated systems"] += 1
            continue
        item = damo.get((doc_id, system))
        summary = bartscore.get(doc_id, {}).get("sys_summs", {}).get(system)
        record = empty_record()
        defects = []
        if item is not None:
            text, variant, ratings = item["decoded"], None, _annotator_ratings(item)
            if summary is not None:
                compared += 1
                defects = _crosscheck(item, summary["scores"])
        else:
            text, variant, ratings = summary["sys_summ"], BARTSCORE_TEXT, _mean_ratings(summary["scores"])
        if doc_id in articles:
            source_text, references = articles[doc_id]
        else:  # no DAMO record of this document: BARTScore's tokenised copy is all there is
            source_text, references = bartscore[doc_id]["src"], bartscore[doc_id]["ref_summs"]
            defects.append("bartscore_article: article and references are BARTScore's tokenised copies")
        record_id = f"{doc_id}/{system}"
        if any(d.startswith("expert_mean_mismatch") for d in defects):
            mismatched.append(record_id)
        defect_counts.update(d.split(":")[0] for d in defects)
        record.update(
            id=record_id,
            corpus="summeval",
            config=config,
            split="test",
            doc_id=doc_id,
            system=system,
            system_name=SYSTEM_NAMES[system],
            system_extractive=system in EXTRACTIVE,
            source_text=source_text,
            references=list(references),
            text_variant=variant,
            ratings=ratings,
            defects=defects,
        )
        kept.append(record)
        texts.append(text)
    for record, sentences in zip(kept, split_sentences(texts)):
        record["sentences"] = sentences
    notes = {
        "documents": len({r["doc_id"] for r in kept}),
        "systems": len({r["system"] for r in kept}),
        "records_with_annotator_ratings": sum(1 for r in kept if r["text_variant"] is None),
        "records_with_expert_mean_only": sum(1 for r in kept if r["text_variant"] == BARTSCORE_TEXT),
        "by_system": dict(sorted(Counter(r["system"] for r in kept).items(), key=lambda kv: int(kv[0][1:]))),
        "expert_mean_crosscheck": {
            "records_compared": compared,
            "records_mismatched": len(mismatched),
            "mismatched_ids": mismatched[:20],
        },
        "records_with_defects": sum(1 for r in kept if r["defects"]),
        "defects": dict(sorted(defect_counts.items())),
    }
    upstream = len(keys) + sum(duplicates.values())
    return Parsed(records=kept, upstream_records=upstream, dropped={k: v for k, v in dropped.items() if v}, notes=notes)


CORPUS = register(
    Corpus(
        name="summeval",
        description=(
            "Expert and crowd Likert ratings of coherence, consistency, fluency and relevance for 1,600 summaries "
            "of 100 CNN/DailyMail articles by 16 systems (Fabbri et al., 2021)."
        ),
        citation=CITATION,
        licence="MIT (SummEval annotations); Apache-2.0 (BARTScore copy); article text CNN/DailyMail, research use",
        homepage="https://github.com/Yale-LILY/SummEval",
        annotators="3 expert annotators and 5 crowd workers rated every summary 1-5 on coherence, consistency, fluency and relevance",
        sources=(*DAMO_SOURCES, BARTSCORE_SOURCE),
        configs=(
            ConfigSpec(
                name="summeval", protocol="metaeval", statistics="expert_ratings",
                description=(
                    "1,600 summaries (100 documents x 16 systems), test split only: SummEval is an evaluation set. "
                    "Per-annotator ratings for the 12 abstractive systems, expert means for the 4 extractive ones."
                ),
                expected_splits={"test": 1600},
                research_only=True,
            ),
        ),
        parse=parse,
    )
)
