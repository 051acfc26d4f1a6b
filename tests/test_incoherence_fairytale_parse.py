"""FairytaleQA builder on tiny story files in the upstream format: windows, splits, MSD/DSD constraints, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cohbench.corpora.registry import spec
from cohbench.corpora import fairytaleqa
from cohbench.errors import ParseError

FIX = Path(__file__).parent / "fixtures/fairytaleqa"
FILES = (("train", "Fox-tale-story.csv"), ("train", "hare-story.csv"), ("val", "owl-story.csv"), ("test", "bee-story.csv"))
PATHS = {"story_meta": FIX / "story_meta.csv", **{f"{s}/{f}": FIX / s / f for s, f in FILES}}


@pytest.fixture(autouse=True)
def project_params(project_root):
    project_root()


def test_windows_follow_section_order_and_report_the_case_defect():
    records, cut, dropped, stats = fairytaleqa.windows(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)
    assert cut == 5 and not dropped  # fox 20 sentences -> 2 windows, hare/owl 9 -> 1 each, bee 8 -> 1
    fox = [r for r in records if r["doc_id"] == "Fox-tale"]
    assert [r["id"] for r in fox] == ["Fox-tale-w000", "Fox-tale-w001"]
    assert fox[0]["sentences"][0] == "The fox found a red apple in the forest."  # section 1 first, line breaks collapsed
    assert fox[1]["sentences"][-1] == "The fox carried the spoon to the mill."
    assert stats["sentences_not_in_a_window"] == 4 + 1 + 1
    assert stats["file_names_differing_from_story_meta_in_case"] == ["Fox-tale-story.csv is 'fox-tale' in story_meta.csv"]
    assert {r["split"] for r in records} == {"train", "validation", "test"}


def test_msd_removes_two_inner_non_adjacent_sentences_per_window():
    parsed = fairytaleqa.parse(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)
    assert len(parsed.records) == 5 and parsed.upstream_records == 5
    windows = {r["id"]: r["sentences"] for r in fairytaleqa.windows(PATHS, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)[0]}
    for r in parsed.records:
        window = windows[r["corruption"]["source_id"]]
        kept = [window.index(s) for s in r["sentences"]]
        removed = sorted(set(range(8)) - set(kept))
        assert kept[0] == 0 and kept[-1] == 7 and len(removed) == 2 and removed[1] - removed[0] > 1
        assert r["gap_labels"] == [int(b - a > 1) for a, b in zip(kept, kept[1:])]
    assert all(v["missing_rate"] == 0.25 for v in parsed.notes["by_split"].values())


def test_dsd_never_draws_from_the_same_story_so_single_story_splits_get_no_confounder():
    parsed = fairytaleqa.parse(PATHS, "fairytale_dsd", spec("fairytale_dsd").generator_options(), FILES)
    # val and test each hold one story: no admissible confounder; train's two stories lend to each other.
    assert parsed.dropped == {"no_confounder_below_tau": 2}
    made = {r["corruption"]["source_id"]: r["split"] for r in parsed.records}
    assert made == {"Fox-tale-w000": "train", "Fox-tale-w001": "train", "hare-w000": "train"}
    for r in parsed.records:
        donors = {i.split("-w")[0] for i in r["corruption"]["inserted_ids"]}
        assert r["doc_id"] not in donors and r["sentence_labels"].count(1) == 2


def test_a_story_file_with_another_header_is_a_clear_error():
    bad = {**PATHS, "test/bee-story.csv": FIX / "bad/bee-story.csv"}
    with pytest.raises(ParseError, match="bee-story.csv must have the header `section,text`"):
        fairytaleqa.windows(bad, "fairytale_msd", spec("fairytale_msd").generator_options(), FILES)


def test_snac_synthetic_pairs_come_from_train_and_validation_stories_only_with_every_window_accounted(project_root):
    from cohbench.corruptions import recipes
    from cohbench.schema import ERROR_TYPES

    project_root(lambda params: params["incoherence"]["snac_synthetic"].update(window=8, instances=2))
    options = spec("snac_synthetic").generator_options()
    parsed = fairytaleqa.parse(PATHS, "snac_synthetic", options, FILES)
    # five windows (fox 2, hare, owl, bee 1 each), each able to give two pairs of two records
    assert parsed.upstream_records == 5 * 4 and parsed.dropped["test_story_never_training_data"] == 4
    assert {r["split"] for r in parsed.records} <= {"train", "validation"} and "bee" not in {r["doc_id"] for r in parsed.records}
    shares = recipes.proportions("goyal_coref:0.2+unintroduced_reference:0.8")
    for reason in set(parsed.dropped) - {"test_story_never_training_data"}:
        assert reason.split(":")[0] in shares  # a window its recipe gave less: that recipe's own reason
    negatives = parsed.records[0::2]
    assert negatives and all(r["label"] == 1 and r["config"] == "snac_synthetic" for r in negatives)
    for negative, positive in zip(negatives, parsed.records[1::2]):
        assert positive["id"] == f"{negative['id']}:coherent" and positive["label"] == 0
        # a minimal pair: the same context with another sentence (RefE), or the same sentence after another context (CharE)
        same_context, same_sentence = (positive["sentences"][:-1] == negative["sentences"][:-1],
                                       positive["sentences"][-1] == negative["sentences"][-1])
        assert same_context != same_sentence and negative["sentences"][:-1]
        assert negative["corruption"]["generator"] == recipes.assigned(options.seed, negative["corruption"]["source_id"], shares)
        assert [ERROR_TYPES[s["type"]] for s in negative["spans"]] == [{"goyal_coref": "CharE", "unintroduced_reference": "RefE"}[negative["corruption"]["generator"]]]
