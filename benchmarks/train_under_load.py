"""The baseline's training arithmetic on a busy machine: OpenMP's idle threads spinning (OMP_WAIT_POLICY=ACTIVE)
against sleeping (PASSIVE, what `numerics.pin_for_training` sets), each in a fresh process pinned as `cohbench train`
is (MKL COMPATIBLE, ATen AVX2, 2 threads), while `--load` processes keep every core busy. Prints each policy's
time (wall and CPU: a spinning thread burns CPU the other jobs need) for the same training steps of the
sentence-level model, their ratio, and whether the trained weights are byte-identical (the wait policy must change
no bit).

    .venv/bin/python benchmarks/train_under_load.py [--load 4] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

CHILD = """
import hashlib, json, time, numpy as np, torch
from cohbench.baseline.model import SentenceLevelDetector
from cohbench.baseline.sentence_level_fit import fixed_threads
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = torch.from_numpy(rng.standard_normal((64, 24, 384)).astype(np.float32))
x = torch.nn.functional.normalize(x, dim=-1)
mask = torch.ones(64, 24, dtype=torch.bool)
y = torch.from_numpy((rng.random((64, 24)) < 0.2).astype(np.float32))
model = SentenceLevelDetector(384, 128, 2, 4, 0.1, 128)
optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
started, cpu = time.perf_counter(), time.process_time()
with fixed_threads():
    for _ in range(STEPS):
        sentence_logits, _ = model(x, mask)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(sentence_logits, y)
        optimiser.zero_grad(); loss.backward(); optimiser.step()
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
print(json.dumps({"seconds": seconds, "cpu": cpu, "weights": digest}))
"""


def _spin(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _run(policy: str, steps: int) -> dict:
    env = os.environ | {"OMP_WAIT_POLICY": policy, "MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2"}
    out = subprocess.run([sys.executable, "-c", CHILD.replace("STEPS", str(steps))], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the training run with OMP_WAIT_POLICY={policy} failed: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", type=int, default=4, help="busy processes beside the training (default 4)")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    stop = multiprocessing.Event()
    load = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in load:
        p.start()
    try:
        time.sleep(1)
        tries = [(policy, _run(policy, args.steps)) for policy in ("ACTIVE", "PASSIVE", "ACTIVE", "PASSIVE")]
        runs = {policy: min((r for p, r in tries if p == policy), key=lambda r: r["seconds"]) for policy in ("ACTIVE", "PASSIVE")}
    finally:
        stop.set()
        for p in load:
            p.join()
    quiet = {policy: _run(policy, args.steps) for policy in ("ACTIVE", "PASSIVE")}
    print(f"{args.steps} training steps, 2 threads, under {args.load} busy processes on {os.cpu_count()} CPUs:")
    for policy in ("ACTIVE", "PASSIVE"):
        print(f"  {policy:<7} {runs[policy]['seconds']:.2f} s under load ({runs[policy]['cpu']:.2f} s of CPU), "
              f"{quiet[policy]['seconds']:.2f} s quiet ({quiet[policy]['cpu']:.2f} s of CPU)")
    print(f"  PASSIVE / ACTIVE under load: {runs['PASSIVE']['seconds'] / runs['ACTIVE']['seconds']:.2f}x")
    same = len({r["weights"] for r in [*(r for _, r in tries), *quiet.values()]}) == 1
    print(f"  trained weights byte-identical across policies and load: {same}")


if __name__ == "__main__":
    main()
