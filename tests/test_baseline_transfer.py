"""`cohbench study transfer` on a tiny release: the sentence-feature head trained on each source alone and scored on
the target's test split, overall and per error type with CIs, beside FT and the best reference; a type the target
does not count, and a source that is not built, are refused in one line; a recipe that makes nothing is counted."""

import json

import numpy as np
import pytest

from cohbench.baseline import BaselineError
from cohbench.baseline.transfer import heatmap, recipe_examples, transfer
from cohbench.cli import main
from cohbench.schema import ERROR_TYPES, empty_record

from release_fixture import record, write_config

HEROES = ["Anna", "Boris", "Clara", "Dmitri", "Elena", "Fyodor", "Galina", "Ivan", "Katya", "Lev", "Marta", "Nikolai"]
DEEDS = ["walked to the market", "wrote a long letter", "sold the old horse", "visited the church", "left the city"]


def _span(sentence: int, text: str, error_type: str) -> dict:
    return {"segment": 0, "start": None, "end": None, "first_sentence": sentence, "last_sentence": sentence, "text": text,
            "type": ERROR_TYPES.index(error_type), "category": 0, "votes": 1, "annotator": None, "antecedents": [],
            "resolved": False, "resolution": None}


def summary(rng, index: int, prefix: str, length: int = 7, typed: bool = True, strangers: bool = True) -> dict:
    """A hero introduced first; CharE: a stranger never introduced; SceneE (`typed`): a jump to the sea."""
    hero = HEROES[index % len(HEROES)]
    sentences, labels, spans = [f"{hero} is a young clerk in Moscow."], [0], []
    for k in range(1, length):
        draw = rng.random()
        if draw < 0.3 and strangers:
            stranger = HEROES[(index + 3 + k) % len(HEROES)]
            sentences.append(f"{stranger} {rng.choice(DEEDS)} on day {k} of story {index}.")
            labels.append(1)
            spans.append(_span(k, stranger, "CharE"))
        elif draw < 0.45 and typed:
            sentences.append(f"Waves broke over the harbour wall on day {k} of story {index}.")
            labels.append(1)
            spans.append(_span(k, sentences[-1], "SceneE"))
        else:
            sentences.append(f"{rng.choice(['He', 'Then he', hero])} {rng.choice(DEEDS)} on day {k} of story {index}.")
            labels.append(0)
    return record(f"{prefix}{index}", f"{prefix}{index}", sentences, sentence_labels=labels, spans=spans, label=int(any(labels)))


@pytest.fixture
def project(workspace, project_root):
    """A project root whose params run the study on this release: the target snac, one synthetic config."""

    def edit(params):
        params["baseline"]["sentence_features"] = {"train_configs": ["snac"], "l2": [1.0, 0.1], "folds": 3, "synthetic_l2": 1.0, "synthetic_prior": 0.03}
        params["baseline"]["studies"]["transfer"] = {"target": "snac", "synthetic": ["timetravel_dsd"], "recipes": [],
                                                     "narratives": "snac_synthetic", "max_stories": None,
                                                     "choose_on": ["train", "validation"], "max_records": 1000}

    root = project_root(edit)
    rng = np.random.default_rng(3)
    release = workspace / "release"
    write_config(release, "snac", "snac", {split: [summary(rng, i + offset, split[:2]) for i in range(n)]
                                           for split, n, offset in (("train", 24, 0), ("validation", 6, 50), ("test", 16, 100))})
    # synthetic stories whose errors are strangers only: they teach CharE, not the jumps of scene
    write_config(release, "timetravel_dsd", "timetravel", {"train": [summary(rng, i, "tt", 5, typed=False) for i in range(40)]})
    return root, release


