"""Matrix products and real linear algebra where a review against PyTorch found differences: einsum's ellipses,
diagonals, size-1 broadcasting, sublists and errors; matmul's shape errors; tensordot's tensor dims; pinv's and
matrix_rank's older tolerances and tensor tolerances; svd's driver; the max-based matrix norms of empty matrices.
Values against numpy formulas, gradients against finite differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
RNG = np.random.default_rng(11)


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=True)


def check_einsum(equation: str, arrays: list, want: np.ndarray) -> None:
    def f(*t):
        return ag.einsum(equation, *t)

    np.testing.assert_allclose(f(*[ag.tensor(a) for a in arrays]).numpy(), want, rtol=1e-12, atol=1e-12)
    assert gradcheck(f, [leaf(a) for a in arrays], **TOL)
    assert gradgradcheck(f, [leaf(a) for a in arrays], **TOL)


def test_einsum_ellipsis_broadcasts_batch_dims():
    a, b = RNG.normal(size=(2, 1, 2, 3)), RNG.normal(size=(4, 3, 2))
    check_einsum("...ij,...jk->...ik", [a, b], a @ b)
    check_einsum("...ij,...jk", [a, b], a @ b)  # implicit output: the ellipsis's dims first
    x = RNG.normal(size=(2, 3, 4))
    check_einsum("i...->...", [x], x.sum(0))
    check_einsum("a...->...a", [x], np.moveaxis(x, 0, -1))
    check_einsum("ij->...", [x[0]], x[0].sum())


def test_einsum_repeated_subscripts_take_diagonals():
    x = RNG.normal(size=(4, 3, 3))
    check_einsum("bii->b", [x], np.array([np.trace(m) for m in x]))
    check_einsum("bii->bi", [x], np.array([np.diag(m) for m in x]))
    check_einsum("ii", [x[0]], np.trace(x[0]))
    y = RNG.normal(size=(2, 3, 2))
    check_einsum("iji->j", [y], y[0, :, 0] + y[1, :, 1])
    check_einsum("i...i", [y], y[0, :, 0] + y[1, :, 1])


def test_einsum_size_one_subscripts_broadcast():
    a, b = RNG.normal(size=(1, 3)), RNG.normal(size=(2, 1))
    check_einsum("ij,ij->ij", [a, b], a * b)
    check_einsum("ij,ij->", [a, b], (a * b).sum())


def test_einsum_implicit_output_puts_capitals_first():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(ag.einsum("Ab,ba", ag.tensor(a), ag.tensor(b)).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(ag.einsum("bA,a", ag.tensor(a), ag.tensor(b[0])).numpy(),
                               np.einsum("bA,a->Aab", a, b[0]), rtol=1e-12)


def test_einsum_sublist_form():
    a, b = RNG.normal(size=(5, 2, 3)), RNG.normal(size=(3, 4))
    got = ag.einsum(ag.tensor(a), [..., 0, 1], ag.tensor(b), [1, 2], [..., 0, 2])
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-12)
    got = ag.einsum(ag.tensor(a[0]), [0, 1], ag.tensor(b), [1, 2])
    np.testing.assert_allclose(got.numpy(), a[0] @ b, rtol=1e-12)
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        ag.einsum(ag.tensor(a[0]), [0, 52])


@pytest.mark.parametrize("equation, shapes, message", [
    ("ii", [(2, 3)], "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij,jk", [(2, 3), (4, 4)],
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    ("ij->ii", [(2, 3)], "einsum(): output subscript i appears more than once in the output"),
    ("ij->k", [(2, 3)], "einsum(): output subscript k does not appear in the equation for any input operand"),
    ("...i...", [(2, 3)], "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    ("i..j", [(2, 3)], "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    ("i->...i...", [(2,)], "einsum(): found '.' for output but an ellipsis (...) was already found"),
    ("i->.i", [(2,)], "einsum(): found '.' for output that is not part of any ellipsis (...)"),
    ("...ij->...", [(2,)], "einsum(): the number of subscripts in the equation (2) is more than the number of "
                           "dimensions (1) for operand 0"),
    ("...i,...i", [(2, 3), (4, 3)], "einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does "
                                    "not broadcast with previously seen ellipsis with size 2 for the respective "
                                    "dimension"),
])
def test_einsum_errors_are_pytorchs(equation, shapes, message):
    with pytest.raises(RuntimeError) as info:
        ag.einsum(equation, *[ag.tensor(np.ones(s)) for s in shapes])
    assert str(info.value) == message


def test_einsum_refuses_mixed_dtypes():
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        ag.einsum("ij,jk", ag.tensor(np.ones((2, 3))), ag.tensor(np.ones((3, 2)), dtype=ag.float32))


@pytest.mark.parametrize("a, b, message", [
    ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4, 5), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    ((5, 2, 3), (4, 2), "mat1 and mat2 shapes cannot be multiplied (10x3 and 4x2)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
                 "but got 3 and 4 elements respectively"),
    ((2, 3), (2,), "size mismatch, got input (2), mat (2x3), vec (2)"),
    ((5, 2, 3), (4,), "size mismatch, got input (10), mat (10x3), vec (4)"),
    ((5, 2, 3), (5, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [5, 4]."),
    ((7, 5, 2, 3), (5, 4, 2),
     "Expected size for first two dimensions of batch2 tensor to be: [35, 3] but got: [35, 4]."),
    ((5, 2, 3), (6, 3, 2), "The size of tensor a (5) must match the size of tensor b (6) at non-singleton dimension 0"),
])
def test_matmul_shape_errors_are_pytorchs(a, b, message):
    for product in (ag.matmul, lambda x, y: x @ y):
        with pytest.raises(RuntimeError) as info:
            product(ag.tensor(np.ones(a)), ag.tensor(np.ones(b)))
        assert str(info.value) == message


def test_tensordot_takes_dims_as_a_tensor():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))
    for dims in (ag.tensor(1), ag.tensor([1]), ag.tensor([[1], [0]])):
        np.testing.assert_allclose(ag.tensordot(ag.tensor(a), ag.tensor(b), dims=dims).numpy(), a @ b, rtol=1e-12)


def _kept_pinv(a: np.ndarray, tolerance: float) -> np.ndarray:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    inverse = np.where(s > tolerance, 1 / s, 0)
    return (vh.T * inverse) @ u.T


def test_pinv_rcond_is_a_relative_tolerance():
    a = RNG.normal(size=(4, 3))
    s = np.linalg.svd(a, compute_uv=False)
    rcond = (s[1] + s[2]) / 2 / s[0]  # keeps two singular values
    want = _kept_pinv(a, rcond * s[0])
    np.testing.assert_allclose(ag.linalg.pinv(ag.tensor(a), rcond=rcond).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(ag.linalg.pinv(ag.tensor(a), rcond).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(ag.pinverse(ag.tensor(a), rcond).numpy(), want, rtol=1e-10)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ag.linalg.pinv(ag.tensor(a), rcond=rcond, atol=0.1)


def test_matrix_rank_tol_is_an_absolute_tolerance():
    a = RNG.normal(size=(4, 3))
    s = np.linalg.svd(a, compute_uv=False)
    between = (s[0] + s[1]) / 2
    assert ag.linalg.matrix_rank(ag.tensor(a), tol=between).item() == 1
    assert ag.linalg.matrix_rank(ag.tensor(a), between).item() == 1
    assert ag.linalg.matrix_rank(ag.tensor(a @ a.T), between ** 2, True).item() == 1


def test_tolerances_as_tensors_apply_per_matrix():
    a = RNG.normal(size=(2, 4, 3))
    s = np.linalg.svd(a, compute_uv=False)
    atol = np.array([(s[0, 1] + s[0, 2]) / 2, s[1, 0] + 1])
    rank = ag.linalg.matrix_rank(ag.tensor(a), atol=ag.tensor(atol))
    assert rank.tolist() == [2, 0]
    got = ag.linalg.pinv(ag.tensor(a), atol=ag.tensor(atol))
    for k in range(2):
        np.testing.assert_allclose(got[k].numpy(), _kept_pinv(a[k], atol[k]), rtol=1e-10, atol=1e-14)


def test_svd_driver_is_for_cuda_only():
    a = ag.tensor(RNG.normal(size=(3, 2)))
    for op in (ag.linalg.svd, ag.linalg.svdvals):
        with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA inputs"):
            op(a, driver="gesvd")


@pytest.mark.parametrize("ord", [1, 2, float("inf")])
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (3, 0), (0, 3)])
def test_max_based_matrix_norms_of_empty_matrices_are_zero(ord, shape):
    got = ag.linalg.matrix_norm(ag.tensor(np.ones(shape)), ord)
    np.testing.assert_array_equal(got.numpy(), np.zeros(shape[:-2]))


@pytest.mark.gpu
def test_einsum_and_tolerances_on_cuda_match_the_cpu(cupy):
    cuda = ag.device("cuda:0")
    x, y = RNG.normal(size=(2, 3, 3)), RNG.normal(size=(1, 3))
    results = []
    for device in ("cpu", cuda):
        a, b = ag.tensor(x).to(device).requires_grad_(), ag.tensor(y).to(device).requires_grad_()
        out = ag.einsum("...ii,...i->...", a, b)
        out.sum().backward()
        rank = ag.linalg.matrix_rank(a.detach(), atol=ag.tensor([0.1, 100.0]).to(device))
        results.append([t.detach().cpu().numpy() for t in (out, a.grad, b.grad, rank)])
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-12)


def test_alpha_zero_skips_the_product_where_pytorch_does():
    nan = np.full((2, 3), np.nan)
    inp, b = RNG.normal(size=(2, 4)), RNG.normal(size=(3, 4))
    got = ag.addmm(ag.tensor(inp), ag.tensor(nan), ag.tensor(b), alpha=0, beta=0.5)
    np.testing.assert_allclose(got.numpy(), 0.5 * inp, rtol=1e-15)
    got = ag.addmv(ag.tensor(inp[:, 0]), ag.tensor(nan), ag.tensor(b[:, 0]), alpha=0)
    np.testing.assert_allclose(got.numpy(), inp[:, 0], rtol=1e-15)
    got = ag.addbmm(ag.tensor(inp), ag.tensor(nan[None]), ag.tensor(b[None]), alpha=0)
    np.testing.assert_allclose(got.numpy(), inp, rtol=1e-15)
    # baddbmm and addr read the product whatever alpha, as PyTorch's
    assert np.isnan(ag.baddbmm(ag.tensor(inp[None]), ag.tensor(nan[None]), ag.tensor(b[None]), alpha=0).numpy()).all()
    assert np.isnan(ag.addr(ag.tensor(inp), ag.tensor(nan[:, 0]), ag.tensor(b[0]), alpha=0).numpy()).all()
    x, y, z = (leaf(RNG.normal(size=s)) for s in ((2, 4), (2, 3), (3, 4)))
    assert gradcheck(lambda i, m1, m2: ag.addmm(i, m1, m2, alpha=0, beta=2.0), [x, y, z], **TOL)


@pytest.mark.parametrize("a, b, message", [
    ((3,), (3,), "dot : expected both vectors to have same dtype, but found Double and Float"),
    ((2, 3), (3,), "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    ((2, 3), (3, 2), "expected m1 and m2 to have the same dtype, but got: double != float"),
    ((2, 2, 3), (2, 3, 2), "expected scalar type Double but found Float"),
])
def test_matmul_dtype_errors_are_pytorchs(a, b, message):
    with pytest.raises(RuntimeError) as info:
        ag.matmul(ag.tensor(np.ones(a)), ag.tensor(np.ones(b), dtype=ag.float32))
    assert str(info.value) == message


@pytest.mark.parametrize("a, b, kernel", [
    ((3,), (3,), "dot"), ((2, 3), (3,), "addmv_impl_cpu"), ((2, 3), (3, 2), "addmm_impl_cpu_"),
    ((2, 2, 3), (2, 3, 2), "bmm"),
])
def test_matmul_refuses_booleans(a, b, kernel):
    with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
        ag.matmul(ag.tensor(np.ones(a, bool)), ag.tensor(np.ones(b, bool)))


def test_einsum_sums_integers_in_int64_and_refuses_boolean_contractions():
    x = np.full((2, 3), 100, np.int8)
    got = ag.einsum("ij->", ag.tensor(x))
    assert got.dtype == ag.int64 and got.item() == 600
    got = ag.einsum("ii", ag.tensor(np.ones((3, 3), bool)))
    assert got.dtype == ag.int64 and got.item() == 3
    assert ag.einsum("ij->ji", ag.tensor(np.ones((2, 3), bool))).dtype == ag.bool
    assert ag.einsum("i,j->ij", ag.tensor(np.ones(2, bool)), ag.tensor(np.ones(3, bool))).dtype == ag.bool
    with pytest.raises(NotImplementedError, match="\"bmm\" not implemented for 'Bool'"):
        ag.einsum("ij,jk", ag.tensor(np.ones((2, 3), bool)), ag.tensor(np.ones((3, 2), bool)))


@pytest.mark.parametrize("dtype, name", [(np.int64, "Long"), (np.bool_, "Bool"), (np.float16, "Half")])
def test_eigh_and_eigvalsh_refuse_other_dtypes_as_pytorch(dtype, name):
    a = ag.tensor(np.eye(2, dtype=dtype))
    for op in (ag.linalg.eigh, ag.linalg.eigvalsh):
        with pytest.raises(NotImplementedError, match=f"\"linalg_eigh_cpu\" not implemented for '{name}'"):
            op(a)
    with pytest.raises(RuntimeError, match="^linalg.eigh: A must be batches of square matrices"):
        ag.linalg.eigvalsh(ag.tensor(np.ones((2, 3))))


def test_matrix_exp_and_matrix_power_argument_errors():
    with pytest.raises(RuntimeError, match="^linalg.matrix_exp: Expected a floating point or complex tensor"):
        ag.linalg.matrix_exp(ag.tensor(np.eye(2, dtype=np.int64)))
    a = RNG.normal(size=(2, 2))
    for n in (2.0, True):
        with pytest.raises(TypeError, match=f"argument 'n' \\(position 2\\) must be int, not {type(n).__name__}"):
            ag.linalg.matrix_power(ag.tensor(a), n)
    np.testing.assert_allclose(ag.linalg.matrix_power(ag.tensor(a), ag.tensor(2)).numpy(), a @ a, rtol=1e-14)


def test_solve_on_the_right_refuses_a_vector_with_pytorchs_error():
    a = ag.tensor(np.eye(3) + 0.1)
    for b, shape in ((np.ones(3), "3x1"), (np.ones((2, 4)), "2x4")):
        with pytest.raises(RuntimeError) as info:
            ag.linalg.solve(a, ag.tensor(b), left=False)
        want = f"linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and {shape})"
        assert str(info.value) == want
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        ag.linalg.solve(a, ag.tensor(1.0))


def test_svd_lowrank_broadcasts_its_mean():
    a, mean = RNG.normal(size=(6, 3)), RNG.normal(size=(1, 3))
    ag.manual_seed(0)
    _, s, _ = ag.svd_lowrank(ag.tensor(a), q=3, M=ag.tensor(mean))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a - mean, compute_uv=False), rtol=1e-10)


def test_nuclear_and_frobenius_norms_warn_as_pytorchs():
    a = ag.tensor(RNG.normal(size=(2, 3)))
    with pytest.warns(UserWarning, match="at::nuclear_norm is deprecated"):
        ag.nuclear_norm(a)
    with pytest.warns(UserWarning, match="at::frobenius_norm is deprecated"):
        ag.frobenius_norm(a, (0, 1))
