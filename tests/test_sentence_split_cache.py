"""Sentence splits kept between builds (`text.cached_splits`): the same texts split once, a damaged file never trusted."""

from __future__ import annotations

import pytest

from cohbench import text

TEXTS = ["Tom went home. He was tired.", "It rained!  The river rose and rose.", "One sentence only"]


def test_a_second_split_of_the_same_texts_reads_the_kept_offsets(tmp_path, monkeypatch):
    fresh = text.sentence_offsets(TEXTS)
    with text.cached_splits(tmp_path):
        assert text.sentence_offsets(TEXTS) == fresh
        monkeypatch.setattr(text, "_split", lambda *a: pytest.fail("split again although the offsets were kept"))
        assert text.split_sentences(TEXTS) == [["Tom went home.", "He was tired."], ["It rained!", "The river rose and rose."],
                                               ["One sentence only"]]
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_other_texts_are_split_not_read_from_another_list(tmp_path):
    with text.cached_splits(tmp_path):
        text.sentence_offsets(TEXTS)
        assert text.split_sentences(TEXTS[:2] + ["Another text. Two sentences."])[2] == ["Another text.", "Two sentences."]
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_a_damaged_or_edited_cache_file_is_split_again_and_replaced(tmp_path, capsys):
    fresh = text.sentence_offsets(TEXTS)
    with text.cached_splits(tmp_path):
        text.sentence_offsets(TEXTS)
        (kept,) = tmp_path.glob("*.json")
        kept.write_text(kept.read_text().replace("[0,", "[1,", 1))  # still well-formed offsets, but not these
        assert text.sentence_offsets(TEXTS) == fresh
        assert "ignoring" in capsys.readouterr().err
        kept.write_text("not json")
        assert text.sentence_offsets(TEXTS) == fresh
        assert "ignoring" in capsys.readouterr().err
        assert text.sentence_offsets(TEXTS) == fresh  # the file was replaced by a whole one
        assert capsys.readouterr().err == ""


def test_without_a_cache_folder_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text.sentence_offsets(TEXTS)
    assert not list(tmp_path.rglob("*"))


@pytest.mark.slow
def test_splitting_loads_no_torch_and_torch_still_imports_after_it():
    """A small `corrupt --recipe msd` run pays for spaCy only: thinc is kept from importing torch (1.5 s), which a
    later encoder still imports normally in the same process."""
    import subprocess
    import sys

    probe = ("import sys; from cohbench import text; "
             "assert text.split_sentences(['Tom went home. He slept.']) == [['Tom went home.', 'He slept.']]; "
             "assert 'torch' not in sys.modules; import torch; assert float(torch.ones(2).sum()) == 2.0")
    subprocess.run([sys.executable, "-c", probe], check=True)


@pytest.mark.slow
def test_the_entity_pipeline_loads_no_torch_either():
    import subprocess
    import sys

    probe = ("import sys; from cohbench.corruptions import nlp, surface; "
             "assert nlp.analyse(['Anna met Tom in Paris.'], surface.entity_texts)[0]; "
             "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", probe], check=True)
