"""SummEval α per dimension and annotator type from the ratings view, StorySumm label distributions, and the
`cohbench agreement` command."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest

from cohbench import cli, sql
from cohbench.statistics import statistics
from release_fixture import plain_record, summeval_record, write_release

DIMENSIONS = ("coherence", "fluency")


def ratings_matrix(seed: int, coders: int, records: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=records)
    return np.clip(truth + rng.integers(-1, 2, size=(coders, records)), 1, 5).astype(float)


@pytest.fixture
def release(tmp_path, monkeypatch):
    experts = {d: ratings_matrix(i, 3, 12) for i, d in enumerate(DIMENSIONS)}
    crowd = {d: ratings_matrix(10 + i, 5, 12) for i, d in enumerate(DIMENSIONS)}
    records = []
    for r in range(12):
        ratings = {f"expert_{j + 1}": {d: experts[d][j, r] for d in DIMENSIONS} for j in range(3)}
        ratings |= {f"crowd_{j + 1}": {d: crowd[d][j, r] for d in DIMENSIONS} for j in range(5)}
        ratings["expert_mean"] = {d: experts[d][:, r].mean() for d in DIMENSIONS}
        records.append(summeval_record(f"doc{r}-M8", "M8", ratings))
    # an extractive system with expert means only: no per-annotator ratings, so no part in alpha
    records.append(summeval_record("doc0-M0", "M0", {"expert_mean": {"coherence": 4.0}}))
    stories = [
        plain_record("a", 1, [0, 1], system="gpt-4", difficulty="hard"),
        plain_record("b", 0, [0, 0], system="gpt-4"),
        plain_record("c", 1, [1, 1, 0], system="claude", difficulty="easy"),
    ]
    root = write_release(tmp_path / "release", {
        "summeval": ("summeval", {"test": records}),
        "storysumm": ("storysumm", {"validation": stories[:2], "test": stories[2:]}),
    })
    monkeypatch.setenv("COHBENCH_RELEASE", str(root))
    return experts, crowd


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_summeval_alpha_matches_the_package_per_dimension_and_annotator_type(release, level):
    experts, crowd = release
    stats = statistics("summeval", sql.db())
    for dimension in DIMENSIONS:
        for annotator_type, matrix in (("expert", experts[dimension]), ("crowd", crowd[dimension])):
            ours = stats["alpha"][dimension][annotator_type]
            assert ours[level] == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level), abs=1e-12)
            assert ours["records"] == 12
            assert ours["annotators"] == matrix.shape[0]
    assert "expert_mean" not in stats["alpha"]["coherence"]


def test_storysumm_label_distributions(release):
    stats = statistics("storysumm", sql.db())
    assert stats["labels_by_split"] == [
        {"split": "test", "records": 1, "error": 1, "ok": 0, "no_label": 0},
        {"split": "validation", "records": 2, "error": 1, "ok": 1, "no_label": 0},
    ]
    by_difficulty = {(r["split"], r["difficulty"]): r["records"] for r in stats["labels_by_difficulty"]}
    assert by_difficulty == {("test", "easy"): 1, ("validation", "hard"): 1, ("validation", "none"): 1}
    sentences = {(r["split"], r["system"]): (r["error"], r["ok"]) for r in stats["sentence_labels_by_split_and_model"]}
    assert sentences == {("test", "claude"): (2, 1), ("validation", "gpt-4"): (1, 3)}


def test_agreement_command_prints_the_statistics(release, capsys):
    assert cli.main(["agreement", "summeval", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["alpha"]) == set(DIMENSIONS)
    assert cli.main(["agreement", "summeval"]) == 0
    assert "| coherence | crowd |" in capsys.readouterr().out
    assert cli.main(["agreement", "nosuchconfig"]) == 1
    assert "unknown config 'nosuchconfig'" in capsys.readouterr().err
