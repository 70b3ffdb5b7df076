"""The second batch of PyTorch-parity additions: actorgrad.linalg (inv, det, slogdet, logdet, solve, cholesky and
the vector / matrix norms), std_mean / var_mean, median / nanmedian / nansum / nanmean, the stacking and grid ops
(hstack ... column_stack, meshgrid, cartesian_prod, repeat_interleave, kron, rot90, fliplr / flipud), scatter and
index_add / index_copy / index_fill, fmod / fmax / fmin, logcumsumexp, cdist and the actorgrad.special aliases.

Values are checked against independent numpy computations and closed forms (smooth gradients too); dtypes, node
names, error texts and the subgradients at ties, NaNs and kinks are PyTorch 2.13's; gradients and second derivatives
elsewhere are checked against finite differences in float64, away from ties, kinks and singular matrices.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.linalg import LinAlgError

nan, inf = float("nan"), float("inf")
X = ag.tensor([[-1.5, 0.25, 2.5], [3.75, -0.5, 1.0]], dtype=ag.float64)
Y = ag.tensor([[0.45, 2.1, -0.65], [0.13, 0.9, 0.25]], dtype=ag.float64)
A = ag.tensor([[2.0, 0.5, -0.3], [0.1, 1.5, 0.2], [-0.4, 0.3, 3.0]], dtype=ag.float64)
S = ag.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, -0.2], [0.5, -0.2, 2.0]], dtype=ag.float64)
B = ag.tensor([[1.0, 2.0], [0.5, -1.0], [0.3, 0.7]], dtype=ag.float64)
N = ag.tensor([[3.0, 1.0, 2.0, 5.0], [nan, 0.0, 4.0, 1.0], [2.0, nan, nan, 2.0]], dtype=ag.float64)
T = ag.tensor([[1.0, 2.0, 2.0, 0.5], [3.0, 3.0, 1.0, 3.0]], dtype=ag.float64)
SLOTS = ag.tensor([0, 2])
x, y, a, s, b, n = (t.numpy() for t in (X, Y, A, S, B, N))  # for the independent numpy computations below


def np_cdist(u, v, p=2.0):
    return (np.abs(u[..., :, None, :] - v[..., None, :, :]) ** p).sum(-1) ** (1 / p)


def np_expit(v):
    return 1 / (1 + np.exp(-v))

# (expression, its value computed independently (numpy, closed forms), PyTorch's dtype)
VALUES = [
    (
        "ag.linalg.inv(A)",
        np.linalg.inv(a),
        "float64",
    ),
    ("ag.linalg.det(A)", np.linalg.det(a), "float64"),
    ("ag.det(ag.stack([A, S]))", [np.linalg.det(a), np.linalg.det(s)], "float64"),
    ("ag.linalg.slogdet(-A).sign", -1.0, "float64"),
    ("ag.linalg.slogdet(-A).logabsdet", np.log(abs(np.linalg.det(-a))), "float64"),
    ("ag.logdet(S)", np.log(np.linalg.det(s)), "float64"),
    ("ag.logdet(-A)", nan, "float64"),
    (
        "ag.linalg.solve(A, B)",
        np.linalg.solve(a, b),
        "float64",
    ),
    ("ag.linalg.solve(A, B[:, 0])", np.linalg.solve(a, b[:, 0]), "float64"),
    (
        "ag.linalg.solve(A, B.mT, left=False)",
        np.linalg.solve(a.T, b).T,  # X A = B^T
        "float64",
    ),
    (
        "ag.linalg.cholesky(S)",
        np.linalg.cholesky(s),
        "float64",
    ),
    (
        "ag.linalg.cholesky(S, upper=True)",
        np.linalg.cholesky(s).T,
        "float64",
    ),
    ("ag.linalg.vector_norm(X, 3, dim=1)", np.sum(np.abs(x) ** 3, 1) ** (1 / 3), "float64"),
    ("ag.linalg.vector_norm(X, -inf)", 0.25, "float64"),
    ("ag.linalg.matrix_norm(X)", np.sqrt(np.sum(x * x)), "float64"),
    ("ag.linalg.matrix_norm(X, 1)", 5.25, "float64"),
    ("ag.linalg.matrix_norm(X, -1)", 0.75, "float64"),
    ("ag.linalg.matrix_norm(X, inf)", 5.25, "float64"),
    ("ag.linalg.matrix_norm(X, -inf, keepdim=True)", [[4.25]], "float64"),
    ("ag.linalg.norm(X)", np.sqrt(np.sum(x * x)), "float64"),
    ("ag.linalg.norm(X, 1)", 5.25, "float64"),
    ("ag.linalg.norm(X[0], 1)", 4.25, "float64"),
    ("ag.linalg.norm(X, dim=0)", np.sqrt(np.sum(x * x, 0)), "float64"),
    ("ag.linalg.norm(X, inf, dim=(1, 0))", 5.25, "float64"),
    ("ag.linalg.vector_norm(X.float(), dtype=ag.float64)", np.sqrt(np.sum(x * x)), "float64"),  # X is exact in float32
    ("ag.std_mean(X, 1)[0]", np.std(x, 1, ddof=1), "float64"),
    ("ag.std_mean(X, 1)[1]", np.mean(x, 1), "float64"),
    ("ag.var_mean(X, correction=0)[0]", np.var(x), "float64"),
    ("ag.var_mean(X, (0, 1), keepdim=True)[1]", np.mean(x, keepdims=True), "float64"),
    ("N.median()", nan, "float64"),
    ("N.median(1).values", [2.0, nan, nan], "float64"),
    ("N.median(1).indices", [2, 0, 1], "int64"),
    ("N.nanmedian()", 2.0, "float64"),
    ("N.nanmedian(1).values", [2.0, 1.0, 2.0], "float64"),
    ("N.nanmedian(1).indices", [2, 3, 0], "int64"),
    ("N.nanmedian(0, keepdim=True).values", [[2.0, 0.0, 2.0, 2.0]], "float64"),
    ("T.median(1).values", [1.0, 3.0], "float64"),
    ("ag.tensor([1, 2, 3, 4]).median()", 2, "int64"),
    ("N.nansum()", 20.0, "float64"),
    ("N.nansum(1)", [11.0, 5.0, 4.0], "float64"),
    ("ag.tensor([1, 2]).nansum()", 3, "int64"),
    ("ag.nansum(X, 0, dtype=ag.float32)", [2.25, -0.25, 3.5], "float32"),
    ("N.nanmean()", np.nanmean(n), "float64"),
    ("N.nanmean(0)", np.nanmean(n, 0), "float64"),
    ("X.repeat_interleave(2)", [-1.5, -1.5, 0.25, 0.25, 2.5, 2.5, 3.75, 3.75, -0.5, -0.5, 1.0, 1.0], "float64"),
    (
        "X.repeat_interleave(2, dim=0)",
        [[-1.5, 0.25, 2.5], [-1.5, 0.25, 2.5], [3.75, -0.5, 1.0], [3.75, -0.5, 1.0]],
        "float64",
    ),
    ("X.repeat_interleave(ag.tensor([2, 0, 1]), dim=1)", [[-1.5, -1.5, 2.5], [3.75, 3.75, 1.0]], "float64"),
    ("ag.repeat_interleave(ag.tensor([1, 2, 0]))", [0, 1, 1], "int64"),
    ("ag.tensor(2.0).repeat_interleave(2)", [2.0, 2.0], "float32"),
    ("ag.meshgrid(X[0], Y[1, :2], indexing='xy')[0]", [[-1.5, 0.25, 2.5], [-1.5, 0.25, 2.5]], "float64"),
    ("ag.meshgrid(X[0], Y[1, :2], indexing='ij')[1]", [[0.13, 0.9], [0.13, 0.9], [0.13, 0.9]], "float64"),
    (
        "ag.cartesian_prod(X[0, :2], Y[1])",
        [[-1.5, 0.13], [-1.5, 0.9], [-1.5, 0.25], [0.25, 0.13], [0.25, 0.9], [0.25, 0.25]],
        "float64",
    ),
    ("ag.hstack([X, Y])", [[-1.5, 0.25, 2.5, 0.45, 2.1, -0.65], [3.75, -0.5, 1.0, 0.13, 0.9, 0.25]], "float64"),
    ("ag.hstack([X[0], ag.tensor(1.0, dtype=ag.float64)])", [-1.5, 0.25, 2.5, 1.0], "float64"),
    ("ag.vstack([X, Y[0]])", [[-1.5, 0.25, 2.5], [3.75, -0.5, 1.0], [0.45, 2.1, -0.65]], "float64"),
    (
        "ag.dstack([X, Y])",
        [[[-1.5, 0.45], [0.25, 2.1], [2.5, -0.65]], [[3.75, 0.13], [-0.5, 0.9], [1.0, 0.25]]],
        "float64",
    ),
    ("ag.column_stack([X[0, :2], Y[:, :2]])", [[-1.5, 0.45, 2.1], [0.25, 0.13, 0.9]], "float64"),
    ("ag.atleast_3d(X[0])", [[[-1.5], [0.25], [2.5]]], "float64"),
    ("X.fliplr()", [[2.5, 0.25, -1.5], [1.0, -0.5, 3.75]], "float64"),
    ("X.flipud()", [[3.75, -0.5, 1.0], [-1.5, 0.25, 2.5]], "float64"),
    ("X.rot90()", [[2.5, 1.0], [0.25, -0.5], [-1.5, 3.75]], "float64"),
    ("X.rot90(-3, (1, 0))", [[3.75, -1.5], [-0.5, 0.25], [1.0, 2.5]], "float64"),
    ("X.rot90(2)", [[1.0, -0.5, 3.75], [2.5, 0.25, -1.5]], "float64"),
    (
        "ag.kron(X[:, :2], Y[:, 1:])",
        np.kron(x[:, :2], y[:, 1:]),
        "float64",
    ),
    ("X.scatter(1, ag.tensor([[2], [0]]), Y)", [[-1.5, 0.25, 0.45], [0.13, -0.5, 1.0]], "float64"),
    ("X.scatter(0, ag.tensor([[1, 0, 1]]), 7.5)", [[-1.5, 7.5, 2.5], [7.5, -0.5, 7.5]], "float64"),
    ("X.index_add(1, SLOTS, Y[:, :2], alpha=2)", [[-0.6, 0.25, 6.7], [4.01, -0.5, 2.8]], "float64"),
    ("X.index_add(0, ag.tensor([1, 1]), Y)", [[-1.5, 0.25, 2.5], [4.33, 2.5, 0.6]], "float64"),
    ("X.index_copy(1, SLOTS, Y[:, :2])", [[0.45, 0.25, 2.1], [0.13, -0.5, 0.9]], "float64"),
    ("X.index_fill(1, SLOTS, -1.0)", [[-1.0, 0.25, -1.0], [-1.0, -0.5, -1.0]], "float64"),
    (
        "X.index_fill(0, ag.tensor([1]), ag.tensor(9.0, dtype=ag.float64))",
        [[-1.5, 0.25, 2.5], [9.0, 9.0, 9.0]],
        "float64",
    ),
    ("ag.fmod(X, 0.75)", [[-0.0, 0.25, 0.25], [0.0, -0.5, 0.25]], "float64"),
    ("ag.fmod(X, Y)", np.fmod(x, y), "float64"),
    ("ag.fmod(ag.tensor([5, -5]), 3)", [2, -2], "int64"),
    ("ag.fmod(ag.tensor([5, -5]), 1.5)", [0.5, -0.5], "float32"),
    ("ag.fmax(N[1], N[2])", [2.0, 0.0, 4.0, 2.0], "float64"),
    ("ag.fmin(N[1], N[2])", [2.0, 0.0, 4.0, 1.0], "float64"),
    ("ag.fmax(ag.tensor([1, 4]), ag.tensor([3, 2]))", [3, 4], "int64"),
    ("ag.fmin(X, ag.tensor(0.5))", [[-1.5, 0.25, 0.5], [0.5, -0.5, 0.5]], "float64"),
    (
        "X.logcumsumexp(1)",
        np.logaddexp.accumulate(x, 1),
        "float64",
    ),
    ("ag.logcumsumexp(X * 300, 0)", np.logaddexp.accumulate(x * 300, 0), "float64"),
    ("ag.cdist(X, Y)", np_cdist(x, y), "float64"),
    ("ag.cdist(X, Y, p=1)", np_cdist(x, y, 1.0), "float64"),
    (
        "ag.cdist(X.unsqueeze(0), ag.stack([Y, Y * 2]))",
        np_cdist(x[None], np.stack([y, y * 2])),
        "float64",
    ),
    (
        "ag.special.expit(X)",
        np_expit(x),
        "float64",
    ),
    (
        "ag.special.logit(ag.special.expit(X))",
        np.log(np_expit(x) / (1 - np_expit(x))),
        "float64",
    ),
    (
        "ag.special.xlogy(X, Y.abs())",
        x * np.log(np.abs(y)),
        "float64",
    ),
    (
        "ag.special.log_softmax(X, 1)",
        x - np.log(np.exp(x).sum(1, keepdims=True)),
        "float64",
    ),
    (
        "ag.special.erfc(X)",
        np.vectorize(math.erfc)(x),
        "float64",
    ),
]


@pytest.mark.parametrize(("expression", "want", "dtype"), VALUES, ids=[v[0] for v in VALUES])
def test_values_and_dtypes_match_pytorch(expression: str, want, dtype: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = eval(expression)
    assert got.dtype == np.dtype(dtype)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.detach().numpy(), np.array(want, dtype=float), rtol=1e-12, atol=1e-12)


def upstream(*shape: int) -> np.ndarray:
    """W: 1/4, 2/4, ... in order, the weights of the output in the gradients below."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=float).reshape(shape) / 4


