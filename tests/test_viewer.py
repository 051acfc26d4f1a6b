"""`cohbench show`: the static site of a release, opened from disk in a real headless Chromium (Debian's), driven
by Selenium through Debian's chromedriver: the pages load without a console error, a known SNaC span of a known record
is highlighted with its type, votes and annotator, a DSD corruption is marked at its position with the sentence it
replaced and its similarity, StorySumm's explanations are shown, and the filters narrow the records."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cohbench.cli import main
from cohbench.release.index import write_index
from release_fixture import plain_record, record, snac_record, write_config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run installs them)")


class Browser:
    """Headless Chromium under Selenium, with the console's messages kept: `errors` is what a page reported."""

    def __init__(self, profile: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900", f"--user-data-dir={profile}"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        assert CHROMEDRIVER, "chromedriver is missing: apt-get install chromium-driver"  # CI: installed by .ci/run
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        self.console: list[dict] = []

    def open(self, url: str) -> None:
        self.driver.get_log("browser")  # what the previous page reported is its own
        self.console = []
        self.driver.get(url)

    def errors(self) -> list[dict]:
        self.console += self.driver.get_log("browser")
        return [entry for entry in self.console if entry["level"] == "SEVERE"]

    def value(self, expression: str):
        return self.driver.execute_script(f"return ({expression});")

    def close(self) -> None:
        self.driver.quit()


def _release(folder: Path) -> Path:
    snac = [snac_record("n1", "gpt-3", [["Anna met Tom.", "They talked."], ["Bob left the farm."]], [(1, "Bob", "CharE"), (1, "Bob", "CharE")]),
            snac_record("n2", "gpt-4", [["Ann sang.", "It rained in the desert."]], [(0, "in the desert", "SceneE")])]
    snac[0]["spans"][0]["annotator"] = "w7"
    write_config(folder, "snac", "snac", {"test": snac})
    # As in the release, the corrupted records' sources are not in their config: each carries what it lost.
    replaced = plain_record("story:discordant_replace", 1, [0, 1, 0])
    replaced["sentences"] = ["Ann woke up.", "The ship sank.", "She left."]
    replaced["corruption"] = {"generator": "discordant_replace", "seed": 1, "source_id": "story", "positions": [1],
                              "inserted_ids": ["other/3"], "similarities": [0.125], "ranks": [2], "replaced": ["She made tea."]}
    write_config(folder, "timetravel_dsd", "timetravel", {"test": [replaced, plain_record("story-2", 0, [0, 0])]})
    removed = plain_record("story:remove_sentences", 1, [0, 0])
    removed["sentences"], removed["gap_labels"] = ["Ann woke up.", "She left."], [1]
    removed["corruption"] = {"generator": "remove_sentences", "seed": 1, "source_id": "story", "positions": [0],
                             "inserted_ids": [], "similarities": [], "ranks": [], "replaced": ["She made tea."]}
    write_config(folder, "timetravel_msd", "timetravel", {"test": [removed]})
    summary = record("s1", "story-1", ["Ann left.", "She came back."], label=1, sentence_labels=[0, 1], system="claude",
                     explanations=[{"sentence": 1, "text": "The story never says she returned."}])
    write_config(folder, "storysumm", "storysumm", {"test": [summary, record("s2", "story-2", ["Ann stayed."], label=0, system="gpt-4")]})
    write_index(folder)
    return folder


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_the_site_opens_in_chromium_without_errors_with_spans_corruptions_and_explanations_shown(workspace, tmp_path, capsys):
    release = _release(workspace / "release")
    site = tmp_path / "site"
    assert main(["show", "--out", str(site)]) == 0, capsys.readouterr().err
    leaks = [p.name for p in site.rglob("*") if p.is_file() and str(tmp_path) in p.read_text(encoding="utf-8")]
    assert leaks == []  # no page names where the release lies on this machine: the site is for a web host
    browser = Browser(tmp_path / "profile")
    try:
        browser.open((site / "index.html").as_uri())
        assert browser.errors() == []
        assert browser.value("[...document.querySelectorAll('section.config h2')].map(h => h.textContent)") == [
            "snac", "storysumm", "timetravel_dsd", "timetravel_msd"]
        assert browser.value("document.querySelectorAll('svg.bars').length") >= 3

        browser.open((site / "snac.html").as_uri() + "#n1")
        assert browser.errors() == []
        mark = browser.value("""(() => { const m = document.querySelector('[data-id="n1"] mark.span');
            return {text: m.firstChild.textContent, type: m.dataset.type, votes: m.dataset.votes, title: m.title,
                    background: getComputedStyle(m).backgroundColor}; })()""")
        assert mark == {"text": "Bob", "type": "CharE", "votes": "2", "title": "CharE: 2 vote(s), annotator w7", "background": "rgb(255, 214, 165)"}
        assert browser.value("[...document.querySelectorAll('.legend mark.span')].map(m => m.textContent)") == ["CharE", "SceneE"]
        assert "hover for votes and annotators" in browser.value("document.querySelector('header').textContent")
        moved = browser.driver.execute_async_script("""const done = arguments[arguments.length - 1];
            window.addEventListener('hashchange', () => setTimeout(() => done(
                [...document.querySelectorAll('article.record')].map(a => a.dataset.id)), 0), {once: true});
            location.hash = 'n2';""")
        assert moved == ["n2"]  # a hash changed in an open page shows that record
        screenshot = tmp_path / "snac.png"
        screenshot.write_bytes(browser.driver.get_screenshot_as_png())

        browser.open((site / "snac.html").as_uri())
        assert browser.value("document.getElementById('count').textContent") == "2 of 2 records"
        browser.value("(() => { const s = document.getElementById('filter-type'); s.value = 'SceneE'; s.dispatchEvent(new Event('change')); })()")
        assert browser.value("[...document.querySelectorAll('article.record')].map(a => a.dataset.id)") == ["n2"]
        browser.value("(() => { const s = document.getElementById('filter-votes'); s.value = '2'; s.dispatchEvent(new Event('change')); })()")
        assert browser.value("document.getElementById('count').textContent") == "0 of 2 records"  # SceneE has one vote

        browser.open((site / "timetravel_dsd.html").as_uri())
        corruption = browser.value("""(() => { const m = document.querySelector('#records mark.corruption');
            return [m.textContent, m.dataset.position, m.title, m.nextSibling.nextSibling.textContent,
                    m.nextSibling.nextSibling.querySelector('del.replaced').textContent]; })()""")
        assert corruption == ["The ship sank.", "1", "discordant_replace at position 1; similarity 0.125; rank 2; inserted from other/3",
                              "[discordant_replace at position 1; similarity 0.125; rank 2; inserted from other/3] replaced: "
                              "She made tea. ", "She made tea."]  # the replacement, and beside it the sentence it replaced
        assert browser.value("document.querySelector('.legend del.replaced').textContent") == "the sentence it replaced or removed"
        browser.open((site / "timetravel_msd.html").as_uri())
        assert browser.value("document.querySelector('#records mark.gap ~ small.note del.replaced').textContent") == "She made tea."
        assert "the data names no annotator" not in browser.value("document.querySelector('header').textContent")
        browser.open((site / "storysumm.html").as_uri())
        assert browser.value("document.querySelector('[data-id=\"s1\"] ul.explanations li').textContent") == "sentence 1: The story never says she returned."
        assert browser.errors() == []
    finally:
        browser.close()
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copy(screenshot, os.environ.get("COHBENCH_SCREENSHOT", tmp_path / "kept.png"))


def test_show_refuses_a_folder_inside_the_release_and_a_config_not_built(workspace, capsys):
    release = _release(workspace / "release")
    for args, message in ((["--out", str(release / "site")], "inside the release folder"),
                          (["--out", str(workspace / "site"), "--config", "summeval"], "config 'summeval' is not built")):
        assert main(["show", *args]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (release / "site").exists() and not (workspace / "site").exists()


def test_the_index_of_a_folder_no_release_manifest_names_says_so_instead_of_an_unknown_release(workspace, tmp_path, capsys):
    story = plain_record("story", 0, [0, 0])
    story["sentences"] = ["Ann woke up.", "She left."]
    write_config(workspace / "release", "my_run", "timetravel", {"test": [story]}, declare=False)  # as `corrupt` leaves it
    assert main(["show", "--out", str(tmp_path / "site")]) == 0, capsys.readouterr().err
    index = (tmp_path / "site" / "index.html").read_text()
    assert "configs of no cohbench release (no manifest names one): 1 config(s)" in index and "unknown" not in index


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_hostile_config_names_and_a_malformed_hash_neither_run_script_nor_blank_a_page(workspace, tmp_path, capsys):
    """A folder laid out like a release names its own configs: a name is text and a link to the site's own file. (An
    indexed release's manifest refuses such names: this folder was never indexed.)"""
    release = workspace / "release"
    names = ["javascript:alert(1)", "<!--<script>"]
    for name in names:
        story = plain_record("story", 0, [0, 0])
        story["sentences"] = ["Ann woke up.", "She left."]
        write_config(release, name, "timetravel", {"test": [story]}, declare=False)
    site = tmp_path / "site"
    assert main(["show", "--out", str(site)]) == 0, capsys.readouterr().err
    browser = Browser(tmp_path / "profile")
    try:
        browser.open((site / "index.html").as_uri())
        links = browser.value("[...document.querySelectorAll('section.config h2 a')].map(a => [a.textContent, a.protocol, a.href])")
        assert sorted(text for text, _, _ in links) == sorted(names)
        assert all(protocol == "file:" and href.startswith(site.as_uri()) for _, protocol, href in links), links
        for _, _, href in links:
            browser.open(href)
            assert browser.errors() == [] and browser.value("document.getElementById('count').textContent") == "1 of 1 records"
        browser.open(links[0][2] + "#%E0%A4%A")  # a lone percent sign: decodeURIComponent throws
        assert browser.errors() == [] and browser.value("document.getElementById('count').textContent") == "1 of 1 records"
    finally:
        browser.close()
