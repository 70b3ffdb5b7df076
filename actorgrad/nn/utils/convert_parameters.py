"""Parameters flattened into one vector and back, as torch.nn.utils.parameters_to_vector / vector_to_parameters."""

from __future__ import annotations

from collections.abc import Iterable

from actorgrad.devices import Device
from actorgrad.ops import cat
from actorgrad.tensor import Tensor


def _check_param_device(param: Tensor, device: Device | None) -> Device:
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters, each flattened, joined into one vector (differentiable, as PyTorch's)."""
    device = None
    flat = []
    for param in parameters:
        device = _check_param_device(param, device)
        flat.append(param.view(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Give each parameter, in order, the next `numel()` elements of `vec` as its data (sharing `vec`'s memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected actorgrad.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        count = param.numel()
        param.data = vec[pointer:pointer + count].view(param.shape).data
        pointer += count
