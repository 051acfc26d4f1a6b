"""The sentence-level incoherence detector of Cai et al. (2021, §4.2, Fig. 2b).

Pre-computed sentence embeddings (h_1..h_N) go through a Transformer that attends over sentences; the output
s_k of sentence k feeds a per-sentence head (is x_k discordant / incoherent?); the per-gap head (is a sentence
missing between x_k and x_{k+1}?) reads [s_k; s_{k+1}] where the paper reads s_k alone (both sides of the gap
helped MSD here). Each head is an MLP with one hidden layer and a sigmoid, as Eq. (1). Trained from
scratch; the paper's BERT-sized sentence Transformer is scaled down by `params.yaml` (`baseline:`)."""

from __future__ import annotations

import torch
from torch import nn


def _head(width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))


class SentenceLevelDetector(nn.Module):
    def __init__(self, embedding_dim: int, d_model: int, layers: int, heads: int, dropout: float, max_sentences: int):
        super().__init__()
        # Sentence embeddings are unit-norm (entries ~0.05): normalise the projection and start positions small,
        # else the positions drown the content.
        self.project = nn.Sequential(nn.Linear(embedding_dim, d_model), nn.LayerNorm(d_model))
        self.position = nn.Embedding(max_sentences, d_model)
        nn.init.normal_(self.position.weight, std=0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.sentence_head = _head(d_model)
        self.gap_head = nn.Sequential(nn.Linear(2 * d_model, d_model), nn.GELU(), nn.Linear(d_model, 1))

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """embeddings B×N×D, mask B×N (True = a sentence) -> sentence logits B×N and gap logits B×(N-1)."""
        positions = torch.arange(embeddings.shape[1], device=embeddings.device)
        hidden = self.encoder(self.project(embeddings) + self.position(positions), src_key_padding_mask=~mask)
        gaps = torch.cat([hidden[:, :-1], hidden[:, 1:]], dim=-1)  # the gap between k and k+1 sees both sides
        return self.sentence_head(hidden).squeeze(-1), self.gap_head(gaps).squeeze(-1)
