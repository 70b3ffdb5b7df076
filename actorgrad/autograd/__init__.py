"""`actorgrad.autograd`: the sync mirrors of the engine entry points, where PyTorch has them.

For scripts. Inside a trio app, await `actorgrad.backward(...)` / `actorgrad.grad(...)` instead.
"""

from actorgrad.autograd import forward_ad, functional
from actorgrad.autograd.function import Function, FunctionCtx, once_differentiable
from actorgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from actorgrad.engine import backward_sync as backward
from actorgrad.engine import grad_sync as grad
from actorgrad.node import GraphRoot, Node

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "GraphRoot", "Node", "backward", "forward_ad", "functional", "grad",
    "gradcheck", "gradgradcheck", "once_differentiable",
]
