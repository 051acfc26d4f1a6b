"""Where the time of a SNaC build goes: loading spaCy, splitting every segment into sentences (the shared senter
pipeline), and the whole `parse` (that split again, plus span resolution, projections and splits). The
reference, measured in the same run on the same segments, is spaCy's rule-based `sentencizer`, the cheapest
splitter there is.

    .venv/bin/python benchmarks/snac_parse.py [--json]
"""

from __future__ import annotations

import json
import sys
import time

from cohbench.corpora import snac
from cohbench.corpora.fetch import fetch
from cohbench.text import _senter, sentence_offsets


def main() -> None:
    import spacy

    path = fetch(snac.CORPUS)["snac"]
    data = json.loads(path.read_bytes())
    texts = [unit["text"] for key in sorted(data) for unit in (data[key][str(i)] for i in range(len(data[key])))]

    start = time.perf_counter()
    _senter()
    load_s = time.perf_counter() - start
    sentence_offsets(texts[:100])  # warm-up, so that the timing below is of steady-state splitting

    start = time.perf_counter()
    sentences = sum(len(spans) for spans in sentence_offsets(texts))
    senter_s = time.perf_counter() - start

    rules = spacy.blank("en")
    rules.add_pipe("sentencizer")
    start = time.perf_counter()
    rule_sentences = sum(len(list(doc.sents)) for doc in rules.pipe(texts, batch_size=64))
    sentencizer_s = time.perf_counter() - start

    start = time.perf_counter()
    snac.parse({"snac": path})
    parse_s = time.perf_counter() - start  # the senter split again, plus resolution, projections and splits

    result = {
        "segments": len(texts),
        "sentences": sentences,
        "sentences_rule_based": rule_sentences,
        "spacy_load_s": round(load_s, 2),
        "senter_split_s": round(senter_s, 2),
        "senter_sentences_per_s": round(sentences / senter_s),
        "sentencizer_split_s": round(sentencizer_s, 2),
        "senter_vs_sentencizer_time_ratio": round(senter_s / sentencizer_s, 1),
        "parse_s": round(parse_s, 2),
    }
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:>34}: {value}")


if __name__ == "__main__":
    main()
