"""`python -m cohbench.cli`: the `cohbench` command."""

from . import console

console()
