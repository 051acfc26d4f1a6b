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


def test_a_link_to_a_folder_is_replaced_by_the_new_folder_and_what_it_pointed_to_is_kept(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "kept.html").write_text("kept")
    (tmp_path / "site").symlink_to(real)
    with atomic_dir(tmp_path / "site") as tmp:
        (tmp / "new.html").write_text("new")
    assert not (tmp_path / "site").is_symlink() and [p.name for p in (tmp_path / "site").iterdir()] == ["new.html"]
    assert (real / "kept.html").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real", "site"]
