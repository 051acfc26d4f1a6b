"""`cohbench train --train-data`: the baseline trained on a `cohbench corrupt` output, scored on the release's test
splits or on the output's own, with every figure naming the data it came from; a published figure stands only beside
the release's own config, never beside a generated one saved under a release config's name; nothing is written into
the release or the training folder. And `cohbench index` reads a folder mixing a generated and a release config."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cohbench import cli

from release_fixture import record, snac_like, write_config

STORIES = Path(__file__).parent / "fixtures" / "corrupt" / "stories.jsonl"
TINY = {"train_configs": ["timetravel_dsd"], "max_train_records": None, "max_sentences": 16, "d_model": 16, "layers": 1,
        "heads": 2, "dropout": 0.0, "learning_rate": 0.003, "weight_decay": 0.0, "batch_size": 8, "epochs": 2, "seed": 0}  # fmt: skip
CHORES = ["baked bread", "watered the tomatoes", "fixed the fence", "swept the porch", "fed the chickens"]
REMARKS = ["The probe sent back {n} images of a frozen moon.", "A rocket engine fired for {n} seconds in orbit."]


def toy_release(root: Path) -> Path:
    """timetravel_dsd with one off-topic sentence per story, declared as a version (the release's own data)."""
    rng = np.random.default_rng(3)
    splits = {}
    for split, count in (("train", 12), ("validation", 6), ("test", 8)):
        rows = []
        for i in range(count):
            sentences = [f"Anna {rng.choice(CHORES)} on day {d}." for d in range(5)]
            at = int(rng.integers(0, 5))
            sentences[at] = str(rng.choice(REMARKS)).format(n=int(rng.integers(2, 90)))
            rows.append(record(f"{split}{i}", f"{split}{i}", sentences, sentence_labels=[int(k == at) for k in range(5)]))
        splits[split] = rows
    return write_config(root, "timetravel_dsd", "timetravel", splits)


@pytest.fixture
def tiny_params(workspace, project_root):
    """The project's params.yaml with a baseline small enough to train in seconds (and the project's catalog)."""
    project_root(lambda params: params["baseline"].update(TINY), catalog="project")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but the marks of the vocabulary cache (the user's cache folder, written by any read of
    a data file: a refused command may have read the folders it refuses)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "cohbench/vocabulary/" not in p.relative_to(folder).as_posix()}


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_training_on_a_corrupt_output_names_its_data_and_borrows_no_published_figure(workspace, tiny_params, capsys):
    release = toy_release(workspace / "release")
    mine = workspace / "mine"  # saved under a release config's name: the workaround the issue met
    code, _, err = run(capsys, "corrupt", STORIES, "--recipe", "dsd", "--config", "timetravel_dsd", "--out", mine,
                       "--keep-test-overlap", "--splits", "train=0.6,validation=0.2,test=0.2", "--json")
    assert code == 0, err
    before = {"release": snapshot(release), "mine": snapshot(mine)}

    # scored on the release's test split: the release's own config, at its declared version, keeps Cai et al.'s figure
    code, out, err = run(capsys, "train", "--train-data", mine, "--output", workspace / "on-release", "--json")
    assert code == 0, err
    metrics = json.loads(out)
    trained = metrics["own_data"]["trained_on"]["timetravel_dsd"]
    assert trained["folder"] == str(mine.resolve()) and "+dev" in trained["version"]
    assert metrics["trained_on"]["timetravel_dsd"] == json.loads((mine / "stats/timetravel_dsd.json").read_text())["files"]["train"]["rows"]
    assert metrics["own_data"]["scored_on"] == f"the release {metrics['data']['release']} at {release}"
    assert "folder" not in metrics["data"]["configs"]["timetravel_dsd"]
    assert metrics["published"]["timetravel_dsd"]["paper"] == "Cai et al. 2020"
    text = (workspace / "on-release/metrics.md").read_text()
    assert f"from {mine.resolve()} ({trained['version']})" in text and "not the release's" in text
    assert f"`timetravel_dsd` (release {metrics['data']['release']}" in text
    assert len((workspace / "on-release/predictions/baseline/timetravel_dsd.jsonl").read_text().splitlines()) == 14

    # scored on the output's own splits: named by its folder, and no published figure beside it, whatever its name
    code, out, err = run(capsys, "train", "--train-data", mine, "--evaluate-on", "own", "--output", workspace / "on-own")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("| `timetravel_dsd`"))
    assert row.startswith(f"| `timetravel_dsd` ({mine.resolve()}, not the release's, ") and "+dev." in row and row.endswith("| - |"), row
    assert "Table 3" not in out  # Cai et al.'s published AUC
    metrics = json.loads((workspace / "on-own/metrics.json").read_text())
    assert metrics["published"] == {} and metrics["data"]["configs"]["timetravel_dsd"]["folder"] == str(mine.resolve())
    assert metrics["scores"]["timetravel_dsd"]["splits"]["test"]["units"] > 0

    assert {"release": snapshot(release), "mine": snapshot(mine)} == before  # neither the release nor the input changed


