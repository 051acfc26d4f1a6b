"""`make release` from a fresh clone, timed stage by stage, with the virtual environment's install reported apart.

Clones this checkout's HEAD into a new folder beside it (so that the clone sees the same ../shared), points the
clone's DVC remote at this checkout's release store (its push then sends nothing new: the store is
content-addressed), runs `make release` and times each line of its output as it arrives: the venv install (pip
reads its local cache, so a machine that never installed these wheels pays more), each DVC stage from its
"Running stage" line to the next event, and the push. Then it says whether the clone is still clean (`git status`:
every stage gave the bytes this checkout's dvc.lock records). Run it with nothing else running: the machine's
load is printed beside the times. The clone is deleted unless `--keep`.

    COHBENCH_MIRROR=../shared/data/mirror .venv/bin/python benchmarks/release_time.py [--keep] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = re.compile(r"Running stage '([^']+)'|Stage '([^']+)' didn't change")


def store_url() -> str:
    """This checkout's release store (`dvc config` gives a folder as an absolute path; `dvc remote list` adds a
    "(default)" mark after the URL, which once became part of the clone's store folder's name)."""
    return subprocess.run(["dvc", "config", "remote.store.url"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def timed_release(clone: Path) -> tuple[list[tuple[float, str]], int]:
    """(seconds since start, phase that begins then) for each phase of `make release`, and its exit status."""
    events, started = [(0.0, "venv install")], time.perf_counter()
    with subprocess.Popen(["make", "release"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", env=os.environ | {"PYTHONUNBUFFERED": "1"}) as make:
        for line in make.stdout:
            now = time.perf_counter() - started
            if "dvc repro" in line and line.startswith("PATH="):
                events.append((now, "dvc repro start-up"))
            elif match := STAGE.search(line):
                events.append((now, match.group(1) or f"{match.group(2)} (unchanged, skipped)"))
            elif "cohbench push" in line:
                events.append((now, "push"))
    events.append((time.perf_counter() - started, "end"))
    return events, make.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (its .venv, raw/ and release)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    clone = ROOT.parent / f".release-time-{os.getpid()}"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    try:
        subprocess.run(["git", "checkout", "--quiet", head], cwd=clone, check=True)
        subprocess.run(["dvc", "remote", "modify", "--local", "store", "url", store_url()], cwd=clone, check=True)
        load_before = os.getloadavg()[0]
        events, status = timed_release(clone)
        load_after = os.getloadavg()[0]
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True).stdout.split("\n")
        phases = [{"phase": name, "seconds": round(end - start, 1)} for (start, name), (end, _) in zip(events, events[1:])]
        venv = sum(p["seconds"] for p in phases if p["phase"] == "venv install")
        total = round(events[-1][0], 1)
        result = {"commit": head, "exit_status": status, "phases": phases, "total_seconds": total,
                  "venv_install_seconds": venv, "without_venv_seconds": round(total - venv, 1),
                  "clean_after": not any(dirty), "changed": [d for d in dirty if d],
                  "load_1min": {"before": round(load_before, 2), "after": round(load_after, 2)}}
    finally:
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"make release on a fresh clone of {head[:12]} (exit {status}; load {load_before:.2f} before, {load_after:.2f} after)")
    for p in phases:
        print(f"  {p['seconds']:8.1f} s  {p['phase']}")
    print(f"  total {total / 60:.1f} min; without the venv install {result['without_venv_seconds'] / 60:.1f} min; "
          f"clone {'clean (the same bytes)' if result['clean_after'] else 'changed: ' + ', '.join(result['changed'])}")


if __name__ == "__main__":
    main()
