"""`actorgrad.binomial`: counts drawn from Binomial(count, prob) element by element, with PyTorch's checks, its
values at the edges of the parameters and its output shape, drawn from an `actorgrad.Generator` (or the default
one). PyTorch has no derivative for it: a sample from parameters that require grad records a node that refuses a
backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import on_device
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, not_implemented, require_tensors, type_name
from actorgrad.ops.out_arguments import RESIZED
from actorgrad.ops.record import record, same_device
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["binomial"]

BINOMIAL = _no_derivative("binomial")


def _check_dtypes(count: Any, prob: Any) -> None:
    for name, x in (("count", count), ("prob", prob)):
        if x.dtype.kind != "f":
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{SCALAR_NAMES.get(x.dtype, x.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {SCALAR_NAMES[prob.dtype]} but expected {SCALAR_NAMES[count.dtype]}")
    if count.dtype not in (np.float32, np.float64):
        raise not_implemented("binomial_cpu", count.dtype)


def _samples(rng: np.random.Generator, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """PyTorch's values: 0 for count <= 0 or prob <= 0, count for prob >= 1, NaN for a NaN prob (or count, where
    PyTorch's sampler never returns), else a draw with floor(count) trials (PyTorch's inversion sampler counts the
    trials of a non-integer count so; its rejection sampler, used for count * prob >= 10, reads it a little
    differently) and infinity for an infinite count."""
    out = np.where(prob >= 1, count, np.nan)
    out[(count <= 0) | (prob <= 0)] = 0
    drawn = (count > 0) & (prob > 0) & (prob < 1)
    finite = drawn & np.isfinite(count)
    out[drawn & (count == np.inf)] = np.inf  # a NaN count is not drawn: it keeps np.where's NaN
    # numpy's trials are int64: counts beyond its range (2^63) are drawn as the largest int64
    trials = np.minimum(np.floor(count[finite]), float(np.iinfo(np.int64).max // 2)).astype(np.int64)
    out[finite] = rng.binomial(trials, prob[finite].astype(np.float64))
    return out


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """A sample of Binomial(count, prob) for each element of count and prob (float tensors of one dtype that
    broadcast), in their dtype; as PyTorch's, the output starts in count's shape and is resized, with its
    deprecation warning, where prob broadcasts it further."""
    require_tensors("binomial", count=count, prob=prob)
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"binomial(): argument 'generator' must be torch.Generator, not {type_name(generator)}")
    c, p = count._data, prob._data
    _check_dtypes(c, p)
    same_device(count, prob)
    try:
        shape = np.broadcast_shapes(c.shape, p.shape)
    except ValueError:
        raise broadcast_error("binomial", c.shape, p.shape) from None
    if shape != c.shape:
        warn(RESIZED.format(old=list(c.shape), new=list(shape)))
    rng = numpy_generator(generator)
    host_count = np.broadcast_to(host_array(c), shape).astype(np.float64)
    host_prob = np.broadcast_to(host_array(p), shape).astype(np.float64)
    with np.errstate(invalid="ignore"):
        draws = _samples(rng, host_count, host_prob)
    return record(BINOMIAL, on_device(count, draws.astype(c.dtype)), (count, prob))
