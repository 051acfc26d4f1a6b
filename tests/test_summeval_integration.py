"""SummEval built from the real pinned files in the mirror, and the meta-evaluation run on it as a user would."""

import csv
import json

import pytest
from conftest import built_from_mirror
from corpus_case import CorpusCase, expected_splits

import cohbench
from cohbench.evaluation import rating_grid, ratings, references
from cohbench.cli import main


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # module-scoped: build once from the mirror for all checks below
    with built_from_mirror(tmp_path_factory, "summeval") as (root, stats):
        yield root, stats


@pytest.fixture(scope="module")
def records(built):
    return cohbench.load("summeval", split="test")


@pytest.fixture(scope="module")
def human(records):
    return rating_grid.human_scores(records)


@pytest.fixture(scope="module")
def from_mirror(built):
    return "summeval", built[1]["splits"]


class TestSummEval(CorpusCase):
    CORPUS = "summeval"


def test_the_built_corpus_has_the_verified_counts(built, records):
    _, stats = built
    assert stats["upstream_records"] == stats["built_records"] == sum(expected_splits("summeval").values()) and not stats["dropped"]
    assert len(set(records["doc_id"])) == 100 and len(set(records["system"])) == 16
    per_record = [
        (sum(r["annotator_type"] == "expert" for r in ratings), sum(r["annotator_type"] == "crowd" for r in ratings))
        for ratings in records["ratings"]
    ]
    assert per_record.count((3 * 4, 5 * 4)) == 1200 and per_record.count((0, 0)) == 400
    assert records["text_variant"].count("bartscore_tokenised_sentence_case") == 400
    assert sum(records["system_extractive"]) == 400
    assert all(len(refs) == 11 for refs in records["references"]) and all(records["sentences"])


def test_the_two_copies_agree_on_every_expert_mean(built):
    _, stats = built
    assert stats["notes"]["expert_mean_crosscheck"] == {"records_compared": 1200, "records_mismatched": 0, "mismatched_ids": []}
    whole = (built[0] / "release/cards/summeval.md").read_text()  # the card's details ship beside README.md
    assert "expert_mean_crosscheck" in whole and "list positions" in whole


def test_the_upper_bound_reproduces_the_papers_table_1(human):
    result = ratings.evaluate(measure="upper-bound", human=human, bootstrap=0)["metrics"]
    assert result["tau_sys"]["value"] == 1.0
    assert result["tau_intra"]["value"] is None and result["tau_intra"]["systems_undefined"] == 16
    # Steen & Markert 2022, Table 1 (17 systems): tau_sum 0.39, tau_pair 0.44, Acc_pair 0.73
    assert result["tau_sum"]["value"] == pytest.approx(0.39, abs=0.01)
    assert result["tau_pair"]["value"] == pytest.approx(0.44, abs=0.01)
    assert result["acc_pair"]["value"] == pytest.approx(0.73, abs=0.01)


@pytest.mark.parametrize("measure", ["uppercase-noised", "architecture-noised", "upper-bound-noised"])
def test_noised_confounders_rank_systems_but_not_summaries_within_a_system(human, measure):
    result = ratings.evaluate(measure=measure, human=human, bootstrap=0)["metrics"]
    assert result["tau_sys"]["value"] > 0.25
    assert abs(result["tau_intra"]["value"]) < 0.05


def test_random_scores_are_at_chance(human):
    result = ratings.evaluate(measure="random", human=human, bootstrap=0)["metrics"]
    assert abs(result["tau_sum"]["value"]) < 0.05 and abs(result["tau_intra"]["value"]) < 0.05
    assert result["acc_pair"]["value"] == pytest.approx(0.5, abs=0.05)


def test_cli_scores_file_equals_the_built_in_measure_and_writes_the_bias_matrix(built, human, tmp_path, capsys):
    scores = references.reference_scores("architecture-noised", human, seed=0)
    path = tmp_path / "scores.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["doc_id", "system", "score"])
        for d, doc in enumerate(human.docs):
            for s, system in enumerate(human.systems):
                # a scores file is in the schema's polarity (higher = less coherent); reference measures in coherence's
                writer.writerow([doc, system, repr(-float(scores[d, s]))])
    plot, table = tmp_path / "bias.png", tmp_path / "bias.csv"
    args = ["--bootstrap", "50", "--json"]
    assert main(["metaeval", "summeval", "--scores", str(path), "--plot", str(plot), "--bias-table", str(table), *args]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["metaeval", "summeval", "--measure", "architecture-noised", *args]) == 0
    built_in = json.loads(capsys.readouterr().out)
    assert from_file["metrics"] == built_in["metrics"]
    assert from_file["bias_matrix"]["systems"][0] == "M22"  # BART has the highest mean expert coherence
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(table)))
    assert len(rows) == 16 * 15 and {r["kind"] for r in rows} == {"tau_plus", "tau_minus"}


def test_cli_refuses_a_scores_file_with_gaps_unless_allowed(built, tmp_path, capsys):
    path = tmp_path / "scores.jsonl"
    ids = cohbench.load("summeval", split="test")["id"][:1590]
    path.write_text("".join(json.dumps({"id": i, "score": n % 7}) + "\n" for n, i in enumerate(ids)))
    assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "0"]) == 1
    assert "10 of 1600 summaries have no score" in capsys.readouterr().err
    assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "0", "--allow-missing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scored"] == 1590