@pytest.mark.slow
def test_transfer_scores_each_source_alone_overall_and_per_type_beside_ft_and_the_best_reference(project):
    root, release = project
    out = transfer(release=release, progress=False)
    rows = out["results"]
    assert list(rows)[:2] == ["FT (snac train)", "timetravel_dsd"] and list(rows)[2].startswith("best reference: ")
    ft, synthetic = rows["FT (snac train)"], rows["timetravel_dsd"]
    assert ft["records"] == 30 and synthetic["records"] == 40
    assert ft["all"]["auc"] > 0.95 and ft["SceneE"]["auc"] > 0.9
    assert synthetic["CharE"]["auc"] > 0.9  # strangers were all it saw, and it finds them
    assert synthetic["SceneE"]["auc"] < ft["SceneE"]["auc"]  # the sea it never saw
    for row in (ft, synthetic):
        low, high = row["all"]["auc_ci"]
        assert low <= row["all"]["auc"] <= high and set(row) >= {"CharE", "SceneE", "RefE", "InconE"}
    assert rows["timetravel_dsd"]["RefE"]["auc"] is None  # no RefE sentence in the test split: no figure, no crash
    # what the chosen synthetic-only row adds to the best untrained reference (the prior its head starts from), paired
    over = out["synthetic_only_model"]["minus_best_reference_on_test"]
    reference = rows[f"best reference: {over['reference']}"]
    assert over["all"]["difference"] == pytest.approx(synthetic["all"]["auc"] - reference["all"]["auc"])
    low, high = over["all"]["ci"]
    assert low <= over["all"]["difference"] <= high
    assert out["synthetic_head"] == {"l2": 1.0, "centred_on": "novelty_count", "length": 0.03}
    saved = json.loads((root / "catalog/baseline/snac_transfer.json").read_text())
    assert saved["results"]["FT (snac train)"]["all"]["auc"] == ft["all"]["auc"]
    # the heatmap is a function of the saved figures: drawn again from the JSON (keys sorted), the same picture
    heatmap(saved, root / "redrawn.png")
    assert (root / "redrawn.png").read_bytes() == (root / "catalog/baseline/snac_transfer.png").read_bytes()
    table = (root / "catalog/baseline/snac_transfer.md").read_text()
    assert table.startswith("| trained on | records | snac train+validation AUC [95% CI] | snac test AUC [95% CI] | CharE | SceneE | RefE | InconE | R@P70 |")


@pytest.mark.slow
def test_syn_plus_ft_pools_the_chosen_row_with_the_human_data_at_a_weight_chosen_on_its_folds(project, project_root):
    root, release = project
    _study(project_root, synthetic_weights=[0, 0.3, 1])
    out = transfer(release=release, progress=False)
    combined = out["synthetic_plus_human"]
    assert combined["synthetic"] == out["synthetic_only_model"]["row"] == "timetravel_dsd"
    assert combined["synthetic_weight"] in (0, 0.3, 1) and combined["row"] in out["results"]
    for name in ("all", "CharE", "SceneE"):
        paired_diff = combined["minus_ft_on_test"][name]
        low, high = paired_diff["ci"]
        assert low <= paired_diff["difference"] <= high
    # weight 0 alone is FT itself: the same scores, a difference of exactly 0
    _study(project_root, synthetic_weights=[0])
    again = transfer(release=release, progress=False)["synthetic_plus_human"]
    assert again["synthetic_weight"] == 0 and again["minus_ft_on_test"]["all"] == {"difference": 0.0, "ci": [0.0, 0.0]}


def test_a_type_snac_does_not_count_and_a_source_not_built_are_refused_in_one_line(project, capsys, project_root):
    _, release = project
    assert main(["study", "transfer", "--types", "CharE,GramE", "--release", str(release)]) == 1
    err = capsys.readouterr().err.strip()
    assert "GramE is no error type SNaC counts" in err and "\n" not in err
    _study(project_root, synthetic=["fairytale_dsd"])
    with pytest.raises(BaselineError, match="^the transfer study needs fairytale_dsd; build it first$"):
        transfer(release=release, progress=False)


@pytest.mark.slow
def test_a_recipe_that_makes_nothing_is_counted_by_reason_not_a_crash():
    r = empty_record()
    r.update(id="n1", corpus="x", config="x", split="train", doc_id="d1", sentences=["A dog ran.", "A cat sat.", "It rained."])
    made, dropped = recipe_examples("goyal_coref", [r], seed=0, instances=1)
    assert made == [[]] and dropped == {"no_entity_named_twice": 1}
    made, dropped = recipe_examples("goyal_next_sentence", [r], seed=0, instances=1)
    assert [e.sentence_labels for e in made[0]] == [[-1, 1], [-1, 0]] and not dropped


def _study(project_root, window=None, instances=None, **changes) -> None:
    """The study's params of this test's project root changed (on top of the fixture's), and the windows and
    instances of the config whose narratives the recipes run over."""
    def edit(params):
        params["baseline"]["studies"]["transfer"].update(changes)
        narratives = params["incoherence"]["snac_synthetic"]
        narratives.update({k: v for k, v in (("window", window), ("instances", instances)) if v is not None})

    project_root(edit)


