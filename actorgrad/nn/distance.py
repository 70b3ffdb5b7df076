"""CosineSimilarity and PairwiseDistance: `nn.functional.cosine_similarity` and `pairwise_distance` with fixed
settings (their reprs show none, as PyTorch's)."""

from __future__ import annotations

from actorgrad.nn.module import Module
from actorgrad.ops.distances import cosine_similarity, pairwise_distance
from actorgrad.tensor import Tensor


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
