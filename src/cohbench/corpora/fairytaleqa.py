"""FairytaleQA story texts (Xu et al., ACL 2022): public-domain fairy tales, as narrative incoherence detection
data (Cai et al. 2020, §3) in windows of N = 8 consecutive sentences with K = 2 altered (25%):
`fairytale_msd` (two non-adjacent inner sentences removed) and `fairytale_dsd` (two sentences replaced); and as
SNaC-style training pairs, `snac_synthetic`: the recipe `cohbench study transfer` chose on SNaC train + validation
run over the train and validation stories in longer windows (never a test story).

Upstream quirks handled here and nowhere else:
- each story is a CSV of human-segmented sections (`section,text`) with hard line breaks inside paragraphs:
  whitespace is collapsed before sentence splitting with `cohbench.text`;
- the upstream story-level train/val/test split (the folder a file is in) is kept and checked against
  `story_meta.csv`, whose names match the files' except `Snow-man-story.csv` (`snow-man` there): names are
  compared ignoring case and the difference is reported; `doc_id` is the file's story name.
Windows are cut without overlap from the start of each story's sentence sequence (sections concatenated in
order); the last < 8 sentences of a story are not used. A window is the upstream record of these configs
(stories left out by `max_stories_per_split`, null by default, are counted in the notes, not split).
"""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ..errors import ParseError
from ..corruptions import recipes
from .registry import ConfigSpec, Corpus, Parsed, register
from ..schema import ERROR_TYPES, OK, empty_record
from ..text import split_sentences
from . import incoherence as inc
from .incoherence import FairytaleOptions
from . import pinned

LICENCE = "Apache-2.0 (repository); stories are public-domain Project Gutenberg texts"
_PINNED = pinned("fairytaleqa")
META_SOURCE = _PINNED.pop("story_meta")
STORY_SOURCES = tuple(_PINNED.values())  # named <split>/<story file>
FILES = tuple(tuple(source.name.split("/", 1)) for source in STORY_SOURCES)  # (split, story file)

CITATION = """@inproceedings{xu-etal-2022-fantastic,
  title = {Fantastic Questions and Where to Find Them: {F}airytale{QA} -- An Authentic Dataset for Narrative Comprehension},
  author = {Xu, Ying and Wang, Dakuo and Yu, Mo and Ritchie, Daniel and Yao, Bingsheng and Wu, Tongshuang and Zhang, Zheng and Li, Toby Jia-Jun and Bradford, Nora and Sun, Branda and Hoang, Tran Bao and Sang, Yisi and Hou, Yufang and Ma, Xiaojuan and Yang, Diyi and Peng, Nanyun and Yu, Zhou and Warschauer, Mark},
  booktitle = {Proceedings of ACL 2022},
  year = {2022}
}"""

csv.field_size_limit(1 << 26)


# Upstream split folder -> cohbench's split vocabulary (schema.SPLITS); the card records the upstream name.
UPSTREAM_SPLITS = {"val": "validation"}

