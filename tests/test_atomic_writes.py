"""Folders are swapped in whole, and the swap touches nothing beside them."""

from __future__ import annotations

from cohbench.atomic import atomic_dir


def test_a_folder_swapped_in_replaces_the_old_one_and_leaves_its_neighbours_alone(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "old.html").write_text("old")
    neighbour = tmp_path / ".site.old"  # the name the old version was once parked under, a user's own folder here
    neighbour.mkdir()
    (neighbour / "important.txt").write_text("mine")
    with atomic_dir(site) as tmp:
        (tmp / "new.html").write_text("new")
    assert [p.name for p in site.iterdir()] == ["new.html"]
    assert (neighbour / "important.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.old", "site"]  # nothing parked or temporary is left
