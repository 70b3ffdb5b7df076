"""layer_norm and batch_norm, one gradient rule for both; group_norm is that rule over (N, groups, rest) plus a
per-channel affine step, instance_norm batch_norm over (1, N * C, rest), and normalize a division by a norm;
rms_norm and local_response_norm are composed of Tensor ops, as PyTorch's.

The formulas rebuild the normalised input from `self` with ops-interface steps (means over the normalised dims),
so a recorded backward carries x's dependence through the statistics and differentiates again. In evaluation,
batch_norm uses fixed running statistics: then it is affine in x. A float16 input is normalised, and its gradients
computed, in float32, as PyTorch's kernels do: a float16 sum of squares overflows past 65504.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.loss_arguments import refuse_grad
from actorgrad.ops.operands import SCALAR_NAMES, int_tuple
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.reductions import FLOAT32, accumulation_dtype
from actorgrad.ops.selection import clamp
from actorgrad.ops.shape import pad
from actorgrad.ops.statistics import norm
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

# batch_norm, group_norm and layer_norm at the top level are aten_forms's; torch.instance_norm takes its arguments
# in another order
__all__ = ["normalize", "rms_norm"]


def _normalized(ops: Any, x: Any, dims: tuple, count: int, eps: float, stats: Any) -> tuple[Any, Any]:
    """(x normalised, 1/std): from x's own statistics over `dims`, or from fixed (mean, 1/std) arrays."""
    if stats is not None:
        mean, rstd = stats
        return (x - mean) * rstd, rstd
    centred = x - ops.sum(x, dims, keepdim=True) / count
    rstd = (ops.sum(centred * centred, dims, keepdim=True) / count + eps) ** -0.5
    return centred * rstd, rstd


def _wide(ops: Any, value: Any) -> Any:
    """A float16 value in float32, where the normalisation's arithmetic runs; any other as it is."""
    return ops.cast(value, FLOAT32) if value is not None and value.dtype == np.float16 else value


def _input_grad(ops: Any, g: Any, x: Any, weight: Any, dims: tuple, count: int, eps: float, stats: Any,
                weight_shape: tuple) -> Any:
    dtype = g.dtype
    g, x, weight = _wide(ops, g), _wide(ops, x), _wide(ops, weight)
    xhat, rstd = _normalized(ops, x, dims, count, eps, stats)
    gh = g if weight is None else g * ops.reshape(weight, weight_shape)
    if stats is not None:
        return ops.cast(gh * rstd, dtype)
    mean_gh = ops.sum(gh, dims, keepdim=True) / count
    mean_ghx = ops.sum(gh * xhat, dims, keepdim=True) / count
    return ops.cast((gh - mean_gh - xhat * mean_ghx) * rstd, dtype)


def _weight_grad(ops: Any, g: Any, x: Any, dims: tuple, count: int, eps: float, stats: Any, weight_shape: tuple,
                 param_shape: tuple, param_dtype: Any) -> Any:
    xhat, _ = _normalized(ops, _wide(ops, x), dims, count, eps, stats)
    return ops.cast(ops.reshape(ops.sum_to(_wide(ops, g) * xhat, weight_shape), param_shape), param_dtype)


def _bias_grad(ops: Any, g: Any, weight_shape: tuple, param_shape: tuple, param_dtype: Any) -> Any:
    return ops.cast(ops.reshape(ops.sum_to(_wide(ops, g), weight_shape), param_shape), param_dtype)


_INPUT = (("self", "weight", "dims", "count", "eps", "stats", "weight_shape"), _input_grad)
_WEIGHT = (("self", "dims", "count", "eps", "stats", "weight_shape", "param_shape", "param_dtype"), _weight_grad)
_BIAS = (("weight_shape", "param_shape", "param_dtype"), _bias_grad)


def _rules(name: str) -> dict:
    """One rule per (has weight, has bias): the inputs are x, then whichever parameters were given."""
    return {(w, b): Rule(name, _INPUT, *([_WEIGHT] if w else []), *([_BIAS] if b else []))
            for w in (False, True) for b in (False, True)}


LAYER_NORM = _rules("NativeLayerNormBackward0")
BATCH_NORM = _rules("NativeBatchNormBackward0")


def _normalize(rules: dict, input: Tensor, weight: Tensor | None, bias: Tensor | None, dims: tuple,
               weight_shape: tuple, eps: float, stats: Any) -> Tensor:
    x = input._data
    wide = accumulation_dtype(x.dtype)
    count = math.prod(x.shape[d] for d in dims)
    with np.errstate(invalid="ignore", divide="ignore"):  # statistics over no elements: nan, silently, as in PyTorch
        xhat, _ = _normalized(input._device.ops, x if wide is None else x.astype(wide), dims, count, eps, stats)
    data = xhat
    if weight is not None:
        data = data * weight._data.reshape(weight_shape)
    if bias is not None:
        data = data + bias._data.reshape(weight_shape)
    inputs = (input, *[t for t in (weight, bias) if t is not None])
    param = weight if weight is not None else bias
    return record(rules[weight is not None, bias is not None], data.astype(x.dtype, copy=False), inputs, weight=weight,
                  dims=dims, count=count, eps=eps, stats=stats, weight_shape=weight_shape,
                  param_shape=() if param is None else param.shape, param_dtype=None if param is None else param.dtype)


