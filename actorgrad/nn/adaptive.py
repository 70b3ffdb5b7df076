"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"): the frequent classes
(the shortlist, below cutoffs[0]) get a row of the head each; each rarer cluster of classes gets one head row, and
its own small projection (a tail) to its classes' logits. A class's log-probability is its head log-softmax entry,
plus, for a tail class, its cluster's log-softmax entry. Composed of Tensor ops, as PyTorch's module is.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.creation import zeros
from actorgrad.nn import functional as F
from actorgrad.nn.container import ModuleList, Sequential
from actorgrad.nn.layers import Linear
from actorgrad.nn.module import Module
from actorgrad.ops.joining import cat
from actorgrad.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])

BAD_CUTOFFS = (
    "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is "
    "between 1 and n_classes-1"
)


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) gives (each target's log-probability, their mean negative: the loss); `log_prob`
    gives every class's, `predict` the most likely class."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Any, div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError(BAD_CUTOFFS)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            width = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, width, bias=False, **factory)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for into_hidden, hidden_to_output in self.tail:
            into_hidden.reset_parameters()
            hidden_to_output.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"actorgrad.Size({list(input_.shape)})")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"actorgrad.Size({list(input_.shape)})")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        classes = target.cpu().numpy()
        head_index = np.zeros(classes.shape, np.int64)  # each row's entry of the head: its class or cluster
        output = zeros(classes.shape[0], dtype=input.dtype, device=input.device)
        used = 0
        for i, (low, high) in enumerate(zip([0] + self.cutoffs, self.cutoffs)):
            rows = np.flatnonzero((classes >= low) & (classes < high))
            if rows.size == 0:
                continue
            used += rows.size
            if i == 0:
                head_index[rows] = classes[rows]
                continue
            head_index[rows] = self.shortlist_size + i - 1
            cluster = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            local = cluster.gather(1, Tensor(cluster._device.asarray(classes[rows, None] - low),
                                             device=cluster._device))
            output = output.index_add(0, Tensor(output._device.asarray(rows), device=output._device),
                                      local.squeeze(1))
        if used != classes.shape[0]:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{classes.min()}, {classes.max()}] were found. ")
        head = F.log_softmax(self.head(input), dim=1)
        picked = Tensor(head._device.asarray(head_index[:, None]), device=head._device)
        output = output + head.gather(1, picked).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Every class's log-probability: the shortlist's from the head, each cluster's from its tail plus its
        head entry."""
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """(N, n_classes): the log-probability of every class for each row of `input`."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: the head's argmax when it is a shortlist class, else the argmax of
        the full log-probabilities."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        if bool(outside.all()):
            return self._full_log_prob(input, head_output).argmax(1)
        output[outside] = self._full_log_prob(input[outside], head_output[outside]).argmax(1)
        return output

