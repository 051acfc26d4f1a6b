"""The sentence-level incoherence detector of Cai et al. (2020, §4.2, Fig. 2b), over frozen all-MiniLM-L6-v2
sentence embeddings.

Pre-computed sentence embeddings (h_1..h_N) go through a Transformer that attends over sentences; the output
s_k of sentence k feeds a per-sentence head (is x_k discordant / incoherent?); the per-gap head (is a sentence
missing between x_k and x_{k+1}?) reads [s_k; s_{k+1}] where the paper reads s_k alone (both sides of the gap
helped MSD here). Each head is an MLP with one hidden layer, as Eq. (1). Trained from scratch.

Where the paper has 126k training paragraphs, we have a few thousand stories, and a model that must rediscover
"how far is this sentence from the rest" from raw vectors learns it poorly (an untrained cosine-to-context
scorer beat the plain model by 18 AUC points on TimeTravel DSD). So each sentence enters with its relation to
the others made explicit: the element-wise product with its context (which dimensions agree) and its cosine to
the context, to its neighbours and to its closest and average other sentence. The Transformer then learns what
the paper's model learns, on top of that.
"""

from __future__ import annotations

import torch
from torch import nn

SIMILARITY_FEATURES = 6


def _head(width_in: int, width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(width_in, width), nn.GELU(), nn.Linear(width, 1))


def similarity_features(embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per sentence, its context (mean of the other sentences' unit vectors) and 6 cosines: to that context, to the
    previous and next sentence (0 at the ends), to the closest and the average other sentence, and the sentence's
    own cosine to the mean of its two neighbours. embeddings B×N×D (unit rows), mask B×N -> (B×N×D, B×N×6)."""
    m = mask.unsqueeze(-1).to(embeddings.dtype)
    x = embeddings * m
    count = m.sum(dim=1, keepdim=True)
    context = (x.sum(dim=1, keepdim=True) - x) / (count - 1).clamp(min=1)
    unit_context = nn.functional.normalize(context, dim=-1)
    to_context = (x * unit_context).sum(-1)
    sims = x @ x.transpose(1, 2)  # cosines: rows are unit vectors (padding rows are 0)
    n = x.shape[1]
    eye = torch.eye(n, dtype=torch.bool, device=x.device)
    others = mask.unsqueeze(1) & mask.unsqueeze(2) & ~eye
    closest = sims.masked_fill(~others, -2.0).amax(-1).clamp(min=-1.0)
    average = (sims * others).sum(-1) / others.sum(-1).clamp(min=1)
    previous = torch.nn.functional.pad(torch.diagonal(sims, offset=-1, dim1=1, dim2=2), (1, 0))
    following = torch.nn.functional.pad(torch.diagonal(sims, offset=1, dim1=1, dim2=2), (0, 1))
    neighbours = (previous + following) / 2
    features = torch.stack([to_context, previous, following, closest, average, neighbours], dim=-1) * m
    return unit_context * m, features


class SentenceLevelDetector(nn.Module):
    def __init__(self, embedding_dim: int, d_model: int, layers: int, heads: int, dropout: float, max_sentences: int):
        super().__init__()
        self.content = nn.Linear(embedding_dim, d_model)
        self.agreement = nn.Linear(embedding_dim, d_model)  # of sentence * context: which dimensions agree
        self.similarity = nn.Sequential(nn.Linear(SIMILARITY_FEATURES, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.position = nn.Embedding(max_sentences, d_model)
        nn.init.normal_(self.position.weight, std=0.02)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.sentence_head = _head(d_model + SIMILARITY_FEATURES, d_model)
        self.gap_head = _head(2 * d_model + 1, d_model)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """embeddings B×N×D, mask B×N (True = a sentence) -> sentence logits B×N and gap logits B×(N-1)."""
        context, features = similarity_features(embeddings, mask)
        positions = torch.arange(embeddings.shape[1], device=embeddings.device)
        x = self.content(embeddings) + self.agreement(embeddings * context) + self.similarity(features)
        x = self.dropout(self.norm(x) + self.position(positions))
        hidden = self.encoder(x, src_key_padding_mask=~mask)
        adjacent = (embeddings[:, :-1] * embeddings[:, 1:]).sum(-1, keepdim=True)
        gaps = torch.cat([hidden[:, :-1], hidden[:, 1:], adjacent], dim=-1)  # the gap between k and k+1 sees both sides
        sentences = torch.cat([hidden, features], dim=-1)
        return self.sentence_head(sentences).squeeze(-1), self.gap_head(gaps).squeeze(-1)
