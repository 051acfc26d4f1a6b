"""One CPU code path for the arithmetic a release is made of, so that a rebuild on another machine gives the same bytes.

MKL's and ATen's kernels otherwise follow the CPU (AVX-512, AMX), and their float32 rounding moved the 4th decimal of
2 of 1,554 recorded TimeTravel train similarities between two machines, so the Parquet bytes differed. AVX2 (MKL's
conditional numerical reproducibility; STRICT makes it independent of the thread count too) is the path every
recent x86 CPU has. A GPU takes its own path (see the TimeTravel card).
"""

from __future__ import annotations

import os

PINNED = {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2"}


def pin() -> None:
    """Pin MKL's and ATen's CPU code paths before torch starts (a value the user set stays). Called by the CLI,
    which runs every build and training."""
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)
