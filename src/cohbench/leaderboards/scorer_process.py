"""The process a user's `module:function` scorer runs in (`python -m cohbench.leaderboards.scorer_process MODULE:FUNCTION`,
started by `user_scorer.ScorerProcess`). It imports the standard library only, so the scorer's process holds nothing
but what it is sent: scorer views of records (`Protocol.scorer_view`), never labels or the release.

The parent talks to it over the pipes it started it with, one JSON object per line: first `{"ready": true}` or
`{"error": why}` after the import, then for each request `{"records": [...]}` the reply `{"scores": [...]}` or
`{"error": why}`. Those pipes are moved off file descriptors 0 and 1 before the scorer is imported: what the scorer
prints goes to stderr and it reads an empty stdin, so neither can corrupt the replies or the parent's `--json`.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys

SHOWN = 200  # characters of a scorer's message or value that the one error line repeats


def _short(value, show=str) -> str:
    """`show(value)` on one line of at most SHOWN characters; a value whose `__str__` or `__repr__` raises is said so,
    not allowed to end this process with a traceback."""
    try:
        text = " ".join(show(value).split())
    except Exception:  # noqa: BLE001 (a scorer's object can fail to print in any way)
        return f"<a {type(value).__name__} whose {show.__name__}() raised>"
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _failure(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"called sys.exit({_short(error.code, repr)})"
    return f"raised {type(error).__name__}: {_short(error)}"


def _plain(value):
    """A returned value as JSON can carry it: numpy scalars and arrays as numbers and lists; anything else as its repr,
    which the parent refuses as not a number."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return _short(value, repr)


def _serve(function, requests, replies) -> None:
    for line in requests:
        batch = json.loads(line)["records"]
        try:
            scores = function(batch)
            if isinstance(scores, (str, bytes, dict)) or not hasattr(scores, "__iter__"):
                reply = {"error": f"returned {_short(scores, repr)}, not a list with one entry per record"}
            else:
                reply = {"scores": [_plain(v) for v in scores]}
        except BaseException as error:  # noqa: BLE001 (the scorer's sys.exit or exception, told to the parent in one line)
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {"error": _failure(error)}
        try:
            text = json.dumps(reply)
        except (TypeError, ValueError) as error:  # an integer of thousands of digits, a circular list
            text = json.dumps({"error": f"returned scores that cannot be read as numbers ({_short(error)})"})
        replies.write(text.encode() + b"\n")
        replies.flush()


def _die_with_parent(parent: int) -> None:
    """Linux: this process is killed when cohbench's ends, however it ends (SIGTERM or SIGKILL run no clean-up there),
    so a scorer that hangs never outlives the run; elsewhere a dead parent is noticed when the requests pipe closes."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the request was in place
        os._exit(1)


def main(spec: str) -> int:
    _die_with_parent(int(os.environ.get("COHBENCH_SCORER_PARENT", os.getppid())))  # settings.SCORER_PARENT (stdlib only here)
    requests, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the scorer's prints (Python's and C's) go to stderr
    sys.stdin, sys.stdout = open(0, closefd=False), open(1, "w", closefd=False, buffering=1)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C is the parent's to report
    module_name, _, attribute = spec.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
        problem = None if callable(function) else f"{attribute} in {module_name} is not a function"
    except BaseException as error:  # noqa: BLE001 (a user's module can fail to import in any way, sys.exit included)
        if isinstance(error, KeyboardInterrupt):
            raise
        problem = f"cannot import it: {_failure(error).removeprefix('raised ')}" if not isinstance(error, SystemExit) \
            else f"{_failure(error)} on import"
    replies.write(json.dumps({"error": problem} if problem else {"ready": True}).encode() + b"\n")
    replies.flush()
    if problem is None:
        _serve(function, requests, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
