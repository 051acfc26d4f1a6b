"""SummEval built from the real pinned files in the mirror, and the meta-evaluation run on it as a user would."""

import csv
import json

import pytest
from conftest import built_from_mirror
from corpus_case import FIXTURES, CorpusCase, Opening, expected_splits

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
    FIXTURE_PATHS = {**{f"damo_{system}": FIXTURES / f"summeval/{system}_outputs_annotations.jsonl" for system in ("M8", "M22")},
                     "bartscore": FIXTURES / "summeval/data.pkl"}
    # The extractive systems' summaries are only in BARTScore's data.pkl (tokenised, lower-cased but for the sentence
    # starts: text_variant); the article is DAMO's untokenised `text` of the same document. No summary has a label.
    SPOT_CHECKS = {"summeval": {"test": {
        0: {"id": "cnn-test-404f859482d47c127868964a9a39d1a7645dd2e9/M0", "system": "M0", "label": -1,
            "doc_id": "cnn-test-404f859482d47c127868964a9a39d1a7645dd2e9", "text_variant": "bartscore_tokenised_sentence_case",
            "sentences[0]": Opening("( cnn ) donald sterling 's racist remarks cost him an nba team last year ."),
            "source_text": Opening("(CNN)Donald Sterling's racist remarks cost him an NBA team last year.")},
        9: {"id": "cnn-test-404f859482d47c127868964a9a39d1a7645dd2e9/M2", "system": "M2", "label": -1,
            "sentences[0]": Opening("A los angeles judge has ordered v. stiviano to pay back more than $ 2.6 million")},
        -1: {"id": "dm-test-fadabe346fe95d33eee71299e6596754768f5246/M9", "system": "M9", "label": -1, "text_variant": None,
             "sentences[0]": Opening("the woman has two children under five by two different fathers ."),
             "sentences[1]": Opening("debbie is threatening to ban gemma from seeing children"),
             "source_text": Opening("A 23-year-old mother-of-two is at risk of being banned from ")},
    }}}

    @pytest.fixture
    def records_from_mirror(self, records):
        return {"summeval": {"test": list(records)}}


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


@pytest.mark.slow
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


def _least_agreeing_expert(records) -> tuple[str, dict[str, float]]:
    """Steen & Markert's HUM (Table 3): "the annotator with the worst overall correlation to the remaining annotators",
    whose scores are the predictions. Computed here from SummEval's per-annotator expert ratings, which the upstream
    copies keep for the 12 abstractive systems only (1,200 summaries); Kendall's τ-b from scipy over those summaries."""
    from scipy.stats import kendalltau

    coherence = {}  # id -> expert -> rating
    for record_id, ratings in zip(records["id"], records["ratings"]):
        experts = {r["annotator"]: r["score"] for r in ratings if r["annotator_type"] == "expert" and r["dimension"] == "coherence"}
        if experts:
            coherence[record_id] = experts
    ids, experts = sorted(coherence), sorted(next(iter(coherence.values())))
    agreement = {}
    for expert in experts:
        others = [sum(coherence[i][e] for e in experts if e != expert) for i in ids]
        agreement[expert] = kendalltau([coherence[i][expert] for i in ids], others).statistic
    worst = min(agreement, key=agreement.get)
    return worst, {i: coherence[i][worst] for i in ids}


def test_a_coherence_file_reproduces_the_signs_of_steen_and_markerts_table_3_and_a_score_file_the_opposite(built, records, tmp_path, capsys):
    expert, scores = _least_agreeing_expert(records)
    results = {}
    for column in ("coherence", "score"):
        path = tmp_path / f"{column}.csv"
        path.write_text(f"doc_id,system,{column}\n" + "".join(f"{i.split('/')[0]},{i.split('/')[1]},{v}\n" for i, v in scores.items()))
        assert main(["metaeval", "summeval", "--scores", str(path), "--allow-missing", "--bootstrap", "0", "--json"]) == 0
        results[column] = json.loads(capsys.readouterr().out)
    coherence, score = (results[c]["metrics"] for c in ("coherence", "score"))
    assert results["coherence"]["scored"] == 1200 and results["coherence"]["polarity"].startswith("`coherence`: higher = more coherent")
    # Table 3, HUM: tau_intra +0.75, tau_pair +0.81, tau_sum +0.81, tau_sys +0.91, Acc_pair 0.77
    for metric in ("tau_intra", "tau_pair", "tau_sum", "tau_sys"):
        assert coherence[metric]["value"] > 0, (expert, metric, coherence[metric])
        assert score[metric]["value"] == pytest.approx(-coherence[metric]["value"])  # the same numbers read as errors
    assert coherence["acc_pair"]["value"] > 0.5 > score["acc_pair"]["value"]
    both = tmp_path / "both.csv"
    both.write_text("doc_id,system,coherence,score\n")
    assert main(["metaeval", "summeval", "--scores", str(both)]) == 1
    assert "has `coherence` and `score`" in capsys.readouterr().err
