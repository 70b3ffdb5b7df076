"""More of PyTorch's top-level functions: trapezoid, trapz, cumulative_trapezoid, vander, tril/triu_indices,
combinations, broadcast_shapes/tensors, block_diag, addr, addbmm, chain_matmul, matrix_power, gradient and renorm.
Expected values come from numpy (trapezoid, gradient, the documented formulas) or are small closed forms;
gradients are checked by finite differences; error texts were read off torch 2.13."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

Y = [[1.0, 3.0, 2.0, 5.0], [0.5, -1.0, 4.0, 2.0]]
X = [0.0, 0.5, 2.0, 2.5]


def f64(data, device=None):
    return ag.tensor(data, dtype=ag.float64, device=device, requires_grad=True)


# -- trapezoid, trapz, cumulative_trapezoid ---------------------------------------------------------------------
def test_trapezoid_matches_numpys_with_points_spacing_and_dims():
    y, x = ag.tensor(Y), ag.tensor(X)
    assert ag.trapezoid(y, x).tolist() == np.trapezoid(Y, X).tolist()
    assert ag.trapezoid(y, dim=0, dx=0.5).tolist() == np.trapezoid(Y, dx=0.5, axis=0).tolist()
    assert ag.trapz(ag.tensor([1.0, 2.0]), dx=3).tolist() == 4.5  # (1 + 2) / 2 * 3
    column, at = ag.tensor([[1.0], [2.0], [4.0]]), ag.tensor([0.0, 1.0, 3.0])
    assert ag.trapezoid(column, at, dim=0).tolist() == [7.5]  # 1.5 + 6
    full_x = np.cumsum(np.abs(Y), 1)  # a full x, one per sample
    assert ag.trapezoid(y, y.abs().cumsum(1)).tolist() == np.trapezoid(Y, full_x).tolist()


def test_trapezoid_integrates_integers_as_float32_and_empty_dims_to_zero():
    result = ag.trapezoid(ag.tensor([1, 2, 4]))
    assert result.dtype == ag.float32 and result.tolist() == 4.5  # 1.5 + 3
    assert ag.trapezoid(ag.tensor([1, 2, 4]), dx=2).tolist() == 9.0
    assert ag.trapezoid(ag.ones(2, 0)).tolist() == [0.0, 0.0]


def _numpy_cumulative_trapezoid(y, x) -> np.ndarray:
    """The running sums of the trapezoids' areas (y_i + y_{i+1}) / 2 (x_{i+1} - x_i) along the last dim."""
    y, x = np.asarray(y), np.asarray(x)
    return np.cumsum((y[..., 1:] + y[..., :-1]) / 2 * np.diff(x, axis=-1), -1)


def test_cumulative_trapezoid_matches_running_sums():
    y, x = ag.tensor(Y), ag.tensor(X)
    assert ag.cumulative_trapezoid(y, x).tolist() == _numpy_cumulative_trapezoid(Y, X).tolist()
    full_x = np.cumsum(np.abs(Y), 1)
    assert ag.cumulative_trapezoid(y, y.abs().cumsum(1)).tolist() == _numpy_cumulative_trapezoid(Y, full_x).tolist()
    ints = ag.cumulative_trapezoid(ag.tensor([1, 2, 4]))
    assert ints.dtype == ag.float32 and ints.tolist() == [1.5, 4.5]  # 1.5, then 1.5 + 3
    assert ag.cumulative_trapezoid(ag.tensor([1.0, 2.0]), dx=2).tolist() == [3.0]
    assert ag.cumulative_trapezoid(ag.ones(2, 0)).shape == (2, 0)


