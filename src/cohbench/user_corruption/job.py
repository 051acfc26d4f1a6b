"""`cohbench corrupt`: synthetic training data from a user's narratives with a registered recipe.

Input stories become coherent records (split into sentences, optionally cut into windows of N sentences), are
assigned a split by a hash of their id, lose any story of a cohbench test split, and go through the recipe in
partitions of a fixed number of records, through one engine (`engines`: in this process or on Ray). Each finished partition is
kept (`OUT/.partial/`), so a killed run resumes where it stopped; the result is assembled only at the end:

    OUT/data/<config>/<split>.parquet    the cohbench schema, one file per split, rows in input order
    OUT/stats/<config>.json              parameters, inputs (sha256), what was made and dropped, by reason

OUT is laid out like a release, so `cohbench sql --release OUT ...` queries it with the usual views and
`load_dataset("parquet", data_files=...)` loads it. The output depends only on the input and the parameters,
never on the engine, the number of workers or the partition size.

Accounting: every input story is used or dropped with a reason (empty_text, in_cohbench_evaluation_split,
fewer_sentences_than_a_window); every source record (a story, or a window of N sentences) is used or dropped
(too_short_for_recipe, or the recipe's own reason such as no_confounder_below_tau).
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import jsonlines, settings
from ..corpora import text_fingerprint
from .._version import __version__
from ..atomic import atomic_path, write_text
from ..corruptions import blocks, engines, recipes
from ..display import datasets_bars, progress_bar
from ..errors import CohbenchError, CorruptionError
from ..release.layout import write_config
from ..schema import OK, empty_record
from ..corpora.sources import sha256_of
from . import inputs
from .request import CorruptRequest, check_config_name, check_corpus_name, check_splits, split_of
from ..text import normalise
from .leakage import held_out_fingerprints

PARTIAL = ".partial"
ROW_GROUP = 10_000  # rows per Parquet row group, fixed so that files do not depend on the partitioning


def _check_place(out: Path, resume: bool, release: Path | None) -> None:
    """Refuse an --out inside a release: the release in use, or any folder holding a release manifest (its files
    are the release's alone). The one exception is resuming the user's own unfinished run where the release in use
    would be (`./cohbench`, say): that folder was accepted when the run started, and `corrupt` never writes a
    manifest, so a folder holding one is a release, whatever `.partial/` was left in it."""
    try:
        settings.user_output(out, release)
    except CohbenchError:
        own_run = (resume and (out / PARTIAL / "run.json").is_file() and not (out / "manifest.json").exists()
                   and out.resolve() == (Path(release).resolve() if release else settings.release_dir()))
        if not own_run:
            raise


def _check_out(out: Path, resume: bool) -> dict | None:
    """The unfinished run's description when resuming; refuse a non-empty folder otherwise."""
    if out.exists() and not out.is_dir():
        raise CorruptionError(f"--out {out} is a file; give a new or empty folder")
    if not out.exists() or not any(out.iterdir()):
        return None
    state = out / PARTIAL / "run.json"
    if not resume:
        raise CorruptionError(f"--out {out} is not empty; pass --resume to continue an unfinished run there, or choose a new folder")
    if not state.is_file():
        raise CorruptionError(f"--out {out} holds no unfinished `cohbench corrupt` run to resume; choose a new folder")
    return _partial_json(state)


def _damaged(path: Path, problem) -> CorruptionError:
    """A file of an unfinished run that cannot be read back (edited, truncated by a failing disk): the run cannot be
    resumed, only started over."""
    out = path.parent.parent
    return CorruptionError(f"the unfinished run in {out} is damaged ({PARTIAL}/{path.name}: {problem}); delete "
                        f"{out / PARTIAL} and run again without --resume to start over")


def _partial_json(path: Path, keys: tuple[str, ...] = ()) -> dict:
    """A JSON object the unfinished run wrote (its description, or a partition's tally), holding `keys`."""
    try:
        value = jsonlines.parse(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise _damaged(path, error) from None
    if not isinstance(value, dict) or not all(key in value for key in keys):
        raise _damaged(path, "not the object cohbench wrote")
    return value


def source_records(stories, options: CorruptRequest, config: str, dropped: Counter, notes: dict, progress: bool,
                   splitter) -> list[dict]:
    """Coherent records of the usable stories; stories dropped by reason (empty, the text of an earlier story, held out
    by a cohbench corpus, too short) and windows that are a held-out story left out (`notes`).
    `splitter` splits texts into sentences (the engine's)."""
    to_split = [s for s in stories if s.sentences is None and s.text.strip()]
    if to_split:
        if progress:
            print(f"splitting {len(to_split)} texts into sentences", file=sys.stderr)
        for story, sentences in zip(to_split, splitter([s.text for s in to_split])):
            story.sentences = sentences
    held = held_out_fingerprints() if options.drop_test_overlap else {}
    overlap, seen = Counter(), set()

    def fingerprint_of(sentences: list[str]) -> str:
        return text_fingerprint(normalise(" ".join(sentences)))

    def held_by(fingerprint: str) -> list[str]:
        return [corpus for corpus, fingerprints in held.items() if fingerprint in fingerprints]

    records, n = [], options.sentences_per_record
    for story in stories:
        sentences = story.sentences or []
        if not sentences:
            dropped["empty_text"] += 1
            continue
        text = fingerprint_of(sentences)
        if text in seen:  # under another id it could be split elsewhere: one document in two splits
            dropped["duplicate_text"] += 1
            continue
        seen.add(text)
        if hits := held_by(text):
            dropped["in_cohbench_evaluation_split"] += 1
            overlap.update(hits)
            continue
        if n and len(sentences) < n:
            dropped["fewer_sentences_than_a_window"] += 1
            continue
        windows = [sentences[w * n : (w + 1) * n] for w in range(len(sentences) // n)] if n else [sentences]
        if n:
            notes["sentences_not_in_a_window"] += len(sentences) - len(windows) * n
        split = split_of(story.id, options.splits)
        # a held-out story cut out of a longer text as a window (--keep-test-overlap: nothing is held)
        held_windows = [held_by(fingerprint_of(window)) if n and held else [] for window in windows]
        if all(held_windows):
            dropped["in_cohbench_evaluation_split"] += 1
            overlap.update(corpus for hits in held_windows for corpus in hits)
            continue
        for w, (window, hits) in enumerate(zip(windows, held_windows)):
            if hits:
                notes["windows_in_cohbench_evaluation_split"] += 1
                overlap.update(hits)
                continue
            record = empty_record()
            record.update(id=f"{story.id}-w{w:03d}" if n else story.id, corpus=options.corpus, config=config,
                          split=split, doc_id=story.id, sentences=window, sentence_labels=[OK] * len(window))
            records.append(record)
    if options.drop_test_overlap:
        notes["held_out_stories_checked"] = {corpus: len(fingerprints) for corpus, fingerprints in held.items()}
        notes["dropped_as_held_out_by_corpus"] = dict(sorted(overlap.items()))
    return records


def _write_partition(partial: Path, number: int, sources: list[dict], made, why) -> None:
    """A partition's records and its tally: what it made (`made`: each source's records, `blocks`), and each source
    made nothing from by `why(source)`."""
    import pyarrow.parquet as pq

    table = blocks.made_table(made)
    with atomic_path(partial / f"part-{number:05d}.parquet") as tmp:
        pq.write_table(table, tmp)
        written = sha256_of(Path(tmp))
    counts = blocks.made_per_source(made)
    tally = {"sources": len(counts), "dropped": Counter(why(source) for source, n in zip(sources, counts) if not n),
             "records": table.num_rows, "by_generator": blocks.generators_used(table),
             "sha256": written}  # a resumed run reads back only the very file this partition wrote
    write_text(partial / f"part-{number:05d}.json", json.dumps(tally, sort_keys=True))  # written last: marks it done


def _by_split(partial: Path, written: list[str], splits) -> dict:
    """The partitions' records gathered per split, in partition order, as `datasets.Dataset`s over Arrow files
    beside them (memory-mapped, so a split larger than memory is never held whole); each partition's file checked
    against the sha256 its tally recorded (`written`), so one replaced by another run's, or by another partition's,
    is refused instead of assembled."""
    import datasets
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..schema import ARROW_SCHEMA

    paths = {split: partial / f"split-{split}.arrow" for split in splits}
    writers = {split: pa.ipc.new_stream(str(path), ARROW_SCHEMA) for split, path in paths.items()}
    for number, sha256 in enumerate(written):
        path = partial / f"part-{number:05d}.parquet"
        try:
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != sha256:
                raise _damaged(path, f"not the file this partition wrote: its sha256 differs from part-{number:05d}.json's")
            table = pq.read_table(pa.BufferReader(data), schema=ARROW_SCHEMA)
        except (pa.ArrowInvalid, OSError) as error:
            raise _damaged(path, str(error).splitlines()[0]) from None
        for split, writer in writers.items():
            writer.write_table(table.filter(pc.equal(table["split"], split)))
    for writer in writers.values():
        writer.close()
    return {split: datasets.Dataset.from_file(str(path)) for split, path in paths.items()}


def corrupt(input_path: Path, out: Path, options: CorruptRequest) -> dict:
    """Run a recipe over the narratives at `input_path` into `out`; returns the summary written to stats/."""
    resolved = recipes.resolve(options.recipe, options.params)
    config = options.config or (options.recipe if ":" not in options.recipe else "mixture")  # a spec names no file
    check_config_name(config)
    check_corpus_name(options.corpus)
    check_splits(options.splits)
    if options.partition_size < 1:
        raise CorruptionError(f"--partition-size must be at least 1, got {options.partition_size}")
    if options.sentences_per_record is not None and options.sentences_per_record < 1:
        raise CorruptionError(f"N (sentences per record) must be at least 1, got {options.sentences_per_record}")
    _check_place(out, options.resume, options.release)
    previous = _check_out(out, options.resume)
    # an unreachable cluster, or a device that is not there, fails here, before anything is written
    engine = engines.start(resolved, options.engine, options.device, options.address, options.workers)
    try:
        with kept_out_of_full_collections() as settle:
            return _corrupt(input_path, out, options, resolved, config, previous, engine, settle)
    finally:
        engine.close()


@contextmanager
def kept_out_of_full_collections() -> Iterator[Callable[[], None]]:
    """Within the block, `settle()` exempts every object alive from the cyclic collector's later passes
    (`gc.freeze`); they are handed back when the block ends. The job settles as it starts, once its shared pools are
    built and the engine has started up, and after each partition is written: what imports, the encoder and the
    pools keep alive lives to the end, and each full collection would trace all of it again. From the second settle
    on, what the block made since the last one is collected first, so that none of its garbage is frozen (the first
    freezes the caller's heap as it is, for the block's time only). What was alive at a settle and is dropped later
    is freed by reference counting, or, in a reference cycle, when the block ends. A caller that froze objects
    itself keeps its own freeze."""
    ours, settled = gc.get_freeze_count() == 0, [False]

    def settle() -> None:
        # a flag, not gc.get_freeze_count(), which counts the frozen objects one by one (~50 ms a partition)
        if settled[0]:
            gc.collect()  # traces only what is not frozen: what the block made since the last settle
        gc.freeze()
        settled[0] = True

    try:
        yield settle if ours else lambda: None
    finally:
        if ours:
            gc.unfreeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector's automatic passes off within the block (as the caller had them again after it). For the
    driver's own phases, which make objects by the million that all live on (the stories, their records and pools;
    the fingerprint's values) and next to no reference cycles: each pass would trace them again for nothing (~16 us
    a story of reading and cutting 20,000 stories, ~6 us a record of the fingerprint, measured). What cycles the
    block does make are freed by the first pass after it, or by the job's next settle. Not around a recipe's own
    work, whose cycles (the libraries it calls) would pile up to the end of a partition."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _corrupt(input_path, out, options, resolved, config, previous, engine, settle: Callable[[], None]) -> dict:
    recipe, params = resolved.recipe, resolved.params
    settle()
    with collector_paused():  # reading, cutting and the shared pools: many objects that live on, next to no cycles
        stories = inputs.read(Path(input_path), options.id_column, options.text_column)
        if not stories:
            raise CorruptionError(f"input {input_path} holds no stories")
        run = {
            "cohbench": __version__, "recipe": recipe.name, "parameters": params, "splits": options.splits,
            "corpus": options.corpus, "config": config, "sentences_per_record": options.sentences_per_record,
            "id_column": options.id_column, "text_column": options.text_column,  # another column is another input
            "drop_test_overlap": options.drop_test_overlap, "partition_size": options.partition_size,
            "inputs": inputs.fingerprint(inputs.files_of(Path(input_path)), Path(input_path)),
        }
        if previous is not None and previous != run:
            changed = sorted(k for k in run if previous.get(k) != run[k])
            raise CorruptionError(f"--out {out} holds a run with other {', '.join(changed)}; resume with the same input and "
                               "options, or choose a new folder")
        dropped, notes = Counter(), Counter()
        records = source_records(stories, options, config, dropped, notes, options.progress, engine.split_sentences)
        usable = [record for record in records if recipes.long_enough(recipe, params, record)]
        dropped[recipes.TOO_SHORT] += len(records) - len(usable)
        partitions = [usable[start : start + options.partition_size] for start in range(0, len(usable), options.partition_size)]

        partial = out / PARTIAL
        partial.mkdir(parents=True, exist_ok=True)
        write_text(partial / "run.json", json.dumps(run, indent=2, sort_keys=True))
        done = {n for n in range(len(partitions)) if (partial / f"part-{n:05d}.json").is_file()}
        todo = [(n, partitions[n]) for n in range(len(partitions)) if n not in done]

        if todo:
            if recipe.prepare and options.progress:
                print(f"preparing what every partition shares ({recipe.name}: {sum(len(r['sentences']) for r in usable)} "
                      "sentences), once", file=sys.stderr)
            shared = recipe.prepare(usable, params) if recipe.prepare else None
            engine.start_up()
    bar = progress_bar(shown=options.progress, total=len(usable), initial=sum(len(partitions[n]) for n in done),
                       unit="record", desc=f"corrupt {recipe.name}", dynamic_ncols=True)

    def finished(number: int, made) -> None:
        _write_partition(partial, number, partitions[number], made, lambda source: recipe.made_nothing(source, params))
        bar.update(len(made))
        settle()

    if todo:
        settle()
        engine.run(todo, shared, finished)
    bar.close()

    with collector_paused():  # the records gathered and fingerprinted: Python values by the million, all alive to the end
        made, by_generator, made_nothing, written = 0, Counter(), 0, []
        for n in range(len(partitions)):
            tally = _partial_json(partial / f"part-{n:05d}.json", ("dropped", "records", "by_generator", "sha256"))
            written.append(tally["sha256"])
            dropped.update(tally["dropped"])
            made_nothing += sum(tally["dropped"].values())
            made += tally["records"]
            by_generator.update(tally["by_generator"])
        described = {
            "corpus": options.corpus, "licence": "as the input's (cohbench corrupt does not know it)",
            "research_only": False, "recipe": recipe.name, "description": recipe.description, "errata": [],
            **{k: run[k] for k in ("cohbench", "parameters", "sentences_per_record", "inputs")},
            "split_ratios": options.splits, "upstream_records": len(stories), "input_stories": len(stories),
            "source_records": len(records),
            "sources_used": len(usable) - made_nothing,
            "built_records": made, "records_by_generator": dict(sorted(by_generator.items())),
            "dropped": dict(sorted((k, v) for k, v in dropped.items() if v)),
            "notes": dict(sorted(notes.items())),
        }
        splits = _by_split(partial, written, list(options.splits))
        with datasets_bars(options.progress):
            summary = write_config(out, config, splits, described, row_group=ROW_GROUP)
    shutil.rmtree(partial)
    return summary
