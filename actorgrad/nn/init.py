"""Parameter initialisation, in place and without recording, drawing from actorgrad's generators.

Each function fills `tensor`'s array with values drawn from `generator` (the default one unless given), so
`actorgrad.manual_seed` makes a model's initial weights repeatable. The formulas are PyTorch's.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from actorgrad.devices import cpu, is_writeable
from actorgrad.grad_mode import no_grad
from actorgrad.ops import random_fills
from actorgrad.ops.indexing import fill_value
from actorgrad.ops.operands import not_implemented
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "orthogonal_", "sparse_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]

_LINEAR_GAINS = (
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid",
)


# True inside `skipping_init()`: every function here then leaves its tensor as it is (nn.utils.skip_init).
_skipping: ContextVar[bool] = ContextVar("skipping_init", default=False)


@contextmanager
def skipping_init() -> Iterator[None]:
    """Within it, the initialisers leave tensors uninitialised: what `nn.utils.skip_init` builds modules in, since
    actorgrad has no meta device to build them on."""
    token = _skipping.set(True)
    try:
        yield
    finally:
        _skipping.reset(token)


def _fill(tensor: Tensor, values: Any) -> Tensor:
    """Write `values` (a number, or an array drawn on the host) into the tensor's own array, on its device (a
    fresh array where the held one is read-only, which only a numpy array can be)."""
    if _skipping.get():
        return tensor
    if isinstance(values, np.ndarray) and tensor._device is not cpu:
        values = tensor._device.asarray(values)
    if is_writeable(tensor._data):
        tensor._data[...] = values
        bump_version(tensor)
    else:
        tensor._data = np.array(np.broadcast_to(values, tensor.shape), dtype=tensor.dtype)
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of weights feeding `nonlinearity` (an int 1 where PyTorch returns one)."""
    if nonlinearity in _LINEAR_GAINS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, int | float) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # found empirically, as PyTorch's
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(a, b): `tensor.uniform_(a, b)` without recording, as PyTorch's."""
    if _skipping.get():
        return tensor
    with no_grad():
        return random_fills.uniform_(tensor, a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(mean, std^2): `tensor.normal_(mean, std)` without recording, as PyTorch's."""
    if _skipping.get():
        return tensor
    with no_grad():
        return random_fills.normal_(tensor, mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """N(mean, std^2) restricted to [a, b]. Where [a, b] holds over 30% of the mass, normal draws outside it are
    drawn again; otherwise (a narrow or far-off interval, where that could run for ever) uniform draws on [a, b]
    are kept with probability exp(-(x - mean)^2 / (2 std^2)) relative to the density's peak in [a, b], as
    PyTorch's."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
            "incorrect.", stacklevel=2,
        )
    _check_normal_dtype(tensor)
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    if tensor.dtype.kind == "c":  # PyTorch compares the draws with the bounds, which complex numbers refuse
        raise not_implemented("lt_cpu" if mass > 0.3 else "gt_cpu", tensor.dtype)
    draw = numpy_generator(generator)
    if mass > 0.3:
        def propose(count: int | tuple[int, ...]) -> np.ndarray:
            return draw.normal(mean, std, count)

        def accept(x: np.ndarray) -> np.ndarray:
            return (x >= a) & (x <= b)
    else:
        peak = min(max(mean, a), b)

        def propose(count: int | tuple[int, ...]) -> np.ndarray:
            return draw.uniform(a, b, count)

        def accept(x: np.ndarray) -> np.ndarray:
            log_ratio = -0.5 * (((x - mean) / std) ** 2 - ((peak - mean) / std) ** 2)
            return np.log(draw.uniform(0.0, 1.0, x.shape)) <= log_ratio
    values = propose(tensor.numel())  # flat, as indexing by the rejected mask needs an array (a 0-d one too)
    rejected = ~accept(values)
    while rejected.any():
        retry = propose(int(rejected.sum()))
        values[rejected] = retry
        rejected[rejected] = ~accept(retry)
    return _fill(tensor, values.reshape(tensor.shape))


def _normal_cdf(z: float) -> float:
    return (1.0 + math.erf(z / math.sqrt(2.0))) / 2.0


def _check_normal_dtype(tensor: Tensor) -> None:
    """PyTorch's refusal to draw normal values into an integer or bool tensor (with elements)."""
    if tensor.numel() and tensor.dtype.kind in "biu":
        raise not_implemented("normal_kernel_cpu", tensor.dtype)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """`val` everywhere, checked against the tensor's dtype as `fill_` checks it (PyTorch's constant_ is a fill_):
    300 into uint8 or a complex number into a real tensor is refused rather than wrapped or cast."""
    if not isinstance(val, Tensor):
        return _fill(tensor, fill_value(val, tensor._data.dtype)[()])
    if val.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {val.ndim} dimensions.")
    return _fill(tensor, val.detach().cpu().numpy())  # on the host: _fill moves it to the tensor's device


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (ones on the main diagonal) in a 2-D tensor."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta in a 3-, 4- or 5-D convolution weight: each group's first min(out, in) output channels copy
    their input channel (a one at the kernel's centre), so the convolution passes as many channels through as it
    can."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = tensor.shape[0] // groups
    centre = tuple(size // 2 for size in tensor.shape[2:])
    values = np.zeros(tensor.shape)
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d, *centre)] = 1
    return _fill(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-D tensor drawn from N(0, std^2) with ceil(sparsity * rows) random elements of each column set to zero
    (Martens, 2010). Unlike PyTorch, which picks the zeros from the global generator, `generator` picks them too,
    so a seeded generator repeats the whole tensor."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _check_normal_dtype(tensor)
    rows, cols = tensor.shape
    draw = numpy_generator(generator)
    values = draw.normal(0, std, (rows, cols))
    zeros_per_column = math.ceil(sparsity * rows)
    for col in range(cols):
        values[draw.permutation(rows)[:zeros_per_column], col] = 0
    return _fill(tensor, values)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix times `gain`, trailing dimensions flattened (Saxe et al., 2013); the Q of a
    Gaussian matrix's QR, its signs fixed by R's diagonal so that it is uniformly distributed."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _check_normal_dtype(tensor)
    if tensor.dtype == np.float16:  # PyTorch's QR has no float16 kernel
        raise not_implemented("geqrf_cpu", tensor.dtype)
    if tensor.dtype.kind == "c":  # PyTorch fixes the signs with torch.sign, which refuses complex numbers
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = numpy_generator(generator).normal(0, 1, (rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tensor.shape))


def _kaiming(tensor: Tensor, a: float, mode: str, nonlinearity: str, uniform: bool,
             generator: Generator | None) -> Tensor:
    """He et al. (2015): U(-bound, bound) with bound = gain * sqrt(3 / fan), or N(0, std^2) with
    std = gain / sqrt(fan); a zero-element tensor is left as it is, with PyTorch's warning."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return tensor
    fan, gain = _calculate_correct_fan(tensor, mode), calculate_gain(nonlinearity, a)
    if uniform:
        bound = gain * math.sqrt(3.0 / fan)
        return uniform_(tensor, -bound, bound, generator)
    return normal_(tensor, 0, gain / math.sqrt(fan), generator)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan), He et al. (2015)."""
    return _kaiming(tensor, a, mode, nonlinearity, True, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan), He et al. (2015)."""
    return _kaiming(tensor, a, mode, nonlinearity, False, generator)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)), Glorot and Bengio (2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)), Glorot and Bengio (2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def fan_in_bound(weight: Tensor) -> float:
    """1/sqrt(fan_in): the bound PyTorch's Linear and Conv layers draw their bias from (0 for an empty fan)."""
    fan_in, _ = _calculate_fan_in_and_fan_out(weight)
    return 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def _deprecated(init: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The old name without the trailing underscore, kept as PyTorch keeps it: it warns, then does the same."""
    old, new = init.__name__[:-1], init.__name__

    @functools.wraps(init)
    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning, stacklevel=2)
        return init(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated: use `{new}`."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