def test_the_integrals_are_differentiable():
    y, x = f64(Y), f64(X)
    assert gradcheck(ag.trapezoid, (y, x))
    assert gradcheck(lambda t: ag.trapezoid(t, dx=0.5, dim=0), (y,))
    assert gradcheck(ag.cumulative_trapezoid, (y, x))
    assert gradcheck(lambda t: ag.cumulative_trapezoid(t, dx=2.0), (y,))


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: ag.trapezoid(ag.tensor([1.0, 2.0, 4.0]), ag.tensor([0.0, 1.0])), RuntimeError,
     "trapezoid: There must be one `x` value for each sample point"),
    (lambda: ag.cumulative_trapezoid(ag.tensor([1.0, 2.0, 4.0]), ag.tensor([0.0, 1.0])), RuntimeError,
     "cumulative_trapezoid: There must be one `x` value for each sample point"),
    (lambda: ag.trapezoid(ag.tensor(1.0)), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: ag.cumulative_trapezoid(ag.tensor(1.0)), IndexError, "slice\\(\\) cannot be applied to a 0-dim"),
    (lambda: ag.trapezoid(ag.ones(2, 3), ag.ones(2, 3), dim=5), IndexError, "Dimension out of range"),
    (lambda: ag.trapezoid(ag.ones(2, 3), ag.ones(3, 2)), RuntimeError, "must match the size of tensor b"),
    (lambda: ag.trapezoid([1.0, 2.0]), TypeError, "argument 'y' \\(position 1\\) must be Tensor, not list"),
])
def test_the_integrals_refuse_bad_arguments_as_torch_does(call, error, text):
    with pytest.raises(error, match=text):
        call()


# -- vander -------------------------------------------------------------------------------------------------------
def test_vander_matches_torch_and_promotes_integers_to_int64():
    assert ag.vander(ag.tensor([0.5, -2.0, 3.0]), 4).tolist() == [  # x^3, x^2, x, 1
        [0.125, 0.25, 0.5, 1.0], [-8.0, 4.0, -2.0, 1.0], [27.0, 9.0, 3.0, 1.0]]
    ints = ag.vander(ag.tensor([1, 2, 3], dtype=ag.int8))
    assert ints.dtype == ag.int64 and ints.tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert ag.vander(ag.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    assert ag.vander(ag.tensor([1.0, 2.0, 3.0]), N=2, increasing=True).tolist() == [[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]]
    assert ag.vander(ag.tensor([1.0, 2.0]), N=0).shape == (2, 0)
    assert gradcheck(lambda t: ag.vander(t, 4), (f64([0.5, -2.0, 3.0]),))
    assert gradcheck(lambda t: ag.vander(t, increasing=True), (f64([0.5, -2.0, 3.0]),))


@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.vander(ag.ones(2, 2)), "x must be a one-dimensional tensor."),
    (lambda: ag.vander(ag.tensor(2.0)), "x must be a one-dimensional tensor."),
    (lambda: ag.vander(ag.tensor([1.0]), N=-1), "N must be non-negative."),
])
def test_vander_refuses_what_torch_refuses(call, text):
    with pytest.raises(RuntimeError, match=text):
        call()


# -- tril_indices, triu_indices, combinations ----------------------------------------------------------------------
def test_triangle_indices_match_torch():
    assert ag.tril_indices(3, 3).tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    assert ag.tril_indices(3, 4, 1).tolist() == [[0, 0, 1, 1, 1, 2, 2, 2, 2], [0, 1, 0, 1, 2, 0, 1, 2, 3]]
    assert ag.triu_indices(3, 4, -1).tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2], [0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3]]
    assert ag.tril_indices(3, 3).dtype == ag.int64 and ag.tril_indices(3, 3, dtype=ag.int32).dtype == ag.int32
    assert ag.triu_indices(0, 3).shape == (2, 0)
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        ag.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative, got-1"):
        ag.triu_indices(3, -1)
    with pytest.raises(NotImplementedError, match="\"tril_indices\" not implemented for 'Float'"):
        ag.tril_indices(3, 3, dtype=ag.float32)


