"""Can the CPU encoder run in float32 and keep the release's bytes? (issue 43: "float32, then recompute in float64 only
the values within float32's error of a rounding boundary").

On `--sentences` distinct sentences of the built release (the seeded sample `code_paths.py` draws), the one encoder
(`cohbench.encoder`, sentence vectors only) runs in float64, as every release is built, and in float32 on the same
weights, each timed in this process after a warm-up. It prints:
- the two encoders' speeds and their ratio (the goal was 2x the float64 encoder with the same bytes);
- float32's error against float64 on the unit vectors' components (max and 99th percentile);
- how many sentences' release vectors (components rounded to `VECTOR_DECIMALS`) float32 gets wrong;
- for the recompute design: the share of components within float32's largest error of a rounding boundary, the
  share of sentences holding at least one (those the design must encode again in float64), and the speed-up that
  leaves: t64 / (t32 + share x t64);
- one matrix product of the encoder's widest shape in both precisions, in GFLOP/s: how close float64 already is to
  the CPU's peak, and what float32 gains there.

    .venv/bin/python benchmarks/encoder_precision.py [--sentences 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def vectors(sentences: list[str], decimals: int):
    """The encoder's sentence vectors, components rounded to `decimals` (the release's: `VECTOR_DECIMALS`), and the
    seconds it took."""
    import numpy as np

    from cohbench import encoder

    kept, encoder.VECTOR_DECIMALS = encoder.VECTOR_DECIMALS, decimals
    try:
        started = time.perf_counter()
        found = {s: v for batch, vs, *_ in encoder.encode_batches(sentences, encoder.CPU, tokens=False) for s, v in zip(batch, encoder.rounded_vectors(vs))}
        seconds = time.perf_counter() - started
    finally:
        encoder.VECTOR_DECIMALS = kept
    return np.stack([found[s] for s in sentences]).astype(np.float64), seconds


def gemm_gflops(dtype) -> float:
    """GFLOP/s of the feed-forward product (6,144 tokens x 384 -> 1,536), best of 5 runs of 10."""
    import torch

    tokens, weights = torch.randn(256 * 24, 384, dtype=dtype), torch.randn(1536, 384, dtype=dtype)
    torch.nn.functional.linear(tokens, weights)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(10):
            torch.nn.functional.linear(tokens, weights)
        best = min(best, (time.perf_counter() - started) / 10)
    return 2 * tokens.shape[0] * 384 * 1536 / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import numpy as np
    import torch

    from cohbench import encoder
    from code_paths import sample

    sentences = sample(args.sentences)
    _, model = encoder._encoder("cpu")
    vectors(sentences[:8], encoder.VECTOR_DECIMALS)  # the model loaded and warm outside the timing
    release64, t64 = vectors(sentences, encoder.VECTOR_DECIMALS)
    fine64, _ = vectors(sentences, 9)
    model.float()  # the checkpoint's weights are float32: float64 -> float32 -> float64 gives them back exactly
    try:
        vectors(sentences[:8], encoder.VECTOR_DECIMALS)
        release32, t32 = vectors(sentences, encoder.VECTOR_DECIMALS)
        fine32, _ = vectors(sentences, 9)
    finally:
        model.double()
    error = np.abs(fine32 - fine64)
    bound = float(error.max())
    grid = 10.0 ** -encoder.VECTOR_DECIMALS
    to_boundary = np.abs(np.mod(fine32, grid) - grid / 2)  # distance to the midpoint a rounding turns on
    near = to_boundary <= bound
    redo = float(near.any(axis=1).mean())
    result = {
        "sentences": len(sentences), "cpu_count": os.cpu_count(), "threads": torch.get_num_threads(),
        "float64_s": round(t64, 2), "float32_s": round(t32, 2), "float32_speedup": round(t64 / t32, 2),
        "max_error": bound, "p99_error": float(np.quantile(error, 0.99)),
        "sentences_whose_release_vector_float32_changes": float((release32 != release64).any(axis=1).mean()),
        "components_within_the_error_of_a_boundary": float(near.mean()),
        "sentences_to_recompute_in_float64": redo,
        "recompute_design_speedup": round(t64 / (t32 + redo * t64), 2),
        "gemm_gflops": {"float64": round(gemm_gflops(torch.float64), 1), "float32": round(gemm_gflops(torch.float32), 1)},
        "load_1min": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{len(sentences)} sentences, {result['threads']} threads (load {result['load_1min']})")
    print(f"encoder: float64 {t64:.1f} s ({len(sentences) / t64:.0f}/s), float32 {t32:.1f} s ({len(sentences) / t32:.0f}/s): "
          f"float32 x{result['float32_speedup']:.2f}")
    print(f"float32 error on a unit vector's component: max {bound:.2e}, p99 {result['p99_error']:.2e} "
          f"(the release rounds to {grid:g})")
    print(f"release vectors float32 changes: {100 * result['sentences_whose_release_vector_float32_changes']:.1f}% of sentences")
    print(f"recompute design: {100 * near.mean():.2f}% of components lie within float32's error of a rounding boundary, "
          f"so {100 * redo:.1f}% of sentences must be encoded again in float64: x{result['recompute_design_speedup']:.2f} "
          "of the float64 encoder")
    gflops = result["gemm_gflops"]
    print(f"feed-forward product: float64 {gflops['float64']} GFLOP/s, float32 {gflops['float32']} GFLOP/s "
          f"(x{gflops['float32'] / gflops['float64']:.2f})")


if __name__ == "__main__":
    main()
