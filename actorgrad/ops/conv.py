"""conv1d and conv2d, and the two adjoint convolutions their gradients are made of.

The forward and both adjoints (in the input: a transposed convolution; in the weight: a convolution of the input
with the gradient) are bilinear, and each one's gradients are again these three maps, reached through the
`ops` interface (`convolution`, `convolution_input_grad`, `convolution_weight_grad`). So a recorded backward is
itself differentiable, to any order.
"""

from __future__ import annotations

from typing import Any

from actorgrad.devices.convolution import ConvGeometry, macs
from actorgrad.ops.linalg import MACS_PER_NS, TYPE_META_NAMES
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["conv1d", "conv2d"]


def _cost(data: Any, params: dict) -> float:
    return 2 * macs(data, params["weight_shape"]) / MACS_PER_NS


CONVOLUTION = Rule(
    "ConvolutionBackward0",
    (("other", "self_shape", "geometry"), lambda ops, g, w, shape, geo: ops.convolution_input_grad(g, w, shape, geo)),
    (("self", "weight_shape", "geometry"), lambda ops, g, x, shape, geo: ops.convolution_weight_grad(x, g, shape, geo)),
    (("bias_dims",), lambda ops, g, dims: ops.sum(g, dims)),
    cost=_cost,
    multithreaded=True,
)
# The adjoints' gradients, for a recorded backward; `self` is their first operand, `other` their second.
INPUT_GRAD = Rule(
    "ConvolutionBackwardBackward0",
    (("other", "geometry"), lambda ops, h, w, geo: ops.convolution(h, w, geo)),
    (("self", "weight_shape", "geometry"), lambda ops, h, g, shape, geo: ops.convolution_weight_grad(h, g, shape, geo)),
    cost=_cost,
    multithreaded=True,
)
WEIGHT_GRAD = Rule(
    "ConvolutionBackwardBackward0",
    (("other", "self_shape", "geometry"), lambda ops, h, g, shape, geo: ops.convolution_input_grad(g, h, shape, geo)),
    (("self", "geometry"), lambda ops, h, x, geo: ops.convolution(x, h, geo)),
    cost=_cost,
    multithreaded=True,
)


def _expanded(value: Any, name: str, dims: int, weight_dims: int) -> list[int]:
    """A conv parameter as PyTorch's conv{dims}d passes it on (an int fills `dims` places), then matched to the
    weight's spatial dims: a single value repeats, any other count must equal them."""
    values = [value] * dims if isinstance(value, int) else list(value)
    if not all(isinstance(v, int) for v in values):
        raise TypeError(f"conv{dims}d(): argument '{name}' must be an int or a tuple of ints, got {value!r}")
    if len(values) == 1:
        return values * weight_dims
    if len(values) != weight_dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {weight_dims} values to match "
                           f"the convolution dimensions, but got {name}={values}")
    return values


