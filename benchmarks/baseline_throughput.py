"""Throughput of the baseline's two detectors, training and scoring, on the device at hand (CUDA when present).

The token-level model (Cai et al. §4.1: all-MiniLM-L6-v2 fine-tuned end to end) against the sentence-level model
(§4.2: a small Transformer over frozen sentence vectors; its encoding cost counted separately), both in this
process on the same five-sentence stories, so the ratio says what the token-level model costs here.

    python benchmarks/baseline_throughput.py [--stories 64] [--release PATH]

Stories come from the release's timetravel_dsd test split when it is built, else from a fixed toy set.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def stories(release, count: int):
    from cohbench.baseline.data import examples_of
    from cohbench.release.layout import built_configs
    from cohbench.release.layout import read_config

    built = built_configs(release) if release else {}
    if "timetravel_dsd" in built:
        rows = read_config(release, "timetravel_dsd", built["timetravel_dsd"]).splits["test"][:count]
        return examples_of("timetravel_dsd", rows, "sentences")
    from cohbench.baseline import Example

    rng = np.random.default_rng(0)
    words = "the a farmer dog rain field bread morning went found quiet old river market came home".split()
    out = []
    for i in range(count):
        sentences = [" ".join(rng.choice(words, size=12)).capitalize() + "." for _ in range(5)]
        labels = [0] * 5
        labels[i % 5] = 1
        out.append(Example("toy", f"t{i}", "test", "sentences", sentences, labels, [-1] * 4))
    return out


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=64)
    parser.add_argument("--release", help="release folder (default: the project's, when built)")
    args = parser.parse_args()

    from pathlib import Path

    from cohbench import settings
    from cohbench.baseline import sentence_level_fit as fit
    from cohbench.baseline import token_level
    from cohbench.embedding_store import sentence_vectors

    release = Path(args.release) if args.release else settings.release_dir()
    examples = stories(release if release.is_dir() else None, args.stories)
    sentences = sum(len(e.sentences) for e in examples)
    device = fit.device_name()
    print(f"{len(examples)} stories, {sentences} sentences, device {device}, torch threads {__import__('torch').get_num_threads()}")

    token_params = {"seed": 0, "epochs": 1, "batch_size": 16, "learning_rate": 1e-4, "weight_decay": 0.01,
                    "max_tokens": 256, "max_sentence_tokens": 48, "warmup_ratio": 0.1}
    holder = {}
    train_token = timed(lambda: holder.update(model=token_level.fit(examples, [], token_params, False)[0]))
    score_token = timed(lambda: token_level.predict(holder["model"], examples))

    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        encode = timed(lambda: holder.update(vectors=sentence_vectors({s for e in examples for s in e.sentences}, Path(cache))))
    sentence_params = {"seed": 0, "epochs": 1, "batch_size": 64, "learning_rate": 1e-3, "weight_decay": 0.01,
                       "d_model": 128, "layers": 2, "heads": 4, "dropout": 0.1, "max_sentences": 128}
    train_sentence = timed(lambda: holder.update(model=fit.fit(examples, [], holder["vectors"], sentence_params, False)[0]))
    score_sentence = timed(lambda: fit.predict(holder["model"], examples, holder["vectors"], 128))

    rows = [
        ("token-level, training (1 epoch)", train_token),
        ("token-level, scoring", score_token),
        ("sentence-level, encoding sentences (frozen MiniLM)", encode),
        ("sentence-level, training (1 epoch, vectors given)", train_sentence),
        ("sentence-level, scoring (vectors given)", score_sentence),
    ]
    for name, seconds in rows:
        print(f"{name:<52} {sentences / seconds:10.1f} sentences/s  ({seconds:.2f} s)")
    print(f"token-level training costs {train_token / (encode + train_sentence):.1f}x the sentence-level model's encoding + "
          f"training; scoring {score_token / (encode + score_sentence):.1f}x its encoding + scoring")


if __name__ == "__main__":
    main()
