"""`cohbench corrupt` in one process: output in the schema with provenance, splits by story, drops by reason,
resuming, independence from the partitioning, and one-line refusals of bad input that write nothing."""

from __future__ import annotations

import gc
import json
import os
import shutil
import weakref
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cohbench import cli, sql
from cohbench.user_corruption import inputs
from cohbench.user_corruption.job import kept_out_of_full_collections
from cohbench.user_corruption.request import split_of
from cohbench.corruptions import recipes
from cohbench.schema import FEATURES

STORIES = Path(__file__).parent / "fixtures" / "corrupt" / "stories.jsonl"


def corrupt(*args) -> int:
    return cli.main(["corrupt", *map(str, args), "--json", "--keep-test-overlap"])


def summary(out: Path, config: str) -> dict:
    return json.loads((out / "stats" / f"{config}.json").read_text())


def data_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.glob("data/*/*.parquet"))}


def test_msd_output_is_the_schema_split_by_story_loadable_and_queryable(workspace, capsys):
    from datasets import load_dataset

    out = workspace / "msd-out"
    assert corrupt(STORIES, "--recipe", "msd", "--out", out, "--splits", "train=0.6,validation=0.2,test=0.2") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == summary(out, "msd")
    assert stats["dropped"] == {"empty_text": 1, "too_short_for_recipe": 1}
    assert stats["input_stories"] == 12 and stats["built_records"] == stats["sources_used"] == 10
    splits = {split: f["rows"] for split, f in stats["files"].items()}
    assert sum(splits.values()) == 10 and set(splits) == {"train", "validation", "test"}

    files = {split: str(out / f["path"]) for split, f in stats["files"].items() if f["rows"]}
    loaded = load_dataset("parquet", data_files=files, cache_dir=str(workspace / "hf"))
    for split, ds in loaded.items():
        assert ds.features == FEATURES
        for record in ds:
            assert record["split"] == split == split_of(record["doc_id"], {"train": 0.6, "validation": 0.2, "test": 0.2})
            c = record["corruption"]
            assert c["generator"] == "remove_sentences" and c["seed"] == 13 and c["source_id"] == record["doc_id"]
            assert len(record["sentences"]) == 4 and sum(record["gap_labels"]) == 1 == len(c["positions"])

    con = sql.db(out)
    rows = sql.query("SELECT split, count(*) AS n FROM corruptions GROUP BY split", con).to_pylist()
    assert {r["split"]: r["n"] for r in rows} == {s: n for s, n in splits.items() if n}


@pytest.mark.parametrize("recipe", ["repetition", "msd"])
def test_cohbench_sql_answers_over_records_spans_and_ratings_of_a_corrupt_output(workspace, capsys, recipe):
    """The output's stats have a release's shape (one writer), so the suggested `cohbench sql --release OUT` reads it."""
    out = workspace / recipe
    assert corrupt(STORIES, "--recipe", recipe, "--out", out, "--splits", "train=0.5,test=0.5") == 0
    made = json.loads(capsys.readouterr().out)
    for query, expected in [
        ("SELECT count(*) AS n FROM records", made["built_records"]),
        ("SELECT count(*) AS n FROM spans WHERE annotation = 'synthetic'", sum(s["spans"] for s in made["splits"].values())),
        ("SELECT count(*) AS n FROM ratings", 0),
    ]:
        assert cli.main(["sql", query, "--release", str(out), "--json"]) == 0, query
        assert json.loads(capsys.readouterr().out) == [{"n": expected}], query
    assert (made["splits"]["train"]["rows"], made["splits"]["test"]["rows"]) == (made["files"]["train"]["rows"], made["files"]["test"]["rows"])
    assert recipe != "repetition" or sum(s["spans"] for s in made["splits"].values()) > 0


