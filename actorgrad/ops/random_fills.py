"""Random in-place fills, PyTorch's Tensor methods: normal_, uniform_, bernoulli_, exponential_, random_,
geometric_, log_normal_ and cauchy_.

Each draws on the host from an `actorgrad.Generator` (the default one unless `generator=` is given), so one
`manual_seed` repeats a run on any device, and writes the draws as every in-place op does (`write_in_place`): views
of the storage see them, its version counter bumps, a leaf that requires grad (or a view of one) is refused unless
grad mode is off (as nn.init and optimizers run), and a tensor with history gets PyTorch's node (NormalBackward0
...), whose gradient is zeros, since the new values do not depend on the old ones.

The checks come in PyTorch's order: argument types first, then the in-place checks, then the values (std < 0,
from > to ...) and the dtype, as PyTorch's kernels check them (some only for a tensor with elements).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.ops.indexing import on_device
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES, not_implemented, type_name
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import Tensor, bool_, int64

__all__: list[str] = []

# The C++ names PyTorch's random kernels give dtypes in their errors.
C_NAMES = {
    np.dtype(t): name for t, name in (
        (np.bool_, "bool"), (np.uint8, "unsigned char"), (np.int8, "signed char"), (np.int16, "short int"),
        (np.int32, "int"), (np.int64, "long int"), (np.float16, "c10::Half"), (np.float32, "float"),
        (np.float64, "double"), (np.complex64, "c10::complex<float>"), (np.complex128, "c10::complex<double>"),
    )
}
P_IN = (
    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, "
    "please report an enhancement request to PyTorch.)"
)
RANDOM_SIGNATURES = (
    " * (*, actorgrad.Generator generator = None)\n * (int from, int to, *, actorgrad.Generator generator = None)\n"
    " * (int to, *, actorgrad.Generator generator = None)\n"
)
BERNOULLI_SIGNATURES = (
    " * (Tensor p, *, actorgrad.Generator generator = None)\n"
    " * (float p = 0.5, *, actorgrad.Generator generator = None)\n"
)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _rule(name: str, inputs: int = 1) -> Rule:
    """A fill's node: no gradient reaches the old values (or p), so each input gets zeros."""
    return Rule(name, *[((), zeros_grad)] * inputs, broadcasts=inputs > 1)


NORMAL, UNIFORM, EXPONENTIAL = _rule("NormalBackward0"), _rule("UniformBackward0"), _rule("ExponentialBackward0")
GEOMETRIC, LOG_NORMAL, CAUCHY = _rule("GeometricBackward0"), _rule("LogNormalBackward0"), _rule("CauchyBackward0")
BERNOULLI_TENSOR, BERNOULLI_NUMBER = _rule("BernoulliBackward1", 2), _rule("BernoulliBackward2")
# random_(from, to), random_(to), random_(): PyTorch's three overloads, one node name each.
RANDOM_FROM_TO, RANDOM_TO, RANDOM = _rule("RandomBackward0"), _rule("RandomBackward1"), _rule("RandomBackward2")


def _write_draws(self: Tensor, rule: Rule, draw: Callable[[Tensor], Any], operands: tuple = ()) -> Tensor:
    """Write `draw(self)` (values of `self`'s shape, drawn on the host or on `self`'s device after checking the
    arguments against `self`) into `self` in place, recorded as `rule` on `self` and `operands`."""

    def compute(s: Tensor) -> Tensor:
        with np.errstate(over="ignore"):  # a draw beyond a narrow dtype's range becomes inf, as in PyTorch
            values = on_device(s, draw(s)).astype(s.dtype, copy=False)
        return record(rule, values, (s, *operands))

    return write_in_place(self, compute, operands, False)


