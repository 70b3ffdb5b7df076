"""conv1d, conv2d and conv3d, the transposed convolutions, and the two adjoint convolutions their gradients are made of.

The forward and both adjoints (in the input: a transposed convolution; in the weight: a convolution of the input
with the gradient) are bilinear, and each one's gradients are again these three maps, reached through the
`ops` interface (`convolution`, `convolution_input_grad`, `convolution_weight_grad`). So a recorded backward is
itself differentiable, to any order. A transposed convolution is the input adjoint itself, so its gradients are
the convolution (in its input) and the weight adjoint (in its weight).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices.convolution import ConvGeometry, macs
from actorgrad.ops.linalg import MACS_PER_NS, TYPE_META_NAMES
from actorgrad.ops.operands import SCALAR_NAMES, category, result_type, type_name
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn_once

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


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
    (("self", "other_shape", "geometry"), lambda ops, h, x, shape, geo: _cut_convolution(ops, x, h, shape, geo)),
    cost=_cost,
    multithreaded=True,
)


def _cut_convolution(ops: Any, x: Any, w: Any, shape: tuple[int, ...], geo: ConvGeometry) -> Any:
    """The convolution as a gradient of the operand of an adjoint that has `shape`: a transposed convolution's
    output_padding of at least the stride (allowed below the dilation) leaves windows past it, cut off here."""
    y = ops.convolution(x, w, geo)
    return y if y.shape == shape else ops.index(y, tuple(slice(0, n) for n in shape), None)


# A transposed convolution is the input adjoint; PyTorch names its node as the convolution's.
TRANSPOSED = Rule(
    "ConvolutionBackward0",
    (("other", "self_shape", "geometry"), _cut_convolution),
    (("self", "weight_shape", "geometry"), lambda ops, h, x, shape, geo: ops.convolution_weight_grad(h, x, shape, geo)),
    (("bias_dims",), lambda ops, g, dims: ops.sum(g, dims)),
    cost=_cost,
    multithreaded=True,
)


def integer_value(value: Any) -> int | None:
    """An integer as PyTorch's argument parser takes one (Python's or numpy's, or a one-element integer tensor;
    never a bool), as an int; None for anything else."""
    if isinstance(value, Tensor) and value.numel() == 1 and value.dtype.kind in "iu":
        value = value.item()
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        return None
    return int(value)


def int_argument(op: str, value: Any, name: str, position: int | None = None) -> int | list[int]:
    """An `int[]` argument as PyTorch's parser reads it: one integer (see integer_value) or a sequence of them, as an
    int or a list of ints; anything else is refused with PyTorch's TypeError (`position` named when given)."""
    one = integer_value(value)
    if one is not None:
        return one
    head = f"{op}(): argument '{name}'{'' if position is None else f' (position {position})'} must be tuple of ints"
    if not isinstance(value, tuple | list):
        raise TypeError(f"{head}, not {type_name(value)}")
    values = []
    for i, v in enumerate(value):
        one = integer_value(v)
        if one is None:
            raise TypeError(f"{head}, but found element of type {type_name(v)} at pos {i}")
        values.append(one)
    return values


def _expanded(value: Any, name: str, dims: int, weight_dims: int, op: str = "") -> list[int]:
    """A conv parameter as PyTorch's `op` (conv{dims}d by default) passes it on (an int fills `dims` places),
    then matched to the weight's spatial dims: a single value repeats, any other count must equal them."""
    values = int_argument(op or f"conv{dims}d", value, name)
    if isinstance(values, int):
        values = [values] * dims
    if len(values) == 1:
        return values * weight_dims
    if len(values) != weight_dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {weight_dims} values to match "
                           f"the convolution dimensions, but got {name}={values}")
    return values


