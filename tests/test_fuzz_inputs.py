"""Property-based tests (hypothesis) over malformed prediction files, score CSVs and SQL strings: every input ends
with exit 1 and one line, or exit 0 with the metrics of the cleaned input; a harmful edit is always refused, a
harmless one (extra keys, spacing, blank lines, key order) never changes the metrics; the release never changes."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cohbench import evaluation
from cohbench.cli import main
from release_fixture import write_every_protocol

FUZZ = settings(
    max_examples=30, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COHBENCH_RELEASE", str(root / "release"))
        mp.setenv("COHBENCH_NETWORK", "0")
        mp.setenv("HF_DATASETS_OFFLINE", "1")
        mp.setenv("HF_DATASETS_CACHE", str(root / "hf"))
        mp.setenv("COHBENCH_VERSIONS", str(root / "versions"))  # the fixture declares its configs there, not in the checkout
        yield write_every_protocol(root / "release")


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def outcome(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    if code != 0:
        lines = captured.err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith("cohbench: error: "), captured.err
        assert "failed unexpectedly" not in lines[0], lines[0]
    return code, captured.out, captured.err


# --- predictions -------------------------------------------------------------------------------------------

# config -> (the valid rows, the key whose value the protocol checks, how many units a list needs)
VALID = {
    "storysumm": [{"id": f"s{i}", "score": round(0.1 * i, 2)} for i in range(1, 10)],
    "timetravel_dsd": [{"id": "d1", "score": [0.1, 0.9, 0.2]}, {"id": "d2", "score": [0.3, 0.2, 0.1]},
               {"id": "d3", "score": [0.2, 0.1, 0.8]}, {"id": "d4", "score": [0.7, 0.1, 0.2]}],
}  # fmt: skip

JUNK = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8), st.just(math.nan), st.just(math.inf), st.just(-math.inf),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: [f]), st.just(10**400),
)  # fmt: skip  (every one of these is outside the schema as a score or a score-list entry; 10**400: 401 digits)

DEEP_LINE = st.just('{"id": "s1", "score": ' + "[" * 100_000 + "]" * 100_000 + "}")  # nesting json.dumps cannot write


def harmful(config: str):
    """An edit that breaks the schema: (description, function of the rows -> the file's lines)."""
    rows = VALID[config]
    index = st.integers(0, len(rows) - 1)

    def replace_score(i, value):
        def edit(rs):
            out = [dict(r) for r in rs]
            if config == "storysumm":
                out[i]["score"] = value
            else:
                out[i]["score"] = [*out[i]["score"][:1], value, *out[i]["score"][2:]]
            return [json.dumps(r) for r in out]

        return edit

    def replace_id(i, value):
        return lambda rs: [json.dumps(dict(r, id=value) if k == i else r) for k, r in enumerate(rs)]

    return st.one_of(
        st.builds(replace_score, index, JUNK),
        st.builds(replace_id, index, st.one_of(st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2))),
        st.builds(lambda i, text: lambda rs: [json.dumps(r) for r in rs[:i]] + [text] + [json.dumps(r) for r in rs[i:]],
                  index, st.text(min_size=1, max_size=20).filter(lambda t: t.strip() and "\n" not in t and "\r" not in t) | DEEP_LINE),
        st.builds(lambda i: lambda rs: [json.dumps(r) for k, r in enumerate(rs) if k != i], index),  # a record left out
        st.builds(lambda i: lambda rs: [json.dumps(r) for r in rs] + [json.dumps(rs[i])], index),  # a duplicate
    )  # fmt: skip


def harmless():
    """Edits that keep the meaning: extra keys, spacing, blank lines, key order, CRLF line ends."""
    return st.lists(st.sampled_from(["extra key", "indent", "blank line", "reorder", "crlf"]), max_size=4)


def render(rows, edits) -> list[str]:
    lines = []
    for r in rows:
        r = dict(r)
        if "extra key" in edits:
            r["model"] = "mine"
        if "reorder" in edits:
            r = dict(reversed(list(r.items())))
        line = json.dumps(r, separators=(", ", ": ") if "indent" in edits else (",", ":"))
        lines.append(("  " + line + "  ") if "indent" in edits else line)
        if "blank line" in edits:
            lines.append("   ")
    return lines


@pytest.mark.parametrize("config", list(VALID))
@FUZZ
@given(data=st.data())
def test_a_malformed_predictions_file_is_refused_and_a_clean_one_scores_like_its_cleaned_input(release, tmp_path_factory, capsys, config, data):
    before = fingerprint(release)
    path = tmp_path_factory.mktemp("p") / "p.jsonl"
    clean = evaluation.evaluate(config, VALID[config], threshold=0.5)
    if data.draw(st.booleans(), label="harmful"):
        edit = data.draw(harmful(config), label="edit")
        path.write_text("\n".join(edit(VALID[config])) + "\n", encoding="utf-8")
        code, _, _ = outcome(["evaluate", config, "--predictions", str(path), "--threshold", "0.5", "--json"], capsys)
        assert code == 1, f"a harmful edit was accepted: {path.read_text()[:200]}"
    else:
        edits = data.draw(harmless(), label="edits")
        path.write_bytes(("\r\n" if "crlf" in edits else "\n").join(render(VALID[config], edits)).encode() + b"\n")
        code, out, _ = outcome(["evaluate", config, "--predictions", str(path), "--threshold", "0.5", "--json"], capsys)
        assert code == 0 and json.loads(out) == json.loads(json.dumps(clean))
    assert fingerprint(release) == before