def test_combinations_match_torch_and_are_differentiable():
    x = ag.tensor([1, 2, 3])
    assert ag.combinations(x).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert ag.combinations(x, 3, with_replacement=True).tolist() == [
        [1, 1, 1], [1, 1, 2], [1, 1, 3], [1, 2, 2], [1, 2, 3], [1, 3, 3], [2, 2, 2], [2, 2, 3], [2, 3, 3], [3, 3, 3]]
    assert ag.combinations(x, 1).tolist() == [[1], [2], [3]]
    assert ag.combinations(x, 0).shape == (0,) and ag.combinations(x, 4).shape == (0, 4)
    assert gradcheck(lambda t: ag.combinations(t, 2, with_replacement=True), (f64([0.5, -1.0, 2.0]),))
    with pytest.raises(RuntimeError, match="Expect a 1D vector, but got shape \\[2, 2\\]"):
        ag.combinations(ag.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        ag.combinations(x, -1)


# -- broadcast_shapes, broadcast_tensors, block_diag ---------------------------------------------------------------
def test_broadcast_shapes_matches_torch():
    assert ag.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert ag.broadcast_shapes(2, (3, 1)) == (3, 2) and ag.broadcast_shapes() == ()
    assert ag.broadcast_shapes((2,), [1]) == (2,)
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 3 at -1! Mismatching "
                                           r"argument at index 1 had \[3\]; but expected shape should be "
                                           r"broadcastable to \[2\]"):
        ag.broadcast_shapes((2,), [3])
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length!"):
        ag.broadcast_shapes((-1,))


def test_broadcast_tensors_expands_each_and_passes_gradients_back():
    v, m = f64([1.0, 2.0]), f64([[3.0], [4.0], [5.0]])
    a, b = ag.broadcast_tensors(v, m)
    assert a.shape == b.shape == (3, 2) and a.tolist() == [[1.0, 2.0]] * 3
    assert ag.broadcast_tensors() == ()
    assert gradcheck(lambda s, t: ag.broadcast_tensors(s, t)[0] * ag.broadcast_tensors(s, t)[1], (v, m))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size of tensor b \\(3\\) at "
                                           "non-singleton dimension 1"):
        ag.broadcast_tensors(ag.ones(2), ag.ones(2, 3))


def test_block_diag_matches_torch_promotes_and_is_differentiable():
    blocks = ag.block_diag(ag.tensor(1.0), ag.tensor([1.0, 2.0]), ag.ones(2, 3), ag.tensor([[1, 2]]))
    assert blocks.dtype == ag.float32 and blocks.tolist() == [
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0]]
    assert ag.block_diag(ag.tensor([1]), ag.tensor([[1.5]], dtype=ag.float64)).dtype == ag.float64
    assert ag.block_diag().shape == (1, 0) and ag.block_diag().dtype == ag.float32
    assert ag.block_diag(ag.ones(0, 2), ag.ones(2, 0)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert gradcheck(ag.block_diag, (f64(2.0), f64([1.0, -1.0]), f64([[1.0, 2.0], [3.0, 4.0]])))
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"):
        ag.block_diag(ag.ones(2, 2, 3))


# -- addr, addbmm, chain_matmul, matrix_power -----------------------------------------------------------------------
A, B = [1.0, -1.0, 2.0], [0.5, 3.0]
I3 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
B1 = (np.arange(12.0).reshape(2, 3, 2) / 4).tolist()
B2 = (np.arange(8.0).reshape(2, 2, 2) - 3).tolist()


def test_addr_matches_torch_with_beta_alpha_promotion_and_integers():
    assert ag.addr(ag.tensor(I3), ag.tensor(A), ag.tensor(B), beta=2, alpha=-0.5).tolist() == (
        2 * np.array(I3) - 0.5 * np.outer(A, B)).tolist()
    assert ag.addr(ag.tensor([[math.nan]]), ag.tensor(A), ag.tensor(B), beta=0).tolist() == [
        [0.5, 3.0], [-0.5, -3.0], [1.0, 6.0]]  # outer(A, B): beta 0 does not read the input's NaN
    ints = ag.addr(ag.tensor([[1, 2]]), ag.tensor([1, 2]), ag.tensor([3, 4]), beta=2, alpha=3)
    assert ints.dtype == ag.int64 and ints.tolist() == [[11, 16], [20, 28]]  # 2 [1, 2] + 3 [[3, 4], [6, 8]]
    v = ag.tensor([1.0, 2.0])
    assert ag.addr(ag.ones(2, 2), v, v.double()).dtype == ag.float64
    assert ag.ones(2).addr(v, v).tolist() == [[2.0, 3.0], [3.0, 5.0]]  # 1 + [[1, 2], [2, 4]]
    assert gradcheck(lambda i, a, b: ag.addr(i, a, b, beta=2, alpha=-0.5), (f64(I3), f64(A), f64(B)))
    assert gradcheck(lambda i, a, b: i.addr(a, b), (f64([1.0, 2.0]), f64(A), f64(B)))


@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.addr(ag.ones(2, 3), ag.ones(2, 3), ag.ones(2)), "addr: Expected 1-D argument vec1, but got 2-D"),
    (lambda: ag.addr(ag.ones(2, 3), ag.ones(2), ag.ones(2, 3)), "addr: Expected 1-D argument vec2, but got 2-D"),
    (lambda: ag.addr(ag.ones(3), ag.ones(2), ag.ones(2)), "The expanded size of the tensor \\(2\\) must match"),
    (lambda: ag.addr(ag.ones(2, 2, dtype=ag.int64), ag.tensor([1, 2]), ag.tensor([1, 2]), beta=0.5),
     "For integral input tensors, argument beta must not be a floating point number."),
])
def test_addr_refuses_what_torch_refuses(call, text):
    with pytest.raises(RuntimeError, match=text):
        call()