def cholesky_grad(sym: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Murray's (2016) rule, symmetrised as PyTorch's: L^-T Phi(L^T Lbar) L^-1, Phi the lower part, half diagonal."""
    lower = np.linalg.cholesky(sym)
    product = lower.T @ np.tril(weights)
    inverse = np.linalg.inv(lower)
    grad = inverse.T @ (np.tril(product) - np.diag(np.diag(product)) / 2) @ inverse
    return (grad + grad.T) / 2


def cdist_self_grad(u: np.ndarray, v: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """d/du of sum W cdist(u, [u[:1]; v]): (u_i - z_j) / d_ij from the first operand, and from z_0 = u_0 the
    opposite; 0 where a distance is 0 (PyTorch's subgradient at the kink)."""
    z = np.concatenate([u[:1], v])
    diff = u[:, None, :] - z[None, :, :]
    distance = np.sqrt((diff ** 2).sum(-1, keepdims=True))
    unit = np.divide(diff, distance, out=np.zeros_like(diff), where=distance > 0) * weights[..., None]
    grad = unit.sum(1)
    grad[0] -= unit[:, 0].sum(0)
    return grad


# (expression, leaf, the gradient of (expression * W).sum() for the leaf, W from upstream: closed forms, and the
# subgradients PyTorch picks at ties, NaNs and kinks)
GRADS = [
    ("T.median()", "T", [[0.0, 0.125, 0.125, 0.0], [0.0, 0.0, 0.0, 0.0]]),  # tied medians share W evenly
    (
        "N.median()",
        "N",
        [
            [0.0, 0.0, 0.0, 0.0],
            [0.25 / 3, 0.0, 0.0, 0.0],
            [0.0, 0.25 / 3, 0.25 / 3, 0.0],
        ],
    ),
    (
        "N.nanmedian()",
        "N",
        [
            [0.0, 0.0, 0.25 / 3, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [0.25 / 3, 0.0, 0.0, 0.25 / 3],
        ],
    ),
    ("N.median(1).values", "N", [[0.0, 0.0, 0.25, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.75, 0.0, 0.0]]),
    ("N.nanmedian(1).values", "N", [[0.0, 0.0, 0.25, 0.0], [0.0, 0.0, 0.0, 0.5], [0.75, 0.0, 0.0, 0.0]]),
    ("ag.fmax(N[1], N[2])", "N", [[0.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.75, 0.0], [0.25, 0.0, 0.0, 1.0]]),
    ("ag.fmin(N[1], N[2])", "N", [[0.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.75, 1.0], [0.25, 0.0, 0.0, 0.0]]),
    ("N.nansum(1)", "N", [[0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.5, 0.5], [0.75, 0.0, 0.0, 0.75]]),
    ("ag.linalg.cholesky(S)", "S", cholesky_grad(s, upstream(3, 3))),
    ("ag.linalg.det(A)", "A", 0.25 * np.linalg.det(a) * np.linalg.inv(a).T),
    ("ag.linalg.inv(A)", "A", -np.linalg.inv(a).T @ upstream(3, 3) @ np.linalg.inv(a).T),
    ("ag.linalg.slogdet(A).logabsdet", "A", 0.25 * np.linalg.inv(a).T),
    ("ag.linalg.solve(A, B)", "A", -np.linalg.solve(a.T, upstream(3, 2)) @ np.linalg.solve(a, b).T),  # -A^-T W X^T
    ("ag.linalg.solve(A, B)", "B", np.linalg.solve(a.T, upstream(3, 2))),
    ("ag.linalg.matrix_norm(T, 1)", "T", [[0.0, 0.25, 0.0, 0.0], [0.0, 0.25, 0.0, 0.0]]),
    ("ag.cdist(X, ag.cat([X[:1], Y]))", "X", cdist_self_grad(x, y, upstream(2, 3))),
    ("ag.fmod(X, Y)", "Y", [[0.75, -0.0, 2.25], [-28.0, 0.0, -6.0]]),
    ("X.scatter(1, ag.tensor([[2, 2], [0, 1]]), Y[:, :2])", "Y", [[0.75, 0.75, 0.0], [1.0, 1.25, 0.0]]),
]


@pytest.mark.parametrize(("expression", "leaf", "want"), GRADS, ids=[f"{g[0]} d{g[1]}" for g in GRADS])
def test_gradients_at_ties_nans_and_kinks_match_pytorch(expression: str, leaf: str, want) -> None:
    scope = dict(globals())
    scope[leaf] = globals()[leaf].clone().requires_grad_()
    out = eval(expression, scope)
    weights = ag.tensor(np.arange(1, out.numel() + 1, dtype=float).reshape(out.shape) / 4, dtype=out.dtype)
    (got,) = ag.autograd.grad((out * weights).sum(), scope[leaf])
    np.testing.assert_allclose(got.numpy(), np.array(want), rtol=1e-10, atol=1e-12)


# (expression on leaves X, Y, A, S, B that require grad, PyTorch's grad_fn.name())
NAMES = [
    ("ag.linalg.inv(A)", "LinalgInvExBackward0"),
    ("ag.inverse(A)", "LinalgInvExBackward0"),
    ("ag.linalg.det(A)", "LinalgDetBackward0"),
    ("A.det()", "LinalgDetBackward0"),
    ("ag.linalg.slogdet(A).sign", "LinalgSlogdetBackward0"),
    ("ag.linalg.slogdet(A).logabsdet", "LinalgSlogdetBackward0"),
    ("ag.logdet(S)", "WhereBackward0"),
    ("ag.linalg.solve(A, B)", "LinalgSolveExBackward0"),
    ("ag.linalg.cholesky(S)", "LinalgCholeskyExBackward0"),
    ("ag.linalg.vector_norm(X)", "LinalgVectorNormBackward0"),
    ("ag.linalg.matrix_norm(X)", "LinalgVectorNormBackward0"),
    ("ag.linalg.matrix_norm(X, 1)", "AmaxBackward0"),
    ("ag.linalg.matrix_norm(X, -inf)", "AminBackward0"),
    ("ag.linalg.norm(X, dim=1)", "LinalgVectorNormBackward0"),
    ("ag.std_mean(X)[0]", "StdMeanBackward0"),
    ("ag.std_mean(X)[1]", "StdMeanBackward0"),
    ("ag.var_mean(X, 1)[0]", "VarMeanBackward0"),
    ("ag.var_mean(X, 1)[1]", "VarMeanBackward0"),
    ("X.median()", "MedianBackward0"),
    ("X.median(1).values", "MedianBackward1"),
    ("X.nanmedian()", "NanmedianBackward0"),
    ("X.nanmedian(0).values", "NanmedianBackward1"),
    ("X.nansum()", "NansumBackward0"),
    ("X.nanmean(1)", "DivBackward0"),
    ("X.repeat_interleave(2)", "ViewBackward0"),
    ("X.repeat_interleave(ag.tensor([1, 2]), dim=0)", "IndexSelectBackward0"),
    ("ag.meshgrid(X[0], Y[0], indexing='ij')[1]", "ExpandBackward0"),
    ("ag.hstack([X, Y])", "CatBackward0"),
    ("ag.vstack([X, Y])", "CatBackward0"),
    ("ag.dstack([X, Y])", "CatBackward0"),
    ("ag.column_stack([X, Y])", "CatBackward0"),
    ("ag.cartesian_prod(X[0], Y[0])", "StackBackward0"),
    ("X.fliplr()", "FlipBackward0"),
    ("X.flipud()", "FlipBackward0"),
    ("X.rot90()", "Rot90Backward0"),
    ("ag.fmod(X, 0.5)", "FmodBackward0"),
    ("ag.fmod(X, Y)", "FmodBackward1"),
    ("ag.fmax(X, Y)", "FmaxBackward0"),
    ("ag.fmin(X, Y)", "FminBackward0"),
    ("ag.cdist(X, Y)", "CdistBackward0"),
    ("X.logcumsumexp(0)", "LogcumsumexpBackward0"),
    ("X.scatter(1, ag.tensor([[0], [1]]), Y)", "ScatterBackward0"),
    ("X.scatter(1, ag.tensor([[0], [1]]), 2.0)", "ScatterBackward1"),
    ("X.index_add(1, SLOTS, Y[:, :2])", "IndexAddBackward0"),
    ("X.index_copy(1, SLOTS, Y[:, :2])", "IndexCopyBackward0"),
    ("X.index_fill(1, SLOTS, 2.0)", "IndexFillBackward0"),
    ("X.index_fill(1, SLOTS, ag.tensor(2.0, dtype=ag.float64, requires_grad=True))", "IndexFillBackward1"),
    ("ag.special.expit(X)", "SigmoidBackward0"),
    ("ag.special.logit(ag.special.expit(X))", "LogitBackward0"),
    ("ag.special.log_softmax(X, 1)", "LogSoftmaxBackward0"),
    ("ag.special.xlogy(X, Y)", "XlogyBackward0"),
    ("ag.atleast_2d(X[0])", "UnsqueezeBackward0"),
    ("ag.atleast_3d(X)", "UnsqueezeBackward0"),
]


@pytest.mark.parametrize(("expression", "name"), NAMES, ids=[n[0] for n in NAMES])
def test_node_names_match_pytorch(expression: str, name: str) -> None:
    scope = dict(globals())
    for leaf in ("X", "Y", "A", "S", "B"):
        scope[leaf] = globals()[leaf].clone().requires_grad_()
    assert eval(expression, scope).grad_fn.name() == name


# (expression, PyTorch's exception type, its message)
ERRORS = [
    (
        "ag.linalg.inv(ag.ones(2, 3))",
        RuntimeError,
        "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    ("ag.linalg.inv(ag.ones(3))", RuntimeError, "linalg.inv: The input tensor A must have at least 2 dimensions."),
    (
        "ag.linalg.inv(ag.ones(2, 2, dtype=ag.int64))",
        RuntimeError,
        "linalg.inv: Expected a floating point or complex tensor as input. Got Long",
    ),
    (
        "ag.linalg.inv(ag.ones(2, 2, dtype=ag.float16))",
        RuntimeError,
        "linalg.inv: Low precision dtypes not supported. Got Half",
    ),
    (
        "ag.linalg.inv(ag.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]))",
        LinAlgError,
        "linalg.inv: The diagonal element 3 is zero, the inversion could not be completed because the input matrix "
        "is singular.",
    ),
    (
        "ag.linalg.inv(ag.stack([ag.eye(3), ag.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])]))",
        LinAlgError,
        "linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion could not be completed because "
        "the input matrix is singular.",
    ),
    (
        "ag.linalg.det(ag.ones(2, 3))",
        RuntimeError,
        "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    (
        "ag.linalg.slogdet(ag.ones(2, 2, dtype=ag.int64))",
        RuntimeError,
        "linalg.slogdet: Expected a floating point or complex tensor as input. Got Long",
    ),
    (
        "ag.logdet(ag.ones(2, 3))",
        RuntimeError,
        "logdet: A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    (
        "ag.linalg.solve(ag.eye(2), ag.ones(3))",
        RuntimeError,
        "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)",
    ),
    (
        "ag.linalg.solve(ag.eye(2), ag.ones(3, 1))",
        RuntimeError,
        "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)",
    ),
    (
        "ag.linalg.solve(ag.eye(2), ag.ones(2, dtype=ag.float64))",
        RuntimeError,
        "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead",
    ),
    (
        "ag.linalg.solve(ag.ones(2, 2), ag.ones(2))",
        LinAlgError,
        "torch.linalg.solve: The solver failed because the input matrix is singular.",
    ),
    (
        "ag.linalg.cholesky(-ag.eye(3))",
        LinAlgError,
        "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the "
        "leading minor of order 1 is not positive-definite).",
    ),
    (
        "ag.linalg.cholesky(ag.stack([ag.eye(3), ag.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])]))",
        LinAlgError,
        "linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not "
        "positive-definite (the leading minor of order 2 is not positive-definite).",
    ),
    (
        "ag.linalg.vector_norm(ag.ones(2, dtype=ag.int64))",
        RuntimeError,
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long",
    ),
    (
        "ag.linalg.vector_norm(ag.ones(2), 'fro')",
        TypeError,
        "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str",
    ),
    (
        "ag.linalg.vector_norm(ag.ones(2), dtype=ag.int64)",
        RuntimeError,
        "linalg.vector_norm: dtype should be floating point or complex, but got Long",
    ),
    (
        "ag.linalg.vector_norm(ag.ones(2, dtype=ag.float64), dtype=ag.float32)",
        RuntimeError,
        "linalg.vector_norm: the dtype of the input (Double) should be convertible without narrowing to the "
        "specified dtype (Float)",
    ),
    (
        "ag.linalg.matrix_norm(ag.ones(2), 'fro')",
        RuntimeError,
        "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.",
    ),
    ("ag.linalg.matrix_norm(ag.ones(2, 2), 3)", RuntimeError, "linalg.matrix_norm: Order 3 not supported."),
    ("ag.linalg.matrix_norm(ag.ones(2, 2), 'abc')", RuntimeError, "linalg.matrix_norm: Order abc not supported."),
    (
        "ag.linalg.matrix_norm(ag.ones(2, 2), dim=(0, 0))",
        RuntimeError,
        "linalg.matrix_norm: dims must be different. Got (0, 0)",
    ),
    (
        "ag.linalg.norm(ag.ones(2, 2, 2), 2)",
        RuntimeError,
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.",
    ),
    ("ag.linalg.norm(ag.ones(2, 2), 'fro', dim=0)", RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    ("ag.std_mean(ag.tensor([1, 2]))", RuntimeError, "std_mean only support floating point and complex dtypes"),
    (
        "ag.tensor([1, 2]).nanmean()",
        RuntimeError,
        "nanmean(): expected input to have floating point or complex dtype but got Long",
    ),
    ("ag.ones(2, 0).median(1)", IndexError, "median(): Expected reduction dim 1 to have non-zero size."),
    ("ag.meshgrid()", RuntimeError, "meshgrid expects a non-empty TensorList"),
    (
        "ag.meshgrid(ag.ones(2), ag.ones(3), indexing='xx')",
        RuntimeError,
        'torch.meshgrid: indexing must be one of "xy" or "ij", but received: xx',
    ),
    (
        "ag.meshgrid(ag.ones(2), ag.ones(3, dtype=ag.float64), indexing='ij')",
        RuntimeError,
        "meshgrid expects all tensors to have the same dtype",
    ),
    ("ag.ones(2, 2).repeat_interleave(-1)", RuntimeError, "Repeats must be non-negative"),
    ("ag.ones(2, 2).repeat_interleave(ag.tensor([1, -2]), dim=0)", RuntimeError, "repeats can not be negative"),
    (
        "ag.ones(2, 2).repeat_interleave(ag.tensor([1, 2, 3]), dim=0)",
        RuntimeError,
        "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2",
    ),
    ("ag.ones(2, 2).repeat_interleave(ag.tensor([[1]]), dim=0)", RuntimeError, "repeats must be 0-dim or 1-dim tensor"),
    ("ag.hstack([])", RuntimeError, "hstack expects a non-empty TensorList"),
    (
        "ag.vstack([ag.ones(2), ag.ones(3)])",
        RuntimeError,
        "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 for tensor number 1 in "
        "the list.",
    ),
    ("ag.ones(3).fliplr()", RuntimeError, "Input must be >= 2-d."),
    ("ag.tensor(1.0).flipud()", RuntimeError, "Input must be >= 1-d."),
    ("ag.ones(2).rot90()", RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (
        "ag.ones(2, 2).rot90(1, [0, 0])",
        RuntimeError,
        "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0",
    ),
    ("ag.ones(2, 2).rot90(1, [0])", RuntimeError, "expected total rotation dims == 2, but got dims = 1"),
    ("ag.cartesian_prod(ag.ones(2, 2))", RuntimeError, "Expect a 1D vector, but got shape [2, 2]"),
    (
        "ag.zeros(3, 4).index_add(1, SLOTS, ag.ones(3, 3))",
        RuntimeError,
        "index_add_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 1",
    ),
    (
        "ag.zeros(3, 4).index_add(1, SLOTS, ag.ones(3, 2, dtype=ag.float64))",
        RuntimeError,
        "index_add_(): self (Float) and source (Double) must have the same scalar type",
    ),
    (
        "ag.zeros(3, 4).index_add(1, SLOTS.float(), ag.ones(3, 2))",
        RuntimeError,
        "index_add_(): Expected dtype int32/int64 for index but got: Float",
    ),
    (
        "ag.zeros(3, 4).index_add(1, ag.tensor([[0, 2]]), ag.ones(3, 2))",
        IndexError,
        "index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 2]",
    ),
    (
        "ag.zeros(3, 4).index_add(1, ag.tensor([0, 5]), ag.ones(3, 2))",
        RuntimeError,
        "index 5 is out of bounds for dimension 1 with size 4",
    ),
    (
        "ag.zeros(3, 4).index_add(1, SLOTS, ag.ones(2, 2))",
        RuntimeError,
        "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [3, "
        "4] source.shape = [2, 2]",
    ),
    (
        "ag.zeros(3, 4).index_copy(1, SLOTS, ag.ones(3, 3))",
        IndexError,
        "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)",
    ),
    (
        "ag.zeros(3, 4).index_copy(1, SLOTS, ag.ones(3, 2, dtype=ag.float64))",
        RuntimeError,
        "index_copy_(): self and source expected to have the same dtype, but got (self) Float and (source) Double",
    ),
    (
        "ag.zeros(3, 4).index_copy(1, ag.tensor([0, 5]), ag.ones(3, 2))",
        IndexError,
        "index_copy_(): index 5 is out of bounds for dimension 1 with size 4",
    ),
    (
        "ag.zeros(3, 4).index_copy(1, SLOTS.int(), ag.ones(3, 2))",
        RuntimeError,
        "index_copy_(): Expected a long tensor for index, but got Int",
    ),
    ("ag.zeros(3, 4).index_fill(1, SLOTS.int(), 2)", IndexError, "index_fill_(): Expected dtype int64 for index."),
    (
        "ag.zeros(3, 4).index_fill(1, ag.tensor([0, 5]), 2)",
        IndexError,
        "index 5 is out of bounds for dimension 1 with size 4",
    ),
    (
        "ag.zeros(3, 4).index_fill(1, SLOTS, ag.ones(2))",
        RuntimeError,
        "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).",
    ),
    ("ag.zeros(3, 4).index_fill(1, ag.tensor([[0]]), 1)", RuntimeError, "Index has to be a vector/scalar"),
    (
        "ag.zeros(3, 4).scatter(1, ag.tensor([[0], [1]]), ag.ones(2, 1, dtype=ag.float64))",
        RuntimeError,
        "scatter(): Expected self.dtype to be equal to src.dtype",
    ),
    (
        "ag.zeros(3, 4).scatter(1, ag.tensor([[0], [5]]), ag.ones(2, 1))",
        RuntimeError,
        "index 5 is out of bounds for dimension 1 with size 4",
    ),
    ("ag.fmod(ag.tensor([5, -5]), 0)", RuntimeError, "ZeroDivisionError"),
    ("ag.fmax(ag.tensor([1, 2]), 1.5)", TypeError, "fmax(): argument 'other' (position 2) must be Tensor, not float"),
    ("ag.cdist(ag.ones(3), ag.ones(3))", RuntimeError, "cdist only supports at least 2D tensors, X1 got: 1D"),
    (
        "ag.cdist(ag.ones(2, 3), ag.ones(2, 4))",
        RuntimeError,
        "X1 and X2 must have the same number of columns. X1: 3 X2: 4",
    ),
    (
        "ag.cdist(ag.ones(2, 3, dtype=ag.int64), ag.ones(2, 3, dtype=ag.int64))",
        RuntimeError,
        "cdist only supports floating-point dtypes, X1 got: Long",
    ),
    ("ag.cdist(ag.ones(2, 3), ag.ones(2, 3), p=-1)", RuntimeError, "cdist only supports non-negative p values"),
    ("ag.tensor([1, 2]).logcumsumexp(0)", NotImplementedError, "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
]


@pytest.mark.parametrize(("expression", "kind", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_pytorch(expression: str, kind: type, message: str) -> None:
    with pytest.raises(kind) as raised:
        eval(expression)
    assert str(raised.value) == message


def _spd(a: ag.Tensor) -> ag.Tensor:
    """A symmetric positive-definite matrix from any square one."""
    return a @ a.mT + ag.eye(a.shape[-1], dtype=a.dtype)


P = ag.tensor([[0.3, -1.2, 0.7, 2.0], [1.1, 0.45, -0.6, 0.9], [0.2, 0.5, 1.7, -0.8]], dtype=ag.float64)
Q = ag.tensor([[0.45, 2.1, -0.65, 0.15], [0.13, 0.9, 0.25, -1.3]], dtype=ag.float64)
Z = ag.tensor([[0.3, nan, 0.7, 2.0], [1.1, 0.4, -0.6, nan], [0.2, 0.5, 1.7, -0.8]], dtype=ag.float64)
IDX = ag.tensor([[0], [3], [1]])

# (name, function, inputs): first and second derivatives against finite differences
GRADCHECKS: list[tuple[str, Callable, tuple]] = [
    ("inv", ag.linalg.inv, (A,)),
    ("det batched", lambda a: ag.linalg.det(ag.stack([a, a.mT * 0.5])), (A,)),
    ("slogdet", lambda a: ag.linalg.slogdet(a).logabsdet, (A,)),
    ("logdet", lambda a: ag.logdet(_spd(a)), (A,)),
    ("solve", ag.linalg.solve, (A, B)),
    ("solve vector", lambda a, b: ag.linalg.solve(a, b[:, 0]), (A, B)),
    ("solve broadcast batch", lambda a, b: ag.linalg.solve(ag.stack([a, a * 2]), b), (A, B)),
    ("solve left=False", lambda a, b: ag.linalg.solve(a, b.mT, left=False), (A, B)),
    ("cholesky", lambda a: ag.linalg.cholesky(_spd(a)), (A,)),
    ("cholesky upper", lambda a: ag.linalg.cholesky(_spd(a), upper=True), (A,)),
    ("vector_norm", lambda x: ag.linalg.vector_norm(x, 3, dim=1), (P,)),
    (
        "matrix_norm fro 1 -inf",
        lambda x: ag.linalg.matrix_norm(x) + ag.linalg.matrix_norm(x, 1) + ag.linalg.matrix_norm(x, -inf),
        (P,),
    ),
    ("std_mean", lambda x: ag.std_mean(x, 1), (P,)),
    ("var_mean", lambda x: ag.var_mean(x, (0, 1), correction=0), (P,)),
    ("median", lambda x: x.median(), (P,)),
    ("median dim", lambda x: x.median(0, keepdim=True).values, (P,)),
    ("nanmedian dim", lambda x: x.nanmedian(1).values, (Z,)),
    ("nansum nanmean", lambda x: x.nansum(1) * x.nanmean(), (Z,)),
    ("hstack vstack", lambda x, y: ag.hstack([x, x]).sum(1)[:2] + ag.vstack([x, y]).sum(1)[:2], (P, Q)),
    (
        "dstack column_stack",
        lambda x, y: ag.dstack([y, y * y]).sum((1, 2)) + ag.column_stack([y[0], y.mT]).sum(0)[:2],
        (P, Q),
    ),
    (
        "meshgrid cartesian_prod",
        lambda x, y: (
            ag.meshgrid(x[0], y[0], indexing="xy")[0] * ag.meshgrid(x[0], y[0], indexing="ij")[1].mT
            + ag.cartesian_prod(y[0], x[0])[:, 0].reshape(4, 4)
        ),
        (P, Q),
    ),
    (
        "repeat_interleave",
        lambda x: (
            x.repeat_interleave(2)
            * x.repeat_interleave(ag.tensor([2, 0, 1]), dim=0).repeat_interleave(3, dim=1).reshape(-1)[:24]
        ),
        (P,),
    ),
    (
        "kron rot90 flips",
        lambda x, y: (
            ag.kron(x, y).sum(0)[:4] * x.rot90().sum(1) + x.rot90(-3, (1, 0)).fliplr().sum(1) + x.rot90(2).flipud()[0]
        ),
        (P, Q),
    ),
    (
        "scatter index_add index_copy",
        lambda x, y: (
            x.scatter(1, IDX, y.repeat(2, 1)[:3, :1] * 3)
            * x.index_add(1, ag.tensor([0, 2]), y[:, :2].repeat(2, 1)[:3], alpha=2)
            + x.index_copy(1, ag.tensor([1, 3]), y[:, 1:3].repeat(2, 1)[:3])
        ),
        (P, Q),
    ),
    (
        "scatter value index_fill",
        lambda x, v: (
            x.scatter(0, ag.tensor([[0, 2, 1, 0]]), 2.5) * x.index_fill(1, ag.tensor([1, 2]), v)
            + x.index_fill(0, ag.tensor([2]), -1.0)
        ),
        (P, ag.tensor(1.5, dtype=ag.float64)),
    ),
    (
        "fmod fmax fmin",
        lambda x, y: ag.fmod(x[:2], y) * ag.fmax(x[:2], y) + ag.fmin(x[:2], y[0]) + ag.fmod(x[:2], 0.65),
        (P, Q),
    ),
    ("logcumsumexp", lambda x: x.logcumsumexp(1) + ag.logcumsumexp(x * 300, 0), (P,)),
    ("cdist", ag.cdist, (P, Q)),
    ("cdist batched", lambda x, y: ag.cdist(x.unsqueeze(0), ag.stack([y, y * 2])), (P, Q)),
    ("cdist p=1 p=3", lambda x, y: ag.cdist(x, y, p=1) + ag.cdist(x, y, p=3), (P, Q)),
]


@pytest.mark.parametrize(("name", "f", "inputs"), GRADCHECKS, ids=[c[0] for c in GRADCHECKS])
def test_first_and_second_derivatives_match_finite_differences(name: str, f: Callable, inputs: tuple) -> None:
    leaves = tuple(t.clone().requires_grad_() for t in inputs)
    assert gradcheck(f, leaves)
    assert gradgradcheck(f, leaves)


def test_linalg_and_special_are_namespaces_of_pytorchs_names() -> None:
    assert issubclass(LinAlgError, RuntimeError)
    x = ag.tensor([-1.0, 2.0], requires_grad=True)
    assert ag.special.expit(x).grad_fn.name() == "SigmoidBackward0"
    assert ag.special.log_softmax(x, 0).grad_fn.name() == "LogSoftmaxBackward0"
    assert ag.inverse(A).shape == (3, 3) and A.slogdet().sign.item() == 1.0


def test_meshgrid_without_indexing_warns_and_indexes_ij() -> None:
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        grids = ag.meshgrid(X[0], Y[0, :2])
    assert [g.shape for g in grids] == [(3, 2), (3, 2)]


def test_logcumsumexp_of_a_zero_dim_tensor_passes_the_gradient_on() -> None:
    x = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    out = x.logcumsumexp(0)
    assert out.item() == 0.5
    assert ag.autograd.grad(out * 3, x)[0].item() == 3.0


def test_the_sign_of_slogdet_has_no_gradient() -> None:
    a = A.clone().requires_grad_()
    (got,) = ag.autograd.grad(ag.linalg.slogdet(a).sign, a, allow_unused=True)
    assert got is None


# On cuda:0 (CuPy, or the stand-in in CI), with every result and gradient (first and second order) as the cpu's.
CUDA_CASES: list[tuple[str, Callable]] = [
    (
        "linalg",
        lambda a, b, n, i: (
            ag.linalg.inv(a).sum(0)
            + ag.linalg.det(a)
            + ag.linalg.slogdet(a)[1]
            + ag.linalg.solve(a, b).sum(1)
            + ag.linalg.cholesky(a @ a.mT).sum(0)
            + ag.linalg.matrix_norm(a, 1)
            + ag.linalg.norm(a)
        ),
    ),
    (
        "moments medians",
        lambda a, b, n, i: (
            ag.std_mean(a, 1)[0] * ag.var_mean(a, 1)[1]
            + n.median(1).values[:3]
            + n.nanmedian(1).values[:3]
            + n.nansum(1)[:3]
            + n.nanmean(1)[:3]
        ),
    ),
    (
        "stacking",
        lambda a, b, n, i: (
            ag.hstack([a, b]).sum(1)
            + ag.vstack([a, b.mT]).sum(0)
            + ag.column_stack([a[0], b]).sum(1)
            + ag.dstack([a, a]).sum((1, 2))
            + ag.meshgrid(a[0], b[0], indexing="xy")[0].sum(0)[:3].repeat(1)
            + a.repeat_interleave(2, dim=0).sum(0)
            + a.repeat_interleave(i.add(1), dim=1).sum(1)
            + a.rot90().sum(0)
            + ag.kron(a[:2, :2], b[:2, :1]).sum(1)[:3] * a[0]
        ),
    ),
    (
        "scatter",
        lambda a, b, n, i: (
            a.scatter(1, i.reshape(3, 1), b[:, :1]).sum(1)
            + a.scatter(0, i.reshape(1, 3), 2.0).sum(1)
            + a.index_add(1, i[:2], b, alpha=2).sum(1)
            + a.index_copy(1, i[:2], b).sum(1)
            + a.index_fill(1, i[:2], 1.5).sum(1)
        ),
    ),
    (
        "fmod fmax fmin logcumsumexp cdist",
        lambda a, b, n, i: (
            (ag.fmod(a, b[:, :1] + 0.1) + ag.fmax(a, b[:, 1:]) + ag.fmin(a, b[:, :1])).sum(0)
            + a.logcumsumexp(1).sum(0)
            + ag.cdist(a, b.mT).sum(1)
        ),
    ),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "f"), CUDA_CASES, ids=[c[0] for c in CUDA_CASES])
def test_additions_on_cuda_give_the_cpus_values_and_gradients(name: str, f: Callable, cupy) -> None:
    results = []
    for d in ("cpu", "cuda:0"):
        leaves = [ag.tensor(t.numpy(), device=d, requires_grad=True) for t in (A, B, Z)]
        index = ag.tensor([2, 0, 1], device=d)
        out = f(*leaves, index)
        assert out.device == ag.device(d)
        first = [g for g in ag.autograd.grad((out * out).sum(), leaves, create_graph=True, allow_unused=True)
                 if g is not None]
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves, allow_unused=True)
        results.append([t if t is None else t.detach().cpu().numpy() for t in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        if cpu is None:
            assert cuda is None
        else:
            np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)


# -- found by a randomized comparison with PyTorch 2.13 -----------------------------------------------------------
def test_scatter_and_index_ops_take_0_dim_tensors_as_one_element_vectors() -> None:
    x = ag.tensor(1.5, dtype=ag.float64, requires_grad=True)
    s = ag.tensor(4.0, dtype=ag.float64, requires_grad=True)
    out = (ag.scatter(x, 0, ag.tensor(0), s) * 3 + ag.index_add(x, 0, ag.tensor([0]), s, alpha=2) * 5
           + ag.index_copy(x, -1, ag.tensor(0), s) * 7 + ag.index_fill(x, 0, ag.tensor([0]), 2.5) * 11)
    assert out.shape == () and out.item() == 115.0
    assert [g.item() for g in ag.autograd.grad(out, (x, s))] == [5.0, 20.0]
    assert ag.scatter(x, 0, ag.tensor([0]), 2.0).item() == 2.0
    np.testing.assert_array_equal(ag.index_copy(ag.zeros(3), 0, ag.tensor(1), ag.tensor(5.0)).numpy(), [0, 5, 0])
    for f in (lambda t: ag.scatter(t, 0, ag.tensor(0), t * 2), lambda t: ag.index_add(t, 0, ag.tensor([0]), t * t),
              lambda t: ag.index_copy(t, 0, ag.tensor([0]), t * 3), lambda t: ag.index_fill(t, 0, ag.tensor(0), 1.0)):
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_index_add_and_index_copy_refuse_bad_sources_with_pytorchs_errors_in_its_order() -> None:
    x0, x2 = ag.tensor(1.0), ag.ones(2, 3)
    cases = [
        (lambda: ag.index_add(x0, 0, ag.tensor([0]), ag.tensor([3.0])), RuntimeError,
         "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [] "
         "source.shape = [1]"),
        (lambda: ag.index_add(x0, 0, ag.tensor([0]), ag.tensor([3.0, 4.0])), RuntimeError,
         "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0"),
        (lambda: ag.index_add(x2, 1, ag.tensor(1), ag.ones(2)), RuntimeError,
         "index_add_(): Indexing dim 1 is out of bounds of the source tensor with dim 1"),
        (lambda: ag.index_add(x2, 0, ag.tensor([1]), ag.ones(3)), RuntimeError,
         "index_add_(): Number of indices (1) should be equal to source.size(dim): (3), for dim: 0"),
        (lambda: ag.index_copy(x0, 0, ag.tensor([0, 0]), ag.tensor(3.0)), IndexError,
         "index_copy_(): When source is scalar, index should have one element (got 2)"),
        (lambda: ag.index_copy(x2, 0, ag.tensor([1]), ag.ones(3)), IndexError,
         "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source "
         "dimensionality (1), destination dimensionality (2)"),
        (lambda: ag.index_copy(ag.ones(2, 3, 4), 1, ag.tensor([1]), ag.ones(2, 1, 5)), RuntimeError,
         "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 2 4 at "
         "dimension 1 and source slice shape: 2 5 at dimension 0."),
        (lambda: ag.index_copy(x2, 0, ag.tensor([[0]]), ag.ones(1, 3)), IndexError,
         "index_copy_(): Index should have dimension 1 or 0 (got 2)"),
        (lambda: ag.index_copy(x0, 0, ag.tensor([1]), ag.tensor([3.0])), IndexError,
         "index_copy_(): index 1 is out of bounds for dimension 0 with size 1"),
        (lambda: ag.index_fill(x0, 0, ag.tensor([1]), 2.0), IndexError,
         "index 1 is out of bounds for dimension 0 with size 1"),
    ]
    for f, error, text in cases:
        with pytest.raises(error) as info:
            f()
        assert str(info.value) == text


def test_index_fill_counts_negative_indices_from_the_end_and_each_filled_element_once() -> None:
    a = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    out = ag.index_fill(a, 0, ag.tensor([-1, 0]), 9.0)
    np.testing.assert_array_equal(out.detach().numpy(), [9.0, 2.0, 9.0])
    np.testing.assert_array_equal(ag.autograd.grad(out.sum(), a)[0].numpy(), [0.0, 1.0, 0.0])
    v = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    out = ag.index_fill(a, 0, ag.tensor([2, 2, 0]), v)
    ga, gv = ag.autograd.grad((out * ag.tensor([2.0, 3.0, 5.0], dtype=ag.float64)).sum(), (a, v))
    np.testing.assert_array_equal(ga.numpy(), [0.0, 3.0, 0.0])
    assert gv.item() == 7.0


def test_scatter_checks_as_pytorch_and_an_empty_index_writes_nothing() -> None:
    x = ag.ones(2, 3)
    np.testing.assert_array_equal(ag.scatter(x, 0, ag.zeros(0, dtype=ag.int64), ag.ones(1)).numpy(), np.ones((2, 3)))
    cases = [
        (lambda: ag.scatter(x, 0, ag.zeros(2, 3, dtype=ag.int64), ag.ones(1, 3)),
         "Expected index [2, 3] to be no larger than self [2, 3] apart from dimension 0 and to be no larger size "
         "than src [1, 3]"),
        (lambda: ag.scatter(x, 0, ag.zeros(1, 4, dtype=ag.int64), 5.0),
         "Expected index [1, 4] to be no larger than self [2, 3] apart from dimension 0"),
        (lambda: ag.scatter(x, 0, ag.tensor([0]), 5.0), "Index tensor must have the same number of dimensions as self "
         "tensor"),
        (lambda: ag.scatter(ag.ones(3), 0, ag.tensor([1]), ag.ones(2, 2)),
         "Index tensor must have the same number of dimensions as src tensor"),
        (lambda: ag.scatter(x, 0, ag.tensor([[0.0]]), 5.0), "scatter(): Expected dtype int32/int64 for index"),
    ]
    for f, text in cases:
        with pytest.raises(RuntimeError) as info:
            f()
        assert str(info.value) == text


def test_in_place_scatter_and_index_ops_record_their_gradients() -> None:
    t = ag.ones(3, dtype=ag.float64, requires_grad=True)
    s = ag.tensor([4.0, 6.0], dtype=ag.float64, requires_grad=True)
    u = t * 2
    assert u.index_add_(0, ag.tensor([0, 2]), s, alpha=3) is u
    u.scatter_(0, ag.tensor([1]), 7.0).index_fill_(0, ag.tensor([2]), -1.0)
    u.index_copy_(0, ag.tensor([0]), u[:1] * 1)
    assert u.grad_fn.name() == "IndexCopyBackward0"
    np.testing.assert_array_equal(u.detach().numpy(), [14.0, 7.0, -1.0])
    u.backward(ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64))
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(s.grad.numpy(), [3.0, 0.0])


def test_median_refuses_bools_and_nanmedian_names_median_for_an_empty_dim() -> None:
    for f, text in ((lambda: ag.median(ag.tensor([True])), "\"median_cpu\" not implemented for 'Bool'"),
                    (lambda: ag.nanmedian(ag.tensor([True]), 0), "\"median_out\" not implemented for 'Bool'")):
        with pytest.raises(NotImplementedError) as info:
            f()
        assert str(info.value) == text
    with pytest.raises(IndexError, match=r"^median\(\): Expected reduction dim 0 to have non-zero size\.$"):
        ag.nanmedian(ag.zeros(0, 2), 0)


def test_nanmean_of_an_all_nan_row_has_nan_gradients_as_pytorch() -> None:
    n = ag.tensor([[1.0, nan], [nan, nan]], dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(ag.nanmean(n, 1).sum(), n)
    np.testing.assert_array_equal(g.numpy(), [[1.0, 0.0], [nan, nan]])


def test_repeat_interleave_checks_repeats_and_output_size_as_pytorch() -> None:
    cases = [
        (lambda: ag.repeat_interleave(ag.tensor([[1, 2]])), RuntimeError,
         "repeat_interleave only accept 1D vector as repeat"),
        (lambda: ag.repeat_interleave(ag.tensor([1, -2])), RuntimeError, "repeats can not be negative"),
        (lambda: ag.repeat_interleave(ag.tensor([1.0, 2.0], dtype=ag.float64)), NotImplementedError,
         "\"repeat_interleave_cpu\" not implemented for 'Double'"),
        (lambda: ag.repeat_interleave(ag.ones(2), ag.tensor([1.0, 2.0]), 0), NotImplementedError,
         "\"repeat_interleave_cpu\" not implemented for 'Float'"),
        (lambda: ag.repeat_interleave(ag.ones(3), 2, 0, output_size=3), RuntimeError,
         "repeat_interleave: Invalid output_size, expected 6 but got 3"),
        (lambda: ag.repeat_interleave(ag.ones(2), ag.tensor([1, 2]), 0, output_size=4), RuntimeError,
         "repeat_interleave: Invalid output_size, expected 3 but got 4"),
    ]
    for f, error, text in cases:
        with pytest.raises(error) as info:
            f()
        assert str(info.value) == text
    assert ag.repeat_interleave(ag.ones(2), 2, 0, output_size=4).shape == (4,)


def test_row_stack_is_vstack() -> None:
    np.testing.assert_array_equal(ag.row_stack([ag.ones(2), ag.zeros(2)]).numpy(), [[1.0, 1.0], [0.0, 0.0]])


def test_cdist_inf_gives_each_tied_coordinate_the_full_gradient_as_pytorch() -> None:
    y = ag.tensor([[0.0, 1.0], [5.0, 1.0]], dtype=ag.float64, requires_grad=True)
    z = ag.tensor([[2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    d = ag.cdist(y, z, inf)
    np.testing.assert_array_equal(d.detach().numpy(), [[2.0], [3.0]])
    gy, gz = ag.autograd.grad(d.sum(), (y, z))
    np.testing.assert_array_equal(gy.numpy(), [[-1.0, -1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(gz.numpy(), [[0.0, 1.0]])
    np.testing.assert_array_equal(ag.cdist(ag.ones(2, 0), ag.ones(3, 0), inf).numpy(), np.zeros((2, 3)))
    assert gradcheck(lambda a, b: ag.cdist(a, b, inf), (X.detach().requires_grad_(), Y.detach().requires_grad_()))


def test_cdist_checks_compute_mode_and_batch_dims_as_pytorch() -> None:
    with pytest.raises(ValueError, match="^foo is not a valid value for compute_mode$"):
        ag.cdist(ag.ones(2, 3), ag.ones(2, 3), 2.0, "foo")
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 0$"):
        ag.cdist(ag.ones(2, 2, 3), ag.ones(3, 2, 3), 1.0)


def test_fmod_refuses_bools_as_pytorch() -> None:
    for other in (ag.tensor([True]), True):
        with pytest.raises(NotImplementedError, match="^\"fmod_cpu\" not implemented for 'Bool'$"):
            ag.fmod(ag.tensor([True]), other)


def test_fmods_recorded_divisor_gradient_stays_connected_to_both_inputs() -> None:
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    y = ag.tensor([0.7, 0.3], dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(ag.fmod(x, y).sum(), y, create_graph=True)
    assert g.requires_grad and g.tolist() == [-1.0, -6.0]  # -trunc(x / y): 1 / 0.7 and 2 / 0.3 truncated
    assert [t.tolist() for t in ag.autograd.grad(g.sum(), (x, y))] == [[0.0, 0.0], [0.0, 0.0]]