@pytest.mark.slow
@pytest.mark.parametrize("recipe", recipes.RECIPES.names())
def test_every_recipe_gives_the_same_bytes_whatever_the_partition_size(workspace, recipe):
    source, sources = STORIES, 11
    chosen = recipes.RECIPES[recipe]
    if chosen.min_sentences(recipes.parameters(chosen, {})) > 5:  # longer than the fixture's stories: three joined in one
        rows = [json.loads(line) for line in STORIES.read_text().splitlines()]
        joined = [{"id": f"joined{n}", "text": " ".join(" ".join(r.get("sentences") or [r.get("text", "")]) for r in rows[n:n + 3])}
                  for n in range(0, 12, 3)]
        source, sources = workspace / "long.jsonl", len(joined)
        source.write_text("".join(json.dumps(r) + "\n" for r in joined))
    runs = []
    for size in (1, 4):
        out = workspace / f"{recipe}-{size}"
        assert corrupt(source, "--recipe", recipe, "--out", out, "--splits", "train=1", "--partition-size", size) == 0
        runs.append((data_bytes(out), summary(out, recipe)))
    assert runs[0] == runs[1]
    made = runs[0][1]
    assert made["built_records"] > 0 and made["source_records"] == sources
    assert made["sources_used"] + sum(v for k, v in made["dropped"].items() if k != "empty_text") == sources


def interrupted_on_partition(monkeypatch, n: int) -> list[str]:
    """Make the recipe's run over the n-th partition raise KeyboardInterrupt, as Ctrl-C would; returns the list of
    each run's first source id, which later runs go on filling."""
    real_run, calls = recipes.apply, []

    def dies_on_the_nth_partition(*args, **kwargs):
        calls.append(args[1][0]["id"])
        if len(calls) == n:
            raise KeyboardInterrupt
        return real_run(*args, **kwargs)

    monkeypatch.setattr(recipes, "apply", dies_on_the_nth_partition)
    return calls


def test_a_killed_run_resumes_from_its_finished_partitions(workspace, monkeypatch, capsys):
    out, fresh = workspace / "killed", workspace / "fresh"
    real_run = recipes.apply
    calls = interrupted_on_partition(monkeypatch, 3)
    args = ("--recipe", "shuffle", "--partition-size", 3)
    assert corrupt(STORIES, *args, "--out", out) == 130
    assert sorted(p.name for p in out.iterdir()) == [".partial"]  # nothing but the finished partitions
    assert len(list((out / ".partial").glob("part-*.json"))) == 2

    capsys.readouterr()
    assert corrupt(STORIES, *args, "--out", out) == 1
    assert "not empty; pass --resume" in capsys.readouterr().err
    assert corrupt(STORIES, "--recipe", "shuffle", "--partition-size", 3, "--seed", 99, "--out", out, "--resume") == 1
    assert "other parameters" in capsys.readouterr().err

    calls.clear()
    assert corrupt(STORIES, *args, "--out", out, "--resume") == 0
    assert len(calls) == 2  # 10 usable records in partitions of 3: the last two partitions only
    monkeypatch.setattr(recipes, "apply", real_run)
    assert corrupt(STORIES, *args, "--out", fresh) == 0
    assert data_bytes(out) == data_bytes(fresh) and summary(out, "shuffle") == summary(fresh, "shuffle")
    assert not (out / ".partial").exists()
    capsys.readouterr()
    assert corrupt(STORIES, *args, "--out", out, "--resume") == 1
    assert "no unfinished" in capsys.readouterr().err


def test_a_resume_reading_another_text_column_is_refused(workspace, monkeypatch, capsys):
    # the same file read by another column is other stories: resumed, the output would mix the two
    two_columns = workspace / "two_columns.jsonl"
    rows = [json.loads(line) for line in STORIES.read_text().splitlines()]
    two_columns.write_text("".join(json.dumps(r | {"alt": list(reversed(r["sentences"]))}) + "\n" for r in rows))
    interrupted_on_partition(monkeypatch, 2)
    out, args = workspace / "out", ("--recipe", "shuffle", "--partition-size", 3)
    assert corrupt(two_columns, *args, "--text-column", "sentences", "--out", out) == 130
    capsys.readouterr()
    assert corrupt(two_columns, *args, "--text-column", "alt", "--out", out, "--resume") == 1
    assert "holds a run with other text_column" in capsys.readouterr().err


