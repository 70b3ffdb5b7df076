"""The `torch.*` forms of ops that `torch.nn.functional` also has, where the two take their arguments
differently: exported as `actorgrad.<name>` with the top-level form's arguments, so that code written against
`torch.batch_norm(...)` computes what it computes in PyTorch instead of reading its arguments in another order.

- `torch.embedding(weight, indices, ...)` takes the weight first; a negative padding_idx means none.
- `torch.batch_norm` takes weight and bias before the running statistics, and every argument; it runs the kernel
  without nn.functional's Python checks (a batch of one, eps).
- `torch.layer_norm` and `torch.group_norm` take a trailing cudnn flag; `torch.dropout(input, p, train)` names its
  flag `train` and refuses a bad p with ATen's RuntimeError.
- `torch.binary_cross_entropy_with_logits` takes weight and pos_weight positionally and the reduction as an int
  (1 mean, 2 sum, any other none; 0 is the default).
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops import binary_cross_entropies, embeddings, normalization, regularization
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.tensor import Tensor

__all__ = ["batch_norm", "binary_cross_entropy_with_logits", "dropout", "embedding", "group_norm", "layer_norm"]
METHODS: dict[str, Any] = {}
REDUCTIONS = {1: "mean", 2: "sum"}  # any other int reduces nothing, as in PyTorch


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    return embeddings.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                                scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """`cudnn_enabled` picks a CUDA backend in PyTorch and changes no result."""
    if training.__class__ is not bool:
        raise not_bool("batch_norm", "training", training, 6)
    return normalization.batch_norm_kernel(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input: Tensor, normalized_shape: tuple[int, ...] | list[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    return normalization.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    return normalization.group_norm(input, num_groups, weight, bias, eps)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return regularization.dropout(input, p, train)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int = 0) -> Tensor:
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(
            f"binary_cross_entropy_with_logits(): argument 'reduction' must be int, not {type(reduction).__name__}"
        )
    return binary_cross_entropies.binary_cross_entropy_with_logits(
        input, target, weight, reduction=REDUCTIONS.get(reduction, "none"), pos_weight=pos_weight
    )