@pytest.mark.parametrize("case, fix", [
    ("no-output", "--output DIR"),
    ("output-in-data", "inside the training data"),
    ("output-in-release", "inside the release folder"),
    ("own-without-data", "--evaluate-on is release, or own with --train-data"),
    ("not-a-folder", "holds no config laid out like a release"),
    ("one-name-twice", "is in both"),
])  # fmt: skip
def test_training_on_one_s_own_data_is_refused_in_one_line_where_it_would_write_into_data(workspace, tiny_params, capsys, case, fix):
    release = toy_release(workspace / "release")
    data = toy_release(workspace / "data")
    args = {
        "no-output": ["--train-data", data],
        "output-in-data": ["--train-data", data, "--output", data / "results"],
        "output-in-release": ["--train-data", data, "--output", release / "results"],
        "own-without-data": ["--evaluate-on", "own"],
        "not-a-folder": ["--train-data", workspace / "nothing", "--output", workspace / "results"],
        "one-name-twice": ["--train-data", data, "--train-data", release, "--output", workspace / "results"],
    }[case]
    before = snapshot(workspace)
    code, _, err = run(capsys, "train", *args)
    assert code == 1 and fix in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(workspace) == before


def test_index_reads_a_folder_mixing_a_generated_and_a_release_config(workspace, capsys):
    mixed = toy_release(workspace / "mixed")
    code, _, err = run(capsys, "corrupt", STORIES, "--recipe", "msd", "--out", workspace / "msd", "--keep-test-overlap", "--json")
    assert code == 0, err
    for part in ("data/msd", "stats/msd.json"):
        source, target = workspace / "msd" / part, mixed / part
        if source.is_dir():
            target.mkdir(parents=True)
            for f in source.iterdir():
                (target / f.name).write_bytes(f.read_bytes())
        else:
            target.write_bytes(source.read_bytes())
    code, out, err = run(capsys, "index", "--release", mixed)
    assert code == 0, err
    croissant = json.loads((mixed / "croissant.json").read_text())
    assert "made by `cohbench corrupt` from 1 input file(s)" in croissant["rai:dataCollection"]
    code, out, err = run(capsys, "verify", "--quiet", "--release", mixed)
    assert code == 0, err + out


@pytest.mark.slow
def test_sentence_labelled_own_data_trains_the_sentence_feature_head_that_scores_snac_as_the_transfer_study_does(
        workspace, tiny_params, capsys):
    from cohbench.baseline import feature_model
    from cohbench.baseline.data import examples_of, folder_data, training_sets
    from cohbench.embedding_store import sentence_vectors
    from cohbench.release.layout import read_config
    from cohbench import numerics, sentence_cues, settings

    release = toy_release(workspace / "release")
    snac = {split: [snac_like(f"{split}{i}", f"{split}{i}") for i in range(n)] for split, n in (("train", 4), ("validation", 2), ("test", 3))}
    write_config(release, "snac", "snac", snac)
    mine = workspace / "mine"
    code, _, err = run(capsys, "corrupt", STORIES, "--recipe", "unintroduced_reference", "--instances", "3", "--out", mine,
                       "--keep-test-overlap", "--splits", "train=0.8,validation=0.2")
    assert code == 0, err
    code, out, err = run(capsys, "train", "--train-data", mine, "--output", workspace / "run", "--json")
    assert code == 0, err
    head = json.loads(out)["sentence_features"]
    data, tasks, _ = folder_data([mine])
    train, dev = training_sets(data, tasks, ["unintroduced_reference"], settings.params()["baseline"] | {"max_train_records": None})
    assert head["scores"] == ["snac"] and head["trained_on"] == {"unintroduced_reference": len(train) + len(dev)}

    # the study's model for a synthetic-only row (its strong L2): fitted on the same records, the same SNaC scores
    splits = read_config(release, "snac").splits
    scored = examples_of("snac", [r for split in ("validation", "test") for r in splits[split]], "sentences")
    sentences = {s for e in train + dev + scored for s in e.sentences}
    vectors, analyses = sentence_vectors(sentences), sentence_cues.analyse(sorted(sentences))
    with numerics.training_arithmetic():
        study_params = feature_model.for_other_text(settings.params()["baseline"]["sentence_features"] | {"seed": 0})
        fitted = feature_model.fit(train, dev, vectors, analyses, study_params)
        expected = {e.id: [round(float(v), 6) for v in p] for e, p in zip(scored, feature_model.predict(fitted, scored, vectors, analyses))}
    shipped = [json.loads(line) for line in (workspace / "run/predictions/baseline/snac.jsonl").read_text().splitlines()]
    assert {line["id"]: line["score"] for line in shipped} == expected
