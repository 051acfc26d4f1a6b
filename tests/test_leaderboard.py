"""`cohbench leaderboard` on the tiny release with one config per protocol: a user's `module:function` scorer gets,
on every config, the same headline figure and CI as `cohbench evaluate` on that scorer's predictions, beside the
best reference with a paired difference, a macro-average and the published figures; results are written per scorer
under the release's version and manifest hash, never inside the release; each kind of bad input is one line naming
scorer and config, that config skipped and counted (fatal with --strict), never a traceback or a guessed figure."""

import json
import textwrap

import pytest

from cohbench.cli import main

pytestmark = pytest.mark.slow  # each board scores configs with the reference scorers, a user's function in its own process

SCORER = '''
def score(records):
    """Deterministic scores from the text alone: per sentence/gap where the record has units, else one number."""
    out = []
    for r in records:
        n = len(r["sentences"])
        if r["config"] in ("storysumm", "summeval"):
            out.append(float(sum(len(s) for s in r["sentences"]) % 7) + (len(r.get("system") or "") % 3) / 10)
        else:
            units = n - 1 if r["config"].endswith("_msd") else n
            out.append([((i * 7 + len(r["sentences"][i])) % 5) / 5 for i in range(units)])
    return out
'''


def _scorer_module(folder, body: str, name: str = "my_scorer") -> str:
    (folder / f"{name}.py").write_text(textwrap.dedent(body))
    return f"{name}:score"