def below(draws: np.ndarray, low: float, high: float, dtype: np.dtype) -> np.ndarray:
    """`draws` from [low, high) cast to `dtype`, the ones the cast rounded up to `high` moved to the largest value
    of `dtype` below it, so the range stays half-open as PyTorch's (float16 rounds 1 - 2**-12 up to 1)."""
    values = draws.astype(dtype)
    if not low < high:
        return values
    top = dtype.type(high)
    if float(top) >= high:
        top = np.nextafter(top, dtype.type(-np.inf))
    return values if float(top) < low else np.minimum(values, top)  # no value of dtype lies in [low, high)


def _complex(parts: np.ndarray) -> np.ndarray:
    """Complex values from draws of shape (..., 2): real parts first."""
    return parts[..., 0] + 1j * parts[..., 1]


# -- arguments ------------------------------------------------------------------------------------------------------
def _float(op: str, name: str, position: int | None, value: Any) -> float:
    """A float argument as PyTorch's parser takes one: a real number or a 0-d tensor."""
    if isinstance(value, Tensor) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, int | float | np.integer | np.floating):
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"{op}(): argument '{name}'{where} must be float, not {type_name(value)}")
    return float(value)


def _bind(op: str, args: tuple, kwargs: dict, names: tuple[str, ...]) -> dict[str, Any]:
    """Bind `args` and `kwargs` to the parameters `names` as Python would, for the methods with a parameter named
    `from` (which a Python signature cannot name); PyTorch's errors for a wrong call."""
    if len(args) > len(names):
        raise TypeError(f"{op}() takes from 0 to {len(names)} positional arguments but {len(args)} were given")
    bound = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"{op}() got an unexpected keyword argument '{name}'")
        if name in bound:
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        bound[name] = value
    return bound


def _invalid_combination(op: str, args: tuple, kwargs: dict, signatures: str) -> TypeError:
    got = [type_name(v) for v in args] + [f"{k}={type_name(v)}" for k, v in kwargs.items()]
    return TypeError(f"{op}() received an invalid combination of arguments - got ({', '.join(got)}"
                     f"{', ' if kwargs else ''}), but expected one of:\n{signatures}")


