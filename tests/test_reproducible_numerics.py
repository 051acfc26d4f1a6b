"""A release's bytes do not follow the CPU. What a build records or decides on from the encoder, and the sentence
vectors the baseline reads, are computed in float64 and rounded, so two genuinely different kernel paths make the same
records and vectors; a training command pins float32 to the code path every CPU shares (MKL's COMPATIBLE branch,
ATen's AVX2 kernels), other commands run on the CPU's own; a user's own setting of those variables stays."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cohbench import cli, numerics

PROBE = Path(__file__).parent / "kernel_path_probe.py"


def unset_code_path(monkeypatch):
    for name in {*numerics.FOR_TRAINING, *numerics.OPENMP_WAIT}:
        monkeypatch.setenv(name, "")  # recorded, so that whatever the command sets is undone after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(numerics, "_set_here", set())


def test_a_training_command_pins_float32_to_the_code_path_every_cpu_shares(monkeypatch, capsys, tmp_path):
    unset_code_path(monkeypatch)
    assert cli.main(["train", "--release", str(tmp_path / "none")]) == 1  # no release there; pinned all the same
    assert {name: os.environ.get(name) for name in numerics.FOR_TRAINING} == {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2", "GOMP_SPINCOUNT": "3000"}


def test_other_commands_run_on_the_cpus_own_code_path(monkeypatch, capsys):
    unset_code_path(monkeypatch)
    assert cli.main(["list"]) == 0
    assert not any(name in os.environ for name in numerics.FOR_TRAINING)


def test_a_code_path_the_user_chose_is_kept(monkeypatch, capsys, tmp_path):
    unset_code_path(monkeypatch)
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    cli.main(["train", "--release", str(tmp_path / "none")])
    assert os.environ["MKL_CBWR"] == "AVX2" and os.environ["ATEN_CPU_CAPABILITY"] == "avx2"
    assert numerics.unpinned(os.getenv, "MKL_CBWR") == "AVX2"  # the user's choice reaches the encoder too


def test_a_wait_policy_the_user_chose_is_not_overridden_by_the_spin_count(monkeypatch, capsys, tmp_path):
    unset_code_path(monkeypatch)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # libgomp would let a GOMP_SPINCOUNT set here override it
    cli.main(["train", "--release", str(tmp_path / "none")])
    assert "GOMP_SPINCOUNT" not in os.environ and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"


def _probe(threads: int, **path) -> dict:
    env = {**{k: v for k, v in os.environ.items() if k not in numerics.FOR_TRAINING}, **path, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, str(PROBE), str(threads)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_kernel_paths_and_thread_counts_make_the_same_records_and_vectors():
    native = _probe(2)
    other = _probe(1, MKL_CBWR="COMPATIBLE", ATEN_CPU_CAPABILITY="default")
    assert other["capability"] == "DEFAULT"
    if native["capability"] != "DEFAULT":  # a CPU with AVX2: the two paths really run different kernels
        assert native["float32_encoder"] != other["float32_encoder"], "the kernel paths did not differ; the test shows nothing"
    assert native["pairs"] > 300
    assert native["scores"] == other["scores"]  # every pair's BERTScore, at the recorded precision
    # and at a precision 100 times finer, where float32 kernels already disagree: a margin, not luck
    assert native["scores_finer"] == other["scores_finer"]
    assert native["records"] == other["records"] and native["similarities"]  # byte for byte, similarities included
    assert native["vectors"] == other["vectors"]  # every sentence vector, byte for byte


TRAINING_STEPS = """
import hashlib, numpy as np, torch
from cohbench import numerics
from cohbench.baseline.model import SentenceLevelDetector
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = torch.nn.functional.normalize(torch.from_numpy(rng.standard_normal((16, 12, 384)).astype(np.float32)), dim=-1)
mask = torch.ones(16, 12, dtype=torch.bool)
y = torch.from_numpy((rng.random((16, 12)) < 0.2).astype(np.float32))
model = SentenceLevelDetector(384, 128, 2, 4, 0.1, 128)
optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
with numerics.training_arithmetic():
    for _ in range(3):
        logits, _ = model(x, mask)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
        optimiser.zero_grad(); loss.backward(); optimiser.step()
print(hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest())
"""


@pytest.mark.slow
def test_training_gives_the_same_weights_whatever_instruction_set_onednn_would_pick():
    """oneDNN chooses its kernels by the CPU's instruction set and honours neither MKL_CBWR nor ATEN_CPU_CAPABILITY;
    capping it to AVX2 stands in for an AVX2-only CPU. On an AVX-512 CPU these weights differed while oneDNN ran."""
    def weights(**cap) -> str:
        env = {**os.environ, **numerics.FOR_TRAINING, **cap}
        run = subprocess.run([sys.executable, "-c", TRAINING_STEPS], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stdout.strip()

    assert weights() == weights(ONEDNN_MAX_CPU_ISA="AVX2")
