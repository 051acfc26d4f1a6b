"""The CPU code paths of the arithmetic a release is made of, so that a rebuild on another machine gives the same bytes.

Two kinds of arithmetic go into a release:
- The encoder (`encoder`) runs in float64 and its results are rounded: no code path moves them, so it runs
  on the CPU's own fastest kernels (AVX-512 where there is AVX-512; 1.4x faster than AVX2 on an Intel Xeon).
- Training the baseline runs in float32, where every path gives other bits and training amplifies them. MKL's
  conditional numerical reproducibility pins MKL, but only its COMPATIBLE branch gives the same results on Intel and
  AMD CPUs (its AVX2 branch is honoured on Intel CPUs only: the 0.3.0 baseline, trained with it on the machine that
  built that release, came out different on an Intel Xeon); ATen's own kernels are pinned to AVX2, which every x86 CPU since 2013 runs alike.
  Training commands pin both before torch starts (`pin_for_training`), and train on a fixed number of threads.

A process pinned for training that needs the encoder runs it in a fresh unpinned process (`unpinned`): MKL reads its
branch once, and COMPATIBLE (SSE2) float64 encoding is 3x slower. A value the user set stays.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

# GOMP_SPINCOUNT changes no result, only how long OpenMP's idle threads spin before they sleep (torch's Linux wheels
# ship GNU libgomp). A training step is hundreds of small ops, each a parallel region: threads that sleep at once
# (OMP_WAIT_POLICY=PASSIVE, 0.5.0's setting) are woken for every one, 1.7x slower on a quiet machine; libgomp's
# default spin (300,000) burns the cores other jobs need, about 2x slower than sleeping at a load of 3 per core.
# 3,000 spins keep both (benchmarks/train_under_load.py). OpenMP reads it once, when torch loads.
FOR_TRAINING = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2", "GOMP_SPINCOUNT": "3000"}
# OpenMP's two names for how idle threads wait: a wait the user chose by either stays (libgomp lets GOMP_SPINCOUNT
# override OMP_WAIT_POLICY).
OPENMP_WAIT = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")
TRAINING_THREADS = 2  # fixed, so that scores do not follow the machine's core count (2 threads: 28.7 s an epoch, 1: 46.8)
_set_here: set[str] = set()  # what `pin_for_training` set (not the user)


def pin_for_training() -> None:
    """Pin MKL's and ATen's CPU code paths for float32 training and OpenMP's short spin, before torch starts (a value
    the user set stays)."""
    for name, value in FOR_TRAINING.items():
        if not any(chosen in os.environ for chosen in (OPENMP_WAIT if name in OPENMP_WAIT else (name,))):
            os.environ[name] = value
            _set_here.add(name)


@contextlib.contextmanager
def training_arithmetic():
    """Train on `TRAINING_THREADS` CPU threads, whatever the machine's core count (MKL's reproducible branch asks for a
    fixed count too), with oneDNN off so that float32 layers run on the pinned MKL and ATen kernels. On 2 busy cores
    more threads than cores cost far more than they give (2 threads once took 820 ms a batch against 49 ms for 1, at
    a load of 8): train on a quiet machine."""
    import torch

    threads, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    torch.set_num_threads(TRAINING_THREADS)
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.backends.mkldnn.enabled = onednn


def unpinned(function: Callable, *args):
    """`function(*args)` (a module-level function), in a fresh process without the pins of `pin_for_training` when
    this process has them, else here."""
    if not _set_here:
        return function(*args)
    saved = {name: os.environ.pop(name) for name in _set_here}
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        future = pool.submit(function, *args)  # starts the process, which copies the environment as it is now
    finally:
        os.environ.update(saved)
    with pool:
        return future.result()
