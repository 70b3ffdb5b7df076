"""Random tensors: rand, randn, randint and their `*_like` forms, randperm, and the samplers normal, bernoulli,
multinomial and poisson, drawn from an `actorgrad.Generator` (or the default one) with PyTorch's arguments, dtype
checks and errors. A sample drawn from tensor parameters records PyTorch's node, whose gradient is zeros (its
new values are not a differentiable function of the parameters)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.creation import like_dtype
from actorgrad.creation_args import check_device, check_layout, checked_shape, dtype_or, is_int, leaf_on, size_argument
from actorgrad.default_dtype import default_float
from actorgrad.memory_formats import formatted, preserve_format
from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import on_device
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, not_implemented, type_name
from actorgrad.ops.random_fills import P_IN, random_range
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.random import Generator, numpy_generator
from actorgrad.random_out import bernoulli_out, factory_out, multinomial_out, normal_out
from actorgrad.tensor import Tensor, bool_, float16, float32, int64

__all__ = [
    "bernoulli", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like", "randn",
    "randn_like", "randperm",
]


def _float_dtype(kernel: str, dtype: Any, kinds: str = "f", shape: tuple[int, ...] = (1,)) -> np.dtype:
    """The dtype of a random float tensor of `shape`, refused (as by PyTorch's `kernel`) unless of `kinds`
    (floating, or also complex for rand and randn); the normal kernel checks it only where it runs, for elements."""
    resolved = dtype_or(dtype, default_float())
    if resolved.kind not in kinds and (kernel != "normal_kernel_cpu" or math.prod(shape)):
        raise not_implemented(kernel, resolved)
    return resolved


# -- draws ------------------------------------------------------------------------------------------------------
# The scale of each part of a complex draw: PyTorch's complex randn has variance 1 in all, 1/2 in each part.
_PART_SCALE = {"random": 1.0, "standard_normal": math.sqrt(0.5)}


def _draw(sample: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """numpy samples float32 and float64 directly; other float dtypes are drawn in float64 and cast. A complex
    dtype gets independent real and imaginary parts, each drawn as its real dtype."""
    if dtype.kind == "c":
        part = np.dtype(dtype.char.lower())
        parts = _draw(sample, (*shape, 2), part) * part.type(_PART_SCALE[sample.__name__])
        return parts.view(dtype)[..., 0]
    if dtype in (np.float32, np.float64):
        return sample(shape, dtype=dtype)
    if sample.__name__ == "random":  # on the dtype's grid, as PyTorch: a float64 draw could round up to 1
        steps = float(1 << (np.finfo(dtype).nmant + 1))
        return (np.floor(sample(shape) * steps) / steps).astype(dtype)
    return sample(shape, dtype=np.float64).astype(dtype)


@factory_out("rand")
def rand(
    *args: Any, size: Sequence[int] | None = None, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """Uniform samples from [0, 1)."""
    check_device(device)
    check_layout("rand", layout, pin_memory)
    rng = numpy_generator(generator)
    shape = size_argument("rand", args, size)
    return leaf_on(_draw(rng.random, shape, _float_dtype("check_uniform_bounds", dtype, "fc")), requires_grad, device)


@factory_out("randn")
def randn(
    *args: Any, size: Sequence[int] | None = None, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """Samples from the standard normal distribution."""
    check_device(device)
    check_layout("randn", layout, pin_memory)
    rng = numpy_generator(generator)
    shape = size_argument("randn", args, size)
    draws = _draw(rng.standard_normal, shape, _float_dtype("normal_kernel_cpu", dtype, "fc", shape))
    return leaf_on(draws, requires_grad, device)


def _random_ints(
    low: Any, high: Any, shape: tuple[int, ...], generator: Generator | None, dtype: np.dtype
) -> np.ndarray:
    """Integers drawn uniformly from [low, high) as `dtype`, which must hold both ends, as random_ checks (and
    warns of a float dtype's ends beyond its exact integers)."""
    if dtype.kind == "c" and low < high:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    first, last = random_range(dtype, low, high)
    return numpy_generator(generator).integers(first, last, shape, dtype=np.int64, endpoint=True).astype(dtype)


def _one_int(value: Any) -> Any:
    """A one-element integer tensor as the int PyTorch's parser reads it for an int argument; anything else as is."""
    if isinstance(value, Tensor) and value.dtype.kind in "iu" and value.numel() == 1:
        return value.item()
    return value


def _int_bound(op: str, value: Any, name: str, position: int) -> int:
    value = _one_int(value)
    if not is_int(value):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}")
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return int(value)


@factory_out("randint")
def randint(
    low: int | None = None,
    high: Any = None,
    size: Sequence[int] | None = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
    layout: Any = None,
    pin_memory: bool | None = False,
) -> Tensor:
    """Integers drawn uniformly from [low, high): `randint(high, size)` or `randint(low, high, size)`."""
    check_device(device)
    check_layout("randint", layout, pin_memory)
    positions = {"low": 1, "high": 2, "size": 3}
    if size is None and high is not None and low is not None:  # randint(high, size)
        low, high, size = 0, low, high
        positions = {"low": 0, "high": 1, "size": 2}
    elif high is None and low is not None:  # randint(high, size=...)
        low, high = 0, low
    if low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(high, size) or randint(low, high, size)")
    if not isinstance(size, Sequence | np.ndarray):
        raise TypeError(f"randint(): argument 'size' (position {positions['size']}) must be tuple of ints, not "
                        f"{type(size).__name__}")
    low, high = (_int_bound("randint", value, name, positions[name]) for name, value in (("low", low), ("high", high)))
    shape = checked_shape("randint", (size,), positions["size"])
    return leaf_on(_random_ints(low, high, shape, generator, dtype_or(dtype, int64)), requires_grad, device)


def randint_like(
    input: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None, memory_format: Any = preserve_format, layout: Any = None,
    pin_memory: bool | None = False,
) -> Tensor:
    """A tensor of `input`'s shape (and dtype) of integers drawn from [low, high): `randint_like(input, high)` or
    `randint_like(input, low, high)`."""
    check_device(device)
    check_layout("randint_like", layout, pin_memory)
    if high is None:
        low, high = 0, low
    resolved = like_dtype("randint_like", input, dtype)
    low, high = _int_bound("randint_like", low, "low", 2), _int_bound("randint_like", high, "high", 3)
    draws = _random_ints(low, high, input.shape, generator, resolved)
    return formatted("randint_like", leaf_on(draws, requires_grad, device or input.device), memory_format, input)


def _random_like(op: str, sample: str, kernel: str, input: Tensor, generator: Generator | None, dtype: Any,
                 requires_grad: bool, device: Any, memory_format: Any, layout: Any, pin_memory: Any) -> Tensor:
    """A tensor of `input`'s shape drawn by the numpy Generator method `sample` (PyTorch's `kernel`)."""
    check_device(device)
    check_layout(op, layout, pin_memory)
    resolved = _float_dtype(kernel, like_dtype(op, input, dtype), "fc", input.shape)
    draws = _draw(getattr(numpy_generator(generator), sample), input.shape, resolved)
    return formatted(op, leaf_on(draws, requires_grad, device or input.device), memory_format, input)


def rand_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None, memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    return _random_like("rand_like", "random", "check_uniform_bounds", input, generator, dtype, requires_grad, device,
                        memory_format, layout, pin_memory)


def randn_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None, memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    return _random_like(
        "randn_like", "standard_normal", "normal_kernel_cpu", input, generator, dtype, requires_grad, device,
        memory_format, layout, pin_memory,
    )


# -- randperm -------------------------------------------------------------------------------------------------
# The C++ integer names PyTorch's overflow error gives, and the largest n its float dtypes hold every index of.
_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t"}
_FLOAT_LIMITS = {float16: ("Half", 2049, "2049"), float32: ("Float", (1 << 24) + 1, "2^24+1")}


@factory_out("randperm")
def randperm(
    n: int, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """A random permutation of 0, ..., n - 1 (int64 by default)."""
    check_device(device)
    check_layout("randperm", layout, pin_memory)
    n = _one_int(n)
    if not is_int(n):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type_name(n)}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    resolved = dtype_or(dtype, int64)
    if resolved == bool_ or resolved.kind == "c":
        raise not_implemented("randperm", resolved)
    if resolved.name in _INT_NAMES and n - 1 > np.iinfo(resolved).max:
        raise RuntimeError(f"value cannot be converted to type {_INT_NAMES[resolved.name]} without overflow")
    if resolved in _FLOAT_LIMITS and n > _FLOAT_LIMITS[resolved][1]:
        name, _, limit = _FLOAT_LIMITS[resolved]
        raise RuntimeError(f"n cannot be greater than {limit} for {name} type.")
    return leaf_on(numpy_generator(generator).permutation(n).astype(resolved), requires_grad, device)


# -- normal ---------------------------------------------------------------------------------------------------
# PyTorch's nodes for normal(Tensor mean, float std), (float mean, Tensor std) and (Tensor, Tensor).
NORMAL_TENSOR_NUMBER, NUMBER_NORMAL_TENSOR = Rule("NormalBackward1", ((), zeros_grad)), Rule(
    "NormalBackward2", ((), zeros_grad)
)
NORMAL_TENSORS = Rule("NormalBackward3", ((), zeros_grad), ((), zeros_grad), broadcasts=True)
NORMAL_SIGNATURES = (
    " * (Tensor mean, Tensor std, *, actorgrad.Generator generator = None)\n"
    " * (Tensor mean, float std = 1, *, actorgrad.Generator generator = None)\n"
    " * (float mean, Tensor std, *, actorgrad.Generator generator = None)\n"
    " * (float mean, float std, tuple of ints size, *, actorgrad.Generator generator = None, actorgrad.dtype dtype "
    "= None, actorgrad.device device = None, bool requires_grad = False)\n"
)


def _number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _noise_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype normal draws its standard noise in before scaling: float64, or complex128 for a complex result (as
    PyTorch, each part of a complex sample gets half the variance)."""
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


@normal_out
def normal(
    mean: Any, std: Any = 1.0, size: Sequence[int] | None = None, *, generator: Generator | None = None,
    dtype: Any = None, requires_grad: bool = False, device: Any = None,
) -> Tensor:
    """Samples from N(mean, std**2): `mean` and `std` tensors (broadcast; the result in the dtype of the first
    tensor), one of them a number, or both numbers with a `size`."""
    rng = numpy_generator(generator)
    if _number(mean) and _number(std):
        if size is None:
            given = ", ".join(type_name(v) for v in (mean, std))
            raise TypeError(f"normal() received an invalid combination of arguments - got ({given}), but expected one "
                            f"of:\n{NORMAL_SIGNATURES}")
        check_device(device)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = size_argument("normal", (size,), None)
        resolved = _float_dtype("normal_kernel_cpu", dtype, "fc", shape)
        draws = float(mean) + float(std) * _draw(rng.standard_normal, shape, _noise_dtype(resolved))
        return leaf_on(draws.astype(resolved), requires_grad, device)
    tensors = tuple(v for v in (mean, std) if isinstance(v, Tensor))
    if len(tensors) + sum(_number(v) for v in (mean, std)) != 2 or size is not None:
        given = ", ".join(type_name(v) for v in (mean, std, *(() if size is None else (size,))))
        raise TypeError(f"normal() received an invalid combination of arguments - got ({given}), but expected one of:"
                        f"\n{NORMAL_SIGNATURES}")
    like = tensors[0]
    if isinstance(std, Tensor) and std.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if isinstance(std, Tensor):
        if not bool((std._data >= 0).all()):  # NaN fails too
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    m, s = (v._data if isinstance(v, Tensor) else float(v) for v in (mean, std))
    try:
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    except ValueError:
        raise broadcast_error("normal", np.shape(m), np.shape(s)) from None
    _float_dtype("normal_kernel_cpu", like.dtype, "fc", shape)
    draws = m + s * on_device(like, _draw(rng.standard_normal, shape, _noise_dtype(like.dtype)))
    rule = NORMAL_TENSORS if len(tensors) == 2 else NORMAL_TENSOR_NUMBER if tensors[0] is mean else NUMBER_NORMAL_TENSOR
    return record(rule, draws.astype(like.dtype, copy=False), tensors)


# -- bernoulli, multinomial, poisson --------------------------------------------------------------------------
BERNOULLI = Rule("BernoulliBackward0", ((), zeros_grad))
BERNOULLI_NUMBER = _no_derivative("bernoulli")  # PyTorch records bernoulli(input, p) without a derivative
POISSON = Rule("PoissonBackward0", ((), zeros_grad))


@bernoulli_out
def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
    """1 with probability input (each element), or with probability `p` when given (in input's shape and dtype),
    else 0."""
    rng = numpy_generator(generator)
    x = input._data
    if p is None:
        if not x.size:  # PyTorch's kernel, which checks the dtype, does not run
            return record(BERNOULLI, x.copy(), (input,))
        if x.dtype.kind != "f":
            raise not_implemented("bernoulli_tensor_cpu_self_" if x.dtype.kind == "c" else "bernoulli_tensor_cpu_p_",
                                  x.dtype)
        if not bool(((x >= 0) & (x <= 1)).all()):
            raise RuntimeError(P_IN)
        return record(BERNOULLI, (on_device(input, rng.random(x.shape)) < x).astype(x.dtype), (input,))
    if isinstance(p, Tensor) and p.ndim == 0:  # PyTorch's parser reads a 0-d tensor as a float
        p = p.item()
    if not _number(p):
        raise TypeError(f"bernoulli(): argument 'p' (position 2) must be float, not {type_name(p)}")
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    if x.size and x.dtype.kind == "c":
        raise not_implemented("bernoulli_scalar_cpu_", x.dtype)
    return record(BERNOULLI_NUMBER, on_device(input, (rng.random(x.shape) < p).astype(x.dtype)), (input,))


def _refuse_probabilities(first_bad: float, sampled_each: bool) -> None:
    """PyTorch's refusal of a weight that is negative, infinite or NaN: its sampling kernel (with replacement, more
    than one sample) names the first such entry, its up-front check names them all."""
    if not sampled_each:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    entry = "= infinity or NaN" if first_bad == np.inf else "< 0"  # the kernel asks `>= 0` first: NaN fails it
    raise RuntimeError(f"invalid multinomial distribution (encountering probability entry {entry})")


@multinomial_out
def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor:
    """num_samples category indices drawn from each row of input's (unnormalized, non-negative) weights; without
    replacement, each category at most once (PyTorch's draw: the largest weight / Exp(1) keys first)."""
    check_flags("multinomial", replacement=replacement)
    x = input._data
    if x.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if x.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{SCALAR_NAMES.get(x.dtype, x.dtype)}")
    if not is_int(num_samples):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not {type_name(num_samples)}")
    if x.shape[-1] > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > x.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = host_array(x).reshape(math.prod(x.shape[:-1]), x.shape[-1]).astype(np.float64)
    if rows.size:
        bad = ~((rows >= 0) & (rows < np.inf))  # NaN too
        if bool(bad.any()):
            _refuse_probabilities(rows[bad][0], replacement and num_samples > 1)
        if bool((rows.sum(-1) == 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    elif rows.shape[0]:  # rows of no categories: drawn with replacement, as PyTorch has no other check for them
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = numpy_generator(generator)
    if replacement:  # inverse transform sampling on each row's cumulative distribution
        cumulative = np.cumsum(rows, -1)
        cumulative /= cumulative[:, -1:]
        draws = rng.random((rows.shape[0], num_samples))
        picked = np.minimum((draws[:, :, None] >= cumulative[:, None, :]).sum(-1), rows.shape[-1] - 1)
    else:
        with np.errstate(divide="ignore"):
            keys = rows / rng.exponential(size=rows.shape)
        picked = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    shape = (num_samples,) if x.ndim == 1 else (x.shape[0], num_samples)
    return Tensor(on_device(input, picked.reshape(shape).astype(int64)), device=input._device)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Counts drawn from the Poisson distribution of each element's rate, in input's dtype."""
    x = input._data
    if x.dtype.kind != "f":
        raise not_implemented("poisson_cpu", x.dtype)
    if x.size and not bool((x >= 0).all()):  # NaN fails too
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = numpy_generator(generator).poisson(host_array(x).astype(np.float64))  # a Python int for a 0-d rate
    return record(POISSON, on_device(input, np.asarray(draws, x.dtype)), (input,))
