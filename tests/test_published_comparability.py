"""Every published figure cohbench sets beside its own carries how it compares (catalog/published.yaml): same data and
split, same data on another split, or other data, with what else differs. Cai et al.'s TimeTravel figures are on
other data: another (crowd-verified) test set, another confounder pool, another encoder."""

from __future__ import annotations

from cohbench import published
from cohbench.corpora import registry


def test_every_published_figure_is_flagged_with_how_it_compares():
    flagged = [f for config in registry.config_names() for f in published.figures(config)]
    assert len(flagged) >= 40 and {f["comparability"] for f in flagged} == set(published.FLAGS)


def test_cai_et_al_figures_are_on_other_data_and_say_how():
    for config in ("timetravel_dsd", "timetravel_msd"):
        cai = [f for f in published.figures(config) if f["paper"] == "Cai et al. 2020"]
        assert cai and all(f["comparability"] == "other data" and "crowd-verified" in f["differs"] for f in cai)
    (dsd,) = {f["differs"] for f in published.figures("timetravel_dsd")}
    assert all(part in dsd for part in ("other test set", "other confounder pool", "other encoder"))
    assert published.first("timetravel_dsd", "auc")["comparability"] == "other data"  # the baseline card's column


def test_a_figure_on_another_split_than_the_one_compared_is_flagged_so():
    storysumm = published.figures("storysumm")
    assert {f["comparability"] for f in storysumm if f["split"] == "full"} == {"same data, other split"}
    assert {f["comparability"] for f in storysumm if f["split"] == "test"} == {"same data and split"}
    assert {f["comparability"] for f in published.figures("storysumm", split="validation")} == {"same data, other split"}
    assert {f["comparability"] for f in published.figures("snac") if f["paper"].startswith("Goyal")} == {"same data, other split"}