def test_a_run_settles_what_lives_on_and_hands_the_garbage_collector_back_as_it_found_it(workspace, monkeypatch):
    real_run, frozen_while_running = recipes.apply, []

    def noting_the_freeze(*args, **kwargs):
        frozen_while_running.append(gc.get_freeze_count())
        return real_run(*args, **kwargs)

    monkeypatch.setattr(recipes, "apply", noting_the_freeze)
    assert gc.get_freeze_count() == 0
    assert corrupt(STORIES, "--recipe", "shuffle", "--partition-size", 3, "--out", workspace / "a") == 0
    # start-up and the finished partitions left out of full collections while the job ran; nothing after it
    assert len(frozen_while_running) == 4 and all(count > 0 for count in frozen_while_running)
    assert gc.get_freeze_count() == 0

    gc.freeze()  # a caller with its own freeze keeps it: the job neither adds to it nor hands it back
    try:
        held, frozen_while_running[:] = gc.get_freeze_count(), []
        assert corrupt(STORIES, "--recipe", "shuffle", "--partition-size", 3, "--out", workspace / "b") == 0
        assert max(frozen_while_running) <= held and 0 < gc.get_freeze_count() <= held
    finally:
        gc.unfreeze()


def test_the_driver_reads_and_fingerprints_without_the_collectors_passes_and_a_recipe_works_with_them(workspace, monkeypatch):
    from cohbench.release import fingerprint as release_fingerprint

    enabled = {"read": [], "recipe": [], "fingerprint": []}

    def noting(step, real):
        def noted(*args, **kwargs):
            enabled[step].append(gc.isenabled())
            return real(*args, **kwargs)
        return noted

    monkeypatch.setattr(inputs, "read", noting("read", inputs.read))
    monkeypatch.setattr(recipes, "apply", noting("recipe", recipes.apply))
    monkeypatch.setattr(release_fingerprint, "fingerprint", noting("fingerprint", release_fingerprint.fingerprint))
    monkeypatch.setattr("cohbench.release.layout.fingerprint", release_fingerprint.fingerprint)
    assert corrupt(STORIES, "--recipe", "shuffle", "--partition-size", 3, "--out", workspace / "a") == 0
    # the driver's own objects live on and make no cycles; a recipe's libraries may, so its work keeps the passes
    assert enabled == {"read": [False], "recipe": [True] * 4, "fingerprint": [False]} and gc.isenabled()

    empty = workspace / "empty.jsonl"
    empty.write_text("")
    assert corrupt(empty, "--recipe", "shuffle", "--out", workspace / "c") != 0 and gc.isenabled()  # refused: on again

    gc.disable()  # a caller that turned the collector off finds it off after the job too
    try:
        assert corrupt(STORIES, "--recipe", "shuffle", "--partition-size", 3, "--out", workspace / "b") == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Cycle:
    def __init__(self):
        self.itself = self


