"""Where caches go (`settings.cache_dir`): the project's `.cache/` only for a checkout's own release, where its
pipeline reads them; the user's cache ($XDG_CACHE_HOME/cohbench) for any other release or training folder. So a
command pointed elsewhere (train --train-data, leaderboard, show, derive) writes nothing into the checkout, and
`publish` reads a checkout's releases without writing into it (no DVC lock in .dvc/tmp, no objects in .dvc/cache)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cohbench import embedding_store, settings
from cohbench.cli import main
from cohbench.leaderboards import store as leaderboard_store
from cohbench.release.index import write_index
from cohbench.release.layout import read_config

from test_release_store import _release, _run, repo  # noqa: F401  (repo: the fixture, a git + DVC project with a local store)
from test_train_own_data import STORIES, TINY, toy_release

pytestmark = pytest.mark.slow  # dvc and git in subprocesses, and training


def indexed_release(folder: Path) -> Path:
    """test_train_own_data's toy timetravel_dsd, with its card and manifest (the leaderboard reads the manifest)."""
    toy_release(folder)
    write_index(folder)
    return folder


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.fixture
def checkout(workspace, project_root):
    """A checkout (params.yaml, the project's catalog, its own release in cohbench/) with the tiny baseline of
    test_train_own_data; COHBENCH_RELEASE (the workspace's) points elsewhere."""
    root = project_root(lambda params: params["baseline"].update(TINY), catalog="project")
    indexed_release(root / "cohbench")
    return root


def test_a_checkout_s_own_release_keeps_its_caches_in_the_checkout_and_any_other_in_the_user_s_cache(checkout, workspace, monkeypatch):
    own, other, user = checkout / "cohbench", indexed_release(workspace / "release"), workspace / "user-cache" / "cohbench"
    for kind in settings.CACHE_KINDS:
        assert settings.cache_dir(kind, own) == checkout / ".cache" / kind  # where a checkout's caches have always been
        assert settings.cache_dir(kind, other) == user / kind
        assert settings.cache_dir(kind, own, other) == user / kind  # trained on a folder of one's own, scored on the release
    assert settings.cache_dir("embeddings") == user / "embeddings"  # the release in use: COHBENCH_RELEASE, elsewhere
    monkeypatch.delenv("COHBENCH_RELEASE")
    assert settings.release_dir() == own and embedding_store.default_folder() == checkout / ".cache" / "embeddings"
    assert leaderboard_store.folder(None, own) == checkout / ".cache" / "leaderboard"
    assert leaderboard_store.folder(None, other) == user / "leaderboard"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(workspace / "home"))
    assert settings.cache_dir("leaderboard", other) == workspace / "home" / ".cache" / "cohbench" / "leaderboard"
    (checkout / "params.yaml").unlink()  # no checkout here (a pip install run in some folder): never the working folder
    assert settings.cache_dir("leaderboard", own) == workspace / "home" / ".cache" / "cohbench" / "leaderboard"
    with pytest.raises(ValueError, match="unknown cache"):
        settings.cache_dir("everything")


def test_training_on_one_s_own_data_in_a_checkout_reads_the_vectors_its_release_kept_and_writes_only_the_user_s_cache(
        checkout, workspace, capsys):
    own = checkout / "cohbench"
    assert main(["leaderboard", "--release", str(own), "--scorer", "embedding_dissimilarity", "--bootstrap", "100"]) == 0
    kept = checkout / ".cache" / "embeddings"
    assert settings.caches_also_read("embeddings", own, workspace / "mine") == [kept]
    assert settings.caches_also_read("embeddings", own) == []  # the checkout's cache is the one written
    mine = workspace / "mine"
    assert main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(mine), "--keep-test-overlap",
                 "--splits", "train=0.6,validation=0.2,test=0.2"]) == 0, capsys.readouterr().err  # fmt: skip
    before = files_under(checkout)
    assert main(["train", "--release", str(own), "--train-data", str(mine), "--output", str(workspace / "run")]) == 0
    assert files_under(checkout) == before
    release_sentences = {embedding_store.sentence_key(s) for rows in read_config(own, "timetravel_dsd").splits.values()
                         for r in rows for s in r["sentences"]}  # fmt: skip
    encoded = embedding_store.EmbeddingStore(workspace / "user-cache" / "cohbench" / "embeddings")._read("vectors")
    assert encoded and not release_sentences & set(encoded)  # only one's own sentences were encoded, none of the release's