# -- normal_, uniform_ and the other continuous ones ------------------------------------------------------------------
def _check_floating(s: Tensor, kernel: str) -> None:
    """PyTorch's kernel refusal of a tensor (with elements) that is not floating."""
    if s._data.size and s.dtype.kind != "f":
        raise not_implemented(kernel, s.dtype)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Samples from the normal distribution N(mean, std^2)."""
    mean, std = _float("normal_", "mean", 1, mean), _float("normal_", "std", 2, std)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        if s.dtype.kind == "c":  # as PyTorch: each part from N(mean, std^2 / 2), so the variance is std^2 in all
            return _complex(rng.normal(mean, std / np.sqrt(2.0), (*s.shape, 2)))
        _check_floating(s, "normal_kernel_cpu")
        return rng.normal(mean, std, s.shape)

    return _write_draws(self, NORMAL, draw)


def uniform_(self: Tensor, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Tensor:
    """`uniform_(from=0, to=1)`: samples from the uniform distribution on [from, to)."""
    bound = _bind("uniform_", args, kwargs, ("from", "to"))
    low, high = (_float("uniform_", name, i + 1 if i < len(args) else None, bound.get(name, default))
                 for i, (name, default) in enumerate((("from", 0.0), ("to", 1.0))))
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if s.dtype.kind not in "fc":
            raise not_implemented("check_uniform_bounds", s.dtype)
        if s.dtype.kind == "c" and not s._data.size:  # PyTorch checks a complex tensor's bounds in its kernel
            return np.zeros(s.shape)
        part = np.dtype(s.dtype.char.lower())  # a complex tensor's parts are each drawn from [from, to)
        top = float(np.finfo(part).max)
        for name, value in (("from", low), ("to", high)):
            if not -top <= value <= top:
                raise RuntimeError(f"{name} is out of bounds for {C_NAMES[part]}")
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low:g} > to={high:g}")
        if high - low > top:
            raise RuntimeError(
                f"uniform_ expects to-from <= std::numeric_limits<{SCALAR_NAMES[part]}>::max(), but found "
                f"to={high:g} and from={low:g} which result in to-from to exceed the limit"
            )
        if s.dtype.kind == "c":
            return _complex(below(rng.uniform(low, high, (*s.shape, 2)), low, high, part))
        return below(rng.uniform(low, high, s.shape), low, high, part)

    return _write_draws(self, UNIFORM, draw)


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Samples from the exponential distribution of rate `lambd`."""
    lambd = _float("exponential_", "lambd", 1, lambd)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
        if s._data.size and s.dtype.kind != "f":
            raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                               f"floating point but you specified {SCALAR_NAMES[s.dtype]}")
        return rng.exponential(1 / lambd, s.shape)

    return _write_draws(self, EXPONENTIAL, draw)


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Tensor:
    """Samples exp(X) with X from N(mean, std^2)."""
    mean, std = _float("log_normal_", "mean", 1, mean), _float("log_normal_", "std", 2, std)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
        _check_floating(s, "log_normal_cpu")
        return rng.lognormal(mean, std, s.shape)

    return _write_draws(self, LOG_NORMAL, draw)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Samples from the Cauchy distribution centred on `median` with scale `sigma`."""
    median, sigma = _float("cauchy_", "median", 1, median), _float("cauchy_", "sigma", 2, sigma)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
        if s.dtype.kind != "f":
            raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a "
                               f"floating point but you specified {C_NAMES[s.dtype]}")
        return median + sigma * rng.standard_cauchy(s.shape)

    return _write_draws(self, CAUCHY, draw)


# -- bernoulli_, geometric_ -----------------------------------------------------------------------------------------
def bernoulli_(self: Tensor, p: Tensor | float = 0.5, *, generator: Generator | None = None) -> Tensor:
    """1 with probability `p` (a number, or a tensor of probabilities broadcasting to this tensor's shape), else 0;
    any dtype."""
    rng = numpy_generator(generator)
    if not isinstance(p, Tensor):
        if not isinstance(p, int | float | np.integer | np.floating):
            raise _invalid_combination("bernoulli_", (p,), {}, BERNOULLI_SIGNATURES)
        p = float(p)

        def draw(s: Tensor) -> np.ndarray:
            if not 0.0 <= p <= 1.0:
                raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
            if s._data.size and s.dtype.kind == "c":
                raise not_implemented("bernoulli_scalar_cpu_", s.dtype)
            return rng.random(s.shape) < p

        return _write_draws(self, BERNOULLI_NUMBER, draw)
    if p._device is not self._device:  # from another device, as PyTorch: its gradient goes back there
        p = p.to(self._device)

    def draw_each(s: Tensor) -> Any:
        if not s._data.size:  # as PyTorch's kernel, nothing is checked for a tensor without elements
            return np.zeros(s.shape)
        if s.dtype.kind == "c":
            raise not_implemented("bernoulli_tensor_cpu_self_", s.dtype)
        probabilities = p.detach().expand(s.shape)._data  # PyTorch's error for a p that does not expand
        if p.dtype.kind != "f":
            raise not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
        if not bool(((probabilities >= 0) & (probabilities <= 1)).all()):
            raise RuntimeError(P_IN)
        return on_device(s, rng.random(s.shape)) < probabilities

    return _write_draws(self, BERNOULLI_TENSOR, draw_each, (p,))


def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """The number of Bernoulli(p) trials up to and including the first success (1, 2, ...)."""
    p = _float("geometric_", "p", 1, p)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if not 0.0 < p < 1.0:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        if s._data.size and (s.dtype == bool_ or s.dtype.kind == "c"):
            raise not_implemented("geometric_cpu", s.dtype)
        return rng.geometric(p, s.shape)

    return _write_draws(self, GEOMETRIC, draw)


# -- random_ --------------------------------------------------------------------------------------------------------
def _int_argument(value: Any) -> int | None:
    """An int argument of random_ (an int or a 0-d integer tensor), None for anything else."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu":
        value = value.item()
    if not isinstance(value, int | np.integer) or isinstance(value, bool):
        return None
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    return int(value)


def _check_from_before_to(low: int, high: int) -> None:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")


def random_range(dtype: np.dtype, low: int, high: int | None) -> tuple[int, int]:
    """The inclusive range PyTorch's random_(low, high) draws `dtype` integers from, checked as PyTorch checks it:
    [low, high), or up to the dtype's top when `high` is None (its max, 1 for bool, 2**digits for a float dtype,
    all of int64 from its min)."""
    name = C_NAMES[dtype]
    floating = dtype.kind == "f"
    if high is not None:
        _check_from_before_to(low, high)
        top = high - 1
    elif low == INT64_MIN:  # PyTorch's full 64-bit range
        if dtype == bool_:
            raise not_implemented("random_full_64_bits_range_kernel_cpu", dtype)
        if dtype not in (int64, np.float32, np.float64):
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
        return INT64_MIN, INT64_MAX
    elif floating:
        top = 1 << (np.finfo(dtype).nmant + 1)
    else:
        top = int(np.iinfo(dtype).max) if dtype != bool_ else 1
    info = np.finfo(dtype) if floating else np.iinfo(dtype) if dtype != bool_ else None
    lowest, highest = (info.min, info.max) if info is not None else (0, 1)
    for what, value in (("from", low), ("to - 1", top)):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if floating and high is None and low >= top:
        raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to "
                           f"dtype, but got from={low} > to_inc={top}")
    if floating:
        digits = np.finfo(dtype).nmant + 1
        for what, value in (("from", low), ("to - 1", top)):  # warned at random_'s caller, 7 frames up
            if not -(1 << digits) <= value <= 1 << digits:
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations {name} can "
                    "support discrete uniform distribution only within this range. This warning will become an "
                    "error in version 1.7 release, please fix the code in advance", stacklevel=7,
                )
    return low, top


