"""torch.special's orthogonal polynomials P_n(x): chebyshev_polynomial_t/u/v/w, their shifted forms,
hermite_polynomial_h/he, laguerre_polynomial_l and legendre_polynomial_p.

Either of x and n may be a Python number; they broadcast and meet in PyTorch's promoted floating dtype, which the
kernel (`actorgrad.devices.orthogonal_polynomials`) computes in, as PyTorch's does: n is truncated there, and its
special cases (0 for n < 0, the values at the ends, Hermite's NaN past a degree) are PyTorch's. As in PyTorch the
results have no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import orthogonal_polynomials
from actorgrad.ops.operands import broadcast_error, data_as, floating, kernel_operands, not_implemented, result_type
from actorgrad.ops.record import common_device
from actorgrad.tensor import Tensor, float16

# public name: (kernel family, shifted)
POLYNOMIALS = {
    "chebyshev_polynomial_t": ("chebyshev_t", False), "chebyshev_polynomial_u": ("chebyshev_u", False),
    "chebyshev_polynomial_v": ("chebyshev_v", False), "chebyshev_polynomial_w": ("chebyshev_w", False),
    "shifted_chebyshev_polynomial_t": ("chebyshev_t", True), "shifted_chebyshev_polynomial_u": ("chebyshev_u", True),
    "shifted_chebyshev_polynomial_v": ("chebyshev_v", True), "shifted_chebyshev_polynomial_w": ("chebyshev_w", True),
    "hermite_polynomial_h": ("hermite_h", False), "hermite_polynomial_he": ("hermite_he", False),
    "laguerre_polynomial_l": ("laguerre_l", False), "legendre_polynomial_p": ("legendre_p", False),
}
__all__ = sorted(POLYNOMIALS)


def _invalid_combination(name: str, x: Any, n: Any) -> TypeError:
    return TypeError(
        f"special_{name}() received an invalid combination of arguments - got ({type(x).__name__}, "
        f"{type(n).__name__}), but expected one of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n"
        " * (Number x, Tensor n, *, Tensor out = None)\n * (Tensor x, Number n, *, Tensor out = None)\n"
    )


def _polynomial(name: str, x: Tensor | float, n: Tensor | float) -> Tensor:
    numbers = [not isinstance(v, Tensor) for v in (x, n)]
    if all(numbers) or any(not isinstance(v, Tensor | int | float) for v in (x, n)):
        raise _invalid_combination(name, x, n)
    dtype = floating(result_type(x, n))
    device = common_device(tuple(v for v in (x, n) if isinstance(v, Tensor)))
    if dtype == float16:
        raise not_implemented(f"{name}_{device.type}", dtype)
    xs, ns = kernel_operands(*(np.asarray(v, dtype) if number else data_as(v, dtype)
                               for v, number in zip((x, n), numbers)))
    try:
        np.broadcast_shapes(np.shape(xs), np.shape(ns))
    except ValueError:
        raise broadcast_error(f"special_{name}", np.shape(xs), np.shape(ns)) from None
    kind, shifted = POLYNOMIALS[name]
    data = orthogonal_polynomials.polynomial(device.xp, kind, xs, ns, dtype, shifted=shifted)
    return Tensor(data, device=device)


def chebyshev_polynomial_t(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev's polynomial of the first kind, T_n(cos t) = cos(n t)."""
    return _polynomial("chebyshev_polynomial_t", x, n)


def chebyshev_polynomial_u(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev's polynomial of the second kind, U_n(cos t) = sin((n + 1) t) / sin(t)."""
    return _polynomial("chebyshev_polynomial_u", x, n)


def chebyshev_polynomial_v(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev's polynomial of the third kind, V_n(cos t) = cos((n + 1/2) t) / cos(t / 2)."""
    return _polynomial("chebyshev_polynomial_v", x, n)


def chebyshev_polynomial_w(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev's polynomial of the fourth kind, W_n(cos t) = sin((n + 1/2) t) / sin(t / 2)."""
    return _polynomial("chebyshev_polynomial_w", x, n)


def shifted_chebyshev_polynomial_t(x: Tensor | float, n: Tensor | float) -> Tensor:
    """T_n(2x - 1), Chebyshev's first kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_t", x, n)


def shifted_chebyshev_polynomial_u(x: Tensor | float, n: Tensor | float) -> Tensor:
    """U_n(2x - 1), Chebyshev's second kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_u", x, n)


def shifted_chebyshev_polynomial_v(x: Tensor | float, n: Tensor | float) -> Tensor:
    """V_n(2x - 1), Chebyshev's third kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_v", x, n)


def shifted_chebyshev_polynomial_w(x: Tensor | float, n: Tensor | float) -> Tensor:
    """W_n(2x - 1), Chebyshev's fourth kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_w", x, n)


def hermite_polynomial_h(x: Tensor | float, n: Tensor | float) -> Tensor:
    """The physicists' Hermite polynomial H_n, orthogonal under exp(-x**2); NaN past degree 512
    (128 in float32), as PyTorch's."""
    return _polynomial("hermite_polynomial_h", x, n)


def hermite_polynomial_he(x: Tensor | float, n: Tensor | float) -> Tensor:
    """The probabilists' Hermite polynomial He_n, orthogonal under exp(-x**2 / 2); NaN past
    degree 512 (128 in float32), as PyTorch's."""
    return _polynomial("hermite_polynomial_he", x, n)


def laguerre_polynomial_l(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Laguerre's polynomial L_n, orthogonal under exp(-x) on [0, inf)."""
    return _polynomial("laguerre_polynomial_l", x, n)


def legendre_polynomial_p(x: Tensor | float, n: Tensor | float) -> Tensor:
    """Legendre's polynomial P_n, orthogonal on [-1, 1]."""
    return _polynomial("legendre_polynomial_p", x, n)