def test_settling_frees_the_garbage_cycles_there_are_instead_of_freezing_them_to_the_end():
    with kept_out_of_full_collections() as settle:
        settle()  # the caller's heap as it is
        kept, dropped = _Cycle(), _Cycle()
        kept_ref, dropped_ref = weakref.ref(kept), weakref.ref(dropped)
        del dropped
        settle()
        assert dropped_ref() is None and gc.get_freeze_count() > 0
        del kept  # frozen while it lived: a cycle dropped after that waits for the end of the block
        settle()
        assert kept_ref() is not None
    gc.collect()
    assert kept_ref() is None and gc.get_freeze_count() == 0


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_INPUTS = {
    "missing id column": (lambda d: _write(d / "a.jsonl", b'{"key": "x", "sentences": ["A."]}\n'), "no column 'id'"),
    "duplicate ids": (lambda d: _write(d / "a.jsonl", b'{"id": "x", "text": "A."}\n{"id": "x", "text": "B."}\n'),
                      "id 'x' occurs twice (a.jsonl line 1 and a.jsonl line 2)"),
    "non-UTF-8 bytes": (lambda d: _write(d / "a.jsonl", b'{"id": "x", "text": "ok"}\n{"id": "y", "text": "caf\xe9"}\n'),
                        "a.jsonl line 2 is not UTF-8"),
    "nonexistent path": (lambda d: d / "nowhere.jsonl", "does not exist"),
    "unknown split": (lambda d: STORIES, "--splits names 'dev'", "--splits", "train=0.9,dev=0.1"),
    "not JSON": (lambda d: _write(d / "a.jsonl", b'{"id": "x", "text": \n'), "a.jsonl line 1 is not valid JSON"),
    "not Parquet": (lambda d: _write(d / "a.parquet", b"PAR1 but not really"), "cannot be read as Parquet"),
    "JSON nested 100k deep": (lambda d: _write(d / "a.jsonl", b'{"id": "x", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"),
                              "a.jsonl line 1 is not valid JSON (it is nested too deeply)"),
    "a JSON array nested 100k deep": (lambda d: _write(d / "a.json", b"[" * 100_000 + b"]" * 100_000), "a.json is not valid JSON"),
    "a text longer than the sentence splitter takes": (
        lambda d: _write(d / "a.jsonl", json.dumps({"id": "book", "text": "Tom ran. " * 111_112}).encode() + b"\n"),
        "a.jsonl line 1 (id 'book'): the text has 1,000,008 characters, more than the sentence splitter takes (1,000,000)"),
    "a FIFO": (lambda d: (os.mkfifo(d / "a.jsonl"), d / "a.jsonl")[1], "a.jsonl is a FIFO (a pipe), not a regular file"),
    "a NaN split ratio": (lambda d: STORIES, "must be finite and positive", "--splits", "train=nan,validation=0.5,test=0.5"),
    "a NaN and a zero split ratio": (lambda d: STORIES, "must be finite and positive", "--splits", "train=nan,test=0"),
    "a zero split ratio": (lambda d: STORIES, "leave out a split that gets nothing", "--splits", "train=1,test=0"),
    "ratios that do not sum to 1": (lambda d: STORIES, "must sum to 1", "--splits", "train=0.5,test=0.4"),
    "a split named twice": (lambda d: STORIES, "--splits names 'train' twice", "--splits", "train=0.5,train=0.5,test=0.5"),
    "a corpus name that is a path": (lambda d: STORIES, "--corpus '../../notes' is not a corpus name", "--corpus", "../../notes"),
    "a saved dataset holding a junk .arrow": (
        lambda d: (d.joinpath("saved").mkdir(), _write(d / "saved" / "dataset_info.json", b"{}"),
                   _write(d / "saved" / "state.json", b"{}"), _write(d / "saved" / "data-00000-of-00001.arrow", b"junk" * 10))[0] or d / "saved",
        "data-00000-of-00001.arrow cannot be read as arrow"),
    **{f"a repetition ratio of {ratio}": (lambda d: STORIES, f"must be above 0 and at most 1, got {expected}", "--recipe", "repetition", "--ratio", ratio)
       for ratio, expected in [("nan", "nan"), ("1e308", "1e+308"), ("2", "2.0"), ("-1", "-1.0"), ("0", "0.0")]},
    "a NaN tau": (lambda d: STORIES, "tau (the rescaled BERTScore F1 a confounder must stay below) must be a finite number, got nan",
                  "--recipe", "dsd", "--tau", "nan"),
    "an id holding a lone surrogate": (lambda d: _write(d / "a.jsonl", b'{"id": "x\\ud800", "text": "A. B."}\n'),
                                       "a.jsonl line 1: the 'id' holds a lone surrogate (U+D800 at character 1)"),
    "a text holding a lone surrogate": (lambda d: _write(d / "a.jsonl", b'{"id": "x", "sentences": ["A.", "B\\udfff."]}\n'),
                                        "a.jsonl line 1 (id 'x'): the 'sentences' holds a lone surrogate (U+DFFF at character 1)"),
    "a boolean id": (lambda d: _write(d / "a.jsonl", b'{"id": true, "text": "A. B."}\n'), "a.jsonl line 1 has no usable 'id'"),
    "a mixture summing to 1.1": (lambda d: STORIES, "the proportions sum to 1.1, not 1", "--recipe", "goyal_coref:0.6+scene_jump:0.5"),
    "a mixture with a negative share": (lambda d: STORIES, "must be a number of at least 0", "--recipe", "goyal_coref:-1+scene_jump:2"),
    "a mixture naming an unknown recipe": (lambda d: STORIES, "unknown recipe 'typo'", "--recipe", "typo:0.5+scene_jump:0.5"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_in_one_line_and_nothing_is_written(workspace, capsys, case):
    make, expected, *options = BAD_INPUTS[case]
    source = make(workspace)
    out = workspace / "out"
    assert corrupt(source, "--recipe", "shuffle", "--out", out, *options) == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: ") and err.count("\n") == 1 and expected in err
    assert not out.exists()


def test_a_mixture_written_out_makes_a_config_named_mixture_with_its_proportions_recorded(workspace):
    out = workspace / "out"
    spec = "goyal_next_sentence:0.5+unintroduced_reference:0.5"
    assert corrupt(STORIES, "--recipe", spec, "--out", out, "--instances", "2") == 0
    stats = summary(out, "mixture")
    assert stats["recipe"] == spec and "goyal_next_sentence 0.5, unintroduced_reference 0.5" in stats["description"]
    made = {r["corruption"]["generator"] for f in stats["files"].values() if f["rows"] for r in pq.read_table(out / f["path"]).to_pylist()}
    assert made == {"goyal_next_sentence", "unintroduced_reference"}


def test_sentences_longer_than_the_splitter_takes_are_refused_at_the_splitter_s_own_limit():
    from cohbench.user_corruption.inputs import MAX_TEXT_CHARS
    from cohbench.text import _senter

    assert _senter().max_length == MAX_TEXT_CHARS


@pytest.mark.parametrize("name", ["../../elsewhere/stats/evil", "my/dsd", "records", "spans", "select", "Shuffle", "2nd", "a-b",
                                  "a" * 65])
def test_a_config_name_that_is_not_an_identifier_or_is_a_view_is_refused_before_anything_is_written(workspace, capsys, name):
    before = sorted(workspace.rglob("*"))
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", workspace / "a" / "b" / "out", "--config", name) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cohbench: error: --config {name!r} ") and err.count("\n") == 1
    assert sorted(workspace.rglob("*")) == before


@pytest.mark.slow
def test_an_out_inside_the_release_in_use_or_any_release_is_refused_and_the_release_is_unchanged(every_protocol, workspace, capsys):
    from release_fixture import write_every_protocol

    other = write_every_protocol(workspace / "other-release")  # a release that is not the one in use
    linked = workspace / "link"
    linked.symlink_to(other / "data")
    for release, out in [(every_protocol, every_protocol / "mine"), (every_protocol, every_protocol / "data" / "new" / ".." / "x"),
                         (other, other / "mine"), (other, linked / "deep" / "mine")]:
        before = fingerprint(release)
        assert corrupt(STORIES, "--recipe", "shuffle", "--out", out) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"cohbench: error: refusing to write {out}: it is inside the release folder {release}"), err
        assert fingerprint(release) == before


def test_resuming_into_a_release_that_has_a_manifest_is_refused_whatever_partial_run_lies_there(every_protocol, workspace, capsys):
    """A leftover `.partial/` (copied in, or from an older cohbench) does not make a release the user's own run:
    `corrupt` never writes a manifest, so a folder holding one is refused like any release."""
    partial = every_protocol / ".partial"
    partial.mkdir()
    (partial / "run.json").write_text("{}")
    before = fingerprint(every_protocol)
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", every_protocol, "--resume") == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cohbench: error: refusing to write {every_protocol}: it is inside the release folder") and err.count("\n") == 1
    assert fingerprint(every_protocol) == before and not (every_protocol / "data" / "shuffle").exists()