@pytest.mark.slow
def test_pooled_recipes_train_on_both_recipes_records_each_named_with_what_it_dropped(mirror, project, capsys, project_root):
    root, release = project
    _study(project_root, synthetic=[], window=8, max_stories=2, instances=2)
    assert main(["study", "transfer", "--release", str(release), "--json",
                 "--recipes", "goyal_coref,goyal_next_sentence,goyal_coref+goyal_next_sentence"]) == 0
    rows = json.loads((root / "catalog/baseline/snac_transfer.json").read_text())["results"]
    coref, following, pool = (rows[f"recipe {n}"] for n in ("goyal_coref", "goyal_next_sentence", "goyal_coref+goyal_next_sentence"))
    assert pool["records"] == coref["records"] + following["records"] > 0
    assert pool["dropped"] == {"goyal_coref": coref["dropped"]["goyal_coref"], "goyal_next_sentence": {}}
    assert pool["narratives"] == coref["narratives"] > 0 and 0 <= pool["all"]["auc"] <= 1
    assert main(["study", "transfer", "--release", str(release), "--recipes", "goyal_coref+no_such_recipe"]) == 1
    err = capsys.readouterr().err.strip()
    assert "unknown recipe 'no_such_recipe'" in err and "\n" not in err


@pytest.mark.slow
def test_a_recipe_that_makes_no_record_is_named_with_its_count_in_the_study_not_a_crash(mirror, project, project_root):
    root, release = project
    _study(project_root, synthetic=[], window=2, max_stories=1, recipes=["goyal_coref"])  # 2 sentences: too short
    row = transfer(release=release, progress=False)["results"]["recipe goyal_coref"]
    assert row["records"] == 0 and row["why"] == "made no labelled record"
    assert row["dropped"] == {"goyal_coref": {"too_short_for_recipe": row["narratives"]}} and row["narratives"] > 0
    assert "| recipe goyal_coref | 0 | made no labelled record |" in (root / "catalog/baseline/snac_transfer.md").read_text()


@pytest.mark.slow
def test_the_synthetic_only_model_is_the_row_highest_on_train_and_validation_whatever_the_test_says(project, project_root):
    """Two synthetic configs, one teaching strangers (CharE), one the jumps to the sea (SceneE); SNaC train and
    validation hold more strangers, so the first is chosen. A test split of jumps only ranks the second first on
    test: the choice, and every train+validation figure, stay as they were."""
    root, release = project
    rng = np.random.default_rng(5)
    write_config(release, "fairytale_dsd", "fairytale", {"train": [summary(rng, i, "ft", 5, strangers=False) for i in range(40)]})
    _study(project_root, synthetic=["timetravel_dsd", "fairytale_dsd"])
    before = transfer(release=release, progress=False)
    rows = before["results"]
    assert "choice" not in rows["FT (snac train)"]  # it trains on train+validation: not a candidate
    assert rows["timetravel_dsd"]["choice"]["all"]["auc"] > rows["fairytale_dsd"]["choice"]["all"]["auc"]
    chosen = before["synthetic_only_model"]
    assert chosen["row"] == "timetravel_dsd" and chosen["test_auc"] == rows["timetravel_dsd"]["all"]["auc"]
    assert chosen["rule"] == "the highest snac train+validation AUC among the synthetic-only rows"
    rng = np.random.default_rng(3)  # the fixture's train and validation records again, a test split of jumps only
    write_config(release, "snac", "snac", {split: [summary(rng, i + offset, split[:2], strangers=split != "test") for i in range(n)]
                                           for split, n, offset in (("train", 24, 0), ("validation", 6, 50), ("test", 16, 100))})
    after = transfer(release=release, progress=False)
    rows_after = after["results"]
    assert rows_after["fairytale_dsd"]["all"]["auc"] > rows_after["timetravel_dsd"]["all"]["auc"]  # test now favours the other
    assert after["synthetic_only_model"]["row"] == "timetravel_dsd"
    assert {n: r["choice"] for n, r in rows_after.items() if "choice" in r} == {n: r["choice"] for n, r in rows.items() if "choice" in r}
    table = (root / "catalog/baseline/snac_transfer.md").read_text()
    assert "| **timetravel_dsd** (chosen) |" in table and table.count("(chosen)") == 1


def test_a_choice_on_test_is_refused_in_one_line(project, project_root):
    _, release = project
    _study(project_root, choose_on=["validation", "test"])
    with pytest.raises(BaselineError, match="^baseline.studies.transfer.choose_on must name snac's splits other than test "
                                            r"\(train, validation\); it names validation, test$"):
        transfer(release=release, progress=False)
