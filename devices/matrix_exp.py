"""The matrix exponential of a batch of square matrices, by scaling and squaring with the [13/13] Padé
approximant (N. J. Higham, "The scaling and squaring method for the matrix exponential revisited", SIAM J. Matrix
Anal. Appl. 26, 2005), on numpy or CuPy arrays.

A matrix whose 1-norm exceeds THETA_13 is divided by 2**s to bring it under, its approximant is squared s times; s is
chosen per matrix of the batch. One degree for every norm: lower degrees for small norms would save a few matrix
products, at the price of more paths to get right. scipy is not a dependency, and CuPy's linalg has no expm.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DEGREE = 13
# The largest 1-norm at which the [13/13] approximant's backward error stays under double precision's unit
# roundoff (Higham 2005, table 2.3); single precision is served by it too, with room to spare.
THETA_13 = 5.371920351148152


def _pade_coefficient(m: int, j: int) -> float:
    """The coefficient of x**j in the numerator of exp's [m/m] Padé approximant (the denominator's is the same with
    the sign of odd powers flipped), scaled so that the constant term is 1."""
    f = math.factorial
    return f(2 * m - j) * f(m) / (f(2 * m) * f(j) * f(m - j))


C = tuple(_pade_coefficient(DEGREE, j) for j in range(DEGREE + 1))


def matrix_exp(xp: Any, a: Any) -> Any:
    """exp of each matrix of `a` (shape (*, n, n), floating), in a's dtype; float16 is computed in float32."""
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    if n == 1:
        return xp.exp(a)
    x = a.astype(np.float32) if a.dtype.itemsize < 4 else a
    squarings = _squarings(x)
    if squarings.any():
        x = x * xp.asarray(np.ldexp(1.0, -squarings)[..., None, None], dtype=x.dtype)
    result = _pade_13(xp, x)
    later = None
    for k in range(int(squarings.max())):
        squared = result @ result
        if (squarings > k).all():
            result = squared
        else:  # only the matrices scaled at least k + 1 times
            if later is None:
                later = xp.asarray(squarings[..., None, None])
            result = xp.where(later > k, squared, result)
    return result.astype(a.dtype, copy=False)


def _squarings(x: Any) -> np.ndarray:
    """For each matrix, on the host, the s >= 0 with 1-norm / 2**s <= THETA_13; 0 for a norm that is not finite
    (its result is NaN however it is scaled)."""
    norms = abs(x).sum(axis=-2).max(axis=-1)
    host = np.asarray(norms.get() if hasattr(norms, "get") else norms, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.ceil(np.log2(host / THETA_13))
    return np.where(np.isfinite(s) & (s > 0), s, 0).astype(np.int64)


def _pade_13(xp: Any, x: Any) -> Any:
    """The [13/13] approximant (V - U)^-1 (V + U), U holding the odd powers of x and V the even ones, from x**2,
    x**4 and x**6 with six matrix products and one solve."""
    eye = xp.eye(x.shape[-1], dtype=x.dtype)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (C[13] * x6 + C[11] * x4 + C[9] * x2) + C[7] * x6 + C[5] * x4 + C[3] * x2 + C[1] * eye)
    v = x6 @ (C[12] * x6 + C[10] * x4 + C[8] * x2) + C[6] * x6 + C[4] * x4 + C[2] * x2 + C[0] * eye
    return xp.linalg.solve(v - u, v + u)
