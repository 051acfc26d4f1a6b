"""A score's direction is said by its name, never guessed: `coherence` (SummEval) and `faithfulness` (StorySumm) are
read as higher = better, `score` (and a score file's `error`) as higher = more likely an error; both, or neither, is
one line. And what `evaluate` reads stays bounded: unknown ids are counted, not kept; a huge id is shortened; the
bootstrap has a ceiling."""

import json
import tracemalloc

import pytest

from cohbench.cli import main
from cohbench.evaluation import reader

SUMMEVAL = [(f"d{d}/{system}", 1 + (d + 2 * s) % 5) for d in range(3) for s, system in enumerate(["M1", "M2", "M3"])]


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cohbench: error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


def _metaeval(capsys, path, code=0):
    assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "5", "--json"]) == code
    return json.loads(capsys.readouterr().out) if code == 0 else _one_line(capsys)


def test_a_coherence_column_is_read_as_higher_more_coherent_and_score_or_error_as_the_opposite(every_protocol, tmp_path, capsys):
    measure = {i: gold + 0.3 * (n % 2) for n, (i, gold) in enumerate(SUMMEVAL)}  # agrees with the ratings, not perfectly
    results = {}
    for column, sign in (("coherence", 1), ("score", -1), ("error", -1)):
        path = tmp_path / f"{column}.csv"
        path.write_text(f"id,{column}\n" + "".join(f"{i},{sign * v}\n" for i, v in measure.items()))
        results[column] = _metaeval(capsys, path)
    assert results["coherence"]["metrics"]["tau_sum"]["value"] > 0.5
    assert results["coherence"]["metrics"] == results["score"]["metrics"] == results["error"]["metrics"]
    jsonl = tmp_path / "coherence.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "coherence": v}) + "\n" for i, v in measure.items()))
    assert _metaeval(capsys, jsonl)["metrics"] == results["coherence"]["metrics"]


@pytest.mark.parametrize(("header", "said"), [
    ("id,coherence,score", "has `coherence` and `score`; give one column of scores"),
    ("id,score,error", "has `score` and `error`"),
    ("id,value", "has no score column; give one column of scores, `coherence` (higher = more coherent) or `score` / `error`"),
])  # fmt: skip
def test_a_score_file_with_two_score_columns_or_none_is_refused_in_one_line(every_protocol, tmp_path, capsys, header, said):
    path = tmp_path / "scores.csv"
    path.write_text(header + "\n" + "".join(f"{i},1{',2' * (header.count(',') - 1)}\n" for i, _ in SUMMEVAL))
    line = _metaeval(capsys, path, code=1)
    assert said in line and "never guessed" in line


def test_a_jsonl_score_file_that_changes_column_midway_is_refused(every_protocol, tmp_path, capsys):
    rows = [{"id": i, "coherence" if n < 4 else "score": v} for n, (i, v) in enumerate(SUMMEVAL)]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "line 5 gives `score` where the rows before gave `coherence`" in _metaeval(capsys, path, code=1)


def test_predictions_in_the_corpus_polarity_score_like_negated_error_scores(every_protocol, tmp_path, capsys):
    from cohbench.release.layout import read_config

    def evaluate(config, rows):
        path = tmp_path / f"{config}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert main(["evaluate", config, "--predictions", str(path), "--bootstrap", "5", "--json"]) == 0
        return json.loads(capsys.readouterr().out)["splits"]

    measure = {i: gold + 0.3 * (n % 2) for n, (i, gold) in enumerate(SUMMEVAL)}
    coherent = evaluate("summeval", [{"id": i, "coherence": v} for i, v in measure.items()])
    assert coherent == evaluate("summeval", [{"id": i, "score": -v} for i, v in measure.items()])
    assert coherent["test"]["metrics"]["tau_sum"]["value"] > 0.5
    ids = [r["id"] for split in ("validation", "test") for r in read_config(every_protocol, "storysumm").splits[split]]
    faithful = evaluate("storysumm", [{"id": i, "faithfulness": n % 3} for n, i in enumerate(ids)])
    assert faithful == evaluate("storysumm", [{"id": i, "score": -(n % 3)} for n, i in enumerate(ids)])


@pytest.mark.parametrize(("config", "line", "said"), [
    ("summeval", {"id": "d0/M1", "score": 1, "coherence": 2}, 'gives both "score" (higher = more likely an error) and "coherence"'),
    ("storysumm", {"id": "s1", "score": 1, "faithfulness": 0}, 'and "faithfulness" (higher = more faithful); give one'),
    ("timetravel_dsd", {"id": "d1", "coherence": [1, 2, 3]}, '"coherence" is only scored by the metaeval protocol, not sentences'),
])  # fmt: skip
def test_a_prediction_with_both_directions_or_another_protocols_is_refused(every_protocol, tmp_path, capsys, config, line, said):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert main(["evaluate", config, "--predictions", str(path)]) == 1
    assert said in _one_line(capsys)


@pytest.mark.slow
def test_unknown_ids_are_counted_in_bounded_memory_and_a_huge_id_is_shown_shortened(every_protocol, tmp_path, capsys):
    path = tmp_path / "unknown.jsonl"
    lines = 200_000
    with open(path, "w") as handle:
        handle.write(json.dumps({"id": "x" * 1_000_000, "score": 1}) + "\n")
        handle.writelines(f'{{"id": "unknown-{n:07d}-{"y" * 40}", "score": 1}}\n' for n in range(lines))
    from cohbench.evaluation import protocol_of
    from cohbench.release.layout import read_config

    records = {r["id"]: r for rows in read_config(every_protocol, "storysumm").splits.values() for r in rows}
    with pytest.raises(reader.PredictionsError):  # once before measuring: what a first call imports is not the file's
        reader.read_predictions([{"id": "warm-up", "score": 1}], protocol_of("storysumm"), records, "storysumm")
    tracemalloc.start()
    with pytest.raises(reader.PredictionsError) as refused:
        reader.read_predictions(path, protocol_of("storysumm"), records, "storysumm")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(refused.value)
    assert message.startswith(f"{lines + 1} prediction line(s) name ids that are not records of storysumm: xxxx")
    assert len(message) < 600 and message.endswith(", ...")
    assert peak < 16 * 2**20, peak  # the 1 MB line and a few examples (3 MB); keeping every unknown id took 52 MB
    assert main(["evaluate", "storysumm", "--predictions", str(path)]) == 1
    assert len(_one_line(capsys)) < 700


@pytest.mark.parametrize("argv", [
    ["evaluate", "storysumm", "--scorer", "summary_length"],
    ["metaeval", "summeval", "--measure", "random"],
    ["leaderboard", "--scorer", "summary_length"],
])  # fmt: skip
def test_a_bootstrap_beyond_the_ceiling_is_one_line(every_protocol, capsys, argv):
    assert main([*argv, "--bootstrap", "100000000000"]) == 1
    assert "100000000000 bootstrap samples is more than the 100,000 allowed" in _one_line(capsys)
