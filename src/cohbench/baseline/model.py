"""The sentence-level incoherence detector of Cai et al. (2021, §4.2, Fig. 2b).

Pre-computed sentence embeddings (h_1..h_N) go through a Transformer that attends over sentences; the output
s_k of sentence k feeds a per-sentence head (is x_k discordant / incoherent?) and a per-gap head (is a sentence
missing between x_k and x_{k+1}?), each an MLP with one hidden layer and a sigmoid, as Eq. (1). Trained from
scratch; the paper's BERT-sized sentence Transformer is scaled down by `params.yaml` (`baseline:`)."""

from __future__ import annotations

import torch
from torch import nn


def _head(width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))


class SentenceLevelDetector(nn.Module):
    def __init__(self, embedding_dim: int, d_model: int, layers: int, heads: int, dropout: float, max_sentences: int):
        super().__init__()
        self.project = nn.Linear(embedding_dim, d_model)
        self.position = nn.Embedding(max_sentences, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.sentence_head = _head(d_model)
        self.gap_head = _head(d_model)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """embeddings B×N×D, mask B×N (True = a sentence) -> sentence logits B×N and gap logits B×(N-1)."""
        positions = torch.arange(embeddings.shape[1], device=embeddings.device)
        hidden = self.encoder(self.project(embeddings) + self.position(positions), src_key_padding_mask=~mask)
        return self.sentence_head(hidden).squeeze(-1), self.gap_head(hidden[:, :-1]).squeeze(-1)
