"""Sentence splitting of one long text against its length: 1k, 2k, 4k and 10k sentences (ROCStories stories
joined, five sentences each). Each text goes through the senter pipeline once; then the offsets are taken from
the same Doc twice, as `text._trimmed_spans` does now and as it did before (`doc.text`, which spaCy joins from
every token on each access, read once per sentence), and both must give the same offsets. Printed: the pipeline's
time, then before and after (pipeline + offsets) and their ratio; growth from 1k to 10k sentences is 10x when
linear.

    COHBENCH_MIRROR=... .venv/bin/python benchmarks/sentence_split.py [--sizes 1000,2000,4000,10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from cohbench.corpora import rocstories
from cohbench.corpora.fetch import fetch
from cohbench.text import _senter, _trimmed_spans


def spans_before(doc) -> list[tuple[int, int]]:
    """The reference: `_trimmed_spans` as it was, slicing `doc.text` for every sentence."""
    spans = []
    for sentence in doc.sents:
        start, end = sentence.start_char, sentence.end_char
        raw = doc.text[start:end]
        start += len(raw) - len(raw.lstrip())
        end -= len(raw) - len(raw.rstrip())
        if end > start:
            spans.append((start, end))
    return spans


def timed(function, *args):
    start = time.perf_counter()
    out = function(*args)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000", help="sentences per text, comma-separated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = fetch(rocstories.CORPUS)[rocstories.SAMPLE.name]
    stories = [json.loads(line)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    nlp = _senter()
    nlp(" ".join(stories[:20]))  # warm-up
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        text = " ".join(stories[: -(-size // rocstories.SENTENCES)])
        doc, pipeline_s = timed(nlp, text)
        after, after_s = timed(_trimmed_spans, doc)
        before, before_s = timed(spans_before, doc)
        if after != before:
            raise SystemExit(f"the offsets differ at {size} sentences")
        rows.append({"sentences": size, "characters": len(text), "sentences_found": len(after), "pipeline_s": pipeline_s,
                     "before_s": pipeline_s + before_s, "after_s": pipeline_s + after_s,
                     "speedup": (pipeline_s + before_s) / (pipeline_s + after_s)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'sentences':>9} {'chars':>9} {'pipeline':>9} {'before':>9} {'after':>9} {'speedup':>8}")
    for row in rows:
        print(f"{row['sentences']:>9} {row['characters']:>9} {row['pipeline_s']:>8.2f}s {row['before_s']:>8.2f}s "
              f"{row['after_s']:>8.2f}s {row['speedup']:>7.1f}x")
    first, last = rows[0], rows[-1]
    print(f"growth {first['sentences']} -> {last['sentences']} sentences ({last['sentences'] / first['sentences']:.0f}x "
          f"the text): before {last['before_s'] / first['before_s']:.1f}x, after {last['after_s'] / first['after_s']:.1f}x; "
          "offsets identical at every size")


if __name__ == "__main__":
    main()
