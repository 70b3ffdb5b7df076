"""`actorgrad.autograd`: the sync mirrors of the engine entry points, where PyTorch has them, and the tools to
inspect, hook and debug the backward graph (`graph`, anomaly mode, gradcheck).

For scripts. Inside a trio app, await `actorgrad.backward(...)` / `actorgrad.grad(...)` instead.
"""

from actorgrad.autograd import forward_ad, functional, grad_mode, graph, profiler
from actorgrad.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from actorgrad.autograd.function import Function, FunctionCtx, InplaceFunction, once_differentiable
from actorgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from actorgrad.autograd.multithreading import is_multithreading_enabled, set_multithreading_enabled
from actorgrad.autograd.variable import Variable
from actorgrad.engine import backward_sync as backward
from actorgrad.engine import grad_sync as grad
from actorgrad.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from actorgrad.node import GraphRoot, Node

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "GraphRoot", "InplaceFunction", "Node", "Variable", "backward",
    "detect_anomaly",
    "forward_ad", "functional", "grad", "grad_mode", "gradcheck", "gradgradcheck", "graph",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled", "is_multithreading_enabled", "once_differentiable", "profiler", "set_detect_anomaly",
    "set_multithreading_enabled", "enable_grad", "inference_mode", "no_grad",
    "set_grad_enabled",
]