_warned_same = False  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _same_padding(dims: int, x: Any, w: Any, stride: Any, dilation: Any) -> list[tuple[int, int]]:
    """'same' pads d*(k-1) in all, the extra one after, with the checks of PyTorch's 'same' path."""
    if x.ndim != w.ndim:
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight{list(w.shape)}, but "
                           f"got {x.ndim}-dimensional input of size {list(x.shape)} instead")
    for name, value in (("stride", stride), ("dilation", dilation)):
        if not isinstance(value, int) and len(value) not in (1, dims):
            raise RuntimeError(f"{name} cannot broadcast to {dims} dimensions")
    if any(s != 1 for s in _expanded(stride, "stride", dims, dims)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(_expanded(dilation, "dilation", dims, dims), w.shape[2:])]
    global _warned_same
    if any(t % 2 for t in totals) and not _warned_same:
        _warned_same = True
        warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of the "
             "input be created")
    return [(t // 2, t - t // 2) for t in totals]


def _geometry(dims: int, x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
              groups: int) -> ConvGeometry:
    """A batched conv's arguments checked in PyTorch's order and normalised to 2-d (a 1-d conv has a unit
    height)."""
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    weight_dims = w.ndim - 2
    if weight_dims < 1:
        raise RuntimeError("weight should have at least three dimensions")
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    same = _same_padding(dims, x, w, stride, dilation) if padding == "same" else None
    stride = _expanded(stride, "stride", dims, weight_dims)
    pads = same or [(p, p) for p in _expanded(0 if padding == "valid" else padding, "padding", dims, weight_dims)]
    dilation = _expanded(dilation, "dilation", dims, weight_dims)
    _expanded([0] * dims, "output_padding", dims, weight_dims)  # PyTorch checks its transposed convs' parameter too
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if w.ndim != x.ndim:
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight {list(w.shape)}, but "
                           f"got {x.ndim}-dimensional input of size {list(x.shape)} instead")
    if w.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(w.shape)}] instead")
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[1] * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and bias.shape != (w.shape[0],):
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with {w.shape[0]} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    padded = [n + before + after for n, (before, after) in zip(x.shape[2:], pads)]
    reach = [d * (k - 1) + 1 for d, k in zip(dilation, w.shape[2:])]
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(map(str, reach))}). Kernel size can't be greater than actual input size"
        )
    if dims == 1:
        stride, pads, dilation = [1, *stride], [(0, 0), *pads], [1, *dilation]
    if 0 in dilation:  # the kernels' own check, on the 2-d parameters
        raise RuntimeError(f"dilation should be greater than zero, but got {dilation}")
    if w.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x.dtype]} but found {SCALAR_NAMES[w.dtype]}")
    return ConvGeometry(tuple(stride), tuple(pads), tuple(dilation), groups)  # type: ignore[arg-type]


def _conv(op: str, dims: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Tensor:
    common_device((input, weight) if bias is None else (input, weight, bias))
    x, w = input._data, weight._data
    if bias is not None and bias._data.dtype != x.dtype:
        if not isinstance(padding, str):
            raise RuntimeError(f"Input type ({TYPE_META_NAMES[x.dtype]}) and bias type "
                               f"({TYPE_META_NAMES[bias._data.dtype]}) should be the same")
        bias = bias.to(x.dtype)  # PyTorch's padding modes take a bias of any dtype
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got input of size: "
            f"{list(x.shape)}"
        )
    batched = input if x.ndim == dims + 2 else input.reshape(1, *x.shape)  # unbatched: a batch of one
    x = batched._data
    geo = _geometry(dims, x, w, bias, stride, padding, dilation, groups)
    data = input._device.ops.convolution(x, w, geo)
    inputs: tuple[Tensor, ...] = (batched, weight)
    if bias is not None:
        data = data + bias._data.reshape(-1, *(1,) * dims)
        inputs = (batched, weight, bias)
    bias_dims = (0, *range(2, 2 + dims))
    out = record(CONVOLUTION, data, inputs, geometry=geo, self_shape=x.shape, weight_shape=w.shape,
                 bias_dims=bias_dims)
    return out if batched is input else out.reshape(out.shape[1:])


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def recorded_convolution(input: Tensor, weight: Tensor, geo: ConvGeometry) -> Tensor:
    """The forward map without bias or checks, for gradients recorded by `TensorOps`."""
    data = input._device.ops.convolution(input._data, weight._data, geo)
    return record(CONVOLUTION, data, (input, weight), geometry=geo, self_shape=input.shape, weight_shape=weight.shape)


def recorded_input_grad(g: Tensor, weight: Tensor, input_shape: tuple[int, ...], geo: ConvGeometry) -> Tensor:
    data = g._device.ops.convolution_input_grad(g._data, weight._data, input_shape, geo)
    return record(INPUT_GRAD, data, (g, weight), geometry=geo, weight_shape=weight.shape)


def recorded_weight_grad(x: Tensor, g: Tensor, weight_shape: tuple[int, ...], geo: ConvGeometry) -> Tensor:
    data = x._device.ops.convolution_weight_grad(x._data, g._data, weight_shape, geo)
    return record(WEIGHT_GRAD, data, (x, g), geometry=geo, self_shape=x.shape, weight_shape=weight_shape)


METHODS: dict[str, Any] = {}