@pytest.mark.slow
def test_the_device_cpu_gives_the_default_s_bytes_for_every_recipe_that_encodes(workspace):
    for recipe in ("dsd", "synthetic"):
        runs = []
        for device in ([], ["--device", "cpu"]):
            out = workspace / f"{recipe}-{len(device)}"
            assert corrupt(STORIES, "--recipe", recipe, "--out", out, "--splits", "train=1", *device) == 0
            runs.append((data_bytes(out), summary(out, recipe)))
        assert runs[0] == runs[1] and runs[0][1]["built_records"] > 0


@pytest.mark.gpu
def test_cuda_gives_the_cpu_bytes_for_every_recipe_that_uses_the_device(workspace):
    import torch

    from cohbench.corruptions.recipes import RECIPES

    if not torch.cuda.is_available():
        pytest.skip("needs a usable GPU (run on a lent device machine: pytest -m gpu)")
    on_device = [name for name, recipe in RECIPES.items() if recipe.on_device]
    assert {"dsd", "synthetic"} <= set(on_device)
    for recipe in on_device:
        runs = []
        for device in ("cpu", "cuda"):
            out = workspace / f"{recipe}-{device}"
            assert corrupt(STORIES, "--recipe", recipe, "--out", out, "--splits", "train=1", "--device", device) == 0
            runs.append((data_bytes(out), summary(out, recipe)))
        assert runs[0] == runs[1] and runs[0][1]["built_records"] > 0, recipe


