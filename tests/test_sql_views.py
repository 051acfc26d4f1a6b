"""SQL over the release: the views exist for whichever configs are built, their row counts match the Parquet
files, ClassLabels are decoded, results export, and bad SQL is one clear line."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import cohbench
from cohbench import cli, sql
from cohbench.cli.sql_terminal import Shell
from cohbench.errors import ReleaseError
from release_fixture import plain_record, span, summeval_record, write_release
from snac_toy import write_toy_release


@pytest.fixture
def release(workspace, monkeypatch):  # the workspace keeps catalog/versions/ of the checkout out of reach
    root = write_toy_release(workspace / "release")
    ratings = {f"expert_{i}": {"coherence": i, "fluency": 5} for i in (1, 2, 3)}
    ratings |= {f"crowd_{i}": {"coherence": 1 + i % 5} for i in range(1, 6)} | {"expert_mean": {"coherence": 2.0}}
    corrupted = plain_record("c1", 1, [0, 1, 0], corruption={
        "generator": "swap", "seed": 3, "source_id": "s1", "positions": [1, 2], "inserted_ids": ["x", "y"],
        "similarities": [0.5, 0.25], "ranks": [1, 4], "replaced": ["Was one.", "Was two."]})
    write_release(root, {
        "summeval": ("summeval", {"test": [summeval_record("d1-M8", "M8", ratings)]}),
        "tt-swap": ("timetravel", {"test": [corrupted, plain_record("s1", 0, [0, 0, 0])]}),
    })
    monkeypatch.setenv("COHBENCH_RELEASE", str(root))
    return root


def parquet_rows(root, config, column=None):
    total = 0
    for path in (root / "data" / config).glob("*.parquet"):
        table = pq.read_table(path)
        total += table.num_rows if column is None else sum(len(v) for v in table.column(column).to_pylist())
    return total


def test_views_exist_and_row_counts_match_the_parquet_files(release):
    con = cohbench.db()  # with the views the statistics kinds declare
    assert set(sql.views(con)) == set(sql.LONG_VIEWS) | {"snac", "summeval", "tt-swap", "snac_training"}
    assert sql.config_views(con) == ["snac", "summeval", "tt-swap"]
    count = lambda view: con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]  # noqa: E731
    for config in ("snac", "summeval", "tt-swap"):
        assert count(sql.view_reference(config)) == parquet_rows(release, config)
    assert count("records") == sum(parquet_rows(release, c) for c in ("snac", "summeval", "tt-swap"))
    assert count("spans") == parquet_rows(release, "snac", "spans")
    assert count("sentences") == sum(parquet_rows(release, c, "sentences") for c in ("snac", "summeval", "tt-swap"))
    assert count("ratings") == parquet_rows(release, "summeval", "ratings") == 3 * 2 + 5 + 1
    assert count("snac_training") == parquet_rows(release, "snac", "sentences")
    assert count("corruptions") == 2  # one row per altered position


def test_span_types_are_decoded_to_names_and_offsets_point_at_the_text(release):
    rows = sql.query("SELECT type, category, votes, text, start, \"end\", segment, record_id FROM spans").to_pylist()
    segments = {r["id"]: r["segments"] for r in sql.query("SELECT id, segments FROM snac").to_pylist()}
    assert {r["type"] for r in rows} == {"CharE", "RefE", "SceneE", "GramE"}
    assert {r["category"] for r in rows if r["type"] == "GramE"} == {"language"}
    for r in rows:
        assert segments[r["record_id"]][r["segment"]][r["start"]:r["end"]] == r["text"]
    assert max(r["votes"] for r in rows) == 4


def test_training_view_gives_the_preceding_summary_as_context(release):
    rows = sql.query("SELECT sentence_index, context, sentence, label, error_types FROM snac_training "
                     "WHERE record_id = 'book_175b0' ORDER BY sentence_index", cohbench.db()).to_pylist()
    assert rows[0]["context"] == ""
    assert rows[2]["context"] == "Gabriel leases a sheep farm near Weatherbury. He meets Bathsheba at the farm."
    assert rows[2]["sentence"] == "Her husband's suicide shocks everyone."
    assert rows[0]["error_types"] == ["CharE"]  # coherence types only: the GramE in this sentence is a language error
    assert rows[3]["error_types"] == ["CharE", "SceneE"]  # taxonomy order
    assert [r["label"] for r in rows] == [1, 1, 1, 1]


def test_training_view_equals_the_schemas_sentence_examples(release):
    from cohbench.schema import sentence_examples

    columns = ("id", "segment", "context", "sentence", "label", "error_types")
    view = sql.query("SELECT * FROM snac_training ORDER BY record_id, sentence_index", cohbench.db()).to_pylist()
    records = sql.query("SELECT * FROM snac ORDER BY id").to_pylist()
    examples = [e for record in records for e in sentence_examples(record)]
    assert [tuple(row[c] for c in columns) for row in view] == [tuple(e[c] for c in columns) for e in examples]


def test_ratings_and_corruptions_views(release):
    coherence = sql.query("SELECT annotator_type, avg(score) AS mean FROM ratings WHERE dimension = 'coherence' "
                          "GROUP BY ALL ORDER BY ALL").to_pylist()
    assert coherence == [{"annotator_type": "crowd", "mean": 3.0}, {"annotator_type": "expert", "mean": 2.0},
                         {"annotator_type": "expert_mean", "mean": 2.0}]
    rows = sql.query('SELECT position, inserted_id, similarity, rank, replaced FROM corruptions ORDER BY position').to_pylist()
    assert rows == [{"position": 1, "inserted_id": "x", "similarity": 0.5, "rank": 1, "replaced": "Was one."},
                    {"position": 2, "inserted_id": "y", "similarity": 0.25, "rank": 4, "replaced": "Was two."}]


def test_every_long_view_tells_human_from_synthetic_labels_and_names_them(release, tmp_path):
    con = cohbench.db()
    for view in ("snac", *sql.LONG_VIEWS, "snac_training"):
        assert "annotation" in sql.query(f"SELECT * FROM {view} LIMIT 0", con).column_names, view
    # a generated config is synthetic throughout: its unaltered record s1 is labelled by the recipe, not a person
    annotations = sql.query("SELECT config, list(DISTINCT annotation) AS a FROM records GROUP BY ALL ORDER BY ALL").to_pylist()
    assert annotations == [{"config": "snac", "a": ["human"]}, {"config": "summeval", "a": ["human"]}, {"config": "tt-swap", "a": ["synthetic"]}]
    names = sql.query("SELECT DISTINCT label, label_name FROM sentences WHERE config = 'tt-swap' ORDER BY label").to_pylist()
    assert names == [{"label": 0, "label_name": "ok"}, {"label": 1, "label_name": "error"}]

    root = write_toy_release(tmp_path / "mixed")  # SNaC's human spans, and one synthetic SceneE span beside them
    synthetic = plain_record("syn", 1, [0, 1], spans=[span(0, 0, "Sentence 1.", "SceneE", [1])], corruption={
        "generator": "next_sentence_swap", "seed": 0, "source_id": "x", "positions": [1], "inserted_ids": [],
        "similarities": [], "ranks": []})
    write_release(root, {"synthetic_coherence": ("synthetic_coherence", {"train": [synthetic]})})
    counts = sql.query("SELECT annotation, count(*) AS n FROM spans WHERE type = 'SceneE' GROUP BY ALL ORDER BY ALL", sql.db(root))
    human = sql.query("SELECT count(*) AS n FROM spans WHERE type = 'SceneE' AND config = 'snac'", sql.db(root)).to_pylist()[0]["n"]
    assert counts.to_pylist() == [{"annotation": "human", "n": human}, {"annotation": "synthetic", "n": 1}]


def test_a_statement_naming_only_config_views_loads_only_those(release):
    assert sql.config_views(sql.db(release, statement="SELECT count(*) FROM snac")) == ["snac"]
    for statement in ("SELECT count(*) FROM sentences", "SELECT 1", "SELECT * FROM snacc", "SELEC nonsense", "WITH x AS (SELECT 1) SELECT * FROM x, snac"):
        assert sql.config_views(sql.db(release, statement=statement)) == ["snac", "summeval", "tt-swap"], statement


def test_a_statement_naming_only_views_gets_those_and_what_they_read(release):
    # each view made costs DuckDB a bind; a statement naming any other name gets every view (its error lists them)
    assert sql.views(sql.db(release, statement="SELECT count(*) FROM snac")) == ["snac"]
    assert sql.views(sql.db(release, statement="SELECT count(*) FROM spans")) == ["records", "snac", "spans"]
    assert sql.views(sql.db(release, statement="SELECT count(*) FROM records")) == ["records", "snac", "summeval", "tt-swap"]
    everything = [*sql.LONG_VIEWS, "snac", "summeval", "tt-swap"]
    for statement in ("SELECT 1", "SELECT * FROM snacc", "WITH x AS (SELECT 1) SELECT * FROM x, snac", "SHOW TABLES"):
        assert sorted(sql.views(sql.db(release, statement=statement))) == sorted(everything), statement
    with pytest.raises(sql.QueryError) as error:  # an unknown function: the views made are no list of those there are
        sql.query("SELECT cnt(*) FROM spans", sql.db(release, statement="SELECT cnt(*) FROM spans"))
    assert "cnt does not exist" in str(error.value) and "views:" not in str(error.value)


@pytest.mark.parametrize("statement", [
    "SELECT config, annotation, type, count(*) AS n FROM spans GROUP BY ALL ORDER BY ALL",
    "SELECT config, dimension, avg(score) AS mean, count(*) AS n FROM ratings GROUP BY ALL ORDER BY ALL",
    "SELECT s.config, count(*) AS n FROM spans s, ratings r GROUP BY ALL ORDER BY ALL",
])  # fmt: skip
def test_a_span_or_rating_query_loads_only_the_configs_that_hold_some_and_answers_the_same(release, statement):
    everything = sql.query(statement, sql.db(release)).to_pylist()
    con = sql.db(release, statement=statement)
    assert sql.query(statement, con).to_pylist() == everything
    holding = {"spans": "snac", "ratings": "summeval"}  # tt-swap holds neither
    assert sql.config_views(con) == sorted(config for view, config in holding.items() if f" {view} " in statement)


def test_views_work_with_only_some_configs_built(workspace):
    root = write_release(workspace / "release", {"storysumm": ("storysumm", {"validation": [plain_record("s", 1, [1, 0])]})})
    con = sql.db(root)
    assert con.execute("SELECT count(*) FROM spans").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM sentences").fetchone()[0] == 2


def test_no_built_config_is_a_clear_error_naming_where_it_looked(tmp_path):
    with pytest.raises(ReleaseError, match=f"no cohbench release found \\(looked in: {tmp_path / 'empty'} \\(the release argument\\)\\)"):
        sql.db(tmp_path / "empty")


def test_bad_sql_and_unknown_views_are_one_clear_line(release, capsys):
    with pytest.raises(sql.QueryError, match="Parser Error") as error:
        sql.query("SELEC 1")
    assert "\n" not in str(error.value)
    with pytest.raises(sql.QueryError, match=r"nosuchview.*views: corruptions, ratings") as error:
        sql.query("SELECT * FROM nosuchview")
    assert "\n" not in str(error.value)
    assert cli.main(["sql", "SELECT nocolumn FROM spans"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cohbench: error: Binder Error") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_query_results_export_to_files(release, tmp_path, fmt):
    target = tmp_path / f"spans.{fmt}"
    assert cli.main(["sql", "SELECT type, count(*) AS n FROM spans GROUP BY ALL ORDER BY ALL", "--format", fmt, "--output", str(target)]) == 0
    if fmt == "parquet":
        assert pq.read_table(target).to_pylist()[0] == {"type": "CharE", "n": 5}
    elif fmt == "json":
        assert json.loads(target.read_text())[0] == {"type": "CharE", "n": 5}
    else:
        assert target.read_text().splitlines()[:2] == ['"type","n"', '"CharE",5']


def test_csv_on_stdout_is_the_csv_written_to_a_file(release, tmp_path, capsys):
    statement = "SELECT * FROM (VALUES (1, 'a,b', NULL), (2, '', 0.5), (3, 'say \"hi\"', 'nan'::DOUBLE)) t(n, s, x)"
    assert cli.main(["sql", statement, "--format", "csv"]) == 0
    assert cli.main(["sql", statement, "--output", str(tmp_path / "x.csv")]) == 0
    assert capsys.readouterr().out == (tmp_path / "x.csv").read_text()


AWKWARD = """SELECT * FROM (VALUES
  ('say "hi", then' || chr(10) || 'leave' || chr(13), NULL::INTEGER, true, 0.1::DOUBLE, 0.1::FLOAT, 1.50::DECIMAL(5,2),
   170141183460469231731687303715884105727::HUGEINT, DATE '2024-02-29', '00000000-0000-0000-0000-00000000002a'::UUID),
  ('', -7, false, 2417851639229258349412352::DOUBLE, 1298025.75::FLOAT, 0::DECIMAL(18,10), NULL, NULL, NULL),
  (NULL, 0, NULL, 1e-7::DOUBLE, 3.4028234663852886e38::FLOAT, -0.05::DECIMAL(4,2), -1, NULL, NULL),
  ('é,🎉', 1, NULL, 0.000001::DOUBLE, 1e-45::FLOAT, NULL, 0, NULL, NULL),
  ('''', 2, NULL, -(0.0::DOUBLE), 'nan'::FLOAT, NULL, 0, NULL, NULL),
  ('x', 3, NULL, '-inf'::DOUBLE, 16777216::FLOAT, NULL, 0, NULL, NULL),
  ('y', 4, NULL, 123456789012.0::DOUBLE, 1e10::FLOAT, NULL, 0, NULL, NULL)
) AS t("text ""quoted"", too", n, flag, double, single, price, huge, day, id)"""
# The bytes pyarrow's CSV writer wrote for AWKWARD (CSV went through it before issue 33): every text and name quoted,
# quotes doubled, newlines kept inside quotes, NULL empty, the shortest digits that read back (a single's own: 0.1,
# not 0.10000000149011612), plain from 1e-6 to 1e10, a decimal in the decimal standard's form (0E-10), NaN unsigned
AWKWARD_CSV = (
    '"text ""quoted"", too","n","flag","double","single","price","huge","day","id"\n'
    '"say ""hi"", then\nleave\r",,true,0.1,0.1,1.5000000000,170141183460469231731687303715884105727,"2024-02-29",'
    '"00000000-0000-0000-0000-00000000002a"\n'
    '"",-7,false,2.4178516392292583e+24,1298025.8,0E-10,,,\n'
    ',0,,1e-7,3.4028235e+38,-0.0500000000,-1,,\n'
    '"é,🎉",1,,0.000001,1e-45,,0,,\n'
    '"\'",2,,-0,nan,,0,,\n'
    '"x",3,,-inf,16777216,,0,,\n'
    '"y",4,,1.23456789012e+11,1e+10,,0,,\n'
)


def test_csv_is_written_in_pyarrows_format_on_awkward_values(release, tmp_path, capsysbinary):
    assert cli.main(["sql", AWKWARD, "--format", "csv"]) == 0
    assert capsysbinary.readouterr().out == AWKWARD_CSV.encode("utf-8")
    assert cli.main(["sql", AWKWARD, "--output", str(tmp_path / "x.csv")]) == 0
    assert (tmp_path / "x.csv").read_bytes() == AWKWARD_CSV.encode("utf-8")
    assert cli.main(["sql", "SELECT 1 AS n WHERE false", "--format", "csv"]) == 0
    assert capsysbinary.readouterr().out == b""  # no rows, no header: as pyarrow's writer, which met no batch


def test_csv_floats_are_the_digits_pyarrow_wrote():
    # pyarrow (double-conversion) is the oracle: doubles and singles spread over every exponent, each power of two
    # (where the neighbour below is nearer) and its neighbours, the extremes; DuckDB's own text of some doubles is wrong
    import io

    import duckdb
    import pyarrow.csv

    con = duckdb.connect()
    statement = """
        SELECT v::DOUBLE AS double, TRY_CAST(v AS FLOAT) AS single FROM (
            SELECT ((hash(i) % 2000001)::BIGINT - 1000000) * power(10, (hash(i + 1) % 90)::INT - 45) AS v FROM range(20000) r(i)
            UNION ALL SELECT power(2, k) FROM range(-1074, 1024) r(k)
            UNION ALL SELECT power(2, k) * (1 + s * power(2, -23)) FROM range(-149, 128) r(k), (VALUES (-1), (1)) u(s)
            UNION ALL SELECT unnest([3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38, 1e-6, 1e-7, 1e10, 9999999999])
        ) ORDER BY ALL"""  # fmt: skip
    written = io.BytesIO()
    rows = sql.stream_to(statement, written, "csv", con)
    table = con.sql(statement).to_arrow_table()
    oracle = io.BytesIO()
    pyarrow.csv.write_csv(table, oracle)
    assert rows == table.num_rows > 20000 and written.getvalue() == oracle.getvalue()


# Types that Arrow or Python render otherwise than DuckDB: each is written as DuckDB's own text for it
AS_DUCKDB_SHOWS = {
    "i": "INTERVAL 3 DAY", "b": "'a\\x00b'::BLOB", "t": "'1010'::BIT", "v": "123456789012345678901234567890::VARINT",
    "u": "340282366920938463463374607431768211455::UHUGEINT", "z": "'10:00:00+01:00'::TIMETZ",
    "d": "'infinity'::DATE", "ts": "'-infinity'::TIMESTAMP", "far": "'5000000-01-01'::DATE",
}


def test_values_arrow_or_python_would_change_are_written_as_duckdb_shows_them(release, tmp_path, capsys):
    import csv
    import io

    import duckdb

    select = "SELECT " + ", ".join(f"{value} AS {name}" for name, value in AS_DUCKDB_SHOWS.items())
    oracle = duckdb.connect()  # DuckDB's own text for each value
    expected = {name: oracle.execute(f"SELECT CAST(({value}) AS VARCHAR)").fetchone()[0] for name, value in AS_DUCKDB_SHOWS.items()}
    assert cli.main(["sql", select, "--format", "csv"]) == 0
    assert list(csv.DictReader(io.StringIO(capsys.readouterr().out))) == [expected]
    assert cli.main(["sql", select, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [expected]
    assert cli.main(["sql", f"SELECT [{AS_DUCKDB_SHOWS['d']}] AS d, {{'i': {AS_DUCKDB_SHOWS['i']}}} AS s", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"d": ["infinity"], "s": {"i": "3 days"}}]  # inside lists and structs too
    union = "union_value(k := 7)::UNION(k INTEGER, s VARCHAR)"
    assert cli.main(["sql", f"SELECT *, {union} AS un FROM ({select}) t", "--output", str(tmp_path / "x.parquet")]) == 0
    written = duckdb.connect().execute(f"SELECT t, u, z, i, v, un FROM '{tmp_path / 'x.parquet'}'").fetchall()
    # through Arrow these were bytes, -1, no zone; pyarrow's Parquet writer has no interval or union, and opaque bytes for v
    assert written == [(expected["t"], expected["u"], expected["z"], expected["i"], expected["v"], "7")]
    assert cli.main(["sql", f"SELECT u, z FROM ({select}) t"]) == 0  # the terminal table is DuckDB's own, not Arrow's
    table = capsys.readouterr().out
    assert expected["u"] in table and expected["z"] in table


def test_a_repeated_column_name_is_numbered_alike_in_every_format(release, tmp_path, capsys):
    statement = "SELECT 1 AS a, 2 AS a, 3 AS A"  # JSON kept only the last `a`
    assert cli.main(["sql", statement, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [{"a": 1, "a_1": 2, "A_2": 3}]
    assert captured.err.strip() == "cohbench: note: the result repeats column names; written as a_1 (a), A_2 (A)"
    assert cli.main(["sql", statement, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ['"a","a_1","A_2"', "1,2,3"]
    assert cli.main(["sql", statement, "--output", str(tmp_path / "x.parquet")]) == 0
    assert pq.read_table(tmp_path / "x.parquet").to_pylist() == [{"a": 1, "a_1": 2, "A_2": 3}]
    assert cli.main(["sql", statement]) == 0
    table = capsys.readouterr().out
    assert " a_1 " in table and " A_2 " in table


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cohbench: error: "), captured.err
    return lines[0]


def test_csv_of_list_or_struct_columns_is_refused_naming_them(release, tmp_path, capsys):
    # pyarrow's CSV writer raised ArrowInvalid; DuckDB's COPY wrote lists as text that no reader parses back
    statement = "SELECT list(DISTINCT system) AS systems, {'n': 1} AS counts, 1 AS n FROM records"
    for destination in (["--format", "csv"], ["--output", str(tmp_path / "x.csv")]):
        assert cli.main(["sql", statement, *destination]) == 1
        assert "CSV cannot hold the list or struct column(s) systems, counts; use --format parquet or json" in one_error_line(capsys)
    assert not (tmp_path / "x.csv").exists()
    assert cli.main(["sql", "SELECT array_to_string(list(DISTINCT system ORDER BY system), '|') AS systems FROM records", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == '"systems"'


JSON_VALUES = "SELECT 'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, ['-inf'::DOUBLE, 0.5] AS floats, sum(range) AS total, 1.25::DECIMAL(5,2) AS price FROM range(4)"
JSON_ROWS = [{"nan": None, "inf": None, "floats": [None, 0.5], "total": 6, "price": 1.25}]


def test_json_holds_null_for_nan_and_numbers_for_sums_on_stdout_and_in_files(release, tmp_path, capsys):
    # DuckDB's COPY wrote NaN and Infinity (not JSON); sum() is a HUGEINT, which was printed as a string
    assert cli.main(["sql", JSON_VALUES, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == JSON_ROWS
    assert cli.main(["sql", JSON_VALUES, "--output", str(tmp_path / "x.json"), "--format", "json"]) == 0
    assert json.loads((tmp_path / "x.json").read_text()) == JSON_ROWS


def test_more_than_one_statement_is_refused_before_any_runs(release, capsys):
    assert cli.main(["sql", "SELECT 1; SELECT 2"]) == 1
    assert "give one SQL statement; this query has 2" in one_error_line(capsys)
    assert cli.main(["sql", "SELECT 1 AS one;", "--json"]) == 0  # a closing ';' is no second statement
    assert json.loads(capsys.readouterr().out) == [{"one": 1}]


def test_a_reserved_word_naming_a_column_gets_the_hint_to_quote_it(release, capsys):
    assert cli.main(["sql", "SELECT references FROM records"]) == 1
    assert one_error_line(capsys).endswith('(references is a reserved word in SQL: quote the column name, "references")')
    assert cli.main(["sql", 'SELECT count("references") AS n FROM summeval', "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 1}]


def test_cli_prints_a_table_and_json(release, capsys):
    assert cli.main(["sql", "SELECT count(*) AS spans FROM spans"]) == 0
    assert "spans" in capsys.readouterr().out
    assert cli.main(["sql", "SELECT count(*) AS spans FROM spans", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"spans": parquet_rows(release, "snac", "spans")}] == [{"spans": 11}]


@pytest.mark.integration
def test_real_release_views_match_the_manifest(mirror, workspace):
    from cohbench.release.build import build

    stats = build("storysumm", progress=False)
    con = sql.db()
    assert con.execute("SELECT count(*) FROM storysumm").fetchone()[0] == sum(f["rows"] for f in stats["files"].values()) == 96
    assert con.execute("SELECT count(*) FROM sentences").fetchone()[0] == stats["splits"]["validation"]["sentences"] + stats["splits"]["test"]["sentences"]


def test_statement_from_stdin_and_the_interactive_prompt(release, monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT count(*) AS n FROM snac"))
    assert cli.main(["sql", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 2}]
    prompt = Shell(cohbench.db())
    assert prompt.push("SELECT count(*) AS spans") is True  # waits for the ';'
    assert prompt.push("FROM spans;") is False
    assert "11" in capsys.readouterr().out
    prompt.push("SELECT * FROM nope;")
    assert capsys.readouterr().out.startswith("error: Catalog Error")
    prompt.push(".views")
    assert "snac_training" in capsys.readouterr().out


def test_declared_views_are_made_only_for_a_statement_that_may_read_one(release):
    def refuse():
        raise AssertionError("a query of a config asked for the statistics kinds' views")

    assert sql.query("SELECT count(*) AS n FROM snac", sql.db(statement="SELECT count(*) AS n FROM snac", declared=refuse)).to_pylist() == [{"n": 2}]
    for statement in ("SELECT 1", "SELECT count(*) FROM range(3)", "SELECT count(*) FROM spans"):  # the import takes seconds
        sql.db(statement=statement, declared=refuse)
    asked = []
    con = sql.db(statement="SELECT count(*) FROM snac_training", declared=lambda: asked.append(1) or {"snac_training": "SELECT 1 AS x"})
    assert asked == [1] and "snac_training" in sql.views(con) and "snac_training" not in sql.config_views(con)


@pytest.mark.parametrize("name", ["spans", "sentences", "ratings", "corruptions"])
def test_per_config_long_view_equals_the_filtered_view(release, name):
    con = sql.db()
    for config in ("snac", "summeval", "tt-swap"):
        filtered = sql.query(f"SELECT * FROM {name} WHERE config = '{config}' ORDER BY ALL", con)
        assert sql.query(f"SELECT * FROM {sql.long_view(name, config)} ORDER BY ALL", con) == filtered


def test_python_api_mirrors_the_commands(release):
    import cohbench

    assert cohbench.db().execute("SELECT count(*) FROM spans").fetchone()[0] == 11
    assert cohbench.agreement_statistics("snac")["summaries_by_coders"] == {3: 1, 4: 1}


def test_a_release_built_with_an_older_schema_is_queried_in_this_one(workspace):
    """A release built before `corruption.replaced` existed (0.4.0): every view binds, its records read as before with
    the new subfield null; beside a config built now, that one keeps its value."""
    import pyarrow as pa

    from cohbench.release.layout import read_config
    from cohbench.schema import ARROW_SCHEMA
    from release_fixture import rewrite_split

    root = workspace / "release"
    corruption = {"generator": "swap", "seed": 3, "source_id": "s1", "positions": [1], "inserted_ids": ["x"],
                  "similarities": [0.5], "ranks": [1]}
    write_release(root, {"old": ("timetravel", {"test": [plain_record("o1", 1, [0, 1], corruption=corruption)]})})
    older = pa.struct([f for f in ARROW_SCHEMA.field("corruption").type if f.name != "replaced"])
    older_schema = pa.schema([f.with_type(older) if f.name == "corruption" else f for f in ARROW_SCHEMA])
    record = read_config(root, "old").splits["test"][0]
    del record["corruption"]["replaced"]
    rewrite_split(root, "old", "test", pa.Table.from_pylist([record], schema=older_schema))
    assert "replaced" not in str(pq.read_schema(next((root / "data" / "old").glob("*.parquet"))))

    query = "SELECT record_id, position, inserted_id, replaced FROM corruptions ORDER BY record_id"
    assert sql.query(query).to_pylist() == [{"record_id": "o1", "position": 1, "inserted_id": "x", "replaced": None}]
    write_release(root, {"new": ("timetravel", {"test": [plain_record("n1", 1, [0, 1], corruption={**corruption, "replaced": ["Was."]})]})})
    assert sql.query(query).to_pylist() == [{"record_id": "n1", "position": 1, "inserted_id": "x", "replaced": "Was."},
                                            {"record_id": "o1", "position": 1, "inserted_id": "x", "replaced": None}]