def test_addbmm_matches_numpy_and_is_differentiable():
    result = ag.addbmm(ag.tensor([1.0, -1.0]), ag.tensor(B1), ag.tensor(B2), beta=0.5, alpha=2)
    expected = 0.5 * np.array([1.0, -1.0]) + 2 * (np.array(B1) @ np.array(B2)).sum(0)  # the batch's products summed
    assert result.tolist() == expected.tolist()
    assert ag.ones(2, 4).addbmm(ag.ones(2, 2, 3), ag.ones(2, 3, 4)).tolist() == [[7.0] * 4] * 2  # 1 + 2 * 3
    assert gradcheck(lambda i, a, b: ag.addbmm(i, a, b, beta=0.5, alpha=2), (f64([1.0, -1.0]), f64(B1), f64(B2)))


@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.addbmm(ag.ones(2, 4), ag.ones(2, 3), ag.ones(2, 3, 4)), "batch1 must be a 3D tensor"),
    (lambda: ag.addbmm(ag.ones(2, 4), ag.ones(2, 2, 3), ag.ones(3, 3, 4)),
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda: ag.addbmm(ag.ones(2, 4), ag.ones(2, 2, 3), ag.ones(2, 2, 4)),
     "Incompatible matrix sizes for bmm \\(2x3 and 2x4\\)"),
    (lambda: ag.addbmm(ag.ones(2, 4), ag.ones(2, 2, 3), ag.ones(2, 3, 4, dtype=ag.float64)),
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda: ag.addbmm(ag.ones(3, 4), ag.ones(2, 2, 3), ag.ones(2, 3, 4)),
     "The expanded size of the tensor \\(2\\) must match the existing size \\(3\\)"),
])
def test_addbmm_refuses_what_torch_refuses(call, text):
    with pytest.raises(RuntimeError, match=text):
        call()


def test_chain_matmul_multiplies_left_to_right_and_warns_it_is_deprecated():
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        assert ag.chain_matmul(ag.ones(2, 2), ag.ones(2, 3), ag.ones(3, 1)).tolist() == [[6.0], [6.0]]  # 2 * 3
    with pytest.warns(UserWarning):
        single = ag.ones(2, 3)
        assert ag.chain_matmul(single) is not single
        assert gradcheck(ag.chain_matmul, (f64(I3), f64([[1.0, -1.0], [0.5, 2.0]]), f64([[2.0], [3.0]])))
        with pytest.raises(RuntimeError, match="chain_matmul\\(\\): Expected one or more matrices"):
            ag.chain_matmul()
        with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead."):
            ag.chain_matmul(ag.ones(2), ag.ones(2, 3))
        with pytest.raises(RuntimeError, match="multi_dot\\(\\): tensors 0 and 1 with shapes \\[2, 3\\] and \\[2, 3\\] "
                                               "cannot be multiplied"):
            ag.chain_matmul(ag.ones(2, 3), ag.ones(2, 3))


