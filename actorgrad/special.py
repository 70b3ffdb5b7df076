"""`actorgrad.special`: PyTorch's torch.special names for the functions actorgrad has at top level."""

from __future__ import annotations

from actorgrad.ops.arithmetic import sigmoid as expit
from actorgrad.ops.reductions import log_softmax, logsumexp, softmax
from actorgrad.ops.rounding import round
from actorgrad.ops.special import erf, erfc, xlogy
from actorgrad.ops.unary import exp2, expm1, log1p, logit

__all__ = ["erf", "erfc", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "round", "softmax",
           "xlogy"]
