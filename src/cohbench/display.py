"""How figures are shown to people, the same in every table: a proportion (accuracy, P/R/F1, AUC, rates; kept as
fractions in JSON) as a percentage with one decimal, a coefficient (κ, τ, α) with three decimals, "-" where a figure
is undefined."""

from __future__ import annotations


def percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def coefficient(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"