def test_matrix_power_is_linalgs_at_the_top_level_and_as_a_method():
    two = ag.eye(2) * 2
    assert ag.matrix_power(two, 3).tolist() == [[8.0, 0.0], [0.0, 8.0]]
    assert two.matrix_power(-1).tolist() == [[0.5, 0.0], [0.0, 0.5]]
    assert gradcheck(lambda t: t.matrix_power(3), (f64([[1.0, 2.0], [0.5, -1.0]]),))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        ag.matrix_power(ag.ones(2), 2)


# -- gradient -------------------------------------------------------------------------------------------------------
G = [[1.0, 3.0, 2.0, 5.0], [0.5, -1.0, 4.0, 2.0], [2.0, 0.0, 1.0, -3.0]]
ROWS, COLS = [0.0, 0.5, 2.0], [-1.0, 0.0, 0.5, 2.0]


def assert_gradients(got, expected):
    assert len(got) == len(expected)
    for tensor, values in zip(got, expected, strict=True):
        np.testing.assert_allclose(tensor.tolist(), values, rtol=1e-12, atol=1e-14)


# numpy.gradient documents the same differences (central inside, one-sided or second order at the edges, and the
# non-uniform formulas at coordinates): it is the reference here
def test_gradient_with_uniform_steps_matches_numpy():
    g = ag.tensor(G)
    assert [t.tolist() for t in ag.gradient(g)] == [a.tolist() for a in np.gradient(G)]
    assert [t.tolist() for t in ag.gradient(g, spacing=[0.5, 2.0], edge_order=2)] == [
        a.tolist() for a in np.gradient(G, 0.5, 2.0, edge_order=2)]
    assert [t.tolist() for t in ag.gradient(g, spacing=4, dim=[1, -2])] == [  # in the order the dims are named
        a.tolist() for a in np.gradient(G, 4, axis=(1, 0))]
    ints = ag.gradient(ag.tensor([1, 2, 4, 7]))
    assert ints[0].dtype == ag.float32 and ints[0].tolist() == [1.0, 1.5, 2.5, 3.0]  # 1, then (3, 5) / 2, 3
    assert ag.gradient(ag.tensor(1.0)) == () and ag.gradient(g, dim=[]) == ()


def test_gradient_of_a_quadratic_is_exact_at_second_order_along_one_dim():
    t = ag.arange(24.0, dtype=ag.float64).reshape(2, 3, 4) * 0.5
    (slope,) = ag.gradient(t * t, spacing=0.5, dim=2, edge_order=2)
    assert slope.shape == (2, 3, 4) and slope.tolist() == (2 * t).tolist()


def test_gradient_at_coordinates_matches_numpy():
    g, rows, cols = ag.tensor(G, dtype=ag.float64), ag.tensor(ROWS, dtype=ag.float64), ag.tensor(COLS, dtype=ag.float64)
    assert_gradients(ag.gradient(g, spacing=[rows, cols]), np.gradient(G, ROWS, COLS))
    by_rows, by_cols = np.gradient(G, ROWS, COLS, edge_order=2)
    assert_gradients(ag.gradient(g, spacing=[rows, cols], edge_order=2), [by_rows, by_cols])
    assert_gradients(ag.gradient(g, spacing=[cols], dim=1, edge_order=2), [by_cols])
    assert ag.gradient(ag.ones(3, 4), spacing=[rows], dim=0)[0].dtype == ag.float64  # promoted by the coordinates


