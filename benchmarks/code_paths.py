"""What each CPU code path costs: the encoder and one epoch of the baseline's training, per path (`cohbench.numerics`).

A path is fixed when a process starts (MKL reads MKL_CBWR once), so each row runs in a fresh process on the same
inputs: `--sentences` distinct sentences of the built release (seeded sample) through the encoder, and one epoch of
the baseline (training set, selection on validation) on the release's vectors. Rows:
- encoder, float64, the CPU's own path (what builds and the train stage's encoding run now);
- encoder, float64, MKL AVX2 + ATen AVX2 (what every command ran before 0.4.0), and MKL COMPATIBLE (what a process
  pinned for training would pay if it encoded itself, hence `numerics.unpinned`);
- encoder, float32, the CPU's own path and AVX2 (the baseline's vectors before 0.4.0: float32 bits follow the path);
- one training epoch, float32: MKL COMPATIBLE + ATen AVX2 on 2 threads (now) and on 1, and MKL AVX2 on 1 thread
  (before 0.4.0; not the same bits on Intel and AMD CPUs).
Ratios are against the first row of each group. Run it on a quiet machine with the release built.

    .venv/bin/python benchmarks/code_paths.py [--sentences 3000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

AVX2 = {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2"}
COMPATIBLE = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2"}
ROWS = [  # (group, name, what, environment, threads)
    ("encoder", "float64, the CPU's own path", "encode64", {}, 2),
    ("encoder", "float64, MKL AVX2 + ATen AVX2", "encode64", AVX2, 2),
    ("encoder", "float64, MKL COMPATIBLE", "encode64", COMPATIBLE, 2),
    ("encoder", "float32, the CPU's own path", "encode32", {}, 2),
    ("encoder", "float32, MKL AVX2 + ATen AVX2", "encode32", AVX2, 2),
    ("training", "float32, MKL COMPATIBLE, 2 threads", "epoch", COMPATIBLE, 2),
    ("training", "float32, MKL COMPATIBLE, 1 thread", "epoch", COMPATIBLE, 1),
    ("training", "float32, MKL AVX2, 1 thread", "epoch", AVX2, 1),
]


def sample(count: int) -> list[str]:
    import random

    from cohbench import settings
    from cohbench.release.layout import built_configs, read_config

    release = settings.release_dir()
    sentences = sorted({s for name, stats in built_configs(release).items()
                        for rows in read_config(release, name, stats).splits.values() for r in rows for s in r["sentences"]})
    return sorted(random.Random(13).sample(sentences, min(count, len(sentences))))


def measure(what: str, threads: int, count: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    if what.startswith("encode"):
        sentences = sample(count)
        if what == "encode64":
            from cohbench.encoder import encode

            list(encode(sentences[:8], device="cpu", tokens=False))  # the model loaded outside the timing
            started = time.perf_counter()
            list(encode(sentences, device="cpu", tokens=False))
        else:
            from sentence_transformers import SentenceTransformer

            from cohbench.encoder import encoder_path

            model = SentenceTransformer(encoder_path(), device="cpu")
            model.encode(sentences[:8])
            started = time.perf_counter()
            model.encode(sentences, batch_size=256)
        seconds = time.perf_counter() - started
        return {"seconds": round(seconds, 2), "per_second": round(len(sentences) / seconds, 1), "unit": "sentences"}
    from cohbench import numerics, settings
    from cohbench.baseline import sentence_level_fit as fit
    from cohbench.baseline.data import baseline_params, release_data, release_vectors, training_sets

    numerics.TRAINING_THREADS = threads
    p = baseline_params() | {"epochs": 1}
    data, _, tasks = release_data(settings.release_dir())
    train_set, dev_set = training_sets(data, tasks, [c for c in p["train_configs"] if c in data], p)
    vectors = release_vectors(data, tasks, False)
    started = time.perf_counter()
    fit.fit(train_set, dev_set, vectors, p, False)
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "per_second": round(len(train_set) / seconds, 1), "unit": "training texts"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure", nargs=2, metavar=("WHAT", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]), args.sentences)))
        return
    base = {k: v for k, v in os.environ.items() if k not in AVX2}
    rows, first = [], {}
    for group, name, what, env, threads in ROWS:
        run = subprocess.run([sys.executable, __file__, "--sentences", str(args.sentences), "--measure", what, str(threads)],
                             env=base | env | {"HF_HUB_OFFLINE": "1"}, capture_output=True, text=True)
        if run.returncode:
            raise SystemExit(f"{name}: {run.stderr.strip().splitlines()[-1]}")
        row = {"group": group, "path": name, **json.loads(run.stdout.strip().splitlines()[-1]),
               "load_1min": round(os.getloadavg()[0], 2)}
        row["ratio_to_first"] = round(row["seconds"] / first.setdefault(group, row["seconds"]), 2)
        rows.append(row)
        if not args.json:
            print(f"{group:>8}  {name:<38} {row['seconds']:8.1f} s  {row['per_second']:8.1f} {row['unit']}/s  "
                  f"x{row['ratio_to_first']:.2f}  (load {row['load_1min']})", flush=True)
    if args.json:
        print(json.dumps({"sentences": args.sentences, "cpu_count": os.cpu_count(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
