"""How the statistics are shown: Markdown tables of figures (cohbench's beside a paper's, with the difference) and
PNG plots written the same way every time."""

from __future__ import annotations

from pathlib import Path


def fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}"


def diff(ours, paper, digits: int = 2) -> str:
    if ours is None or paper is None:
        return "–"
    return f"{ours - paper:+.{digits}f}"


def table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"] + [
        "| " + " | ".join(str(cell) for cell in row) + " |" for row in rows
    ]


def rows_table(rows: list[dict]) -> list[str]:
    if not rows:
        return ["(no rows)"]

    def cell(value):
        if isinstance(value, float):
            return fmt(value, 3)
        if isinstance(value, list):
            return " / ".join(cell(v) for v in value)
        return value

    header = list(rows[0])
    return table(header, [[cell(r[h]) for h in header] for r in rows])


def pyplot():
    """matplotlib's pyplot drawing to files only; imported when a plot is drawn (`cohbench agreement` draws none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path) -> None:
    """Write a figure without the matplotlib version in its metadata, so that the bytes depend on the figures only."""
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
