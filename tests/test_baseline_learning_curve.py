"""`cohbench study learning-curve` on a tiny release: test AUC against the number of training stories, all instances
of a story drawn together, each size scored on the same test units; a later run at other sizes keeps the earlier points."""

import json

import numpy as np
import pytest

from cohbench.baseline.studies import learning_curve

from release_fixture import record, write_config

pytestmark = pytest.mark.slow  # trains the baseline at each training-set size

CHORES = ["baked bread", "watered the tomatoes", "fixed the fence", "swept the porch", "fed the chickens"]
SPACE = ["The probe sent back {n} images of a frozen moon.", "A rocket engine fired for {n} seconds in orbit.",
         "The telescope found {n} new exoplanets near a red dwarf."]
SMALL = {"max_sentences": 16, "d_model": 32, "layers": 1, "heads": 2, "dropout": 0.0, "learning_rate": 0.003,
         "weight_decay": 0.0, "batch_size": 16, "epochs": 4, "seed": 0, "max_train_records": None}


def stories(rng, count, prefix, instances=2):
    """`instances` records per story, each with its own discordant sentence."""
    out = []
    for i in range(count):
        base = [f"Anna {rng.choice(CHORES)} on day {k}." for k in range(5)]
        for n in range(instances):
            at = int(rng.integers(0, 5))
            sentences = list(base)
            sentences[at] = str(rng.choice(SPACE)).format(n=int(rng.integers(2, 90)))
            out.append(record(f"{prefix}{i}-{n}", f"{prefix}{i}", sentences, sentence_labels=[int(k == at) for k in range(5)]))
    return out


@pytest.fixture
def project(workspace, project_root):
    def edit(params):
        params["baseline"] |= SMALL | {"train_configs": ["timetravel_dsd"]}
        params["baseline"]["studies"]["learning_curve"] = ["timetravel_dsd"]

    root = project_root(edit)
    rng = np.random.default_rng(5)
    release = workspace / "release"
    write_config(release, "timetravel_dsd", "timetravel", {split: stories(rng, n, split[:2]) for split, n in
                                                           (("train", 40), ("validation", 10), ("test", 20))})
    return root, release


def test_the_curve_draws_whole_stories_scores_each_size_on_test_and_keeps_earlier_points(project):
    root, release = project
    out = learning_curve(release=release, sizes=(2, None), progress=False)
    points = {pt["stories"]: pt for pt in out["points"]}
    assert out["stories_available"] == 40 and set(points) == {2, 40}
    assert points[2]["records"] == 4 and points[40]["records"] == 80  # both instances of each story, together
    assert points[40]["timetravel_dsd"]["units"] == 200 and points[40]["timetravel_dsd"]["errors"] == 40
    assert points[40]["timetravel_dsd"]["auc"] > 0.9 and points[2]["selected_epoch"] >= 1
    assert (root / "catalog/baseline/learning_curve.png").stat().st_size > 0
    learning_curve(release=release, sizes=(10,), progress=False)
    saved = json.loads((root / "catalog/baseline/learning_curve.json").read_text())
    assert [pt["stories"] for pt in saved["points"]] == [2, 10, 40]  # the earlier run's sizes stay
