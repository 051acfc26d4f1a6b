"""What every command module shares: a command's declaration (its name, help, arguments and handler, written
together) and how a command prints its figures."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .. import jsonout, settings
from ..atomic import refuse_unless_file
from ..errors import CohbenchError


@dataclass(frozen=True)
class Argument:
    flags: tuple[str, ...]
    options: dict = field(default_factory=dict)  # argparse's add_argument keywords


def argument(*flags: str, **options) -> Argument:
    return Argument(flags, options)


@dataclass(frozen=True)
class Exclusive:
    """Arguments of which a command takes at most one (exactly one when `required`)."""

    arguments: tuple[Argument, ...]
    required: bool = False


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    # arguments, or a function giving some when the command's parser is made (what takes long to import)
    arguments: tuple[Argument | Exclusive | Callable[[], Iterable[Argument]], ...] = ()
    trains: bool = False  # a training command pins its float32 code path (`numerics`)
    epilog: str | None = None

    def add_to(self, subparsers, with_arguments: bool = True) -> None:
        """Add the command to `subparsers`; without its arguments where another command runs (`cohbench --help`
        lists only names and help)."""
        parser = subparsers.add_parser(self.name, help=self.help, description=self.help, epilog=self.epilog)
        parser.set_defaults(func=self.run, trains=self.trains)
        if not with_arguments:
            return
        parser.add_argument("--json", action="store_true", help="write figures to stdout as JSON")
        parser.add_argument("--release", type=_given(str), help="release folder (default: COHBENCH_RELEASE, else the first of a "
                            "checkout's cohbench/, ./cohbench, ~/.local/share/cohbench that holds one)")
        for entry in (made for given in self.arguments for made in (given() if callable(given) else (given,))):
            if isinstance(entry, Exclusive):
                group = parser.add_mutually_exclusive_group(required=entry.required)
                for member in entry.arguments:
                    group.add_argument(*member.flags, **_values_given(member.options))
            else:
                parser.add_argument(*entry.flags, **_values_given(entry.options))


def _values_given(options: dict) -> dict:
    """An argument's options, a value it takes refused when empty: `--output ""` or `--release ""` names nothing, and
    read as "not given" it sent writes to the default place (a file inside the package) and reads to the default
    release."""
    if options.get("action") not in (None, "store", "append"):
        return options
    return options | {"type": _given(options.get("type", str))}


def _given(convert: Callable[[str], object]) -> Callable[[str], object]:
    def given(text: str):
        if not text:
            raise argparse.ArgumentTypeError("an empty value names nothing; give one or leave the option out")
        return convert(text)

    given.__name__ = getattr(convert, "__name__", "value")  # what argparse names in "invalid <type> value"
    return given


def command(name: str, help_text: str, *arguments, trains: bool = False, epilog: str | None = None):
    """Declare the decorated handler as the command `name` with its arguments, written above it."""

    def declare(run: Callable[[argparse.Namespace], int]) -> Command:
        return Command(name, help_text, run, arguments, trains, epilog)

    return declare


def release_of(args) -> Path | None:
    """The release folder `--release` names, if any: passed on as the `release=` of every function a command runs."""
    return Path(args.release) if args.release else None


def output_stem(option: str, value: str, args) -> Path:
    """A path a user named with `option` for the command to write files beside (`board.png` -> `board-auc.png`),
    refused before any work: a name ending in a separator (Path would drop it, and the files would go beside the
    folder), or a path inside a release (`settings.user_output`)."""
    if value.endswith(("/", os.sep)):
        raise CohbenchError(f"{option} {value} names a folder; give the path of the file to write in it")
    return settings.user_output(value, release_of(args))


def output_file(option: str, value: str, args) -> Path:
    """The file a user named with `option` for the command to write (`output_stem`), also refused before any work
    where it exists and is not a regular file."""
    target = output_stem(option, value, args)
    refuse_unless_file(target)
    return target


def emit(args, payload, lines) -> None:
    if args.json:
        print(jsonout.dumps(payload, indent=2, sort_keys=True))
    else:
        print("\n".join(lines))