def test_instances_drawn_from_too_many_position_sets_are_refused_in_one_line_and_write_no_data(workspace, capsys):
    """Several instances are drawn from every set of k positions, listed: five of sixty sentences are 5.5 million."""
    stories = workspace / "long.jsonl"
    lines = [json.loads(line) for line in STORIES.read_text().splitlines()]
    lines[0]["sentences"] = [f"Tom walked to the {n}th house on the hill." for n in range(60)]
    stories.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = workspace / "out"
    assert corrupt(stories, "--recipe", "dsd", "--k", "5", "--instances", "2", "--out", out, "--splits", "train=1") == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: record ") and "2 instances are drawn from its 5,461,512 sets of positions (60" in err
    assert err.count("\n") == 1 and not (out / "data").exists() and not (out / "stats").exists()


def test_device_cuda_without_a_usable_gpu_is_one_line_and_writes_nothing(workspace, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a usable GPU")
    out = workspace / "out"
    assert corrupt(STORIES, "--recipe", "dsd", "--out", out, "--device", "cuda") == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: --device cuda: torch sees no usable GPU here") and err.count("\n") == 1
    assert not out.exists()


def fingerprint(folder: Path) -> list[tuple[str, bytes]]:
    return [(p.relative_to(folder).as_posix(), p.read_bytes() if p.is_file() else b"") for p in sorted(folder.rglob("*"))]


def test_a_run_killed_while_writing_where_the_release_would_be_resumes(workspace, monkeypatch, capsys):
    """`--out cohbench` from a folder without a release is accepted; a run killed after writing its stats makes the
    folder look like a release (the one in use), yet it is the user's own run, and resuming it must finish it."""
    monkeypatch.delenv("COHBENCH_RELEASE")
    monkeypatch.setenv("COHBENCH_ROOT", str(workspace / "project"))
    monkeypatch.setenv("XDG_DATA_HOME", str(workspace / "data-home"))
    (workspace / "here").mkdir()
    monkeypatch.chdir(workspace / "here")
    from cohbench.user_corruption import job as run

    real_write = run.write_config

    def killed_after_writing_the_stats(*args, **kwargs):
        real_write(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_config", killed_after_writing_the_stats)
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", "cohbench") == 130
    assert (workspace / "here" / "cohbench" / "stats" / "shuffle.json").is_file()  # it now looks like the release
    monkeypatch.setattr(run, "write_config", real_write)
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", "cohbench") == 1
    assert "inside the release folder" in capsys.readouterr().err  # only the user's own unfinished run may go on there
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", "cohbench", "--resume") == 0
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", workspace / "fresh") == 0
    assert data_bytes(workspace / "here" / "cohbench") == data_bytes(workspace / "fresh")
    assert not (workspace / "here" / "cohbench" / ".partial").exists()


@pytest.mark.parametrize("damage", ["run.json truncated", "run.json a list", "run.json not UTF-8", "a tally truncated", "a partition truncated",
                                    "a partition replaced by another's"])
def test_resuming_a_damaged_unfinished_run_says_so_and_how_to_start_over(workspace, monkeypatch, capsys, damage):
    out, real_run = workspace / "killed", recipes.apply
    interrupted_on_partition(monkeypatch, 3)
    args = ("--recipe", "shuffle", "--partition-size", 3, "--out", out)
    assert corrupt(STORIES, *args) == 130
    monkeypatch.setattr(recipes, "apply", real_run)
    partial = out / ".partial"
    damaged, data = {"run.json truncated": ("run.json", b'{"recipe": '), "run.json a list": ("run.json", b"[1]"),
                     "run.json not UTF-8": ("run.json", b"\xff"), "a tally truncated": ("part-00000.json", b'{"sources"'),
                     "a partition truncated": ("part-00001.parquet", b"PAR1"),
                     "a partition replaced by another's": ("part-00001.parquet", (partial / "part-00000.parquet").read_bytes()),
                     }[damage]  # fmt: skip
    (partial / damaged).write_bytes(data)
    capsys.readouterr()
    assert corrupt(STORIES, *args, "--resume") == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cohbench: error: the unfinished run in {out} is damaged (.partial/{damaged}: ") and err.count("\n") == 1, err
    assert f"delete {partial} and run again without --resume" in err
    shutil.rmtree(partial)
    assert corrupt(STORIES, *args) == 0


@pytest.mark.slow
def test_an_unreachable_ray_address_is_refused_in_one_line(workspace, capsys):
    pytest.importorskip("ray")
    out = workspace / "out"
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", out, "--engine", "ray", "--address", "127.0.0.1:9") == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: cannot reach a Ray cluster at 127.0.0.1:9") and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.integration
def test_stories_of_cohbench_evaluation_splits_are_dropped_and_counted_without_upstream_files(mirror, workspace, monkeypatch):
    """A TimeTravel test story (also a Story Cloze story), given as text (split with the project's splitter), is
    recognised by the packaged fingerprints alone: no mirror, an empty raw cache, no network."""
    from cohbench.corpora import timetravel

    test_file = mirror / timetravel.TEST.relpath
    story = json.loads(test_file.read_text(encoding="utf-8").splitlines()[0])
    leaked = " ".join([story["premise"], story["initial"], *story["original_ending"]]).upper()  # case is ignored
    rows = [{"id": "leak", "text": leaked}]
    rows += [{"id": r["id"], "text": " ".join(r["sentences"])} for r in map(json.loads, STORIES.read_text().splitlines())]
    source = workspace / "stories.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("COHBENCH_MIRROR", "")
    out = workspace / "out"
    assert cli.main(["corrupt", str(source), "--recipe", "msd", "--out", str(out), "--json"]) == 0
    stats = summary(out, "msd")
    assert stats["dropped"]["in_cohbench_evaluation_split"] == 1
    assert stats["notes"]["dropped_as_held_out_by_corpus"] == {"storycloze": 1, "timetravel": 1}
    assert stats["notes"]["held_out_stories_checked"]["timetravel"] > 3700  # both files: dev stories may be validation
    ids = {r["doc_id"] for f in stats["files"].values() if f["rows"] for r in pq.read_table(out / f["path"]).to_pylist()}
    assert "leak" not in ids and len(ids) == 10
    assert not any((workspace / "raw").rglob("*"))  # nothing was fetched

    # inside a longer text, the story is found as the window it is cut into; the same text under another id is a
    # duplicate (its id could have put it in another split)
    around = json.loads(STORIES.read_text().splitlines()[0])["sentences"]
    inside = around + [story["premise"], story["initial"], *story["original_ending"]]
    source.write_text("".join(json.dumps({"id": i, "sentences": inside}) + "\n" for i in ("inside", "again")))
    out = workspace / "windows"
    assert cli.main(["corrupt", str(source), "--recipe", "shuffle", "--n", "5", "--out", str(out), "--json"]) == 0
    stats = summary(out, "shuffle")
    assert stats["dropped"] == {"duplicate_text": 1} and stats["notes"]["windows_in_cohbench_evaluation_split"] == 1
    kept = {r["corruption"]["source_id"] for f in stats["files"].values() if f["rows"] for r in pq.read_table(out / f["path"]).to_pylist()}
    assert kept == {"inside-w000"}


def test_the_packaged_held_out_fingerprints_are_the_checkout_release_s():
    """`user_corruption/held_out.json` is what `cohbench held-out` writes from the release's stats (each build records its
    corpus's held-out fingerprints): rewrite it after a rebuild that changes them."""
    from cohbench import settings
    from cohbench.user_corruption import leakage
    from cohbench.release.layout import built_configs

    configs = built_configs(settings.project_root() / "cohbench")
    assert json.loads(leakage.PACKAGED.read_text(encoding="utf-8")) == leakage.from_release(configs)


def test_held_out_fingerprints_of_configs_that_disagree_are_refused(workspace, capsys):
    from cohbench.user_corruption import leakage
    from cohbench.errors import CorruptionError

    recorded = {"method": leakage.HELD_OUT_FINGERPRINT, "fingerprints": ["0123456789abcdef"]}
    configs = {"timetravel_msd": {"corpus": "timetravel", "held_out": recorded},
               "timetravel_dsd": {"corpus": "timetravel", "held_out": {**recorded, "fingerprints": []}}}
    with pytest.raises(CorruptionError, match="record different held-out stories of timetravel"):
        leakage.from_release(configs)
    with pytest.raises(CorruptionError, match="records no held-out fingerprints of fairytaleqa, storycloze"):
        leakage.from_release({"timetravel_msd": configs["timetravel_msd"]})


def test_n_cuts_stories_into_windows_of_n_sentences(workspace):
    out = workspace / "windows"
    assert corrupt(STORIES, "--recipe", "shuffle", "--out", out, "--n", 2, "--splits", "train=1") == 0
    stats = summary(out, "shuffle")
    assert stats["source_records"] == 10 * 2 + 1 and stats["notes"]["sentences_not_in_a_window"] == 10
    assert stats["dropped"] == {"empty_text": 1}
    records = pq.read_table(out / stats["files"]["train"]["path"]).to_pylist()
    assert {r["id"] for r in records if r["doc_id"] == "s01"} == {"s01-w000:shuffle", "s01-w001:shuffle"}
    assert all(len(r["sentences"]) == 2 for r in records)
