"""Declared repairs of upstream defects, each bound to the exact bytes it repairs.

An erratum replaces an exact byte string a known number of times in a file whose sha256 it names, and
checks the sha256 of the result. A file with any other hash is never repaired: the build stops.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..errors import ErratumError


@dataclass(frozen=True)
class Erratum:
    id: str
    source: str  # Source.name within the corpus
    input_sha256: str
    output_sha256: str
    old: bytes
    new: bytes
    occurrences: int
    description: str
    records_affected: int

    def apply(self, data: bytes, filename: str) -> bytes:
        actual = hashlib.sha256(data).hexdigest()
        if actual != self.input_sha256:
            raise ErratumError(
                f"erratum {self.id} repairs {filename} only at sha256 {self.input_sha256}, but the file has {actual}; "
                "a changed upstream file must be reviewed and a new erratum declared"
            )
        found = data.count(self.old)
        if found != self.occurrences:
            raise ErratumError(f"erratum {self.id} expects {self.occurrences} occurrence(s) in {filename}, found {found}")
        repaired = data.replace(self.old, self.new)
        result = hashlib.sha256(repaired).hexdigest()
        if result != self.output_sha256:
            raise ErratumError(f"erratum {self.id} produced sha256 {result} for {filename}, expected {self.output_sha256}")
        return repaired

    def manifest_entry(self) -> dict:
        return {
            "id": self.id,
            "source": self.source,
            "input_sha256": self.input_sha256,
            "output_sha256": self.output_sha256,
            "description": self.description,
            "records_affected": self.records_affected,
        }