def _same_padding(dims: int, x: Any, w: Any, stride: Any, dilation: Any) -> list[tuple[int, int]]:
    """'same' pads d*(k-1) in all, the extra one after, with the checks of PyTorch's 'same' path."""
    if x.ndim != w.ndim:
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight{list(w.shape)}, but "
                           f"got {x.ndim}-dimensional input of size {list(x.shape)} instead")
    for name, value in (("stride", stride), ("dilation", dilation)):
        if not isinstance(int_argument(f"conv{dims}d", value, name), int) and len(value) not in (1, dims):
            raise RuntimeError(f"{name} cannot broadcast to {dims} dimensions")
    if any(s != 1 for s in _expanded(stride, "stride", dims, dims)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(_expanded(dilation, "dilation", dims, dims), w.shape[2:])]
    if any(t % 2 for t in totals):
        warn_once("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of "
                  "the input be created")
    return [(t // 2, t - t // 2) for t in totals]


def _geometry(dims: int, x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int,
              output_padding: Any = None) -> ConvGeometry:
    """A batched conv's arguments checked in PyTorch's order, a 1-d conv's normalised to 2-d (a unit height). With
    an `output_padding`, a transposed conv's: the geometry of the conv whose input adjoint it is."""
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    weight_dims = w.ndim - 2
    if weight_dims < 1:
        raise RuntimeError("weight should have at least three dimensions")
    transposed = output_padding is not None
    op = f"conv_transpose{dims}d" if transposed else ""
    if integer_value(groups) is None:
        raise TypeError(f"{op or f'conv{dims}d'}(): argument 'groups' must be int, not {type_name(groups)}")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    same = _same_padding(dims, x, w, stride, dilation) if padding == "same" else None
    stride = _expanded(stride, "stride", dims, weight_dims, op)
    pads = same or [(p, p) for p in _expanded(0 if padding == "valid" else padding, "padding", dims, weight_dims, op)]
    dilation = _expanded(dilation, "dilation", dims, weight_dims, op)
    # PyTorch checks output_padding for plain convs too
    extra = _expanded([0] * dims if output_padding is None else output_padding, "output_padding", dims, weight_dims, op)
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in extra):
        raise RuntimeError("negative output_padding is not supported")
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
    if transposed:
        return _transposed_geometry(dims, x, w, bias, stride, pads, dilation, groups, extra)
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
    if 0 in dilation:  # the kernels' own check (a 1-d conv's on its 2-d parameters)
        raise RuntimeError(f"dilation should be greater than zero, but got {dilation}")
    if x.dtype == np.bool_:  # the kernel's dtype dispatch comes before its weight check
        kernel = "compute_columns3d" if dims == 3 else "slow_conv2d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if w.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x.dtype]} but found {SCALAR_NAMES[w.dtype]}")
    return ConvGeometry(tuple(stride), tuple(pads), tuple(dilation), groups)  # type: ignore[arg-type]


def _per_dim(what: str, values: list[int], sep: str = " ") -> str:
    """Values named per dim as PyTorch's slow kernels print them: 'stride_height: 2 stride_width: 1'."""
    return sep.join(f"{what}_{name}: {v}" for name, v in zip(("depth", "height", "width")[-len(values):], values))


def _transposed_geometry(dims: int, x: Any, w: Any, bias: Any, stride: list[int], pads: list[tuple[int, int]],
                         dilation: list[int], groups: int, extra: list[int]) -> ConvGeometry:
    """The rest of a transposed conv's checks, as PyTorch's slow kernels make them (on 2-d parameters for a 1-d
    conv). The forward conv's padding after the input shrinks by the output_padding (never below zero: the adjoint
    then runs windows past its input, which its gradient cuts off)."""
    out_channels = w.shape[1] * groups
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[0]} channels, but got {x.shape[1]} channels instead")
    if bias is not None and bias.shape != (out_channels,):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias to be 1-dimensional "
                           f"with {out_channels} elements, but got bias of size {list(bias.shape)} instead")
    if dims == 1:
        stride, pads, dilation, extra = [1, *stride], [(0, 0), *pads], [1, *dilation], [0, *extra]
    sizes, kernel = (x.shape[2:], w.shape[2:]) if dims > 1 else ((1, *x.shape[2:]), (1, *w.shape[2:]))
    if 0 in dilation:
        raise RuntimeError(f"dilation should be greater than zero, but got {_per_dim('dilation', dilation, ', ')}")
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"{_per_dim('output_padding', extra)} {_per_dim('stride', stride)} {_per_dim('dilation', dilation)}")
    out = [(n - 1) * s - 2 * p + d * (k - 1) + e + 1
           for n, s, (p, _), d, k, e in zip(sizes, stride, pads, dilation, kernel, extra)]
    if min(out) <= 0:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sizes))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, out))}). Output size is too small")
    if x.dtype == np.bool_ or x.dtype.kind in "iu" and x.dtype != np.int64:
        raise NotImplementedError(
            f"\"slow_conv_transpose{len(sizes)}d_out_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    if w.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x.dtype]} but found {SCALAR_NAMES[w.dtype]}")
    pads = [(p, max(p - e, 0)) for (p, _), e in zip(pads, extra)]
    return ConvGeometry(tuple(stride), tuple(pads), tuple(dilation), groups)  # type: ignore[arg-type]