def test_gradient_is_differentiable_in_its_input_and_coordinates():
    assert gradcheck(lambda t: ag.gradient(t), (f64(G),))
    assert gradcheck(lambda t: ag.gradient(t, spacing=[0.5, 2.0], edge_order=2), (f64(G),))
    assert gradcheck(lambda t, r, c: ag.gradient(t, spacing=[r, c]), (f64(G), f64(ROWS), f64(COLS)))
    assert gradcheck(lambda t, c: ag.gradient(t, spacing=[c], dim=-1, edge_order=2), (f64(G), f64(COLS)))


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: ag.gradient(ag.ones(3, 3), edge_order=3), RuntimeError,
     "torch.gradient only supports edge_order=1 and edge_order=2."),
    (lambda: ag.gradient(ag.ones(1, 3)), RuntimeError,
     "torch.gradient expected each dimension size to be at least edge_order\\+1"),
    (lambda: ag.gradient(ag.ones(3, 2), edge_order=2), RuntimeError,
     "torch.gradient expected each dimension size to be at least edge_order\\+1"),
    (lambda: ag.gradient(ag.tensor([1, 2, 3], dtype=ag.uint8)), RuntimeError,
     "torch.gradient does not support uint8 input."),
    (lambda: ag.gradient(ag.ones(3, 3), spacing=[1.0]), RuntimeError,
     "torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim\\(\\) = 2', "
     "since dim argument was not given, but got a list of length 1"),
    (lambda: ag.gradient(ag.ones(3, 3), spacing=[1.0, 2.0], dim=0), RuntimeError,
     "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the same "
     "length, but got a spacing argument of length 2 and a dim argument of length 1."),
    (lambda: ag.gradient(ag.ones(3, 3), spacing=[ag.ones(1, 3)], dim=0), RuntimeError,
     "torch.gradient expected each element of spacing to have one dimension, but got an element with 2 dimensions!"),
    (lambda: ag.gradient(ag.ones(3, 3), spacing=[ag.ones(3), 2.0]), TypeError,
     "expected Tensor as element 1 in argument 1, but got float"),
    (lambda: ag.gradient(ag.ones(3, 3), dim=[0, 0]), RuntimeError, "appears multiple times in the list of dims"),
    (lambda: ag.gradient(ag.ones(3, 3), dim=2), IndexError, "Dimension out of range"),
    (lambda: ag.gradient(ag.tensor(1.0), dim=0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: ag.gradient([1.0, 2.0]), TypeError, "argument 'input' \\(position 1\\) must be Tensor, not list"),
])
def test_gradient_refuses_what_torch_refuses(call, error, text):
    with pytest.raises(error, match=text):
        call()


# -- renorm ---------------------------------------------------------------------------------------------------------
M = [[1.0, 3.0, 2.0, 5.0], [0.5, -1.0, 0.4, 0.2], [2.0, 0.0, 1.0, -3.0]]


