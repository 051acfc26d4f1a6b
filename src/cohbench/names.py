"""The one mechanism behind every table of names: corpora and configs (`registry`), generators
(`corruptions.registry`), recipes (`corruptions.recipes`), protocols (`evaluation.protocol`), statistics kinds
(`statistics.kind`) and reference scorers (`evaluation.references`). A name registered twice and an unknown name are
the same `RegistryError` everywhere, one line, the unknown one listing the choices."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries by name, in the order they were registered. `discover` (the corpus registry's plugin hook) runs
    before any lookup, so that entries declared by modules nobody imported yet are found."""

    def __init__(self, kind: str, discover: Callable[[], None] | None = None):
        self.kind = kind  # what an entry is, as the errors name it ("config", "recipe", ...)
        self._discover = discover or (lambda: None)
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise RegistryError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def __getitem__(self, name: str) -> T:
        self._discover()
        if name not in self._entries:
            close = difflib.get_close_matches(name, self.names(), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise RegistryError(f"unknown {self.kind} {name!r}; {hint}known: {', '.join(self.names())}")
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._discover()
        return iter(list(self._entries))

    def items(self) -> list[tuple[str, T]]:
        self._discover()
        return list(self._entries.items())

    def values(self) -> list[T]:
        self._discover()
        return list(self._entries.values())

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)