@pytest.fixture
def board(every_protocol, tmp_path, monkeypatch, capsys):
    """Run `cohbench leaderboard ARGS --json` in a working folder holding the test's scorer modules."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def run(*args, code=0):
        assert main(["leaderboard", *args, "--bootstrap", "200", "--output", str(tmp_path / "results"), "--json"]) == code
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return (json.loads(out) if code == 0 else None), err

    return work, run


def test_a_users_function_gets_the_same_headline_as_evaluate_with_cis_differences_and_published_figures(board, capsys, tmp_path, monkeypatch):
    work, run = board
    spec = _scorer_module(work, SCORER)
    result, _ = run("--scorer", spec)
    monkeypatch.syspath_prepend(str(work))
    import my_scorer

    from cohbench.evaluation import protocol_of
    from cohbench.release.layout import read_config
    from cohbench.settings import release_dir

    checked = 0
    for config, entry in result["configs"].items():
        splits = read_config(release_dir(), config).splits
        records = [r for split, rows in splits.items() if split != "train" for r in rows]
        views = [protocol_of(config).scorer_view(r) for r in records]  # what the scorer is given of each record
        path = tmp_path / f"{config}.jsonl"
        path.write_text("".join(json.dumps({"id": r["id"], "score": s}) + "\n" for r, s in zip(records, my_scorer.score(views))))
        assert main(["evaluate", config, "--predictions", str(path), "--bootstrap", "200", "--json"]) == 0
        expected = json.loads(capsys.readouterr().out)["splits"]["test"]["headline"]
        mine = entry["scores"].get(spec)
        if expected is None or expected["value"] is None:
            assert mine is None or mine["value"] is None
            continue
        assert mine["value"] == pytest.approx(expected["value"]) and mine["ci"] == pytest.approx(expected["ci"]), config
        assert entry["metric"] == expected["metric"]
        if entry["best_reference"]:
            difference = mine["difference"]
            best = entry["references"][entry["best_reference"]]["value"]
            assert difference["from"] == entry["best_reference"] and difference["value"] == pytest.approx(mine["value"] - best)
            assert difference["ci"][0] <= difference["value"] <= difference["ci"][1]
        checked += 1
    assert checked >= 4, result["configs"]
    assert {entry["metric"] for entry in result["configs"].values()} >= {"auc", "tau_intra"}
    assert result["macro"][spec]["auc"]["configs"] >= 2 and len(result["macro"][spec]["auc"]["ci"]) == 2
    published = result["configs"]["timetravel_dsd"]["published"]
    assert any(f["paper"] == "Cai et al. 2020" and f["metric"] == "auc" and f["value"] == 0.890 for f in published)
    assert "unverified" in result["configs"]["timetravel_dsd"]["note"]
    # the results are kept per scorer, under the release's version and manifest hash
    (written,) = result["written"]
    kept = json.loads(open(written).read())
    assert kept["release"]["manifest_sha256"][:16] in written and kept["release"]["version"] in written
    assert kept["configs"]["timetravel_dsd"]["value"] == result["configs"]["timetravel_dsd"]["scores"][spec]["value"]
    assert kept["configs"]["timetravel_dsd"]["version"] == result["configs"]["timetravel_dsd"]["version"] == "1.0.0"


def test_records_no_version_declares_get_no_published_figures_and_every_config_names_its_version(board, every_protocol, capsys):
    """A derived or rebuilt copy under a registered name (`derive snac "SELECT * FROM storysumm"`, a changed build) is
    a development version: the papers never scored those records, so none of their figures is set beside it."""
    from release_fixture import rewrite_split

    from cohbench.release.index import write_index
    from cohbench.release.layout import read_config

    table = read_config(every_protocol, "snac").tables["test"]
    rewrite_split(every_protocol, "snac", "test", table.slice(0, 1))  # one document fewer: other records, same name
    write_index(every_protocol)
    work, run = board
    result, _ = run("--scorer", "entity_cue")
    snac, timetravel = result["configs"]["snac"], result["configs"]["timetravel_dsd"]
    assert snac["version"].startswith("1.0.0+dev.") and snac["published"] == [] and "paper_metric" not in snac
    assert "no published figure is set beside it" in snac["published_withheld"]
    assert timetravel["version"] == "1.0.0" and timetravel["published"] and "published_withheld" not in timetravel
    assert main(["leaderboard", "--scorer", "entity_cue", "--bootstrap", "50", "--output", str(work / "out")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| `snac` |"))
    assert f"| `snac` | {snac['version']} | auc |" in row and "published" not in row, row
    assert "| `timetravel_dsd` | 1.0.0 | auc |" in out
    assert f"No published figures: snac here is {snac['version']}" in out and "Goyal et al. 2022 (SNaC)" not in out


def test_the_text_table_prints_each_figure_with_its_ci_the_difference_and_the_papers_beside(board, capsys):
    work, _ = board
    spec = _scorer_module(work, SCORER)
    argv = ["--scorer", spec, "--scorer", "entity_cue", "--bootstrap", "50", "--output", str(work / "out")]
    assert main(["leaderboard", *argv, "--plot", str(work / "board.png"), "--markdown", str(work / "board.md")]) == 0
    out = capsys.readouterr().out
    assert (work / "board.md").read_text().splitlines()[2] == next(line for line in out.splitlines() if line.startswith("| config |"))
    row = next(line for line in out.splitlines() if line.startswith("| `timetravel_dsd` |"))
    assert row.count("[") >= 3 and "Δ" in row, row  # best reference, and both scorers with CI and difference
    # Cai et al.'s AUCs are on another test set with other confounders and encoder: listed with that flag, not rivals in a cell
    assert "89.0" not in row and row.count("; published only on other data (3, below)") == 2, row
    assert "| Cai et al. 2020 | Table 3 | Sentence-level (BERT sentence embeddings) | auc | test | 89.0 | other data |" in out
    assert "- Cai et al. 2020 (other data): other test set (the crowd-verified subset, 2,000 DSD instances" in out
    assert "other confounder pool" in out and "other encoder" in out
    snac = next(line for line in out.splitlines() if line.startswith("| `snac` |"))
    assert "published 73.0 / 70.0 / 43.0 / 27.0" in snac, snac  # Table 10: the same summaries on another split
    assert "| Goyal et al. 2022 (SNaC) | Table 10 | FT w/o span (T5-Large on SNaC) | recall_at_p70 | test | 73.0 | same data, other split |" in out
    steen = next(line for line in out.splitlines() if line.startswith("| Steen & Markert 2022 | Table 3 | CCL C/D | tau_sum | test |"))
    assert "| same data and split |" in steen, steen
    # entity_cue scores sentences only: the averages are over the sentence configs both cover, and say so
    assert "| macro-average over 2 | | auc |" in out and "auc: snac, timetravel_dsd (left out: storysumm, summeval, timetravel_msd)" in out


def test_plots_are_one_per_metric_family(board, capsys):
    work, run = board
    spec = _scorer_module(work, SCORER)
    assert main(["leaderboard", "--scorer", spec, "--bootstrap", "50", "--output", str(work / "out"), "--plot", str(work / "board.png"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["plots"] == [str(work / f"board-{tag}.png") for tag in ("auc", "balanced_accuracy", "tau", "recall_at_p70", "tau_sum")]
    for path in result["plots"]:
        assert open(path, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (work / "board.png").exists()
    from cohbench.leaderboards.render import families, papers_metrics

    grouped = {name: configs for name, (_, _, configs) in families(result).items()}
    assert grouped == {"auc": ["snac", "timetravel_dsd", "timetravel_msd"], "balanced_accuracy": ["storysumm"], "tau": ["summeval"]}
    assert papers_metrics(result) == {"recall_at_p70": ["snac"], "tau_sum": ["summeval"]}  # what the papers report: plots of their own


def test_the_macro_average_is_over_the_configs_every_scorer_covers(board):
    work, run = board
    spec = _scorer_module(work, SCORER)
    result, _ = run("--scorer", spec, "--scorer", "entity_cue")
    common = [c for c, e in result["configs"].items() if e["metric"] == "auc" and all(
        (s := e["scores"].get(n)) and s["value"] is not None and s["ci"] for n in (spec, "entity_cue"))]
    assert result["macro_configs"]["auc"] == common == ["snac", "timetravel_dsd"]
    assert "timetravel_msd" in result["macro_left_out"] and "timetravel_msd" in [c for c, e in result["configs"].items() if spec in e["scores"]]
    for name in (spec, "entity_cue"):
        macro = result["macro"][name]["auc"]
        assert macro["configs"] == 2 and macro["value"] == pytest.approx(sum(result["configs"][c]["scores"][name]["value"] for c in common) / 2)


def test_the_papers_metric_stands_beside_their_published_values(board, capsys, tmp_path, monkeypatch):
    """SNaC's papers report recall at precision 0.70, not AUC: each scorer's R@P70 (as `evaluate` computes it) stands
    beside Table 10's figures."""
    work, run = board
    spec = _scorer_module(work, SCORER)
    result, _ = run("--scorer", spec)
    snac = result["configs"]["snac"]
    assert snac["metric"] == "auc" and snac["paper_metric"]["metric"] == "recall_at_p70"
    assert snac["paper_metric"]["published"][:2] == [0.73, 0.70]  # Table 10, in the table's order
    monkeypatch.syspath_prepend(str(work))
    import my_scorer

    from cohbench.evaluation import protocol_of
    from cohbench.release.layout import read_config
    from cohbench.settings import release_dir

    records = [r for split, rows in read_config(release_dir(), "snac").splits.items() if split != "train" for r in rows]
    lines = tmp_path / "snac.jsonl"
    lines.write_text("".join(json.dumps({"id": r["id"], "score": s}) + "\n" for r, s in
                             zip(records, my_scorer.score([protocol_of("snac").scorer_view(r) for r in records]))))
    assert main(["evaluate", "snac", "--predictions", str(lines), "--split", "test", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)["splits"]["test"]["sentence"]["recall_at_p70"]
    assert snac["scores"][spec]["paper_metric"] == pytest.approx(expected)
    assert main(["leaderboard", "--scorer", spec, "--bootstrap", "50", "--output", str(tmp_path / "results")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| `snac` |"))
    assert f"; recall_at_p70 {expected * 100:.1f}, published 73.0 / 70.0 / " in row, row
    storysumm = result["configs"]["storysumm"]  # the papers report the headline itself there: their test figures beside it
    assert storysumm["metric"] == storysumm["paper_metric"]["metric"] == "balanced_accuracy"
    assert storysumm["paper_metric"]["published"] == [0.543, 0.546]


BAD = {
    "raises": ("def score(records):\n    raise RuntimeError('model weights missing')\n", "raised RuntimeError: model weights missing"),
    "wrong count": ("def score(records):\n    return [0.5] * (len(records) + 1)\n", "entries for a batch of"),
    "NaN": ("def score(records):\n    return [float('nan') if r['config'] in ('storysumm', 'summeval') else [float('nan')] * len(r['sentences']) for r in records]\n", "not a finite number"),
    "non-number": ("def score(records):\n    return ['high' if r['config'] in ('storysumm', 'summeval') else ['high'] * len(r['sentences']) for r in records]\n", "not a finite number"),
    "wrong units": ("def score(records):\n    return [0.5 if r['config'] in ('storysumm', 'summeval') else [0.5] * (len(r['sentences']) + 3) for r in records]\n", "timetravel_dsd"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_function_is_one_line_per_config_skipped_counted_and_fatal_when_strict(case, board):
    work, run = board
    body, said = BAD[case]
    spec = _scorer_module(work, body, name=f"bad_{case.replace(' ', '_').replace('-', '_')}")
    result, err = run("--scorer", spec)
    lines = [s["line"] for s in result["skipped"] if s["scorer"] == spec]
    assert lines and any(said in line for line in lines), lines
    assert all(line.startswith(f"{spec} on ") and "\n" not in line for line in lines)
    assert all(line in err for line in lines)  # on stderr too
    scored = [c for c, e in result["configs"].items() if spec in e["scores"]]
    assert not set(scored) & {s["config"] for s in result["skipped"] if s["scorer"] == spec}  # no figure from a guessed value
    _, err = run("--scorer", spec, "--strict", code=1)
    assert len(err.strip().splitlines()) == 1 and spec in err and "--strict" in err


def test_a_predictions_folder_with_a_config_missing_and_an_unknown_file(board, tmp_path):
    work, run = board
    from cohbench.release.layout import read_config
    from cohbench.settings import release_dir

    folder = tmp_path / "preds"
    folder.mkdir()
    rows = read_config(release_dir(), "timetravel_dsd").splits
    records = [r for split in ("validation", "test") for r in rows[split]]
    (folder / "timetravel_dsd.jsonl").write_text("".join(json.dumps({"id": r["id"], "score": [0.1 * i for i in range(len(r["sentences"]))]}) + "\n" for r in records))
    (folder / "not_a_config.jsonl").write_text("{}\n")
    result, err = run("--scorer", str(folder))
    skipped = {s["config"]: s["why"] for s in result["skipped"]}
    assert "not_a_config" in skipped and "names no built config" in skipped["not_a_config"]
    assert "the folder has no snac.jsonl" in skipped["snac"]
    assert result["configs"]["timetravel_dsd"]["scores"][str(folder)]["value"] is not None
    assert f"{folder} on snac: the folder has no snac.jsonl" in err
    (folder / "snac.jsonl").write_text("{}\n")  # a built config's file, left out by --config: not scored, not unknown
    result, _ = run("--scorer", str(folder), "--config", "timetravel_dsd")
    assert {s["config"] for s in result["skipped"]} == {"not_a_config"}


def test_the_text_board_names_each_skipped_config_once(board, capsys, tmp_path):
    work, _ = board
    spec = _scorer_module(work, "def score(records):\n    raise ValueError('no model here')\n", "fails")
    assert main(["leaderboard", "--scorer", spec, "--config", "storysumm", "--bootstrap", "20", "--output", str(tmp_path / "r")]) == 0
    out, err = capsys.readouterr()
    assert (out + err).count(f"{spec} on storysumm: raised ValueError: no model here") == 1


def test_a_reference_that_does_not_apply_is_named_and_a_result_folder_inside_the_release_is_refused(board, every_protocol, capsys):
    work, run = board
    result, _ = run("--scorer", "entity_cue")
    assert {s["config"] for s in result["skipped"]} == {"storysumm", "summeval", "timetravel_msd"}
    assert "entity_cue" in result["configs"]["snac"]["scores"]
    assert main(["leaderboard", "--scorer", "entity_cue", "--output", str(every_protocol / "results")]) == 1
    err = capsys.readouterr().err
    assert "inside the release folder" in err and len(err.strip().splitlines()) == 1
    assert main(["leaderboard", "--scorer", "no_such_scorer"]) == 1
    assert "no reference scorer" in capsys.readouterr().err


def test_the_python_api_gives_the_same_board(board):
    import cohbench

    work, run = board
    result, _ = run("--scorer", "entity_cue")
    again = cohbench.leaderboard(["entity_cue"], samples=200, output=work / "api")
    assert again["configs"]["snac"]["scores"] == result["configs"]["snac"]["scores"]


def test_shipped_predictions_are_read_when_the_manifest_records_them_and_refused_when_changed(board, every_protocol):
    from cohbench.release.index import write_index
    from cohbench.release.layout import read_config, shipped_predictions

    work, run = board
    rows = read_config(every_protocol, "timetravel_dsd").splits
    records = [r for split in ("validation", "test") for r in rows[split]]
    perfect = "".join(json.dumps({"id": r["id"], "score": [float(v) for v in r["sentence_labels"]]}) + "\n" for r in records)
    for scorer in ("baseline", "entity_cue"):  # what `cohbench train` ships: the baseline's and a reference's predictions
        path = shipped_predictions(every_protocol, scorer, "timetravel_dsd")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(perfect)
    write_index(every_protocol)
    result, _ = run("--scorer", "baseline", "--scorer", "entity_cue")
    scores = result["configs"]["timetravel_dsd"]["scores"]
    assert scores["baseline"]["value"] == 1.0 and scores["entity_cue"]["value"] == 1.0  # the shipped files, not a re-run
    assert any(s["line"].startswith("baseline on snac: the release ships no baseline predictions") for s in result["skipped"])
    shipped_predictions(every_protocol, "baseline", "timetravel_dsd").write_text(perfect.replace("1.0", "0.5"))
    result, _ = run("--scorer", "baseline")
    (line,) = [s["line"] for s in result["skipped"] if s["config"] == "timetravel_dsd"]
    assert "is not the file its manifest records" in line and "baseline" not in result["configs"]["timetravel_dsd"]["scores"]