def _check_batch(values: int, size: Any) -> None:
    """PyTorch's refusal of batch statistics over one value per channel (it reports `size` as given)."""
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(size)}")


def _check_floating(kernel: str, input: Tensor) -> None:
    """PyTorch's CPU kernels normalise floating-point inputs only."""
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES.get(input.dtype, input.dtype)}\'')


def _check_momentum(op: str, momentum: Any) -> None:
    """The functional forms take a float momentum; None (a module's cumulative average) is the module's to turn
    into a factor."""
    if momentum is None:
        raise TypeError(f"{op}(): argument 'momentum' (position 7) must be float, not NoneType")


def _check_param_dtypes(input: Tensor, params: tuple[Tensor | None, ...]) -> None:
    """PyTorch's CPU rule: parameters and running statistics share the input's dtype, except that a float16
    input may take float32 ones (when the first one given is float32, all must be)."""
    given = [t.dtype for t in params if t is not None]
    dtype = input.dtype
    if given and given[0] != dtype:  # PyTorch's "mixed" case, decided by the first one given
        if any(d != np.float32 for d in given):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if dtype != np.float16:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return
    for d in given:
        if d != dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_NAMES[dtype]} but found {SCALAR_NAMES.get(d, d)}")


def layer_norm(input: Tensor, normalized_shape: tuple[int, ...] | list[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(layer_norm, "layer_norm", input, normalized_shape, weight, bias, eps)
    shape = int_tuple(normalized_shape, "layer_norm", "normalized_shape", 2)
    common_device(tuple(t for t in (input, weight, bias) if t is not None))
    _check_param_dtypes(input, (weight, bias))
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    x = input._data
    if x.shape[x.ndim - len(shape):] != shape or len(shape) > x.ndim:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
            f"but got input of size{list(x.shape)}"
        )
    _check_floating("LayerNormKernelImpl", input)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    return _normalize(LAYER_NORM, input, weight, bias, dims, shape, eps, None)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Each sample's channels in num_groups groups, each group normalised over its channels and positions, then
    scaled and shifted per channel."""
    if autocast_state.get() is not None:
        return autocast_call(group_norm, "group_norm", input, num_groups, weight, bias, eps)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    shape = input.shape
    size = [shape[0] * shape[1] // num_groups, num_groups, *shape[2:]]
    _check_batch(size[0] * math.prod(size[2:]), size)  # PyTorch counts all but the groups dim
    common_device(tuple(t for t in (input, weight, bias) if t is not None))
    channels = shape[1]
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != (channels,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(shape)}")
    _check_param_dtypes(input, (weight, bias))
    _check_floating("GroupNormKernelImpl", input)
    grouped = input.reshape(shape[0], num_groups, math.prod(shape[1:]) // num_groups)
    out = _normalize(LAYER_NORM, grouped, None, None, (2,), (), eps, None).reshape(shape)
    per_channel = (channels, *(1,) * (len(shape) - 2))
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out.to(input.dtype)  # float32 parameters of a float16 input give a float16 result, as PyTorch's


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """input divided by its p-norm over `dim`, the norm kept at eps or more; composed of tensor ops as PyTorch's."""
    if autocast_state.get() is not None and out is None:
        return autocast_call(normalize, "normalize", input, p, dim, eps, out)
    if input.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES.get(input.dtype, input.dtype)}")
    ndim = max(input.ndim, 1)  # a 0-d tensor takes dim 0 or -1, as one of one element
    if isinstance(dim, int) and not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    flat = input if input.ndim else input.reshape(1)
    quotient = (flat / clamp(norm(flat, p, dim, keepdim=True), eps)).reshape(input.shape)
    return quotient if out is None else out.copy_(quotient)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """In training, normalises with the batch's statistics and updates the running ones in place (the variance
    unbiased), as PyTorch; in evaluation, normalises with the running statistics. nn.functional's form: PyTorch's
    Python checks (more than one value per channel, a positive eps in training, a non-negative one in eval) come
    before the kernel's, which torch.batch_norm and instance_norm run without them."""
    if training.__class__ is not bool:
        raise not_bool("batch_norm", "training", training, 6)
    shape = input.shape
    if training:  # a 0-d input has no dim 0 to count
        _check_batch(shape[0] * math.prod(shape[2:]), shape)
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return batch_norm_kernel(input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm_kernel(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None,
                      bias: Tensor | None, training: bool, momentum: float, eps: float) -> Tensor:
    """PyTorch's batch_norm kernel and its checks."""
    shape = input.shape
    _check_momentum("batch_norm", momentum)
    common_device(tuple(t for t in (input, running_mean, running_var, weight, bias) if t is not None))
    channels = shape[1] if len(shape) > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
        if t is None and not training and name.startswith("running"):
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    if len(shape) < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if input.numel():  # PyTorch's kernel, and with it these checks, runs on no values of an empty input
        refuse_grad("native_batch_norm", "running_mean", running_mean)  # updated in place, never differentiated
        refuse_grad("native_batch_norm", "running_var", running_var)
        if training and (running_mean is None) != (running_var is None):
            raise ValueError("running_mean and running_var must either both be None or neither be None")
        _check_floating("batch_norm", input)
    _check_param_dtypes(input, (weight, bias, running_mean, running_var))
    x = input._data
    wide = accumulation_dtype(x.dtype) or x.dtype
    dims = (0, *range(2, x.ndim))
    weight_shape = (1, channels, *(1,) * (x.ndim - 2))
    if training:
        count = math.prod(x.shape[d] for d in dims)
        if count and (running_mean is not None or running_var is not None):  # no values: PyTorch keeps them
            xw = x.astype(wide, copy=False)
            mean, var = xw.mean(axis=dims), xw.var(axis=dims)
            if running_mean is not None:
                running_mean._data[...] = (1 - momentum) * running_mean._data + momentum * mean
                bump_version(running_mean)
            if running_var is not None:
                running_var._data[...] = (1 - momentum) * running_var._data + momentum * var * count / (count - 1)
                bump_version(running_var)
        return _normalize(BATCH_NORM, input, weight, bias, dims, weight_shape, eps, None)
    mean = running_mean._data.reshape(weight_shape).astype(wide)
    rstd = ((running_var._data.astype(wide, copy=False) + eps) ** -0.5).reshape(weight_shape)
    return _normalize(BATCH_NORM, input, weight, bias, dims, weight_shape, eps, (mean, rstd))


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each sample's channels normalised over their positions: batch_norm of the input seen as one sample of
    N * C channels, with the per-channel parameters and running statistics repeated N times (those updated are
    averaged over the samples back into the running buffers), as PyTorch computes it."""
    if use_input_stats.__class__ is not bool:
        raise not_bool("instance_norm", "use_input_stats", use_input_stats, 6)
    shape = input.shape
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(shape)}")
    _check_momentum("instance_norm", momentum)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if input.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    samples = shape[0]
    repeated = [None if t is None else t.repeat(samples) for t in (running_mean, running_var, weight, bias)]
    out = batch_norm_kernel(input.reshape(1, samples * shape[1], *shape[2:]), *repeated, use_input_stats, momentum,
                            eps)
    if use_input_stats and samples:  # no samples: batch_norm updated nothing, the buffers stay as they are
        for buffer, updated in zip((running_mean, running_var), repeated[:2], strict=True):
            if buffer is not None:
                buffer._data[...] = updated._data.reshape(samples, -1).mean(axis=0)
                bump_version(buffer)
    return out.reshape(shape)


def _check_normalized_shape(input: Tensor, shape: tuple[int, ...]) -> None:
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if len(shape) > input.ndim:
        raise ValueError(f"Input tensor must have at least {len(shape)} dimensions, but got {input.ndim}")


def rms_norm(input: Tensor, normalized_shape: tuple[int, ...] | list[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times `weight`; eps None is the
    machine epsilon of the computing dtype (float32 for a float16 input, which is computed in float32)."""
    shape = int_tuple(normalized_shape, "rms_norm", "normalized_shape", 2)
    _check_normalized_shape(input, shape)
    if weight is not None and weight.shape != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if input.shape[input.ndim - len(shape):] != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if input.dtype.kind != "f":
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{SCALAR_NAMES.get(input.dtype, input.dtype)}'")
    x = input.float() if input.dtype == np.float16 else input
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = (x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()).to(input.dtype)
    return out if weight is None else (out * weight).to(input.dtype)  # the input's dtype whatever the weight's


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta, the window zero-padded at the
    ends (size // 2 channels before, (size - 1) // 2 after), as PyTorch's average pooling of them."""
    if input.ndim < 3:  # PyTorch's text, with the spaces of its line continuation
        raise ValueError(f"Expected 3D or higher dimensionality {' ' * 25}input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    kind = input.dtype.kind
    if (kind in "bc" or kind in "iu" and input.dtype != np.int64
            or input.dtype == np.float16 and input.ndim > 3 and input._device.type != "cuda"):
        # PyTorch pools the squares with avg_pool2d (3-D input) or avg_pool3d (more), whose CPU kernels refuse these
        kernel = "avg_pool2d" if input.ndim == 3 else "avg_pool3d_out_frame"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[input.dtype]}'")
    channels = input.shape[1]
    square = input * input
    if square.dtype == np.float16:  # PyTorch's average pooling sums float16 in float32, and averages back to float16
        square = square.float()
    square = pad(square, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2))
    window = square[:, :channels]
    for shift in range(1, size):
        window = window + square[:, shift:shift + channels]
    return input / ((window / size).to(input.dtype) * alpha + k) ** beta


METHODS: dict[str, Any] = {}
