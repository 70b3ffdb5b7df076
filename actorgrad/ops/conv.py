"""conv1d and conv2d, and the two adjoint convolutions their gradients are made of.

The forward and both adjoints (in the input: a transposed convolution; in the weight: a convolution of the input
with the gradient) are bilinear, and each one's gradients are again these three maps, reached through the
`ops` interface (`convolution`, `convolution_input_grad`, `convolution_weight_grad`). So a recorded backward is
itself differentiable, to any order.
"""

from __future__ import annotations

from typing import Any

from actorgrad.devices.convolution import ConvGeometry, macs
from actorgrad.ops.linalg import MACS_PER_NS
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor

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


def _pair(value: Any, dims: int, name: str, height: int = 1) -> tuple[int, int]:
    """An int or a sequence of `dims` ints, as (height, width); a 1-d conv has a unit height, so its height
    takes `height` (1 for a stride or dilation, 0 for padding)."""
    values = (value,) * dims if isinstance(value, int) else tuple(value)
    if len(values) != dims or not all(isinstance(v, int) for v in values):
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values, got {value!r}")
    return (height, *values) if dims == 1 else values  # type: ignore[return-value]


def geometry(
    op: str, kernel: tuple[int, int], stride: Any, padding: Any, dilation: Any, groups: int, dims: int
) -> ConvGeometry:
    """A conv's arguments checked and normalised; 'same' pads d*(k-1) in all, the extra one after, as PyTorch."""
    stride2, dilation2 = _pair(stride, dims, "stride"), _pair(dilation, dims, "dilation")
    if any(s <= 0 for s in stride2):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(d <= 0 for d in dilation2):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    if padding == "valid":
        pads = ((0, 0), (0, 0))
    elif padding == "same":
        if any(s != 1 for s in stride2):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation2, kernel)]
        pads = tuple((t // 2, t - t // 2) for t in totals)
    elif isinstance(padding, str):
        raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    else:
        pads = tuple((p, p) for p in _pair(padding, dims, "padding", 0))
        if any(p < 0 for p, _ in pads):
            raise RuntimeError(f"{op}: negative padding is not supported")
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    return ConvGeometry(stride2, pads, dilation2, groups)  # type: ignore[arg-type]


def _check(op: str, x: Any, w: Any, bias: Tensor | None, geo: ConvGeometry) -> None:
    dims = x.ndim - 2
    if w.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-D weight, got one of size {list(w.shape)}")
    groups = geo.groups
    if w.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size [{list(w.shape)}] instead"
        )
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to have "
            f"{w.shape[1] * groups} channels, but got {x.shape[1]} channels instead"
        )
    if bias is not None and bias.shape != (w.shape[0],):
        raise RuntimeError(f"{op}: expected bias of shape [{w.shape[0]}], got {list(bias.shape)}")
    spatial = x.shape[2:]
    kernel = w.shape[2:]
    padded = [n + sum(p) for n, p in zip(spatial, geo.padding[2 - dims:])]
    reach = [d * (k - 1) + 1 for d, k in zip(geo.dilation[2 - dims:], kernel)]
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(map(str, reach))}). Kernel size can't be greater than actual input size"
        )


def _conv(op: str, dims: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Tensor:
    common_device((input, weight) if bias is None else (input, weight, bias))
    x, w = input._data, weight._data
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got input of size: "
            f"{list(x.shape)}"
        )
    if x.ndim == dims + 1:  # unbatched: a batch of one
        out = _conv(op, dims, input.reshape(1, *x.shape), weight, bias, stride, padding, dilation, groups)
        return out.reshape(out.shape[1:])
    kernel = (1, w.shape[-1]) if dims == 1 else tuple(w.shape[-2:])
    geo = geometry(op, kernel, stride, padding, dilation, groups, dims)
    _check(op, x, w, bias, geo)
    data = input._device.ops.convolution(x, w, geo)
    inputs: tuple[Tensor, ...] = (input, weight)
    if bias is not None:
        data = data + bias._data.reshape(-1, *(1,) * dims)
        inputs = (input, weight, bias)
    bias_dims = (0, *range(2, 2 + dims))
    return record(CONVOLUTION, data, inputs, geometry=geo, self_shape=x.shape, weight_shape=w.shape,
                  bias_dims=bias_dims)


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