def _numpy_renorm(x, p: float, dim: int, maxnorm: float) -> np.ndarray:
    """The documented renorm: each slice along `dim` whose p-norm is over maxnorm is scaled by
    maxnorm / (norm + 1e-7); the others pass unchanged."""
    x = np.asarray(x, dtype=np.float64)
    others = tuple(d for d in range(x.ndim) if d != dim % x.ndim)
    if p == math.inf:
        norm = np.abs(x).max(axis=others, keepdims=True)
    else:
        norm = (np.abs(x) ** p).sum(axis=others, keepdims=True) ** (1 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


@pytest.mark.parametrize(("x", "p", "dim", "maxnorm"), [
    (M, 2, 0, 1.5),  # the middle row's norm is under 1.5: unchanged
    (M, 1, 1, 3.0),
    (M, math.inf, 0, 2.0),
    (np.arange(12.0).reshape(2, 3, 2) - 4, 3, 1, 2.0),
])
def test_renorm_scales_only_the_slices_over_maxnorm_as_torch_does(x, p, dim, maxnorm):
    got = ag.renorm(ag.tensor(np.asarray(x, dtype=np.float32)), p, dim, maxnorm)
    assert got.dtype == ag.float32
    np.testing.assert_allclose(got.numpy(), _numpy_renorm(x, p, dim, maxnorm), rtol=1e-6, atol=1e-7)


def test_renorm_of_an_empty_tensor_is_empty():
    assert ag.renorm(ag.ones(2, 0), math.inf, 0, 1.0).shape == (2, 0)


def test_renorm_is_differentiable_through_the_norm(numpy_gradient):
    values = np.array([[1.0, 3.0, 2.0], [0.5, -1.0, 0.4], [2.0, 0.5, 1.0]])
    m = f64(values.tolist())
    for p in (1, 2, 3, math.inf):
        assert gradcheck(lambda t, p=p: ag.renorm(t, p, 0, 1.2), (m,))
    assert gradcheck(lambda t: t.renorm(2, 1, 2.5), (m,))
    upstream = np.array([[0.3, -1.0, 2.0], [1.5, 0.7, -0.2], [1.0, 2.0, 3.0]])
    out = ag.renorm(m, 2, 0, 1.2)
    (out * ag.tensor(upstream)).sum().backward()
    expected = numpy_gradient(lambda a: (_numpy_renorm(a, 2, 0, 1.2) * upstream).sum(), values)
    np.testing.assert_allclose(m.grad.numpy(), expected, rtol=1e-7, atol=1e-9)
    assert m.grad.tolist()[1] == [1.5, 0.7, -0.2]  # a slice under maxnorm passes the gradient through


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: ag.renorm(ag.ones(2, 3), 0, 0, 1.0), RuntimeError, "renorm: non-positive-norm not supported"),
    (lambda: ag.renorm(ag.ones(2, 3), -1, 0, 1.0), RuntimeError, "renorm: non-positive-norm not supported"),
    (lambda: ag.renorm(ag.ones(2, 3), 2, 0, -1.0), RuntimeError, "renorm: expected maxnorm to be >= 0 but got -1"),
    (lambda: ag.renorm(ag.ones(3), 2, 0, 1.0), RuntimeError,
     "renorm: input needs at least 2 dimensions, got 1 dimensions"),
    (lambda: ag.renorm(ag.ones(2, 3), 2, 2, 1.0), IndexError, "Dimension out of range"),
    (lambda: ag.renorm(ag.ones(2, 3, dtype=ag.int64), 2, 0, 1.0), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
])
def test_renorm_refuses_what_torch_refuses(call, error, text):
    with pytest.raises(error, match=text):
        call()


# -- the CUDA path -------------------------------------------------------------------------------------------------
DEVICE_CASES = {
    "trapezoid": lambda y: ag.trapezoid(y, dx=0.5),
    "cumulative_trapezoid": lambda y: ag.cumulative_trapezoid(y, y.detach().abs().cumsum(1)),
    "vander": lambda y: ag.vander(y[0], 3),
    "combinations": lambda y: ag.combinations(y[1]),
    "block_diag": lambda y: ag.block_diag(y, y[0]),
    "addr": lambda y: ag.addr(y, y[:, 0], y[0], beta=0.5),
    "addbmm": lambda y: ag.addbmm(y[:, :2], y.reshape(2, 2, 2), y.reshape(2, 2, 2)),
    "triangle": lambda y: y[tuple(ag.tril_indices(2, 4, device=y.device))],
    "gradient": lambda y: ag.cat(ag.gradient(y, spacing=0.5) + ag.gradient(
        y, spacing=[y.detach()[0].abs().cumsum(0)], dim=1, edge_order=2), 1),
    "renorm": lambda y: ag.renorm(y, 2, 0, 5.0),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEVICE_CASES))
def test_the_functions_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    results = []
    for device in (None, cuda):
        y = f64([[1.0, 3.0, 2.0, 5.0], [0.5, -1.0, 4.0, 2.0]], device)
        out = DEVICE_CASES[name](y)
        (out * out).sum().backward()
        assert out.device == y.device and y.grad.device == y.device
        results.append((out.detach().cpu().numpy(), y.grad.cpu().numpy()))
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_narrow_copy_copies_the_narrowed_slice():
    m = f64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    part = ag.narrow_copy(m, 1, 1, 2)
    assert part.tolist() == [[2.0, 3.0], [5.0, 6.0]] and part.is_contiguous()
    assert m.narrow_copy(0, -1, 1).tolist() == [[4.0, 5.0, 6.0]]
    assert gradcheck(lambda t: t.narrow_copy(1, 1, 2), (m,))
    with pytest.raises(RuntimeError, match="start \\(2\\) \\+ length \\(2\\) exceeds dimension size \\(3\\)."):
        ag.narrow_copy(m, 1, 2, 2)
