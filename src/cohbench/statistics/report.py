"""The statistics report: every agreement and distribution statistic of the release as JSON, a Markdown report
that sets cohbench's figures beside the papers' published ones (difference shown), and PNG plots; each part comes
from the config's statistics kind, this module only assembles them.

It is written to `catalog/stats/` (not inside the release folder): the report is documentation that reviewers
read in the repository next to the cards and `SQL.md`, and a change in a figure then shows up in the diff.
"""

from __future__ import annotations

from pathlib import Path

from .. import jsonout, settings
from ..atomic import atomic_dir
from ..errors import CohbenchError
from ..sql import db
from . import release_statistics
from .kind import KINDS, kind_of


def config_markdown(stats: dict) -> list[str]:
    return kind_of(stats["config"]).markdown(stats)


def report_markdown(statistics: dict, plots: dict[str, list[str]]) -> str:
    lines = [
        "# cohbench statistics report",
        "",
        "Written by `cohbench report` (DVC stage `report`) from the release's Parquet files through the SQL views "
        "(`catalog/SQL.md`); every figure is also in `statistics.json`. Where a paper published a figure, it stands "
        "beside cohbench's with the difference (cohbench − paper). Do not edit by hand.",
        "",
        "## Assumptions",
        "",
    ]
    lines += [f"- {a}" for kind in KINDS.values() for a in kind.assumptions]
    for config, stats in statistics.items():
        lines += ["", f"## `{config}` ({stats.get('corpus', 'other')})", ""]
        lines += [f"![{name}]({name})" for name in plots.get(config, [])]
        if plots.get(config):
            lines.append("")
        lines += config_markdown(stats)
    return "\n".join(lines) + "\n"


def _report_folder(output: Path, release: Path | None) -> Path:
    target = settings.user_output(output, release)
    if target.exists() and not target.is_dir():
        raise CohbenchError(f"{output} is a file; the report is written to a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / "statistics.json").is_file():
        raise CohbenchError(f"{output} holds other files and no earlier report; write the report to a new or empty folder")
    shown = _shown(target)
    others = sorted(p.name for p in target.iterdir() if not _written_by_a_report(p, shown)) if target.is_dir() else []
    if others:  # the report replaces the whole folder
        raise CohbenchError(f"{output} holds files a report does not write ({', '.join(others[:3])}"
                            f"{', ...' if len(others) > 3 else ''}); write the report to a new or empty folder")
    return target


def _shown(folder: Path) -> str:
    """The text of the earlier report.md in `folder` ("" without one, or one that cannot be read as UTF-8 text): what
    names the plots that report wrote."""
    page = folder / "report.md"
    try:
        return page.read_text(encoding="utf-8") if page.is_file() and not page.is_symlink() else ""
    except (OSError, UnicodeDecodeError):  # no plot of the folder is then taken for the report's own
        return ""


def _written_by_a_report(path: Path, shown: str) -> bool:
    """Whether `path` is a file an earlier report wrote: its statistics.json and report.md, and the plots that
    report.md (`shown`, its text) shows (a user's own figure beside them is not one)."""
    if path.is_symlink() or not path.is_file():
        return False
    if path.name in ("statistics.json", "report.md"):
        return True
    return path.suffix == ".png" and f"![{path.name}]({path.name})" in shown


def report(output: Path | None = None, release: Path | None = None) -> dict:
    """Compute every statistic of the release and write statistics.json, report.md and the plots to `output`
    (default `catalog/stats/`), all or nothing, replacing the folder. Returns the statistics.

    A folder a user names must lie outside the release and be new, empty or an earlier report: the report
    replaces the whole folder, and that must never be someone's other files."""
    output = _report_folder(Path(output), release) if output else settings.catalog_dir() / "stats"
    statistics = release_statistics(db(release), release)
    plots = {}
    with atomic_dir(output) as tmp:
        for config, stats in statistics.items():
            for plot in kind_of(config).plots:
                if plot.needs is None or stats.get(plot.needs):
                    filename = f"{config}_{plot.name}.png"
                    plot.draw(stats, tmp / filename)
                    plots.setdefault(config, []).append(filename)
        (tmp / "statistics.json").write_text(jsonout.document(statistics), encoding="utf-8")
        (tmp / "report.md").write_text(report_markdown(statistics, plots), encoding="utf-8")
    return statistics