# --- score CSVs --------------------------------------------------------------------------------------------

SUMMARIES = [(f"d{d}", f"M{s}") for d in range(3) for s in (1, 2, 3)]
CLEAN_SCORES = [float((d * 5 + s * 3) % 7) for d in range(3) for s in (1, 2, 3)]


def csv_text(cells: list[str], spaced: bool = False, reordered: bool = False) -> str:
    pad = " " if spaced else ""
    if reordered:
        return "score,system,doc_id\n" + "".join(f"{pad}{c}{pad},{s},{d}\n" for (d, s), c in zip(SUMMARIES, cells))
    return "doc_id,system,score\n" + "".join(f"{d},{s},{pad}{c}{pad}\n" for (d, s), c in zip(SUMMARIES, cells))


NOT_A_NUMBER = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "true", "high", "0.5.1", "1e999", "--1", "0x10", "1" * 401]),
    st.text(alphabet="abcxyz!?%", min_size=1, max_size=6),
)


@FUZZ
@given(harm=st.booleans(), at=st.integers(0, len(SUMMARIES) - 1), bad=NOT_A_NUMBER, spaced=st.booleans(), reordered=st.booleans(),
       formats=st.lists(st.sampled_from(["{:g}", "{:.3f}", "{:e}", "{}"]), min_size=len(SUMMARIES), max_size=len(SUMMARIES)))  # fmt: skip
def test_a_malformed_score_csv_is_refused_and_a_clean_one_scores_like_its_cleaned_input(
    release, tmp_path_factory, capsys, harm, at, bad, spaced, reordered, formats
):
    before = fingerprint(release)
    folder = tmp_path_factory.mktemp("s")
    (folder / "clean.csv").write_text(csv_text([str(v) for v in CLEAN_SCORES]))
    code, clean_out, _ = outcome(["metaeval", "summeval", "--scores", str(folder / "clean.csv"), "--bootstrap", "0", "--json"], capsys)
    assert code == 0
    cells = [f.format(v) for f, v in zip(formats, CLEAN_SCORES)]
    if harm:
        cells[at] = bad
    (folder / "s.csv").write_text(csv_text(cells, spaced, reordered))
    for allow in ([], ["--allow-missing"]):
        code, out, _ = outcome(["metaeval", "summeval", "--scores", str(folder / "s.csv"), "--bootstrap", "0", "--json", *allow], capsys)
        if harm:
            assert code == 1
        else:
            assert code == 0
            got, want = json.loads(out), json.loads(clean_out)
            assert got["metrics"] == want["metrics"] and got["bias_matrix"] == want["bias_matrix"]
    assert fingerprint(release) == before


# --- SQL ---------------------------------------------------------------------------------------------------


def hostile_sql(release: Path, elsewhere: Path):
    data = str(release / "data" / "snac" / "test.parquet")
    paths = st.sampled_from([data, str(release / "manifest.json"), str(release / "x.parquet"), str(elsewhere / "out.csv"), "/etc/passwd", "/root/x"])
    return st.one_of(
        st.builds("COPY (SELECT {}) TO '{}' ({})".format, st.sampled_from(["42 AS x", "* FROM snac", "* FROM records"]), paths,
                  st.sampled_from(["FORMAT parquet", "FORMAT csv", "FORMAT parquet, USE_TMP_FILE false, OVERWRITE true"])),
        st.builds("SELECT * FROM {}('{}')".format, st.sampled_from(["read_csv", "read_parquet", "read_text", "read_blob", "glob"]), paths),
        st.builds("ATTACH '{}' AS other".format, paths),
        st.sampled_from(["INSTALL httpfs", "LOAD httpfs", "SET enable_external_access = true", "SET lock_configuration = false",
                         "SET memory_limit = '1TB'", "PRAGMA enable_profiling", f"EXPORT DATABASE '{elsewhere}'", "CALL dbgen(sf=0.01)",
                         "CHECKPOINT", "DROP VIEW snac", "SELECT count(*) FROM snac", "SELECT * FROM spans LIMIT 3",
                         f"SET profiling_output = '{elsewhere / 'p.json'}'", f"CALL enable_logging(storage='file', storage_path='{elsewhere}')"]),
        st.text(max_size=40),
    )  # fmt: skip


@FUZZ
@given(data=st.data())
def test_any_sql_string_reads_only_the_release_and_writes_nowhere(release, tmp_path_factory, capsys, data):
    before = fingerprint(release)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    statement = data.draw(hostile_sql(release, elsewhere), label="sql")
    if not statement:  # an empty value is a usage error, refused before the release is read
        with pytest.raises(SystemExit) as exit:
            main(["sql", statement, "--max-rows", "3"])
        assert exit.value.code == 2 and "an empty value names nothing" in capsys.readouterr().err
        return
    code, out, _ = outcome(["sql", statement, "--max-rows", "3"], capsys)
    if any(word in statement for word in ("COPY", "ATTACH", "INSTALL", "LOAD", "SET ", "EXPORT", "read_", "glob(", "enable_logging")):
        assert code == 1, (statement, out)
    assert fingerprint(release) == before and not any(elsewhere.iterdir())
