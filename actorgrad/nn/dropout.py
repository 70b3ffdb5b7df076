"""The dropout layers: each zeroes elements (or whole channels) at random while training, and is the identity in
eval mode; the forwards are the matching functions of `actorgrad.nn.functional`."""

from __future__ import annotations

from actorgrad.nn import functional as F
from actorgrad.nn.module import Module
from actorgrad.ops.regularization import alpha_dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from actorgrad.tensor import Tensor


class _DropoutNd(Module):
    """The settings every dropout layer takes. The layers are siblings, as PyTorch's, so `isinstance(m, Dropout)`
    picks out Dropout alone."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:  # PyTorch's check, which a NaN passes: the forward refuses it
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p while training and scales the rest by 1/(1-p); identity in eval."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of an (N, C, L) or (C, L) input with probability p while training."""

    def forward(self, input: Tensor) -> Tensor:
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of an (N, C, H, W) input with probability p while training."""

    def forward(self, input: Tensor) -> Tensor:
        return dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p while training."""

    def forward(self, input: Tensor) -> Tensor:
        return dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """alpha_dropout while training (never in place, as PyTorch's, whatever `inplace` says); identity in eval."""

    def forward(self, input: Tensor) -> Tensor:
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """feature_alpha_dropout while training: whole channels dropped as AlphaDropout drops elements."""

    def forward(self, input: Tensor) -> Tensor:
        return feature_alpha_dropout(input, self.p, self.training)
