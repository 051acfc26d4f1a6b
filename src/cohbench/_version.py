"""The release version of cohbench: the package and the corpus it builds carry this one number (pyproject.toml reads
it; `catalog/versions/` holds each config's own version, CHANGELOG.md what changed)."""

__version__ = "0.5.0"
