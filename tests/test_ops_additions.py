"""Ops added for parity with PyTorch's commonly used functions (rounding, clamp_min/max, trigonometric and
hyperbolic functions, logit, nan_to_num, atan2, lerp, addcmul/addcdiv, xlogy, logaddexp, sorting, running
products and extremes, aminmax, addmm/addmv/baddbmm, diagonals, tensordot/inner, masked_select and the searches,
and the ops spelled through others: take_along_dim, diff, movedim, narrow, select, tile, new_*).

Values are checked against independent numpy computations and closed forms; dtypes and the gradients at ties,
zeros and domain edges are PyTorch 2.13's; gradients and second derivatives elsewhere are checked against finite
differences in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

nan, inf = float("nan"), float("inf")
X = ag.tensor([[-1.5, 0.25, 2.5], [3.75, -0.5, 1.0]], dtype=ag.float64)
P = ag.tensor([[0.2, 0.5, 0.9], [0.05, 0.7, 0.999]], dtype=ag.float64)  # in (0, 1)
Y = ag.tensor([[0.5, -2.0, 1.5], [1.0, 3.0, -0.25]], dtype=ag.float64)
V = ag.tensor([3.0, 1.0, 3.0, 2.0, 1.0], dtype=ag.float64)
x, p, y, v = X.numpy(), P.numpy(), Y.numpy(), V.numpy()  # for the independent numpy computations below
F32 = np.float32

# (expression, its value computed independently (numpy, closed forms), PyTorch's dtype)
VALUES = [
    ('ag.floor(X)', [[-2.0, 0.0, 2.0], [3.0, -1.0, 1.0]], 'float64'),
    ('ag.ceil(X)', [[-1.0, 1.0, 3.0], [4.0, -0.0, 1.0]], 'float64'),
    ('ag.round(X)', [[-2.0, 0.0, 2.0], [4.0, -0.0, 1.0]], 'float64'),
    ('ag.trunc(X)', [[-1.0, 0.0, 2.0], [3.0, -0.0, 1.0]], 'float64'),
    ('ag.frac(X)', [[-0.5, 0.25, 0.5], [0.75, -0.5, 0.0]], 'float64'),
    ('ag.fix(X)', [[-1.0, 0.0, 2.0], [3.0, -0.0, 1.0]], 'float64'),
    ('ag.round(ag.tensor([1.25, 2.5, -0.5, 0.125, 1234.5]), decimals=2)',
     np.round(F32([1.25, 2.5, -0.5, 0.125, 1234.5]), 2),  # in float32, halves to even
     'float32'),
    ('ag.round(ag.tensor([1.25, 2.5, -0.5, 15.0, 1234.5]), decimals=-1)', [0.0, 0.0, -0.0, 20.0, 1230.0], 'float32'),
    ('ag.floor(ag.tensor([1, -2]))', [1, -2], 'int64'),
    ('ag.round(ag.tensor([3, 4]))', [3, 4], 'int64'),
    ('ag.clamp_min(X, 0.3)', [[0.3, 0.3, 2.5], [3.75, 0.3, 1.0]], 'float64'),
    ('ag.clamp_max(X, 0.3)', [[-1.5, 0.25, 0.3], [0.3, -0.5, 0.3]], 'float64'),
    ('ag.clamp_min(X, Y)', [[0.5, 0.25, 2.5], [3.75, 3.0, 1.0]], 'float64'),
    ('ag.clamp_max(X, Y)', [[-1.5, -2.0, 1.5], [1.0, -0.5, -0.25]], 'float64'),
    ('ag.clamp_min(ag.tensor([1, 2]), 1.5)', [1.5, 2.0], 'float32'),
    ('ag.clamp_max(ag.tensor([1, 2]), 1)', [1, 1], 'int64'),
    ('ag.clamp_min(ag.tensor([True]), 0)', [1], 'int64'),
    ('ag.tan(X)',
     np.tan(x),
     'float64'),
    ('ag.atan(X)',
     np.arctan(x),
     'float64'),
    ('ag.sinh(X)',
     np.sinh(x),
     'float64'),
    ('ag.cosh(X)',
     np.cosh(x),
     'float64'),
    ('ag.asin(P)',
     np.arcsin(p),
     'float64'),
    ('ag.acos(P)',
     np.arccos(p),
     'float64'),
    ('ag.log2(P)',
     np.log2(p),
     'float64'),
    ('ag.log10(P)',
     np.log10(p),
     'float64'),
    ('ag.exp2(X)',
     np.exp2(x),
     'float64'),
    ('ag.exp2(ag.tensor([1, 3]))', [2.0, 8.0], 'float32'),
    ('ag.logit(P)',
     np.log(p / (1 - p)),
     'float64'),
    ('ag.logit(P, eps=0.1)',
     np.log(np.clip(p, 0.1, 0.9) / (1 - np.clip(p, 0.1, 0.9))),
     'float64'),
    ('ag.logit(ag.tensor([0.25, 1.5, 0.0, 1.0]))', [np.log(F32(0.25) / F32(0.75)), nan, -inf, inf], 'float32'),
    ("ag.nan_to_num(ag.tensor([float('nan'), float('inf'), -float('inf'), 1.5]))",
     [0.0, np.finfo(F32).max, -np.finfo(F32).max, 1.5],
     'float32'),
    ("ag.nan_to_num(ag.tensor([float('nan'), float('inf'), -float('inf'), 1.5], dtype=ag.float64), nan=1.0, "
     'posinf=2.0)',
     [1.0, 2.0, -np.finfo(np.float64).max, 1.5],
     'float64'),
    ('ag.nan_to_num(ag.tensor([1, 2]))', [1, 2], 'int64'),
    ('ag.atan2(X, Y)',
     np.arctan2(x, y),
     'float64'),
    ('ag.atan2(ag.tensor([1, 2]), ag.tensor([1, 1]))', np.arctan2(F32([1, 2]), F32([1, 1])), 'float32'),
    ('ag.lerp(X, Y, 0.3)', x + 0.3 * (y - x), 'float64'),
    ('ag.lerp(X, Y, P)', x + p * (y - x), 'float64'),
    ('ag.lerp(ag.tensor([1.0, 2.0]), ag.tensor([3.0, 5.0]), 1.0)', [3.0, 5.0], 'float32'),
    ('ag.addcmul(X, Y, P, value=2)', x + 2 * y * p, 'float64'),
    ('ag.addcdiv(X, Y, P, value=-0.5)',
     x - 0.5 * y / p,
     'float64'),
    ('ag.addcmul(ag.tensor([1, 2]), ag.tensor([3, 5]), ag.tensor([2, 2]), value=1.5)', [7, 12], 'int64'),
    ('ag.addcmul(ag.tensor([1, 2]), ag.tensor([3.0, 5.0]), ag.tensor([2, 2]))', [7.0, 12.0], 'float32'),
    ('ag.xlogy(P, Y.abs())',
     p * np.log(np.abs(y)),
     'float64'),
    ("ag.xlogy(ag.tensor([0.0, 0.0, 1.0]), ag.tensor([0.0, float('nan'), 2.0]))",
     [0.0, nan, np.log(F32(2))],
     'float32'),
    ('ag.xlogy(2.0, P)',
     2 * np.log(p),
     'float64'),
    ('ag.xlogy(P, 3.0)',
     p * np.log(3.0),
     'float64'),
    ('ag.xlogy(ag.tensor([1, 2]), 3)', F32([1, 2]) * np.log(F32(3)), 'float32'),
    ('ag.logaddexp(X, Y)',
     np.logaddexp(x, y),
     'float64'),
    ("ag.logaddexp(ag.tensor([-float('inf'), float('inf')]), ag.tensor([-float('inf'), float('inf')]))",
     [-inf, inf],
     'float32'),
    ('ag.sort(V).values', [1.0, 1.0, 2.0, 3.0, 3.0], 'float64'),
    ('ag.sort(V).indices', [1, 4, 3, 0, 2], 'int64'),
    ('ag.sort(V, descending=True).indices', [0, 2, 3, 1, 4], 'int64'),
    ("ag.sort(ag.tensor([1.0, float('nan'), float('inf'), 1.0]), descending=True).indices", [1, 2, 0, 3], 'int64'),
    ("ag.sort(ag.tensor([1.0, float('nan'), -float('inf'), 1.0])).indices", [2, 0, 3, 1], 'int64'),
    ('ag.argsort(X, dim=0)', [[0, 1, 1], [1, 0, 0]], 'int64'),
    ('ag.argsort(V, descending=True)', [0, 2, 3, 1, 4], 'int64'),
    ('ag.msort(X)', np.sort(x, 0), 'float64'),
    ('ag.topk(V, 2).values', [3.0, 3.0], 'float64'),
    ('ag.topk(X, 2, dim=1, largest=False).indices', [[0, 1], [1, 2]], 'int64'),
    ('ag.kthvalue(X, 2).values', np.sort(x, 1)[:, 1], 'float64'),
    ('ag.kthvalue(X, 1, dim=0, keepdim=True).indices', [[0, 1, 1]], 'int64'),
    ('ag.cumprod(X, 1)', np.cumprod(x, 1), 'float64'),
    ('ag.cumprod(ag.tensor([1, 2, 3]), 0)', [1, 2, 6], 'int64'),
    ('ag.cummax(V, 0).indices', [0, 0, 2, 2, 2], 'int64'),
    ('ag.cummin(V, 0).values', [3.0, 1.0, 1.0, 1.0, 1.0], 'float64'),
    ("ag.cummax(ag.tensor([1.0, 3.0, 3.0, float('nan'), 2.0, float('nan')]), 0).indices", [0, 1, 2, 3, 3, 5], 'int64'),
    ('ag.aminmax(X).min', -1.5, 'float64'),
    ('ag.aminmax(X, dim=1).max', [2.5, 3.75], 'float64'),
    ('ag.aminmax(X, dim=0, keepdim=True).min', [[-1.5, -0.5, 1.0]], 'float64'),
    ('ag.addmm(V[:3], X.t(), Y, beta=0.5, alpha=2)', 0.5 * v[:3] + 2 * x.T @ y, 'float64'),
    ('ag.addmv(V[:2], X, V[:3], beta=-1, alpha=0.5)', -v[:2] + 0.5 * x @ v[:3], 'float64'),
    ('ag.baddbmm(V[:3], ag.stack([X, Y]).transpose(1, 2), ag.stack([Y, X]), alpha=2)',
     v[:3] + 2 * np.stack([x.T @ y, y.T @ x]),
     'float64'),
    ("ag.addmm(ag.tensor([float('nan')]), ag.ones(1, 1), ag.ones(1, 1), beta=0)", [[1.0]], 'float32'),
    ('ag.trace(X)', np.trace(x), 'float64'),
    ('ag.trace(ag.arange(12).reshape(3, 4))', 15, 'int64'),
    ('ag.diagonal(X, 1)', [0.25, 1.0], 'float64'),
    ('ag.diagonal(ag.arange(24.0).reshape(2, 3, 4), 1, 0, 2)', [[1.0, 14.0], [5.0, 18.0], [9.0, 22.0]], 'float32'),
    ('ag.diagonal(ag.arange(24.0).reshape(2, 3, 4), -1, 2, 1)', [[1.0, 6.0, 11.0], [13.0, 18.0, 23.0]], 'float32'),
    ('ag.diag(X, -1)', [3.75], 'float64'),
    ('ag.diag(ag.tensor([1.0, 2.0]), 1)', [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]], 'float32'),
    ('ag.tensordot(X, Y, ([1], [1]))', x @ y.T, 'float64'),
    ('ag.tensordot(ag.arange(24.0).reshape(2, 3, 4), ag.arange(12.0).reshape(4, 3), ([1, 2], [1, 0]))',
     np.tensordot(np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3), ([1, 2], [1, 0])),
     'float32'),
    ('ag.inner(X, Y)', np.inner(x, y), 'float64'),
    ('ag.masked_select(X, X > 0)', [0.25, 2.5, 3.75, 1.0], 'float64'),
    ('ag.masked_select(ag.tensor([1.0, 2.0]), ag.tensor([[True], [False], [True]]))', [1.0, 2.0, 1.0, 2.0], 'float32'),
    ('ag.nonzero(X > 0)', [[0, 1], [0, 2], [1, 0], [1, 2]], 'int64'),
    ('ag.count_nonzero(X > 0, dim=0)', [1, 1, 2], 'int64'),
    ('ag.isin(V, ag.tensor([1.0, 2.0]))', [False, True, False, True, True], 'bool'),
    ('ag.unique(V)', [1.0, 2.0, 3.0], 'float64'),
    ('ag.bincount(ag.tensor([0, 2, 2]), weights=ag.tensor([1.0, 2.0, 3.0]), minlength=4)',
     [1.0, 0.0, 5.0, 0.0],
     'float32'),
    ('ag.searchsorted(ag.tensor([1, 3, 5, 7]), ag.tensor([3, 6, 9]), right=True)', [2, 3, 4], 'int64'),
    ('ag.bucketize(ag.tensor([3, 6, 9]), ag.tensor([1, 3, 5, 7]))', [1, 3, 4], 'int64'),
    ('ag.take_along_dim(X, ag.tensor([[2], [0]]), 1)', [[2.5], [3.75]], 'float64'),
    ('ag.take_along_dim(X, ag.tensor([[1], [0]]), 0)', [[3.75, -0.5, 1.0], [-1.5, 0.25, 2.5]], 'float64'),
    ('ag.take_along_dim(X, ag.tensor([5, 0]))', [1.0, -1.5], 'float64'),
    ('ag.diff(X)', np.diff(x), 'float64'),
    ('ag.diff(X, n=2, dim=1, prepend=Y)', np.diff(x, n=2, axis=1, prepend=y), 'float64'),
    ('ag.diff(ag.tensor([True, False, False]))', [True, False], 'bool'),
    ('ag.movedim(ag.arange(24).reshape(2, 3, 4), (0, 1), (-1, 0))',
     [[[0, 12], [1, 13], [2, 14], [3, 15]],
      [[4, 16], [5, 17], [6, 18], [7, 19]],
      [[8, 20], [9, 21], [10, 22], [11, 23]]],
     'int64'),
    ('ag.arange(24).reshape(2, 3, 4).unflatten(2, (2, -1))',
     [[[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]],
      [[[12, 13], [14, 15]], [[16, 17], [18, 19]], [[20, 21], [22, 23]]]],
     'int64'),
    ('ag.narrow(X, 1, -2, 2)', [[0.25, 2.5], [-0.5, 1.0]], 'float64'),
    ('ag.select(X, 1, -1)', [2.5, 1.0], 'float64'),
    ('ag.tile(X, (2, 1, 1))',
     [[[-1.5, 0.25, 2.5], [3.75, -0.5, 1.0]], [[-1.5, 0.25, 2.5], [3.75, -0.5, 1.0]]],
     'float64'),
    ('ag.swapaxes(X, 0, 1)', [[-1.5, 3.75], [0.25, -0.5], [2.5, 1.0]], 'float64'),
    ('ag.dot(X[0], Y[1])', x[0] @ y[1], 'float64'),
    ('ag.vdot(X[1], Y[0])', x[1] @ y[0], 'float64'),
    ('ag.mv(X, Y[0])', x @ y[0], 'float64'),
    ('ag.dot(ag.tensor([1, 2]), ag.tensor([3, 4]))', 11, 'int64'),
    ('X.t().mv(V[:2])', x.T @ v[:2], 'float64'),
]


@pytest.mark.parametrize(("expression", "expected", "dtype"), VALUES, ids=[v[0][:60] for v in VALUES])
def test_values_and_dtypes_match_torch(expression: str, expected: list, dtype: str) -> None:
    result = eval(expression)
    assert str(result.dtype) == dtype
    rtol = 1e-13 if dtype == "float64" else 1e-6  # float64 references agree to rounding; float32 to its precision
    np.testing.assert_allclose(np.asarray(result.tolist(), dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=rtol / 10, equal_nan=True)
    assert np.asarray(result.tolist()).shape == np.asarray(expected).shape


def leaf(values: list) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=True)


# Inputs away from kinks and ties: distinct values, none whole or half-way, inside every domain used.
A = [[0.31, -0.62, 0.47], [0.83, -0.14, 0.58]]
B = [[0.71, 0.26, -0.93], [-0.37, 0.52, 0.19]]
C = [[0.22, 0.64, 0.41], [0.77, 0.35, 0.56]]  # in (0, 1)
M1 = [[0.3, -0.2, 0.5, 0.1], [0.7, 0.4, -0.6, 0.2], [-0.1, 0.8, 0.3, -0.5]]
INDEX = ag.tensor([[2, 0, 1], [1, 1, 0]])

# (name, function of leaves, inputs, PyTorch's node name)
OPS: list[tuple[str, Callable, tuple, str]] = [
    ("floor", ag.floor, (A,), "FloorBackward0"),
    ("ceil", ag.ceil, (A,), "CeilBackward0"),
    ("trunc", ag.trunc, (A,), "TruncBackward0"),
    ("round", ag.round, (A,), "RoundBackward0"),
    ("round decimals", lambda x: ag.round(x, decimals=1), (A,), "RoundBackward1"),
    ("frac", ag.frac, (A,), "FracBackward0"),
    ("clamp_min number", lambda x: ag.clamp_min(x, 0.2), (A,), "ClampMinBackward0"),
    ("clamp_max number", lambda x: x.clamp_max(0.2), (A,), "ClampMaxBackward0"),
    ("clamp_min tensor", lambda x, y: x.clamp_min(y), (A, [0.1, 0.2, 0.3]), "ClampMinBackward1"),
    ("clamp_max tensor", lambda x, y: ag.clamp_max(x, y), ([[0.1], [0.5]], B), "ClampMaxBackward1"),
    ("tan", ag.tan, (A,), "TanBackward0"),
    ("asin", ag.asin, (A,), "AsinBackward0"),
    ("acos", lambda x: x.arccos(), (A,), "AcosBackward0"),
    ("atan", ag.arctan, (A,), "AtanBackward0"),
    ("sinh", ag.sinh, (A,), "SinhBackward0"),
    ("cosh", lambda x: x.cosh(), (A,), "CoshBackward0"),
    ("log2", ag.log2, (C,), "Log2Backward0"),
    ("log10", lambda x: x.log10(), (C,), "Log10Backward0"),
    ("exp2", ag.exp2, (A,), "Exp2Backward0"),
    ("logit", ag.logit, (C,), "LogitBackward0"),
    ("logit eps", lambda x: x.logit(eps=0.3), (C,), "LogitBackward0"),
    ("nan_to_num", ag.nan_to_num, (A,), "NanToNumBackward0"),
    ("atan2", ag.atan2, (A, [[0.4], [-0.9]]), "Atan2Backward0"),
    ("lerp number", lambda x, y: ag.lerp(x, y, 0.7), (A, B), "LerpBackward0"),
    ("lerp tensor", lambda x, y, w: x.lerp(y, w), (A, [0.2, -0.4, 0.9], C), "LerpBackward1"),
    ("addcmul", lambda x, y, z: ag.addcmul(x, y, z, value=-1.5), ([0.1, 0.2, 0.3], A, B), "AddcmulBackward0"),
    ("addcdiv", lambda x, y, z: x.addcdiv(y, z, value=0.5), (A, B, C), "AddcdivBackward0"),
    ("xlogy", ag.xlogy, (A, C), "XlogyBackward0"),
    ("xlogy number x", lambda y: ag.xlogy(2.5, y), (C,), "XlogyBackward1"),
    ("xlogy number y", lambda x: x.xlogy(3.0), (A,), "XlogyBackward2"),
    ("logaddexp", ag.logaddexp, (A, [[0.9], [-0.3]]), "LogaddexpBackward0"),
    ("sort", lambda x: ag.sort(x, dim=0).values, (A,), "SortBackward0"),
    ("sort descending", lambda x: x.sort(descending=True)[0], (A,), "SortBackward0"),
    ("msort", ag.msort, (A,), "SortBackward0"),
    ("topk", lambda x: ag.topk(x, 2).values, (A,), "TopkBackward0"),
    ("topk smallest", lambda x: x.topk(1, dim=0, largest=False).values, (A,), "TopkBackward0"),
    ("kthvalue", lambda x: ag.kthvalue(x, 2).values, (A,), "KthvalueBackward0"),
    ("kthvalue keepdim", lambda x: x.kthvalue(1, 0, keepdim=True).values, (A,), "KthvalueBackward0"),
    ("cumprod", lambda x: ag.cumprod(x, 1), (A,), "CumprodBackward0"),
    ("cummax", lambda x: ag.cummax(x, 1).values, (A,), "CummaxBackward0"),
    ("cummin", lambda x: x.cummin(0).values, (A,), "CumminBackward0"),
    ("aminmax min", lambda x: ag.aminmax(x).min, (A,), "AminmaxBackward0"),
    ("aminmax max", lambda x: x.aminmax(dim=1).max, (A,), "AminmaxBackward0"),
    ("addmm", lambda i, a, b: ag.addmm(i, a, b, beta=0.5, alpha=2), ([0.1, 0.2, 0.3, 0.4], B, M1), "AddmmBackward0"),
    ("addmv", lambda i, a, v: i.addmv(a, v, beta=-1, alpha=0.5), ([0.1, 0.2], A, [0.3, 0.6, -0.2]), "AddmvBackward0"),
    ("baddbmm", lambda i, a, b: ag.baddbmm(i, a, b, alpha=1.5), ([[0.2], [0.4]], [A, B], [M1, M1]), "BaddbmmBackward0"),
    ("dot", ag.dot, (A[0], B[1]), "DotBackward0"),
    ("vdot", lambda a, b: a.vdot(b), (A[1], B[0]), "VdotBackward0"),
    ("mv", ag.mv, (M1, [0.2, -0.1, 0.4, 0.3]), "MvBackward0"),
    ("trace", ag.trace, (M1,), "TraceBackward0"),
    ("diagonal", lambda x: x.diagonal(1), (M1,), "DiagonalBackward0"),
    ("diagonal dims", lambda x: ag.diagonal(x, -1, 2, 0), ([A, B],), "DiagonalBackward0"),
    ("diag of a matrix", lambda x: ag.diag(x, 1), (M1,), "DiagonalBackward0_copy"),
    ("diag of a vector", lambda x: x.diag(-1), ([0.3, -0.7],), "DiagEmbedBackward0"),
    ("tensordot", lambda a, b: ag.tensordot(a, b, ([1], [1])), (A, B), "ViewBackward0"),
    ("inner", ag.inner, (A, B), "ViewBackward0"),
    ("masked_select", lambda x: ag.masked_select(x, ag.tensor([[True], [False], [True]]).reshape(3, 1, 1)), (A,),
     "MaskedSelectBackward0"),
    ("take_along_dim", lambda x: ag.take_along_dim(x, INDEX, 1), (A,), "GatherBackward0"),
    ("take_along_dim broadcast", lambda x: x.take_along_dim(ag.tensor([[1], [0]]), 1), ([[0.5, 0.1, 0.2]],),
     "GatherBackward0"),
    ("diff", lambda x: ag.diff(x, n=2, dim=0, prepend=x), (A,), "SubBackward0"),
    ("movedim", lambda x: ag.movedim(x, 0, 1), (A,), "PermuteBackward0"),
    ("swapaxes", lambda x: x.swapaxes(0, 1), (A,), "TransposeBackward0"),
    ("unflatten", lambda x: x.reshape(6).unflatten(0, (3, -1)), (A,), "ViewBackward0"),
    ("narrow", lambda x: ag.narrow(x, 1, 1, 2), (A,), "SliceBackward0"),
    ("select", lambda x: x.select(1, -1), (A,), "SelectBackward0"),
    ("tile", lambda x: ag.tile(x, (2, 1, 2)), (A,), "RepeatBackward0"),
    ("expand_as", lambda x: x[0].expand_as(x), (A,), "ExpandBackward0"),
    ("view_as", lambda x: x.view_as(ag.zeros(3, 2)), (A,), "ViewBackward0"),
    ("reshape_as", lambda x: x.reshape_as(ag.zeros(6)), (A,), "ViewBackward0"),
]
IDS = [op[0] for op in OPS]


@pytest.mark.parametrize(("name", "f", "inputs", "node"), OPS, ids=IDS)
def test_node_names_match_torch(name: str, f: Callable, inputs: tuple, node: str) -> None:
    assert f(*(leaf(v) for v in inputs)).grad_fn.name() == node


@pytest.mark.parametrize(("name", "f", "inputs", "node"), OPS, ids=IDS)
def test_gradients_and_second_derivatives_match_finite_differences(
    name: str, f: Callable, inputs: tuple, node: str
) -> None:
    leaves = tuple(leaf(v) for v in inputs)
    assert gradcheck(f, leaves)
    assert gradgradcheck(f, leaves)


def grads(f: Callable, *inputs: list) -> list[list]:
    leaves = [leaf(v) for v in inputs]
    return [g.tolist() for g in ag.autograd.grad(f(*leaves).sum(), leaves)]


# Gradients where PyTorch picks a convention (zeros, ties, domain edges, NaN): (function, inputs, its gradients)
EDGES = [
    ("xlogy at x = 0 and NaN", ag.xlogy, ([0.0, 1.0, 2.0, 0.0], [0.0, -1.0, nan, 2.0]),
     [[0.0, nan, nan, math.log(2)], [nan, -1.0, nan, 0.0]]),
    ("logit outside [0, 1]", ag.logit, ([-0.5, 0.25, 1.5],), [[nan, 1 / (0.25 * 0.75), nan]]),
    ("logit clamped by eps", lambda x: ag.logit(x, eps=0.2), ([0.1, 0.25, 0.9],), [[0.0, 1 / (0.25 * 0.75), 0.0]]),
    ("nan_to_num", ag.nan_to_num, ([nan, inf, 1.5],), [[0.0, 0.0, 1.0]]),
    ("clamp_min ties", ag.clamp_min, ([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]), [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
    ("clamp_max ties", ag.clamp_max, ([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]), [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    ("clamp_min at the bound", lambda x: ag.clamp_min(x, 2.0), ([1.0, 2.0, 3.0],), [[0.0, 1.0, 1.0]]),
    ("aminmax ties", lambda x: ag.stack(list(ag.aminmax(x))) * ag.tensor([2.0, 3.0], dtype=ag.float64),
     ([1.0, 5.0, 5.0, 1.0],), [[1.0, 1.5, 1.5, 1.0]]),
    ("cummax ties", lambda x: ag.cummax(x, 0).values, ([1.0, 3.0, 3.0, 2.0],), [[1.0, 1.0, 2.0, 0.0]]),
    ("sort ties", lambda x: ag.sort(x).values * ag.arange(4.0, dtype=ag.float64), ([2.0, 1.0, 2.0, 1.0],),
     [[2.0, 0.0, 3.0, 1.0]]),
    ("masked_select broadcast", lambda x: ag.masked_select(x, ag.tensor([[True], [False], [True]])), ([1.0, 2.0],),
     [[2.0, 2.0]]),
    ("lerp", lambda a, b: ag.lerp(a, b, 0.75), ([1.0, 2.0], [3.0, -1.0]), [[0.25, 0.25], [0.75, 0.75]]),
    ("diagonal", lambda x: ag.diagonal(x, 1) * ag.tensor([1.0, 2.0], dtype=ag.float64),
     ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],), [[[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]]),
    ("trace", ag.trace, ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],), [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]),
    ("take_along_dim repeated", lambda x: ag.take_along_dim(x, ag.tensor([[0, 0, 1]]), 1),
     ([[1.0, 2.0], [3.0, 4.0]],), [[[2.0, 1.0], [2.0, 1.0]]]),
]


@pytest.mark.parametrize(("name", "f", "inputs", "expected"), EDGES, ids=[e[0] for e in EDGES])
def test_gradients_at_edges_match_torch(name: str, f: Callable, inputs: tuple, expected: list) -> None:
    for got, want in zip(grads(f, *inputs), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def _cumprod_sum(a: np.ndarray) -> float:
    return float(np.cumprod(a, -1).sum())


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, 0.5], [0.0, 2.0, 0.0, 3.0]])
def test_cumprod_derivatives_through_zeros_match_exact_differences(numpy_gradient, values: list) -> None:
    # sum(cumprod(x)) is multilinear (no x_k twice in a product): differences of step 1 give its derivatives exactly
    x, values = leaf(values), np.array(values)
    (g,) = ag.autograd.grad(ag.cumprod(x, 0).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), numpy_gradient(_cumprod_sum, values, 1.0))
    (gg,) = ag.autograd.grad(g.sum(), x)
    expected = numpy_gradient(lambda a: numpy_gradient(_cumprod_sum, a, 1.0).sum(), values, 1.0)
    np.testing.assert_array_equal(gg.numpy(), expected)
    (g2,) = ag.autograd.grad(x.reshape(1, 4).cumprod(1).sum(), x)  # along dim 1 of a row
    np.testing.assert_array_equal(g2.numpy(), numpy_gradient(_cumprod_sum, values, 1.0))


def test_lerp_at_weight_one_gives_end_exactly() -> None:
    start, end = ag.tensor([0.1, 1e8]), ag.tensor([0.3, 3.0])
    assert ag.lerp(start, end, 1.0).tolist() == end.tolist()


def test_sort_results_are_named_tuples_and_indices_carry_no_gradient() -> None:
    x = leaf([3.0, 1.0, 2.0])
    for result in (ag.sort(x), ag.topk(x, 2), ag.kthvalue(x, 1), ag.cummax(x, 0), ag.cummin(x, 0)):
        values, indices = result
        assert result.values is values and result.indices is indices
        assert indices.dtype == ag.int64 and not indices.requires_grad
    assert ag.aminmax(x)._fields == ("min", "max")
    assert ag.argsort(x).tolist() == [1, 2, 0]


def test_new_methods_take_the_tensors_dtype_and_device_unless_given() -> None:
    x = ag.zeros(2, dtype=ag.int32)
    assert x.new_zeros(2, 3).dtype == ag.int32 and x.new_zeros(2, 3).shape == (2, 3)
    assert x.new_ones((2,), dtype=ag.float64).tolist() == [1.0, 1.0]
    assert x.new_full((2,), 3.5).tolist() == [3, 3]  # cast to int32, as in PyTorch
    assert x.new_empty(4).shape == (4,) and x.new_empty(4).dtype == ag.int32
    assert x.new_tensor([1.5, 2.5]).dtype == ag.int32
    made = ag.ones(2).new_ones(2, requires_grad=True)
    assert made.requires_grad and made.is_leaf
    assert ag.empty_like(x, dtype=ag.int64).dtype == ag.int64 and ag.empty_like(x).shape == (2,)


def test_new_tensor_copies_data_without_its_graph() -> None:
    x = leaf([1.0, 2.0])
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        y = (x * 2).new_tensor(x * 2)
    assert y.grad_fn is None and not y.requires_grad and y.tolist() == [2.0, 4.0]


def test_nonzero_unique_and_searches_give_int64() -> None:
    x = ag.tensor([[1.0, 0.0], [0.0, 2.0]])
    assert [t.tolist() for t in ag.nonzero(x, as_tuple=True)] == [[0, 1], [0, 1]]
    assert ag.nonzero(ag.tensor(3.0)).shape == (1, 0)
    values, inverse, counts = ag.unique(ag.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
    assert (values.tolist(), inverse.tolist(), counts.tolist()) == ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    assert ag.unique(ag.tensor([[1, 2], [1, 2], [0, 1]]), dim=0).tolist() == [[0, 1], [1, 2]]
    assert ag.searchsorted(ag.tensor([[1, 3, 5], [2, 4, 6]]), ag.tensor([[3], [3]])).tolist() == [[1], [1]]
    assert ag.searchsorted(ag.tensor([1, 3]), 3, side="right").tolist() == 2
    assert ag.searchsorted(ag.tensor([1, 3]), ag.tensor([2]), out_int32=True).dtype == ag.int32
    assert ag.count_nonzero(x).tolist() == 2 and ag.isin(3, ag.tensor([1, 3])).tolist() is True


ERRORS = [
    ("ag.floor(ag.tensor([True]))", NotImplementedError, "\"floor_vml_cpu\" not implemented for 'Bool'"),
    ("ag.frac(ag.tensor([1, 2]))", NotImplementedError, "\"frac_cpu\" not implemented for 'Long'"),
    ("ag.round(ag.tensor([1]), decimals=1)", NotImplementedError, "\"round_cpu\" not implemented for 'Long'"),
    ("ag.lerp(ag.tensor([1, 2]), ag.tensor([3, 5]), 0.5)", NotImplementedError,
     "\"lerp_kernel_scalar\" not implemented for 'Long'"),
    ("ag.lerp(ag.tensor([1.0]), ag.tensor([3.0], dtype=ag.float64), 0.5)", RuntimeError,
     "expected dtype float for `end` but got dtype double"),
    ("ag.addcdiv(ag.tensor([1]), ag.tensor([3]), ag.tensor([2]))", RuntimeError,
     "Integer division with addcdiv is no longer supported"),
    ("ag.atan2(ag.tensor([1.0]), 2)", TypeError, "atan2(): argument 'other' (position 2) must be Tensor, not int"),
    ("ag.logaddexp(ag.tensor([True]), ag.tensor([True]))", NotImplementedError,
     "\"logaddexp_cpu\" not implemented for 'Bool'"),
    ("ag.xlogy(2, 3)", TypeError, "xlogy() received an invalid combination of arguments"),
    ("ag.topk(ag.zeros(3), 4)", RuntimeError, "selected index k out of range"),
    ("ag.topk(ag.zeros(3), 1.5)", TypeError, "topk(): argument 'k' (position 2) must be int, not float"),
    ("ag.kthvalue(ag.zeros(3), 0)", RuntimeError, "kthvalue(): selected number k out of range for dimension 0"),
    ("ag.kthvalue(ag.zeros(2, 0), 1)", IndexError, "kthvalue(): Expected reduction dim 1 to have non-zero size."),
    ("ag.aminmax(ag.zeros(0))", RuntimeError,
     "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."),
    ("ag.addmm(ag.zeros(2, 5), ag.zeros(3, 4), ag.zeros(4, 5))", RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0.  Target "
     "sizes: [3, 5].  Tensor sizes: [2, 5]"),
    ("ag.addmm(ag.zeros(5), ag.zeros(3, 4), ag.zeros(3, 4))", RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)"),
    ("ag.addmm(ag.zeros(5), ag.zeros(3, 4), ag.zeros(4))", RuntimeError, "mat2 must be a matrix, got 1-D tensor"),
    ("ag.addmm(ag.zeros(5, dtype=ag.float64), ag.zeros(3, 4), ag.zeros(4, 5))", RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    ("ag.addmm(ag.zeros(5), ag.zeros(3, 4, dtype=ag.float64), ag.zeros(4, 5))", RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("ag.baddbmm(ag.zeros(5), ag.zeros(2, 3, 4), ag.zeros(3, 4, 5))", RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    ("ag.addmv(ag.zeros(3), ag.zeros(3, 4), ag.zeros(5))", RuntimeError,
     "size mismatch, got input (3), mat (3x4), vec (5)"),
    ("ag.addmv(ag.zeros(3), ag.zeros(3, 4, dtype=ag.float64), ag.zeros(4))", RuntimeError,
     "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    ("ag.baddbmm(ag.zeros(5, dtype=ag.float64), ag.zeros(2, 3, 4), ag.zeros(2, 4, 5))", RuntimeError,
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    ("ag.baddbmm(ag.zeros(5), ag.zeros(2, 3, 4), ag.zeros(2, 4, 5, dtype=ag.float64))", RuntimeError,
     "expected scalar type Float but found Double"),
    ("ag.dot(ag.zeros(3), ag.zeros(4))", RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 "
     "elements respectively"),
    ("ag.dot(ag.zeros(2, 3), ag.zeros(3))", RuntimeError, "1D tensors expected, but got 2D and 1D tensors"),
    ("ag.dot(ag.zeros(3), ag.zeros(3, dtype=ag.float64))", RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("ag.mv(ag.zeros(2, 4), ag.zeros(3))", RuntimeError, "size mismatch, got input (2), mat (2x4), vec (3)"),
    ("ag.mv(ag.zeros(2, 3), ag.zeros(3, dtype=ag.float64))", RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ("ag.trace(ag.zeros(3))", RuntimeError, "trace: expected a matrix, but got tensor with dim 1"),
    ("ag.diagonal(ag.zeros(3, 4), 0, 0, 0)", RuntimeError, "diagonal dimensions cannot be identical 0, 0"),
    ("ag.diag(ag.zeros(2, 3, 4))", RuntimeError, "diag(): Supports 1D or 2D tensors. Got 3D"),
    ("ag.tensordot(ag.zeros(2, 3), ag.zeros(4, 5), ([0], [0]))", RuntimeError,
     "contracted dimensions need to match, but first has size 2 in dim 0 and second has size 4 in dim 0"),
    ("ag.tensordot(ag.zeros(2, 3), ag.zeros(3, 4), -1)", RuntimeError, "tensordot expects dims >= 0, but got dims=-1"),
    ("ag.inner(ag.zeros(3), ag.zeros(4))", RuntimeError,
     "inner() the last dimension must match on both input tensors but got shapes [3] and [4]"),
    ("ag.masked_select(ag.zeros(3), ag.tensor([1, 0, 1]))", RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    ("ag.bincount(ag.tensor([-1]))", RuntimeError, "bincount only supports 1-d non-negative integral inputs."),
    ("ag.bincount(ag.tensor([1.0]))", NotImplementedError, "\"bincount_cpu\" not implemented for 'Float'"),
    ("ag.bucketize(ag.tensor([3]), ag.tensor([[1, 3]]))", RuntimeError,
     "boundaries tensor must be 1 dimension, but got dim(2)"),
    ("ag.searchsorted(ag.tensor([[1, 3], [2, 4]]), ag.tensor([[3], [3], [1]]))", RuntimeError,
     "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value "
     "tensor must match, but we got boundaries tensor [2, 2] and input value tensor [3, 1]"),
    ("ag.take_along_dim(ag.zeros(2, 3), ag.zeros(2, dtype=ag.int64), 1)", RuntimeError,
     "torch.take_along_dim(): input and indices should have the same number of dimensions, but got 2 dimensions "
     "for input, and 1 dimensions for indices"),
    ("ag.take_along_dim(ag.zeros(2, 3), ag.zeros(2, 1, dtype=ag.int32), 1)", RuntimeError,
     "torch.take_along_dim(): dtype of indices should be Long but got Int"),
    ("ag.diff(ag.zeros(3), n=-1)", RuntimeError, "order must be non-negative but got -1"),
    ("ag.diff(ag.tensor(1.0))", RuntimeError, "diff expects input to be at least one-dimensional"),
    ("ag.movedim(ag.zeros(2, 3), (0, 1), (1,))", RuntimeError,
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of dims as "
     "destination ([1] dims)"),
    ("ag.movedim(ag.zeros(2, 3), (0, 0), (0, 1))", RuntimeError, "movedim: repeated dim in `source` ([0, 0])"),
    ("ag.zeros(2, 3).unflatten(1, (4,))", RuntimeError,
     "unflatten: Provided sizes [4] don't multiply up to the size of dim 1 (3) in the input tensor"),
    ("ag.narrow(ag.zeros(2, 3), 1, 2, 2)", RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    ("ag.narrow(ag.zeros(2, 3), 1, 4, 0)", IndexError,
     "start out of range (expected to be in range of [-3, 3], but got 4)"),
    ("ag.select(ag.zeros(2, 3), 1, 3)", IndexError,
     "select(): index 3 out of range for tensor of size [2, 3] at dimension 1"),
    ("ag.select(ag.tensor(1.0), 0, 0)", IndexError, "select() cannot be applied to a 0-dim tensor."),
]


@pytest.mark.parametrize(("expression", "error", "message"), ERRORS, ids=[e[0][:60] for e in ERRORS])
def test_errors_match_torch(expression: str, error: type, message: str) -> None:
    with pytest.raises(error) as raised:
        eval(expression)
    assert message in str(raised.value)


def _on(d: str, values: list, dtype: object = None) -> ag.Tensor:
    return ag.tensor(values, dtype=dtype, device=d)


# Each op family on a device: function of the device and the float64 leaves, leaf values (CuPy's API is not
# numpy's, and a host array never mixes with a device one, so every kernel must come from the device's module).
DEVICE_CASES = [
    ("rounding", lambda d, x: x.floor() + x.ceil() + x.round(decimals=1) + x.trunc() + x.frac(), (A,)),
    ("clamp_min clamp_max", lambda d, x, y: x.clamp_min(y) + x.clamp_max(0.1), (A, B)),
    ("trigonometric", lambda d, x: x.tan() + x.asin() + x.acos() + x.atan() + x.sinh() + x.cosh() + x.exp2(), (A,)),
    ("logs logit nan_to_num", lambda d, x: x.log2() + x.log10() + x.logit() + x.logit(0.3) + x.nan_to_num(), (C,)),
    ("atan2 lerp addcmul addcdiv", lambda d, x, y, w: ag.atan2(x, y) + x.lerp(y, w) + x.lerp(y, 0.3)
     + x.addcmul(y, w, value=2) + x.addcdiv(y, w), (A, B, C)),
    ("xlogy logaddexp", lambda d, x, y: ag.xlogy(x, y) + ag.xlogy(2.0, y) + x.xlogy(3.0) + ag.logaddexp(x, y),
     (A, C)),
    ("sort topk kthvalue", lambda d, x: x.sort(1, descending=True).values[:, :2] + x.topk(2).values
     + x.kthvalue(2, keepdim=True).values, (A,)),
    ("cumprod through a zero, cummax, cummin", lambda d, x: x.cumprod(1) * x.cummax(1).values + x.cummin(0).values,
     ([[0.3, 0.0, -0.5], [0.8, 0.6, 0.0]],)),
    ("aminmax", lambda d, x: ag.aminmax(x, dim=0).min + ag.aminmax(x).max, (A,)),
    ("dot mv", lambda d, a, m: ag.dot(a[0], a[1]) + ag.vdot(a[1], a[0]) + ag.mv(m, a[0, :2].repeat(2)), (A, M1)),
    ("addmm addmv baddbmm", lambda d, i, a, b: ag.addmm(i, a, b, beta=0.5).sum(0)[:2]
     + ag.addmv(i[:2], a, b[:, 0], alpha=2) + ag.baddbmm(i, a.unsqueeze(0), b.unsqueeze(0))[0, 0, :2],
     ([0.1, 0.2, 0.3, 0.4], B, M1)),
    ("diagonal diag trace", lambda d, x: x.diagonal(1) + x.diag() + x.trace() + x[0, :3].diag().sum(0), (M1,)),
    ("masked_select take_along_dim", lambda d, x: ag.masked_select(x, _on(d, [True, False, True]))
     + x.take_along_dim(_on(d, [[1], [0]]), 1).reshape(2).repeat(2)[:4], (A,)),
    ("tensordot inner diff narrow", lambda d, x, y: ag.tensordot(x, y, ([1], [1])) + ag.inner(x, y)
     + x.diff(dim=0).narrow(1, 0, 2).sum(), (A, B)),
]


@pytest.mark.parametrize(("name", "f", "inputs"), DEVICE_CASES, ids=[c[0] for c in DEVICE_CASES])
def test_ops_on_cuda_give_the_cpus_values_and_gradients(name: str, f: Callable, inputs: tuple, cupy) -> None:
    results = []
    for d in ("cpu", "cuda:0"):
        leaves = [ag.tensor(v, dtype=ag.float64, device=d, requires_grad=True) for v in inputs]
        out = f(d, *leaves)
        first = ag.autograd.grad(out.sum(), leaves, create_graph=True)
        total = sum(g.sum() for g in first)  # constant for ops linear in their inputs: no second derivative
        second = ag.autograd.grad(total, leaves, allow_unused=True) if total.requires_grad else ()
        results.append([t if t is None else t.detach().cpu().numpy() for t in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        if cpu is None:
            assert cuda is None
        else:
            np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)


def test_searches_on_cuda_give_the_cpus_results(cupy) -> None:
    results = []
    for d in ("cpu", "cuda:0"):
        x = _on(d, [[1.0, 0.0, 3.0], [0.0, 3.0, 0.0]])
        found = [ag.nonzero(x), *ag.nonzero(x, as_tuple=True), ag.count_nonzero(x, dim=1), ag.argsort(x, dim=1),
                 *ag.unique(x, return_inverse=True, return_counts=True), ag.isin(x, _on(d, [3.0])),
                 ag.bincount(_on(d, [0, 2, 2]), weights=_on(d, [1.0, 2.0, 3.0])),
                 ag.searchsorted(_on(d, [[1, 3, 5], [2, 4, 6]]), _on(d, [[3], [3]])),
                 ag.bucketize(_on(d, [3, 6]), _on(d, [1, 3, 5])), x.new_zeros(2), ag.empty_like(x).zero_(),
                 ag.nan_to_num(_on(d, [1, 2])), ag.round(_on(d, [1, 2])), ag.clamp_min(_on(d, [1, 2]), 2)]
        assert all(t.device == ag.device(d) for t in found)
        results.append([t.cpu().numpy() for t in found])
    for cpu, cuda in zip(*results):
        np.testing.assert_array_equal(cuda, cpu)


# (expression, PyTorch 2.13's error type and its whole text)
EXACT_ERRORS = [
    ("ag.searchsorted(ag.zeros(2, 3), 1.0)", RuntimeError,
     "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got "
     "boundaries tensor dim(2) and input value's dim(0) numel(1)"),
    ("ag.masked_select(ag.zeros(2, 3), ag.ones(4, 1, dtype=ag.bool))", RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("ag.topk(ag.tensor([True]), 1)", RuntimeError, "topk does not support bool dtypes on CPU"),
    ("ag.kthvalue(ag.tensor([True]), 1)", NotImplementedError, "\"kthvalue_cpu\" not implemented for 'Bool'"),
    ("ag.isin(ag.tensor([1]), True)", RuntimeError, "Unsupported input type encountered for isin(): Bool"),
    ("ag.isin(ag.tensor([True]), ag.tensor([1]))", RuntimeError, "Unsupported input type encountered for isin(): Bool"),
    ("ag.narrow(ag.tensor(1.0), 0, 0, 1)", RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
    ("ag.unflatten(ag.tensor(1.0), -1, (1,))", RuntimeError,
     "unflatten got an unexpected error:\nDimension specified as 0 but tensor has no dimensions"),
    ("ag.unflatten(ag.ones(4), 0, (-1, -1))", RuntimeError,
     "unflatten got an unexpected error:\nonly one dimension can be inferred"),
    ("ag.unflatten(ag.ones(4), 0, (-2, 2))", RuntimeError,
     "unflatten got an unexpected error:\ninvalid shape dimension -2 at index 0 of shape [-2, 2]"),
    ("ag.unflatten(ag.ones(0), 0, (-1, 0))", RuntimeError,
     "unflatten got an unexpected error:\ncannot reshape tensor of 0 elements into shape [-1, 0] because the "
     "unspecified dimension size -1 can be any value and is ambiguous"),
    ("ag.unflatten(ag.ones(4), 0, (-1, 0))", RuntimeError,
     "unflatten: Provided sizes [-1, 0] don't multiply up to the size of dim 0 (4) in the input tensor"),
    ("ag.tile(ag.ones(1), (-3,))", RuntimeError, "Trying to create tensor with negative dimension -3: [-3]"),
    ("ag.tile(ag.ones(1, 2), (-3,))", RuntimeError, "Trying to create tensor with negative dimension -6: [1, -6]"),
    ("ag.unique(ag.zeros(1, 0), dim=0)", RuntimeError,
     "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
    ("ag.unique(ag.zeros(0, 1, 0), dim=0)", RuntimeError,
     "Number of zero sized dimensions is more than one, so unique cannot be applied "),
    ("ag.bincount(ag.tensor([1]), minlength=-1)", RuntimeError, "minlength should be >= 0"),
    ("ag.bincount(ag.tensor([1]), weights=ag.tensor([1.0, 2.0]))", RuntimeError,
     "weights should be 1-d and have the same length as input"),
    ("ag.bincount(ag.tensor([1]), weights=ag.tensor([[1.0]]))", RuntimeError,
     "weights should be 1-d and have the same length as input"),
    ("ag.tensordot(ag.ones(2, 3), ag.ones(2, 3), dims=1)", RuntimeError,
     "contracted dimensions need to match, but first has size 3 in dim -1 and second has size 2 in dim 0"),
    ("ag.tensordot(ag.ones(2, 3), ag.ones(2, 3), dims=([1], [-2]))", RuntimeError,
     "contracted dimensions need to match, but first has size 3 in dim 1 and second has size 2 in dim -2"),
    ("ag.ones(2).addcdiv(1.0, ag.ones(2))", TypeError,
     "addcdiv(): argument 'tensor1' (position 1) must be Tensor, not float"),
    ("ag.addcdiv(ag.ones(2), 1.0, ag.ones(2))", TypeError,
     "addcdiv(): argument 'tensor1' (position 2) must be Tensor, not float"),
    ("ag.ones(2).addcmul(ag.ones(2), 1.0)", TypeError,
     "addcmul(): argument 'tensor2' (position 2) must be Tensor, not float"),
    ("ag.ones(2).atan2(1.0)", TypeError, "atan2(): argument 'other' (position 1) must be Tensor, not float"),
]


@pytest.mark.parametrize(("expression", "error", "message"), EXACT_ERRORS, ids=[e[0][:60] for e in EXACT_ERRORS])
def test_errors_match_torchs_whole_text(expression: str, error: type, message: str) -> None:
    with pytest.raises(error) as raised:
        eval(expression)
    assert type(raised.value) is error
    assert str(raised.value) == message


# (expression, PyTorch 2.13's results)
EDGE_RESULTS = [
    ("ag.diff(ag.tensor([1.0, 2.0]), n=0, prepend=ag.tensor([5.0]), append=ag.tensor([6.0]))", [[1.0, 2.0]]),
    ("ag.unique(ag.tensor([nan, 1.0, nan, 1.0]), return_inverse=True, return_counts=True)",
     [[1.0, nan, nan], [1, 0, 2, 0], [2, 1, 1]]),
    ("ag.unique(ag.tensor([nan, nan]), return_counts=True)", [[nan, nan], [1, 1]]),
    ("ag.searchsorted(ag.tensor([1.0, 2.0, nan]), ag.tensor([nan]))", [[3]]),
    ("ag.searchsorted(ag.tensor([1.0, nan, nan]), ag.tensor([nan, 3.0, 0.5]))", [[3, 3, 3]]),
    ("ag.searchsorted(ag.tensor([nan, 1.0]), ag.tensor([1.0]), right=True)", [[2]]),
    ("ag.searchsorted(ag.tensor([[1.0, 3.0], [2.0, 4.0]]), ag.tensor([[3.0, 0.0], [5.0, 2.0]]), side='right')",
     [[[2, 0], [2, 1]]]),
    ("ag.searchsorted(ag.zeros(2, 3), ag.zeros(2, 0))", [np.zeros((2, 0))]),
    ("ag.searchsorted(ag.zeros(2, 0), ag.zeros(2, 2))", [[[0, 0], [0, 0]]]),
    ("ag.searchsorted(ag.zeros(3), ag.tensor(1.0))", [3]),
    ("ag.masked_select(ag.tensor(2.0), ag.tensor(True))", [[2.0]]),
    ("ag.masked_select(ag.tensor(2.0), ag.tensor(False))", [np.zeros(0)]),
    ("ag.topk(ag.tensor(2.0), 0)", [2.0, 0]),
    ("ag.bincount(ag.tensor([], dtype=ag.int64), weights=ag.ones(3), minlength=2)", [[0, 0]]),
]


@pytest.mark.parametrize(("expression", "expected"), EDGE_RESULTS, ids=[e[0][:60] for e in EDGE_RESULTS])
def test_edge_results_match_torch(expression: str, expected: list) -> None:
    got = eval(expression)
    got = (got,) if isinstance(got, ag.Tensor) else tuple(got)
    assert len(got) == len(expected)
    for t, want in zip(got, expected):
        want = np.asarray(want)
        assert t.shape == want.shape
        np.testing.assert_array_equal(t.numpy(), want)


def test_masked_select_of_0_dim_tensors_gives_its_gradient_back() -> None:
    x = ag.tensor(2.0, requires_grad=True)
    (ag.masked_select(x, ag.tensor(True)) * 3.0).sum().backward()
    assert x.grad.shape == () and x.grad.item() == 3.0


def test_topk_of_a_0_dim_tensor_with_k_0_still_passes_the_gradient() -> None:
    x = ag.tensor(2.0, requires_grad=True)
    ag.topk(x, 0).values.backward()
    assert x.grad.item() == 1.0  # PyTorch 2.13's


@pytest.mark.parametrize("op", [ag.cummax, ag.cummin])
def test_running_extremes_of_an_empty_input_give_it_back_as_the_gradient(op: Callable) -> None:
    x = ag.zeros(2, 0, requires_grad=True)
    (g,) = ag.autograd.grad(op(x, 0).values.sum(), x, create_graph=True)
    assert g.shape == (2, 0) and g.requires_grad  # as PyTorch's: its cummaxmin_backward returns the input


def test_atan2_gradient_at_the_origin_is_zero() -> None:
    y = ag.tensor([0.0, 1.0, 0.0], dtype=ag.float64, requires_grad=True)
    x = ag.tensor([0.0, 0.0, 1.0], dtype=ag.float64, requires_grad=True)
    gy, gx = ag.autograd.grad(ag.atan2(y, x).sum(), (y, x), create_graph=True)
    np.testing.assert_array_equal(gy.detach().numpy(), [0.0, 0.0, 1.0])  # PyTorch 2.13's
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, -1.0, 0.0])
    away = (ag.tensor([0.3, -1.2], dtype=ag.float64, requires_grad=True),
            ag.tensor([-0.7, 0.4], dtype=ag.float64, requires_grad=True))
    assert gradcheck(ag.atan2, away) and gradgradcheck(ag.atan2, away)


def test_diagonal_is_a_view_that_writes_reach_and_that_sees_writes() -> None:
    z = ag.zeros(3, 3)
    d = z.diagonal()
    assert d._is_view() and not d.is_contiguous() and d._base is z
    d.fill_(2.0)
    z[1, 1] = 7.0
    np.testing.assert_array_equal(z.numpy(), [[2, 0, 0], [0, 7, 0], [0, 0, 2]])  # PyTorch 2.13's
    np.testing.assert_array_equal(d.numpy(), [2, 7, 2])
    assert d._version == z._version == 2
    z.diagonal(1).add_(1.0)
    z.diagonal(-1)[0] = 5.0
    np.testing.assert_array_equal(z.numpy(), [[2, 1, 0], [5, 7, 1], [0, 0, 2]])
    z.diagonal().zero_()
    np.testing.assert_array_equal(z.numpy(), [[0, 1, 0], [5, 0, 1], [0, 0, 0]])
    assert not ag.diag(z)._is_view()  # diag of a matrix copies, as in PyTorch


def test_writes_through_a_diagonal_rebase_its_base_as_pytorch_does() -> None:
    x = ag.arange(6.0).reshape(2, 3).requires_grad_()
    y = x * 1
    d = y.diagonal()
    assert d.grad_fn.name() == "DiagonalBackward0"
    d.add_(1.0)
    d[0] = 5.0
    assert y.grad_fn.name() == "torch::autograd::CopySlices" and d.grad_fn.name() == "AsStridedBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), [[5, 1, 2], [3, 5, 5]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 1], [1, 1, 1]])  # y[0, 0] was overwritten: no gradient


def test_a_batched_diagonal_view_takes_an_in_place_product_with_pytorchs_gradient() -> None:
    w = ag.arange(24.0).reshape(2, 3, 4).requires_grad_()
    q = w * 1
    dd = q.diagonal(1, 0, 2)
    assert dd.shape == (3, 2)
    dd.mul_(ag.arange(3.0).reshape(3, 1))
    (q ** 2).sum().backward()
    factor = np.ones((2, 3, 4))
    for i in range(2):
        factor[i, :, i + 1] = np.arange(3.0)  # dd[k, i] is q[i, k, i + 1], multiplied by k
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.arange(24.0).reshape(2, 3, 4) * factor ** 2)


def test_a_diagonal_of_a_leaf_that_requires_grad_refuses_in_place_writes() -> None:
    x = ag.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.diagonal().zero_()
    with ag.no_grad():
        x.diagonal().fill_(3.0)
    np.testing.assert_array_equal(x.detach().numpy(), [[3, 1], [1, 3]])


def test_ravel_is_reshape_to_one_dim() -> None:
    x = ag.arange(6.0).reshape(2, 3).requires_grad_()
    r = (x * 1).ravel()
    assert r.shape == (6,) and r._is_view() and r.grad_fn.name() == "ViewBackward0"  # PyTorch 2.13's
    assert ag.ravel(ag.tensor(3.0)).shape == (1,)
    np.testing.assert_array_equal(ag.ravel(x.t()).detach().numpy(), [0, 3, 1, 4, 2, 5])


def test_unique_along_a_dim_of_a_0d_tensor_is_refused_as_in_pytorch() -> None:
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions$"):
        ag.unique(ag.tensor(5.0), dim=0)
