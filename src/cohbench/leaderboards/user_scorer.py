"""A user's `module:function` scorer in a process of its own (`scorer_process`), one per scorer for a whole run.

Why a process, and not deep copies in this one: code running in the process that holds the release can reach the
labels (through the garbage collector, or the metric functions it could replace), end the run (`sys.exit`,
`os._exit`) and write into stdout. In its own process a scorer holds only the scorer views it is sent
(`Protocol.scorer_view`), nothing it does changes what the next scorer is scored against, and an exit, a crash, an
exception or a print is one line naming it. The cost is one interpreter start and the module's import per scorer
(about 0.1 s), and a JSON round trip per batch of records, small beside the bootstrap of every config.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import settings
from ..display import escaped
from ..errors import CohbenchError

MAX_REPLY = 64 * 2**20  # bytes of one reply: far above a batch's scores, so a runaway scorer cannot fill the memory
TIMEOUT = 600.0  # seconds a scorer may take to import or to answer one batch (`--scorer-timeout`): a hang ends the run


class ScorerFailed(CohbenchError):
    """The scorer gave no usable scores for this request; the message says why."""


class ScorerProcess:
    """A user's scorer, imported in its own process at `start`; `score` sends it records and reads its entries."""

    def __init__(self, spec: str, timeout: float = TIMEOUT):
        self.spec = spec
        self.timeout = timeout
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the process and import the scorer there; a scorer that cannot be imported (or exits on import) is
        refused in one line naming it."""
        package_parent = str(Path(__file__).resolve().parents[2])  # the folder holding the cohbench package
        paths = [package_parent, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        # `-m` puts the working directory first on the path: the scorer is importable from there, as promised
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cohbench.leaderboards.scorer_process", self.spec],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**{k: v for k, v in os.environ.items() if k != "COHBENCH_RELEASE"},  # no release is named to it
                 "PYTHONPATH": os.pathsep.join(paths), settings.SCORER_PARENT: str(os.getpid())},
        )  # fmt: skip
        try:
            reply = self._reply("on import")
            if reply.get("ready") is not True:
                self.close()
                raise ScorerFailed(reply.get("error") or "answered its import with scores")
        except ScorerFailed as failure:
            raise CohbenchError(f"--scorer {escaped(self.spec)}: {failure}") from None

    def score(self, views: list[dict]) -> list:
        """The scorer's entries for `views`, one per record as it returned them (the caller checks each)."""
        if self.process is None:  # the first request, or the process ended on an earlier one
            self.start()
        try:
            self.process.stdin.write(json.dumps({"records": views}).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it ended: the reply says how
        reply = self._reply("while scoring")
        if "error" in reply:
            raise ScorerFailed(reply["error"])
        return reply["scores"]

    def _line(self, when: str) -> bytes:
        """One reply line, read from the pipe as it comes, within `timeout` seconds and MAX_REPLY bytes."""
        fd, line = self.process.stdout.fileno(), bytearray()
        deadline = time.monotonic() + self.timeout
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(wait=0)  # a scorer that hangs is not asked to end
                raise ScorerFailed(f"gave no reply within {self.timeout:g} s {when} (--scorer-timeout sets the limit)")
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # it ended, with or without part of a reply written
                status = self.close()
                if status == -signal.SIGINT:  # Ctrl-C reached its process group: the run is interrupted (exit 130)
                    raise KeyboardInterrupt
                raise ScorerFailed(f"its process ended {when} (exit status {status})")
            line += chunk
            if len(line) > MAX_REPLY:
                self.close()
                raise ScorerFailed(f"sent more than {MAX_REPLY // 2**20} MiB for one batch of records")
        return bytes(line)

    def _reply(self, when: str) -> dict:
        line = self._line(when)
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or not (isinstance(reply.get("error"), str) or reply.get("ready") is True
                                               or isinstance(reply.get("scores"), list)):
            self.close()
            raise ScorerFailed(f"wrote something other than its scores to the channel of its replies {when}")
        if "error" in reply:  # the scorer's own words: no terminal escape reaches the screen
            reply["error"] = escaped(reply["error"], limit=400)
        return reply

    def close(self, wait: float = 5) -> int | None:
        """End the process (asked first: its stdin closes; then, after `wait` seconds, killed) and return its exit
        status; a later `score` starts a fresh one."""
        process, self.process = self.process, None
        if process is None:
            return None
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return process.returncode
