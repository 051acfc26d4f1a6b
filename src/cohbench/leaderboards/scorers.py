"""What `--scorer S` names, turned into prediction lines for one config at a time.

S is a built-in reference scorer (`cohbench.evaluation.references`), `baseline`, a folder of `<config>.jsonl`
prediction files (catalog/EVALUATION.md's format), or `module:function` importable from the working directory,
`function(records) -> list` called in its own process (`user_scorer`) on the scorer views (`Protocol.scorer_view`: the
config, the sentences and what the protocol adds, never an id or a label) of a config's scored records (validation
and test), in batches, in an order that says nothing of their ids, one entry per record: a list of per-unit scores
for sentence and gap protocols, one number for summary and rating protocols, higher = more likely an error.

A scorer that cannot give a config's predictions raises `Skip` with the reason; the caller names the scorer and
the config, skips that config and counts it. Predictions the release ships (the baseline's and the reference
scorers', `baseline/predictions/<scorer>/<config>.jsonl`) are used only when their sha256 is the manifest's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..display import escaped
from ..errors import CohbenchError
from ..evaluation.reader import finite
from ..schema import TRAIN_SPLITS
from .user_scorer import TIMEOUT

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
    built: frozenset[str] = frozenset()  # every config built in the release, scored here or not (`--config` picks)

    def shipped(self, scorer: str, config: str) -> Path | None:
        """The release's predictions of `scorer` on `config`, checked against the manifest; None when it ships none."""
        from ..errors import ReleaseError
        from ..release.files import MANIFEST, checked
        from ..release.layout import shipped_predictions

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
    close: Callable[[], object] = lambda: None  # ends what the scorer holds (a user's function: its process)


def scored_records(splits: Mapping[str, list[dict]]) -> list[dict]:
    return [r for split, rows in splits.items() if split not in TRAIN_SPLITS for r in rows]


def _reference(name: str) -> Scorer:
    from ..evaluation import references

    references.REFERENCES[name]  # an unknown name is refused before any work

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
        return references.predictions(name, splits, protocol, release.vectors() if "torch" in references.REFERENCES[name].modules else None)

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


def _function(spec: str, timeout: float) -> Scorer:
    """A user's function, in its own process (`user_scorer`), imported now: one that cannot be is refused before any work;
    one that takes longer than `timeout` seconds to import or to answer a batch is ended."""
    from .user_scorer import ScorerProcess

    process = ScorerProcess(spec, timeout)
    process.start()

    def predict(release: Release, config: str):
        from ..evaluation import protocols

        protocol = protocols()[release.protocols[config]]
        # ids can name the answer (Story Cloze's `:wrong_ending`), and so can their sorted order: a scorer sees neither
        records = sorted(scored_records(release.splits[config]), key=lambda r: hashlib.sha256(r["id"].encode()).digest())
        per_unit = protocol.unit in ("sentences", "gaps")
        lines = []
        for start in range(0, len(records), BATCH):
            batch = records[start : start + BATCH]
            scores = process.score([protocol.scorer_view(r) for r in batch])
            if len(scores) != len(batch):
                raise Skip(f"returned {len(scores)} entries for a batch of {len(batch)} records")
            lines += [{"id": r["id"], "score": _entry(r, s, per_unit)} for r, s in zip(batch, scores)]
        return lines

    return Scorer(spec, "function", predict, close=process.close)


def _entry(record: Mapping, value, per_unit: bool):
    """A returned entry as a predictions line's score: a list of finite numbers per record for unit-level protocols,
    one finite number otherwise (the predictions reader then checks one score per unit)."""
    if not per_unit:
        return _number(record, value)
    if not isinstance(value, list):
        raise Skip(f"gave record {escaped(record['id'])} {escaped(repr(value))}, not a list with one score per unit")
    return [_number(record, v) for v in value]


def _number(record: Mapping, value) -> float:
    number = finite(value)
    if number is None:
        raise Skip(f"gave record {escaped(record['id'])} the score {escaped(repr(value))}, not a finite number")
    return number


def resolve(spec: str, built: set[str], timeout: float = TIMEOUT) -> Scorer:
    """The scorer `spec` names; an unknown name (no reference, no folder, no `module:function`) is an error. `timeout`:
    the seconds a user's function may take per batch."""
    from ..evaluation import references

    if spec == BASELINE:
        return _baseline()
    if spec in references.REFERENCES:
        return _reference(spec)
    if Path(spec).is_dir():
        return _folder(Path(spec), built)
    if ":" in spec and not Path(spec).exists():
        return _function(spec, timeout)
    raise CohbenchError(f"--scorer {spec!r} is no reference scorer ({', '.join(references.REFERENCES)}), not baseline, "
                        "no folder of <config>.jsonl files, and not module:function")


def function_predictions(spec: str, config: str, release: Path | None = None, timeout: float = TIMEOUT) -> list[dict]:
    """The prediction lines of a user's `module:function` on one built config (`cohbench evaluate --scorer`); any
    way it fails is one line naming it and the config."""
    from ..corpora.registry import spec as config_spec
    from ..release.layout import read_config, require_built

    config_spec(config)  # an unknown name: the closest registered one, before the scorer is started
    folder, stats = require_built(config, release)
    splits = read_config(folder, config, stats).splits
    scorer = _function(spec, timeout)
    try:
        return scorer.predict(Release(folder, {}, {config: splits}, {config: config_spec(config).protocol}), config)
    except CohbenchError as problem:
        raise CohbenchError(f"{spec} on {config}: {problem}") from None
    finally:
        scorer.close()
