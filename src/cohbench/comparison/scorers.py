"""What `--scorer S` names, turned into prediction lines for one config at a time.

S is a built-in reference scorer (`cohbench.evaluation.references`), `baseline`, a folder of `<config>.jsonl`
prediction files (catalog/EVALUATION.md's format), or `module:function` importable from the working directory,
`function(records) -> list` called on a config's scored records (validation and test, in the release schema) in
batches, one entry per record: a list of per-unit scores for sentence and gap protocols, one number for summary and
rating protocols, higher = more likely an error.

A scorer that cannot give a config's predictions raises `Skip` with the reason; the caller names the scorer and
the config, skips that config and counts it. Predictions the release ships (the baseline's and the reference
scorers', `baseline/predictions/<scorer>/<config>.jsonl`) are used only when their sha256 is the manifest's.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CohbenchError
from ..schema import TRAIN_SPLITS

BATCH = 256  # records per call of a user's function
BASELINE = "baseline"


class Skip(CohbenchError):
    """This scorer gives no predictions for this config; the message says why."""


@dataclass
class Release:
    """The release being scored: its folder, manifest, and per config the records by split and the protocol."""

    folder: Path
    manifest: dict
    splits: dict[str, dict[str, list[dict]]]
    protocols: dict[str, str]
    vectors: Callable[[], Mapping] = field(default=lambda: {})  # sentence vectors, computed once when a scorer needs them

    def shipped(self, scorer: str, config: str) -> Path | None:
        """The release's predictions of `scorer` on `config`, checked against the manifest; None when it ships none."""
        from ..errors import ReleaseError
        from ..release.layout import MANIFEST, checked, shipped_predictions

        path = shipped_predictions(self.folder, scorer, config)
        if not path.is_file():
            return None
        shipped = path.relative_to(self.folder).as_posix()
        try:  # the release reader's own check (each file hashed once per process), told as this scorer's skip
            checked(path, self.manifest.get("shipped", {}).get(shipped), MANIFEST, "run cohbench verify")
        except ReleaseError:
            raise Skip(f"the release's {shipped} is not the file its manifest records; run cohbench verify") from None
        return path


@dataclass(frozen=True)
class Scorer:
    name: str
    kind: str  # "reference", "baseline", "folder", "function"
    predict: Callable[[Release, str], object]  # (release, config) -> predictions (a path or lines), or raises Skip
    unknown_files: tuple[str, ...] = ()  # a folder's files that name no built config


def scored_records(splits: Mapping[str, list[dict]]) -> list[dict]:
    return [r for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows]


def _reference(name: str) -> Scorer:
    from ..evaluation import references

    references.scorer(name)  # an unknown name is refused before any work

    def predict(release: Release, config: str):
        shipped = release.shipped(name, config)
        if shipped is not None:
            return shipped
        from ..evaluation import protocols

        splits, protocol = release.splits[config], release.protocols[config]
        why = references.unmet(name, splits, protocols()[protocol].unit)
        if why is not None:
            raise Skip(f"does not apply: it {why}")
        references.import_modules(name)
        return references.predictions(name, splits, protocol, release.vectors() if "torch" in references.scorer(name).modules else None)

    return Scorer(name, "reference", predict)


def _baseline() -> Scorer:
    def predict(release: Release, config: str):
        shipped = release.shipped(BASELINE, config)
        if shipped is None:
            raise Skip("the release ships no baseline predictions for it (the baseline scores sentence and gap configs; "
                       "run cohbench train)")
        return shipped

    return Scorer(BASELINE, "baseline", predict)


def _folder(path: Path, built: set[str]) -> Scorer:
    files = {p.stem: p for p in path.glob("*.jsonl")}
    unknown = tuple(sorted(name for name in files if name not in built)
                    + sorted(p.name for p in path.iterdir() if p.is_file() and p.suffix != ".jsonl"))

    def predict(release: Release, config: str):
        if config not in files:
            raise Skip(f"the folder has no {config}.jsonl")
        return files[config]

    return Scorer(str(path), "folder", predict, unknown)


def _function(spec: str) -> Scorer:
    module_name, _, attribute = spec.partition(":")
    problem = None
    try:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))  # importable from the working directory, as the option promises
        function = getattr(importlib.import_module(module_name), attribute)
        if not callable(function):
            problem = f"{attribute} in {module_name} is not a function"
    except Exception as error:  # a user's module can fail to import in any way; each is one line, never a traceback
        problem, function = f"cannot import it: {type(error).__name__}: {error}", None

    def predict(release: Release, config: str):
        if problem:
            raise Skip(problem)
        from ..evaluation import protocols

        records = scored_records(release.splits[config])
        per_unit = protocols()[release.protocols[config]].unit in ("sentences", "gaps")
        lines = []
        for start in range(0, len(records), BATCH):
            batch = records[start : start + BATCH]
            try:
                scores = list(function([dict(r) for r in batch]))
            except Exception as error:  # the user's code raised: its message, on one line
                raise Skip(f"raised {type(error).__name__}: {error}") from None
            if len(scores) != len(batch):
                raise Skip(f"returned {len(scores)} entries for a batch of {len(batch)} records")
            lines += [{"id": r["id"], "score": _entry(r, s, per_unit)} for r, s in zip(batch, scores)]
        return lines

    return Scorer(spec, "function", predict)


def _entry(record: Mapping, value, per_unit: bool):
    """A returned entry as a predictions line's score: a list of finite numbers per record for unit-level protocols,
    one finite number otherwise (the predictions reader then checks one score per unit)."""
    if not per_unit:
        return _number(record, value)
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise Skip(f"gave record {record['id']} {value!r}, not a list with one score per unit")
    return [_number(record, v) for v in value]


def _number(record: Mapping, value) -> float:
    number = value.item() if hasattr(value, "item") else value  # a numpy scalar
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
        raise Skip(f"gave record {record['id']} the score {value!r}, not a finite number")
    return float(number)


def resolve(spec: str, built: set[str]) -> Scorer:
    """The scorer `spec` names; an unknown name (no reference, no folder, no `module:function`) is an error."""
    from ..evaluation import references

    if spec == BASELINE:
        return _baseline()
    if spec in references.REFERENCES:
        return _reference(spec)
    if Path(spec).is_dir():
        return _folder(Path(spec), built)
    if ":" in spec and not Path(spec).exists():
        return _function(spec)
    raise CohbenchError(f"--scorer {spec!r} is no reference scorer ({', '.join(references.REFERENCES)}), not baseline, "
                        "no folder of <config>.jsonl files, and not module:function")