def _sections(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != ["section", "text"]:
            raise ParseError(f"{path.name} must have the header `section,text`, found {reader.fieldnames}; fetch the pinned file again")
        rows = list(reader)
    try:
        rows.sort(key=lambda row: int(row["section"]))
    except (TypeError, ValueError):
        raise ParseError(f"{path.name} has a non-numeric or missing section number; the file is truncated or corrupt") from None
    return [" ".join((row["text"] or "").split()) for row in rows]


def _check_meta(path: Path, files) -> list[str]:
    """Check every story's folder against story_meta.csv; return the names that match only ignoring case."""
    with open(path, encoding="utf-8", newline="") as handle:
        meta = {row["filename"].lower(): (row["filename"], row["split"]) for row in csv.DictReader(handle)}
    case_only = []
    for split, filename in files:
        story = filename.removesuffix("-story.csv")
        name, meta_split = meta.get(story.lower(), (None, None))
        if meta_split != split:
            raise ParseError(f"story_meta.csv puts {story} in {meta_split!r} but its file is in {split}/; "
                             "the pinned files agree, so fetch them again")
        if name != story:
            case_only.append(f"{filename} is {name!r} in story_meta.csv")
    return case_only


def windows(paths: Mapping[str, Path], config: str, opts: FairytaleOptions, files=FILES) -> tuple[list[dict], int, Counter, dict]:
    """Coherent 8-sentence windows (records), the number cut, drops by reason, and story statistics.
    `files` = (split, file name) of the stories: the pinned list unless a caller gives another."""
    case_only = _check_meta(Path(paths["story_meta"]), files)
    story_limit = opts.max_stories_per_split
    chosen_files = []
    for split in ("train", "val", "test"):
        names = inc.stable_order([f for s, f in files if s == split], "fairytale-stories")
        chosen_files += [(split, f) for f in sorted(names[:story_limit] if story_limit else names)]
    stories = [(split, filename.removesuffix("-story.csv"), _sections(Path(paths[f"{split}/{filename}"])))
               for split, filename in chosen_files]
    flat = [text for _, _, sections in stories for text in sections]
    split_texts = iter(split_sentences(flat))
    size, limit = opts.window, opts.max_windows_per_story
    records, cut, dropped, unused = [], 0, Counter(), 0
    for split, story, sections in stories:
        sentences = [s for _ in sections for s in next(split_texts)]
        count = len(sentences) // size
        unused += len(sentences) - count * size
        cut += count
        chosen = sorted(inc.stable_order([str(w) for w in range(count)], f"fairytale-{story}")[:limit]) if limit else None
        for w in range(count):
            if chosen is not None and str(w) not in chosen:
                dropped["beyond_max_windows_per_story"] += 1
                continue
            record = empty_record()
            record.update(id=f"{story}-w{w:03d}", corpus="fairytaleqa", config=config, split=UPSTREAM_SPLITS.get(split, split), doc_id=story,
                          sentences=sentences[w * size : (w + 1) * size], sentence_labels=[OK] * size)
            records.append(record)
    stats = {"stories_used": dict(Counter(UPSTREAM_SPLITS.get(split, split) for split, _, _ in stories)),
             "stories_left_out_by_max_stories_per_split": len(files) - len(chosen_files), "sentences_not_in_a_window": unused,
             "sections": len(flat), "file_names_differing_from_story_meta_in_case": case_only}
    return records, cut, dropped, stats


def narratives(paths: Mapping[str, Path], config: str, opts: FairytaleOptions) -> list[dict]:
    return windows(paths, config, opts)[0]


def held_out_texts(paths: Mapping[str, Path], files=FILES) -> list[str]:
    """The validation and test stories, whole (sections in order), each as one text."""
    return [" ".join(_sections(Path(paths[f"{split}/{filename}"]))) for split, filename in files if split != "train"]


PAIR = inc.CorruptedPair(
    "fairytale", FairytaleOptions,
    msd="Missing sentence detection: 6 of 8 sentences shown; gap_labels mark the two gaps with a missing sentence "
        "(never first/last, never adjacent).",
    dsd="Discordant sentence detection: 2 of 8 sentences replaced by confounders from other stories of the same "
        "split; sentence_labels mark them.",
)


@dataclasses.dataclass(frozen=True)
class SnacSyntheticOptions(inc.GeneratorOptions):
    recipe: str  # the registered recipe (a mixture) that makes the pairs
    window: int  # sentences per narrative the recipe reads (the stories cut as `fairytale` says, in longer windows)
    instances: int  # pairs asked of each narrative
    fairytale: FairytaleOptions

    SECTION = "snac_synthetic"

    def narratives(self, paths: Mapping[str, Path], config: str, files=FILES) -> tuple[list[dict], int, Counter, dict]:
        """The coherent windows the recipe runs over, of every split (`windows`)."""
        return windows(paths, config, dataclasses.replace(self.fairytale, window=self.window), files)


SNAC_SYNTHETIC = ConfigSpec(
    name="snac_synthetic", protocol="sentences", options=SnacSyntheticOptions,
    description="SNaC-style (context, sentence, label, error type) training pairs for CharE and RefE, balanced, made by the "
                "recipe the transfer study chose on SNaC train + validation (snac_mixture) from FairytaleQA's train and "
                "validation stories; no test split.")
EVALUATION_ONLY = "test"  # the upstream split whose stories training data never holds
NEVER_TRAINING = "test_story_never_training_data"


def snac_synthetic(paths: Mapping[str, Path], config: str, opts: SnacSyntheticOptions, files=FILES) -> Parsed:
    """Accounting unit: a record a window can give (`instances` pairs of a negative and its coherent counterpart).
    Windows of test stories give none; a window its recipe could make fewer pairs from counts the rest by the
    reason of the recipe it was drawn to."""
    narratives, cut, before, stats = opts.narratives(paths, config, files)
    per_window = 2 * opts.instances
    dropped = Counter({reason: n * per_window for reason, n in before.items()})
    training = [r for r in narratives if r["split"] != EVALUATION_ONLY]
    dropped[NEVER_TRAINING] = per_window * (len(narratives) - len(training))
    recipe = recipes.lookup(opts.recipe)
    params = opts.recipe_params(opts.recipe)
    outputs, _ = recipes.run(opts.recipe, training, params)
    records = []
    for window, out in zip(training, outputs):
        if len(out) < per_window:
            dropped[recipe.made_nothing(window, params)] += per_window - len(out)
        for record in out:
            record["config"] = config
        records += out
    labels = Counter((r["split"], "negative" if r["label"] == 1 else "positive") for r in records)
    notes = {
        "windows_by_split": dict(sorted(Counter(r["split"] for r in narratives).items())),
        "records_by_split_and_label": {split: {label: n for (s, label), n in sorted(labels.items()) if s == split}
                                       for split in sorted({s for s, _ in labels})},
        "negatives_by_recipe": dict(sorted(Counter(r["corruption"]["generator"] for r in records if r["label"] == 1).items())),
        "targeted_types": dict(sorted(Counter(ERROR_TYPES[s["type"]] for r in records for s in r["spans"]).items())),
        # the stories' cut is the window above; of the fairytale options, only which stories and windows are read
        "parameters": {**{k: v for k, v in opts.recorded(opts.recipe).items() if k != "fairytale"},
                       "max_stories_per_split": opts.fairytale.max_stories_per_split,
                       "max_windows_per_story": opts.fairytale.max_windows_per_story},
        **stats,
    }
    return Parsed(records=records, upstream_records=per_window * cut, dropped=dict(+dropped), notes=notes)


def parse(paths: Mapping[str, Path], config: str, opts, files=FILES) -> Parsed:
    if config == SNAC_SYNTHETIC.name:
        return snac_synthetic(paths, config, opts, files)
    coherent, cut, dropped, stats = windows(paths, config, opts, files)
    return PAIR.parsed(config, opts, coherent, cut, dropped, **stats,
                       upstream_splits={ours: theirs for theirs, ours in UPSTREAM_SPLITS.items()})


CORPUS = register(
    Corpus(
        name="fairytaleqa",
        description=(
            "Public-domain fairy tales of FairytaleQA (Xu et al., 2022) cut into 8-sentence windows and turned into "
            "narrative incoherence detection instances as in Cai et al. (2020): two sentences removed (MSD) or "
            "replaced by confounders (DSD); and made into SNaC-style training pairs (Goyal et al., 2022) by the "
            "recipe mixture that transfers best to SNaC."
        ),
        citation=CITATION,
        licence=LICENCE,
        homepage="https://github.com/uci-soe/FairytaleQAData",
        licence_id="apache-2.0",
        licence_url="https://github.com/uci-soe/FairytaleQAData",
        sources=(*STORY_SOURCES, META_SOURCE),
        configs=(*PAIR.configs, SNAC_SYNTHETIC),
        parse=parse,
        held_out_texts=held_out_texts,
        narratives=narratives,
    )
)
