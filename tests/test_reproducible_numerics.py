"""A release's bytes do not follow the CPU: every command pins MKL and ATen to one code path (a user's own setting of
those variables stays), and what a build records or decides on from the encoder is computed in float64 and rounded to
`schema.FLOAT_DECIMALS`, so two genuinely different kernel paths make the same records."""

import json
import os
import subprocess
import sys
from pathlib import Path

from cohbench import cli, numerics

PROBE = Path(__file__).parent / "kernel_path_probe.py"


def test_the_cli_pins_mkl_and_aten_to_one_code_path(monkeypatch, capsys):
    for name in numerics.PINNED:
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["list"]) == 0
    assert {name: os.environ.get(name) for name in numerics.PINNED} == {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2"}


def test_a_code_path_the_user_chose_is_kept(monkeypatch, capsys):
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert cli.main(["list"]) == 0
    assert os.environ["MKL_CBWR"] == "COMPATIBLE" and os.environ["ATEN_CPU_CAPABILITY"] == "avx2"


def _probe(threads: int, **path) -> dict:
    env = {**os.environ, **path, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, str(PROBE), str(threads)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_two_kernel_paths_and_thread_counts_make_the_same_discordant_records():
    pinned = _probe(2, **numerics.PINNED)
    other = _probe(1, MKL_CBWR="COMPATIBLE", ATEN_CPU_CAPABILITY="default")
    assert other["capability"] == "DEFAULT"
    if pinned["capability"] != "DEFAULT":  # a CPU with AVX2: the two paths really run different kernels
        assert pinned["float32_encoder"] != other["float32_encoder"], "the kernel paths did not differ; the test shows nothing"
    assert pinned["pairs"] > 300
    assert pinned["scores"] == other["scores"]  # every pair's BERTScore, at the recorded precision
    # and at a precision 100 times finer, where float32 kernels already disagree: a margin, not luck
    assert pinned["scores_finer"] == other["scores_finer"]
    assert pinned["records"] == other["records"] and pinned["similarities"]  # byte for byte, similarities included