def _conv(op: str, dims: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Tensor:
    common_device((input, weight) if bias is None else (input, weight, bias))
    x, w = input._data, weight._data
    if bias is not None and bias._data.dtype != x.dtype:
        if not isinstance(padding, str):
            raise RuntimeError(f"Input type ({TYPE_META_NAMES.get(x.dtype, x.dtype)}) and bias type "
                               f"({TYPE_META_NAMES.get(bias._data.dtype, bias._data.dtype)}) should be the same")
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
    if autocast_state.get() is not None:
        return autocast_call(conv1d, "conv1d", input, weight, bias, stride, padding, dilation, groups)
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(conv2d, "conv2d", input, weight, bias, stride, padding, dilation, groups)
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(conv3d, "conv3d", input, weight, bias, stride, padding, dilation, groups)
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _check_transposed_bias(dims: int, input: Tensor, bias: Tensor) -> None:
    """PyTorch's transposed convolutions take a bias of another dtype only in 1-d and 2-d, and only into a float32,
    float64 or integer output that can hold the sum (their kernel adds the bias in place)."""
    x, b = input._data.dtype, bias._data.dtype
    if x == np.float16 or x.kind == "c":
        raise RuntimeError(f"Input type ({TYPE_META_NAMES.get(x, x)}) and bias type ({TYPE_META_NAMES.get(b, b)}) "
                           "should be the same")
    if dims == 3:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x]} but found {SCALAR_NAMES.get(b, b)}")
    promoted = result_type(input, bias)
    if category(promoted) > category(x):
        raise RuntimeError(f"result type {SCALAR_NAMES[promoted]} can't be cast to the desired output type "
                           f"{SCALAR_NAMES[x]}")


def _conv_transpose(dims: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                    output_padding: Any, groups: int, dilation: Any) -> Tensor:
    op = f"conv_transpose{dims}d"
    common_device((input, weight) if bias is None else (input, weight, bias))
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    x, w = input._data, weight._data
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got input "
                           f"of size: {list(x.shape)}")
    batched = input if x.ndim == dims + 2 else input.reshape(1, *x.shape)
    x = batched._data
    geo = _geometry(dims, x, w, bias, stride, padding, dilation, groups, output_padding)
    if bias is not None and bias._data.dtype != x.dtype:
        _check_transposed_bias(dims, input, bias)
    extra = _expanded(output_padding, "output_padding", dims, dims, op)
    sizes = zip(x.shape[2:], geo.stride[-dims:], geo.padding[-dims:], geo.dilation[-dims:], w.shape[2:], extra)
    shape = (x.shape[0], w.shape[1] * geo.groups, *[(n - 1) * s - 2 * p + d * (k - 1) + e + 1
                                                for n, s, (p, _), d, k, e in sizes])
    data = input._device.ops.convolution_input_grad(x, w, shape, geo)
    inputs: tuple[Tensor, ...] = (batched, weight)
    if bias is not None:
        data = data + bias._data.astype(x.dtype, copy=False).reshape(-1, *(1,) * dims)  # PyTorch casts the bias
        inputs = (batched, weight, bias)
    out = record(TRANSPOSED, data, inputs, geometry=geo, self_shape=x.shape, weight_shape=w.shape,
                 bias_dims=(0, *range(2, 2 + dims)))
    return out if batched is input else out.reshape(out.shape[1:])


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The adjoint of conv1d in its input; weight of shape (in_channels, out_channels / groups, kW)."""
    if autocast_state.get() is not None:
        return autocast_call(
            conv_transpose1d, "conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups,
            dilation
        )
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The adjoint of conv2d in its input; weight of shape (in_channels, out_channels / groups, kH, kW)."""
    if autocast_state.get() is not None:
        return autocast_call(
            conv_transpose2d, "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups,
            dilation
        )
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The adjoint of conv3d in its input; weight of shape (in_channels, out_channels / groups, kD, kH, kW)."""
    if autocast_state.get() is not None:
        return autocast_call(
            conv_transpose3d, "conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups,
            dilation
        )
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


def recorded_convolution(input: Tensor, weight: Tensor, geo: ConvGeometry) -> Tensor:
    """The forward map without bias or checks, for gradients recorded by `TensorOps`."""
    data = input._device.ops.convolution(input._data, weight._data, geo)
    return record(CONVOLUTION, data, (input, weight), geometry=geo, self_shape=input.shape, weight_shape=weight.shape)


def recorded_input_grad(g: Tensor, weight: Tensor, input_shape: tuple[int, ...], geo: ConvGeometry) -> Tensor:
    data = g._device.ops.convolution_input_grad(g._data, weight._data, input_shape, geo)
    return record(INPUT_GRAD, data, (g, weight), geometry=geo, weight_shape=weight.shape)


def recorded_weight_grad(x: Tensor, g: Tensor, weight_shape: tuple[int, ...], geo: ConvGeometry) -> Tensor:
    data = x._device.ops.convolution_weight_grad(x._data, g._data, weight_shape, geo)
    return record(WEIGHT_GRAD, data, (x, g), geometry=geo, self_shape=x.shape, other_shape=g.shape,
                  weight_shape=weight_shape)


METHODS: dict[str, Any] = {}
