"""Prediction and score files are checked against their protocol's schema before any metric: a value that is not
what the schema says is one line and exit 1, never a metric computed from it; JSON output is valid JSON."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from cohbench.cli import main

STORYSUMM = [f"s{i}" for i in range(1, 10)]


def write(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def strict_json(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cohbench: error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


def labels(**changed):
    return [{"id": i, "label": changed.get(i, int(i in ("s1", "s3", "s5")))} for i in STORYSUMM]


def scores(**changed):
    return [{"id": i, "score": changed.get(i, 0.1 * n)} for n, i in enumerate(STORYSUMM)]


def raw_score(text: str) -> list:
    """Rows of scores whose fifth line holds `text` as its score, written as it is (JSON that json.dumps cannot write)."""
    rows = scores()
    return [*rows[:4], f'{{"id": "s5", "score": {text}}}', *rows[5:]]


BAD_SUMMARY_PREDICTIONS = {
    "NaN score on a test record": (scores(s6=math.nan), "line 6 is not valid JSON (NaN is not a number JSON allows)"),
    "infinite score": (scores(s7=math.inf), "line 7 is not valid JSON (Infinity is not a number JSON allows)"),
    "score as a string": (scores(s5="0.5"), 's5): score must be a number, found "0.5"'),
    "score as a bool": (scores(s5=True), "s5): score must be a number, found true"),
    "score as a dict": (scores(s5={"p": 0.5}), "s5): score must be a number"),
    "score as a list": (scores(s5=[0.5]), "s5): score must be one value for this protocol"),
    "label 2": (labels(s5=2), "s5): label must be 0 (no error) or 1 (error), found 2"),
    "label -1": (labels(s5=-1), "label must be 0 (no error) or 1 (error), found -1"),
    "label 0.7": (labels(s5=0.7), "found 0.7"),
    "label null": (labels(s5=None), "found null"),
    "label as a bool": (labels(s5=True), "found true"),
    "id as a list": (labels() + [{"id": ["s1"], "label": 1}], '"id" must be a string'),
    "id as a number": ([{"id": 5, "label": 1}] + labels(), '"id" must be a string'),
    "no score or label": ([{"id": "s1"}] + labels()[1:], 'needs a "score" or a "label"'),
    "types on the summary protocol": ([{"id": "s1", "label": 1, "types": []}] + labels()[1:], '"types" is only scored by the typed_sentences protocol'),
    "a bare NaN literal": (["NaN"], "line 1 is not valid JSON (NaN is not a number JSON allows)"),
    "a JSON array line": ([[1, 2]], "must be a JSON object"),
    "a score of 401 digits": (raw_score("1" * 401), "line 5 is not valid JSON (an integer of 401 digits is out of range)"),
    "a score nested 100k deep": (raw_score("[" * 100_000 + "]" * 100_000), "line 5 is not valid JSON (it is nested too deeply)"),
    "a score given twice": (raw_score('0.9, "score": 0.1'), "line 5 is not valid JSON (the key 'score' occurs twice in one object)"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_SUMMARY_PREDICTIONS)
def test_a_summary_prediction_outside_its_schema_is_one_line(every_protocol, tmp_path, capsys, case):
    rows, message = BAD_SUMMARY_PREDICTIONS[case]
    path = write(tmp_path / "p.jsonl", rows)
    assert main(["evaluate", "storysumm", "--predictions", str(path), "--threshold", "0.5"]) == 1
    assert message in one_error_line(capsys)


def sentence_rows(**changed):
    base = {"d1": [0.1, 0.9, 0.2], "d2": [0.1, 0.2, 0.3], "d3": [0.2, 0.1, 0.8], "d4": [0.7, 0.1, 0.2]}
    return [{"id": i, "score": changed.get(i, v)} for i, v in base.items()]


BAD_UNIT_PREDICTIONS = {
    "a string in the list": (sentence_rows(d3=[0.1, "high", 0.2]), 'score[1] must be a number, found "high"'),
    "null in the list": (sentence_rows(d3=[0.1, None, 0.2]), "score[1] must be a number, found null"),
    "a nested list": (sentence_rows(d3=[0.1, [0.2], 0.2]), "score[1] must be a number"),
    "NaN in the list": (sentence_rows(d3=[0.1, math.nan, 0.2]), "line 3 is not valid JSON (NaN is not a number JSON allows)"),
    "too short": (sentence_rows(d3=[0.1, 0.2]), "score needs one value per unit (3), found 2 values"),
    "one number for a list": (sentence_rows(d3=0.5), "score needs one value per unit (3), found one value"),
}


@pytest.mark.parametrize("case", BAD_UNIT_PREDICTIONS)
def test_a_sentence_prediction_outside_its_schema_is_one_line(every_protocol, tmp_path, capsys, case):
    rows, message = BAD_UNIT_PREDICTIONS[case]
    assert main(["evaluate", "timetravel_dsd", "--predictions", str(write(tmp_path / "p.jsonl", rows))]) == 1
    assert message in one_error_line(capsys)


def snac_rows(**extra):
    rows = [{"id": i, "label": [0, 0, 1]} for i in ("n1", "n2", "n3")]
    rows[1].update(extra)
    return rows


BAD_SNAC_PREDICTIONS = {
    "a span before the first sentence": (snac_rows(types=[[], [], ["CharE"]], spans=[{"sentence": -1, "type": "CharE", "text": "Bob"}]),
                                         "spans[0].sentence must be a sentence index from 0 to 2, found -1"),
    "a span after the last sentence": (snac_rows(spans=[{"sentence": 3, "type": "CharE", "text": "Bob"}]), "found 3"),
    "an unknown span type": (snac_rows(spans=[{"sentence": 2, "type": "Typo", "text": "Bob"}]), "spans[0].type must be one of"),
    "offsets outside the sentence": (snac_rows(spans=[{"sentence": 2, "type": "CharE", "start": 5, "end": 99}]), "within the sentence (0..18)"),
    "a span that is not an object": (snac_rows(spans=["Bob"]), "spans[0] must be an object"),
    "spans not a list": (snac_rows(spans={"sentence": 2}), "spans must be a list"),
    "an unknown type name": (snac_rows(types=[[], ["Oops"], []]), "types[1] has unknown error type(s) Oops"),
    "types of the wrong length": (snac_rows(types=[[], []]), "types needs one list per sentence (3)"),
    "a type that is not a list": (snac_rows(types=[[], "CharE", []]), "types[1] must be a list of error type names"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_SNAC_PREDICTIONS)
def test_a_snac_prediction_outside_its_schema_is_one_line(every_protocol, tmp_path, capsys, case):
    rows, message = BAD_SNAC_PREDICTIONS[case]
    assert main(["evaluate", "snac", "--predictions", str(write(tmp_path / "p.jsonl", rows))]) == 1
    assert message in one_error_line(capsys)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_python_predictions_with_non_finite_scores_are_refused(every_protocol, value):
    from cohbench.evaluation import PredictionsError, evaluate

    with pytest.raises(PredictionsError, match=r"predictions entry 6 \(s6\): score must be a finite number"):
        evaluate("storysumm", scores(s6=value))


def test_bytes_that_are_not_utf8_are_one_line(every_protocol, tmp_path, capsys):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"id": "s1", "label": 1, "note": "caf\xe9"}\n')
    assert main(["evaluate", "storysumm", "--predictions", str(path)]) == 1
    assert "line 1 is not UTF-8" in one_error_line(capsys)


def test_a_byte_order_mark_before_the_first_line_is_no_data(every_protocol, tmp_path, capsys):
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    lines = "".join(f'{{"id": "s{i}", "label": {i % 2}}}\n' for i in range(1, 10))
    plain.write_text(lines)
    marked.write_bytes(b"\xef\xbb\xbf" + lines.encode())
    results = []
    for path in (plain, marked):
        assert main(["evaluate", "storysumm", "--predictions", str(path), "--json"]) == 0
        results.append(capsys.readouterr().out.replace(str(path), "FILE"))
    assert results[0] == results[1]


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_predictions_file_says_it_is_empty(every_protocol, tmp_path, capsys, content):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    assert main(["evaluate", "storysumm", "--predictions", str(path)]) == 1
    assert f"predictions file {path} is empty" in one_error_line(capsys)


@pytest.mark.parametrize("threshold", ["nan", "inf", "-inf"])
def test_a_threshold_that_is_not_finite_is_refused(every_protocol, tmp_path, capsys, threshold):
    path = write(tmp_path / "p.jsonl", scores())
    assert main(["evaluate", "storysumm", "--predictions", str(path), f"--threshold={threshold}", "--json"]) == 1
    assert "the threshold must be a finite number" in one_error_line(capsys)


def test_json_output_is_valid_json_where_metrics_are_undefined(every_protocol, tmp_path, capsys):
    # every prediction the same: AUC over one score value, kappa with one predicted class
    path = write(tmp_path / "p.jsonl", [{"id": i, "score": 0.5} for i in STORYSUMM])
    assert main(["evaluate", "storysumm", "--predictions", str(path), "--threshold", "0.5", "--json"]) == 0
    strict_json(capsys.readouterr().out)
    constant = tmp_path / "s.csv"
    constant.write_text("doc_id,system,score\n" + "".join(f"d{d},M{s},1\n" for d in range(3) for s in (1, 2, 3)))
    assert main(["metaeval", "summeval", "--scores", str(constant), "--bootstrap", "5", "--json"]) == 0
    result = strict_json(capsys.readouterr().out)
    assert result["metrics"]["tau_sum"]["value"] is None


def test_snac_spans_in_range_are_scored(every_protocol, tmp_path, capsys):
    rows = snac_rows(types=[[], [], ["CharE"]], spans=[{"sentence": 2, "type": "CharE", "text": "Bob"}])
    for row in rows:  # types on every record, or on none
        row.setdefault("types", [[], [], []])
    assert main(["evaluate", "snac", "--predictions", str(write(tmp_path / "p.jsonl", rows)), "--json", "--split", "test"]) == 0
    assert strict_json(capsys.readouterr().out)["splits"]["test"]["per_type"]["CharE"]["ov"] == 1.0


def score_csv(tmp_path: Path, cell: str, name="s.csv") -> Path:
    rows = [f"d{d},M{s},{(d + s) % 4}" for d in range(3) for s in (1, 2, 3)]
    rows[4] = rows[4].rsplit(",", 1)[0] + "," + cell
    path = tmp_path / name
    path.write_text("doc_id,system,score\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("cell, message", [("high", "line 6: score 'high' is not a number"), ("nan", "is not a finite number"),
                                           ("inf", "is not a finite number"), ("true", "'true' is not a number"),
                                           ("1,2", "more cells than the header")])  # fmt: skip
def test_a_score_csv_cell_that_is_not_a_finite_number_is_one_line(every_protocol, tmp_path, capsys, cell, message):
    for allow in ([], ["--allow-missing"]):  # not a number is never "missing"
        assert main(["metaeval", "summeval", "--scores", str(score_csv(tmp_path, cell)), "--bootstrap", "5", *allow]) == 1
        assert message in one_error_line(capsys)


def test_score_files_that_are_empty_or_not_utf8_are_one_line(every_protocol, tmp_path, capsys):
    for content, message in [(b"", "is empty"), (b"doc_id,system,score\n", "is empty"), (b"doc_id,system,score\nd0,M1,0.5\xe9\n", "not UTF-8"),
                             (b'{"id": "d0/M1", "score": NaN}\n', "not valid JSON"), (b'{"id": "d0/M1", "score": "0.5"}\n', "not a finite number"),
                             (b'{"id": ["d0/M1"], "score": 0.5}\n', "must be non-empty strings")]:  # fmt: skip
        path = tmp_path / ("s.jsonl" if content.startswith(b"{") else "s.csv")
        path.write_bytes(content)
        assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "5"]) == 1
        assert message in one_error_line(capsys), content


def test_python_predictions_with_a_score_beyond_the_float_range_are_refused(every_protocol):
    from cohbench import evaluation
    from cohbench.evaluation import PredictionsError

    with pytest.raises(PredictionsError, match="s5\\): score must be a finite number, found an integer beyond the float range"):
        evaluation.evaluate("storysumm", [dict(r, score=10**400) if r["id"] == "s5" else r for r in scores()])


def test_a_score_of_401_digits_or_nested_100k_deep_in_a_scores_file_is_one_line(every_protocol, tmp_path, capsys):
    for value, message in [("1" * 401, "s.jsonl line 1 is not valid JSON (an integer of 401 digits is out of range)"),
                           ("[" * 100_000 + "]" * 100_000, "s.jsonl line 1 is not valid JSON (it is nested too deeply)")]:  # fmt: skip
        (tmp_path / "s.jsonl").write_text(f'{{"id": "d0/M1", "score": {value}}}\n')
        assert main(["metaeval", "summeval", "--scores", str(tmp_path / "s.jsonl"), "--bootstrap", "5"]) == 1
        assert message in one_error_line(capsys)
    assert main(["metaeval", "summeval", "--scores", str(score_csv(tmp_path, "1" * 401)), "--bootstrap", "5"]) == 1
    assert "line 6: score Infinity is not a finite number" in one_error_line(capsys)


def not_files(tmp_path: Path) -> dict[str, tuple[str, str]]:
    os.mkfifo(tmp_path / "fifo.jsonl")
    return {"a folder": (str(tmp_path), "is a folder"), "a FIFO": (str(tmp_path / "fifo.jsonl"), "is a FIFO (a pipe), not a regular file"),
            "a device": ("/dev/null", "is a character device, not a regular file")}  # fmt: skip


@pytest.mark.parametrize("option", ["--predictions", "--scores"])
def test_a_folder_fifo_or_device_given_as_the_file_is_named_for_what_it_is(every_protocol, tmp_path, capsys, option):
    command = ["evaluate", "storysumm"] if option == "--predictions" else ["metaeval", "summeval", "--bootstrap", "5"]
    for what, (path, message) in not_files(tmp_path).items():
        assert main([*command, option, path]) == 1
        line = one_error_line(capsys)
        assert f"{path} {message}; give the path of a" in line and "does not exist" not in line, what


def test_ids_with_newlines_or_terminal_escapes_are_shown_escaped(every_protocol, tmp_path, capsys):
    hostile = "s1\n\x1b[31mred\u202e"
    assert main(["evaluate", "storysumm", "--predictions", str(write(tmp_path / "p.jsonl", [{"id": hostile, "label": 1}]))]) == 1
    assert one_error_line(capsys).endswith("are not records of storysumm: s1\\n\\x1b[31mred\\u202e")
    (tmp_path / "s.csv").write_text(f'id,score\n"d0/M1{hostile}",1\n')
    assert main(["metaeval", "summeval", "--scores", str(tmp_path / "s.csv"), "--bootstrap", "5"]) == 1
    assert one_error_line(capsys).endswith("d0/M1s1\\n\\x1b[31mred\\u202e")


def test_a_score_csv_saved_with_a_byte_order_mark_scores_like_one_without(every_protocol, tmp_path, capsys):
    plain = score_csv(tmp_path, "2")
    marked = tmp_path / "bom.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    results = []
    for path in (plain, marked):
        assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "5", "--json"]) == 0
        results.append(strict_json(capsys.readouterr().out)["metrics"])
    assert results[0] == results[1]


def test_a_score_csv_naming_a_column_twice_is_refused_not_read_from_its_last(every_protocol, tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("doc_id,system,score,score\n" + "".join(f"d{d},M{s},{d % 2},{s % 2}\n" for d in range(3) for s in (1, 2, 3)))
    assert main(["metaeval", "summeval", "--scores", str(path), "--bootstrap", "5"]) == 1
    assert "s.csv names the column score twice in its header" in one_error_line(capsys)