def test_commands_pointed_at_another_release_or_folder_write_nothing_into_the_checkout(checkout, workspace, capsys):
    release = indexed_release(workspace / "release")  # COHBENCH_RELEASE
    mine = workspace / "mine"
    assert main(["corrupt", str(STORIES), "--recipe", "dsd", "--out", str(mine), "--keep-test-overlap",
                 "--splits", "train=0.6,validation=0.2,test=0.2"]) == 0, capsys.readouterr().err  # fmt: skip
    before = files_under(checkout)
    runs = {
        "train": ["train", "--train-data", mine, "--output", workspace / "run"],
        "leaderboard": ["leaderboard", "--scorer", "entity_cue", "--scorer", "embedding_dissimilarity", "--bootstrap", "100"],
        "show": ["show", "--out", workspace / "site"],
        "derive": ["derive", "dsd_first", "SELECT * FROM timetravel_dsd WHERE split = 'test'", "--out", workspace / "derived"],
        "show of the derived copy": ["show", "--release", workspace / "derived", "--out", workspace / "derived-site"],
    }
    for name, args in runs.items():
        assert main([str(a) for a in args]) == 0, (name, capsys.readouterr().err)
        assert files_under(checkout) == before, f"{name} wrote into the checkout"
    user = workspace / "user-cache" / "cohbench"
    assert list((user / "embeddings" / "vectors").glob("*.npz")), "the vectors of one's own data are kept in the user's cache"
    assert list((user / "leaderboard").glob("*/embedding_dissimilarity.json"))
    assert (workspace / "run" / "metrics.json").is_file() and (workspace / "site" / "index.html").is_file()

    # the checkout's own release: its caches where the pipeline reads them, as before
    assert main(["leaderboard", "--release", str(checkout / "cohbench"), "--scorer", "entity_cue", "--bootstrap", "100"]) == 0
    assert list((checkout / ".cache" / "leaderboard").glob("*/entity_cue.json"))
    assert release.is_dir()


def test_publish_from_a_fresh_clone_sends_its_release_and_writes_nothing_into_the_clone(repo, workspace, capsys):
    _run(repo, "dvc", "remote", "modify", "store", "url", "../store")  # kept relative to .dvc/, as this project's store is
    _release(repo, [0, 1], "v1.0.0")
    assert main(["push", "--repo", str(repo)]) == 0
    assert "../../store" in (repo / ".dvc" / "config").read_text()
    clone = workspace / "clone"  # beside the project, so that its ../../store is the same store
    subprocess.run(["git", "clone", "-q", f"file://{repo}", str(clone)], check=True, capture_output=True)
    before = files_under(clone)
    assert main(["publish", str(workspace / "published"), "1.0.0", "--repo", str(clone), "--json"]) == 0, capsys.readouterr().err
    assert files_under(clone) == before  # DVC's lock and cache stay out of the checkout
    capsys.readouterr()
    assert main(["pull", "1.0.0", "--repo", str(clone), "--remote", str(workspace / "published"), "--out", str(workspace / "v1")]) == 0
    assert main(["verify", "--release", str(workspace / "v1")]) == 0, capsys.readouterr().err

    # a release built here and not yet in the store: sent from the checkout's own DVC cache, which is only read
    (workspace / "store").rename(workspace / "store-away")
    cached = files_under(repo)
    assert main(["publish", str(workspace / "published-again"), "1.0.0", "--repo", str(repo)]) == 0, capsys.readouterr().err
    assert files_under(repo) == cached and list((workspace / "published-again" / "files" / "md5").rglob("*.dir"))