def random_(self: Tensor, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Tensor:
    """Integers drawn uniformly: `random_(to)` from [0, to), `random_(from, to)` from [from, to) (`to=None`: up to
    the dtype's top, see `random_range`), `random_()` from [0, top]."""
    if len(args) > 2:
        raise TypeError(f"random_() takes 2 positional arguments but {len(args)} were given")
    only_to = len(args) == 1 and "to" not in kwargs
    bound = _bind("random_", args, kwargs, ("to",) if only_to else ("from", "to"))
    low, high = (_int_argument(bound[name]) if name in bound else None for name in ("from", "to"))
    if set(bound) == {"to"} and high is not None:
        rule, low = RANDOM_TO, 0
    elif set(bound) == {"from", "to"} and low is not None and (high is not None or bound["to"] is None):
        rule = RANDOM_FROM_TO
    elif not bound:
        rule, low = RANDOM, 0
    else:
        raise _invalid_combination("random_", args, kwargs, RANDOM_SIGNATURES)
    rng = numpy_generator(generator)

    def draw(s: Tensor) -> np.ndarray:
        if s.dtype.kind == "c":  # refused by the first of PyTorch's checks that looks at the dtype
            if high is not None:
                _check_from_before_to(low, high)
            if rule is not RANDOM and (high is not None or low != INT64_MIN):
                where = "check_random_bounds" if high is not None else "random_from_to_impl"
                raise RuntimeError(f"{where} handles only integral, floating-point and boolean types")
            if s._data.size:
                raise not_implemented("random_kernel_cpu" if rule is RANDOM else "random_full_64_bits_range_kernel_cpu",
                                      s.dtype)
            return np.zeros(s.shape)
        first, last = random_range(s.dtype, low, high)
        return rng.integers(first, last, s.shape, dtype=np.int64, endpoint=True)

    return _write_draws(self, rule, draw)


METHODS = {
    "normal_": normal_, "uniform_": uniform_, "bernoulli_": bernoulli_, "exponential_": exponential_,
    "random_": random_, "geometric_": geometric_, "log_normal_": log_normal_, "cauchy_": cauchy_,
}
