"""Do the generated configs come out byte-identical on two different CPU code paths? The whole-release form of
tests/test_reproducible_numerics.py.

Each config is rebuilt from the same pinned upstream files into a scratch release folder on another code path
(MKL_CBWR=COMPATIBLE, ATEN_CPU_CAPABILITY=default, one thread: torch reads OMP_NUM_THREADS) and compared with the
release in use, which `make release` built on the CPU's own path (MKL's automatic branch, ATen's widest kernels, all
cores: a build pins nothing, `cohbench.numerics`). On a CPU with AVX2 these really are different kernels (the float32
encoder's raw outputs differ between them; see the test), so equal bytes here stand for equal bytes on another CPU. Prints, per
config, whether every Parquet file's sha256 and the fingerprint are equal, and the rebuild's time.

    .venv/bin/python benchmarks/kernel_paths.py [--release DIR] [--configs timetravel_dsd,...] [--json]

Default: every config a corruption generator makes. Needs the upstream files (raw cache or COHBENCH_MIRROR).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cohbench.corpora import registry
from cohbench import settings
from cohbench.release.layout import built_configs

OTHER_PATH = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def generated_configs() -> list[str]:
    """The configs whose records a corruption generator makes (the ones encoder arithmetic can reach)."""
    return [c.name for corpus in registry.corpora().values() for c in corpus.configs if c.options is not None]


def build(config: str, release: Path, path: dict) -> tuple[dict, float]:
    env = {**os.environ, **path, "COHBENCH_RELEASE": str(release), "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "cohbench.cli", "build", config, "--no-index", "--json"], env=env,
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"building {config} failed: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else run.returncode}")
    return json.loads(run.stdout)[config], time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=None, help="the release to compare with (default: the one in use)")
    parser.add_argument("--configs", default=None, help="comma-separated configs (default: every generated one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    release = (args.release or settings.release_dir()).resolve()
    built = built_configs(release)
    configs = args.configs.split(",") if args.configs else generated_configs()
    missing = [c for c in configs if c not in built]
    if missing:
        sys.exit(f"{', '.join(missing)} not built in {release}: build the release first (make release)")
    report = {}
    with tempfile.TemporaryDirectory(prefix="cohbench-kernel-paths-") as scratch:
        for config in configs:
            stats, seconds = build(config, Path(scratch), OTHER_PATH)
            pinned = {split: f["sha256"] for split, f in built[config]["files"].items()}
            other = {split: f["sha256"] for split, f in stats["files"].items()}
            report[config] = {"identical": pinned == other, "fingerprint_equal": stats["fingerprint"] == built[config]["fingerprint"],
                              "files": len(other), "seconds_other_path": round(seconds, 1), "pinned": pinned, "other": other}
            print(f"{config}: rebuilt on the other path in {seconds:.0f} s", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for config, entry in report.items():
            verdict = "byte-identical" if entry["identical"] else "DIFFERENT"
            print(f"{config:<22} {verdict:<15} {entry['files']} Parquet files; fingerprint equal: {entry['fingerprint_equal']}; "
                  f"rebuilt in {entry['seconds_other_path']} s")
        print(f"{sum(e['identical'] for e in report.values())} of {len(report)} configs identical on both paths")
    sys.exit(0 if all(e["identical"] for e in report.values()) else 1)


if __name__ == "__main__":
    main()
