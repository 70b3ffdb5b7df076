"""linalg.ldl_factor, ldl_factor_ex and ldl_solve: LAPACK sytrf's (hetrf's) compact LD and Bunch-Kaufman pivots,
read back here by LAPACK's documented format (A = L D L^T with L = P(1) L(1) P(2) L(2) ...), solves checked
against numpy.linalg.solve, hand-worked pivot choices for each branch of the rule, PyTorch's errors, and no
derivative, as in PyTorch."""

import numpy as np
import pytest

import actorgrad as ag

RNG = np.random.default_rng(2026)
DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def matrix(shape, dtype, kind="random"):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    if kind == "zero diagonal":  # every first pivot choice compares a zero diagonal: 2x2 blocks
        a = a * (1 - np.eye(shape[-1]))
    return a.astype(dtype)


def whole(a, hermitian):
    """The symmetric (Hermitian, with a real diagonal) matrix that a's lower triangle stands for."""
    below = np.swapaxes(np.tril(a, -1), -1, -2)
    full = np.tril(a) + (below.conj() if hermitian else below)
    if hermitian:
        n = a.shape[-1]
        full[..., range(n), range(n)] = full[..., range(n), range(n)].real
    return full


def rebuilt(ld, pivots, hermitian):
    """A from one LD and its pivots by LAPACK's format: L = P(1) L(1) P(2) L(2) ..., where P(k) swaps the block's
    last row with row |pivot|, L(k) is the identity with the block's columns of LD below the block, and D holds
    LD's 1x1 and 2x2 diagonal blocks (a 2x2 block's lower off-diagonal element below its diagonal)."""
    n = ld.shape[-1]
    L, D = np.eye(n, dtype=ld.dtype), np.zeros_like(ld)
    k = 0
    while k < n:
        size = 1 if pivots[k] > 0 else 2
        assert size == 1 or pivots[k + 1] == pivots[k]
        last, swap = k + size - 1, abs(int(pivots[k])) - 1
        P = np.eye(n, dtype=ld.dtype)
        P[[last, swap]] = P[[swap, last]]
        Lk = np.eye(n, dtype=ld.dtype)
        Lk[k + size :, k : k + size] = ld[k + size :, k : k + size]
        L = L @ P @ Lk
        D[k : k + size, k : k + size] = ld[k : k + size, k : k + size]
        if size == 2:
            D[k, k + 1] = np.conj(ld[k + 1, k]) if hermitian else ld[k + 1, k]
        k += size
    return L @ D @ (L.conj().T if hermitian else L.T)


def tolerance(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_factors_rebuild_the_matrix_by_lapacks_format(dtype, hermitian):
    hermitian_math = hermitian and np.dtype(dtype).kind == "c"
    for kind in ("random", "zero diagonal"):
        a = matrix((3, 6, 6), dtype, kind)
        LD, pivots, info = ag.linalg.ldl_factor_ex(ag.tensor(a), hermitian=hermitian)
        ld, piv = LD.numpy(), pivots.numpy()
        assert ld.dtype == dtype and piv.dtype == np.int32 and info.numpy().dtype == np.int32
        assert piv.shape == (3, 6) and info.shape == (3,) and not info.numpy().any()
        assert not np.triu(ld, 1).any()
        if kind == "zero diagonal":
            assert (piv < 0).any()
        for i in range(3):
            np.testing.assert_allclose(rebuilt(ld[i], piv[i], hermitian_math), whole(a[i], hermitian_math),
                                       rtol=tolerance(dtype), atol=tolerance(dtype) * 10)


def test_only_the_lower_triangle_is_read():
    a = matrix((5, 5), np.float64)
    changed = a + np.triu(RNG.standard_normal((5, 5)), 1)
    for x in (a, changed):
        LD, pivots = ag.linalg.ldl_factor(ag.tensor(x))
        np.testing.assert_allclose(rebuilt(LD.numpy(), pivots.numpy(), False), whole(a, False), atol=1e-12)


def test_a_hermitian_factorization_takes_the_diagonals_real_part_and_gives_a_real_d():
    a = matrix((4, 4), np.complex128)
    LD, pivots = ag.linalg.ldl_factor(ag.tensor(a), hermitian=True)
    ld = LD.numpy()
    k = 0
    while k < 4:  # 1x1 blocks and the diagonal of 2x2 blocks of a Hermitian D are real
        assert ld[k, k].imag == 0
        k += 1
    np.testing.assert_allclose(rebuilt(ld, pivots.numpy(), True), whole(a, True), atol=1e-12)


# Worked by hand with alpha = (1 + sqrt(17)) / 8 ~ 0.64: (A, LD, pivots), one case per branch of the pivot rule.
HAND_WORKED = [
    # |a11| >= alpha * colmax: a 1x1 pivot in place
    ([[4.0, 2.0], [2.0, 3.0]], [[4.0, 0.0], [0.5, 2.0]], [1, 2]),
    # |a11| small, |a22| >= alpha * rowmax: rows 1 and 2 swap, a 1x1 pivot 10, L = 0.4, then 1 - 16/10
    ([[1.0, 4.0], [4.0, 10.0]], [[10.0, 0.0], [0.4, -0.6]], [2, 2]),
    # |a11| >= alpha * colmax * (colmax / rowmax): no swap; then a 2x2 block without a swap
    ([[1.0, 2.0, 0.0], [2.0, 0.0, 8.0], [0.0, 8.0, 0.0]], [[1.0, 0.0, 0.0], [2.0, -4.0, 0.0], [0.0, 8.0, 0.0]],
     [1, -3, -3]),
    # a zero diagonal: a 2x2 block with rows 2 and 3 swapped, W = [1, 3] [[0, 2], [2, 0]]^-1, then -(1.5 + 1.5)
    ([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]], [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.5, 0.5, -3.0]],
     [-3, -3, 3]),
]


@pytest.mark.parametrize(("a", "expected_ld", "expected_pivots"), HAND_WORKED)
def test_pivots_follow_the_bunch_kaufman_rule(a, expected_ld, expected_pivots):
    for dtype in (np.float64, np.complex128):
        for hermitian in (False, True):
            LD, pivots = ag.linalg.ldl_factor(ag.tensor(np.array(a, dtype)), hermitian=hermitian)
            np.testing.assert_allclose(LD.numpy(), expected_ld, atol=1e-15)
            assert pivots.numpy().tolist() == expected_pivots


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_solve_matches_numpy_with_broadcast_batches(dtype, hermitian):
    hermitian_math = hermitian and np.dtype(dtype).kind == "c"
    for kind in ("random", "zero diagonal"):
        a = matrix((3, 5, 5), dtype, kind)
        LD, pivots = ag.linalg.ldl_factor(ag.tensor(a), hermitian=hermitian)
        b = matrix((2, 1, 5, 3), dtype)
        x = ag.linalg.ldl_solve(LD, pivots, ag.tensor(b), hermitian=hermitian)
        assert x.shape == (2, 3, 5, 3) and x.dtype == dtype
        expected = np.linalg.solve(whole(a, hermitian_math).astype(np.complex128), b.astype(np.complex128))
        np.testing.assert_allclose(x.numpy(), expected, rtol=tolerance(dtype) * 50, atol=tolerance(dtype) * 50)


def test_solve_takes_any_integer_pivots_and_one_matrix_for_a_batch_of_b():
    a = matrix((4, 4), np.float64, "zero diagonal")
    LD, pivots = ag.linalg.ldl_factor(ag.tensor(a))
    b = matrix((3, 4, 2), np.float64)
    expected = np.linalg.solve(whole(a, False), b)
    for p in (pivots, pivots.long(), pivots.to(ag.int16)):
        np.testing.assert_allclose(ag.linalg.ldl_solve(LD, p, ag.tensor(b)).numpy(), expected, atol=1e-10)


def test_info_names_the_first_zero_column_and_check_errors_raises():
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 0.0]), np.zeros((3, 3))])
    LD, pivots, info = ag.linalg.ldl_factor_ex(ag.tensor(a))
    assert info.numpy().tolist() == [0, 2, 1]
    assert pivots.numpy().tolist() == [[1, 2, 3]] * 3
    np.testing.assert_array_equal(LD.numpy(), a)
    with pytest.raises(RuntimeError, match=r"ldl_factor_ex: \(Batch element 1\): D\[2,2\] is zero"):
        ag.linalg.ldl_factor_ex(ag.tensor(a), check_errors=True)
    with pytest.raises(RuntimeError, match=r"torch.linalg.ldl_factor: D\[1,1\] is zero"):
        ag.linalg.ldl_factor(ag.tensor(np.zeros((2, 2))))


def test_empty_inputs_give_empty_results():
    LD, pivots, info = ag.linalg.ldl_factor_ex(ag.zeros(2, 0, 0))
    assert LD.shape == (2, 0, 0) and pivots.shape == (2, 0) and info.shape == (2,)
    LD, pivots = ag.linalg.ldl_factor(ag.zeros(0, 3, 3, dtype=ag.float64))
    assert LD.shape == (0, 3, 3) and pivots.shape == (0, 3)
    assert ag.linalg.ldl_solve(LD, pivots, ag.zeros(3, 2, dtype=ag.float64)).shape == (0, 3, 2)


def _raises(error, text, fn):
    with pytest.raises(error) as caught:
        fn()
    assert str(caught.value) == text


def test_factor_refusals_are_pytorchs():
    op = "torch.linalg.ldl_factor_ex"
    _raises(RuntimeError, f"{op}: A must be batches of square matrices, but they are 3 by 4 matrices",
            lambda: ag.linalg.ldl_factor(ag.randn(3, 4)))
    _raises(RuntimeError, f"{op}: The input tensor A must have at least 2 dimensions.",
            lambda: ag.linalg.ldl_factor_ex(ag.randn(3)))
    _raises(RuntimeError, f"{op}: Expected a floating point or complex tensor as input. Got Long",
            lambda: ag.linalg.ldl_factor(ag.ones(3, 3, dtype=ag.int64)))
    _raises(NotImplementedError, "\"ldl_factor_kernel_cpu\" not implemented for 'Half'",
            lambda: ag.linalg.ldl_factor(ag.ones(3, 3, dtype=ag.float16)))
    _raises(TypeError, "linalg_ldl_factor(): argument 'hermitian' must be bool, not int",
            lambda: ag.linalg.ldl_factor(ag.eye(2), hermitian=1))
    _raises(TypeError, "linalg_ldl_factor_ex(): argument 'check_errors' must be bool, not int",
            lambda: ag.linalg.ldl_factor_ex(ag.eye(2), check_errors=1))


def test_solve_refusals_are_pytorchs():
    op = "torch.linalg.ldl_solve"
    LD, pivots = ag.linalg.ldl_factor(ag.tensor(matrix((3, 3), np.float64)))
    b = ag.tensor(matrix((3, 2), np.float64))
    cases = [
        (RuntimeError, f"{op}: A must be batches of square matrices, but they are 3 by 2 matrices",
         lambda: ag.linalg.ldl_solve(LD[:, :2], pivots, b.float())),
        (RuntimeError, f"{op}: Expected a floating point or complex tensor as input. Got Long",
         lambda: ag.linalg.ldl_solve(LD.long(), pivots.float(), b)),
        (RuntimeError, "Expected b and A to have the same dtype, but found b of type Float and A of type Double "
         "instead.", lambda: ag.linalg.ldl_solve(LD, pivots[:1], b.float())),
        (RuntimeError, f"Incompatible matrix sizes for {op}: each A matrix is 3 by 3 but each b matrix is 2 by 2",
         lambda: ag.linalg.ldl_solve(LD, pivots.float(), b[:2])),
        (IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got -2)",
         lambda: ag.linalg.ldl_solve(LD, pivots, b[:, 0])),
        (RuntimeError, f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape "
         "[1] instead", lambda: ag.linalg.ldl_solve(LD, pivots[:1].float(), b)),
        (RuntimeError, f"{op}: Expected pivots to be integers. Got Bool",
         lambda: ag.linalg.ldl_solve(LD, pivots.bool(), b)),
        (RuntimeError, "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0",
         lambda: ag.linalg.ldl_solve(LD.expand(4, 3, 3), pivots.expand(4, 3), b.expand(2, 3, 2))),
        (RuntimeError, "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly pass "
         "the result of ldl_factor?", lambda: ag.linalg.ldl_solve(LD, pivots + 10, b)),
        (RuntimeError, "Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the result "
         "of ldl_factor?", lambda: ag.linalg.ldl_solve(LD, pivots * 0, b)),
        (TypeError, "linalg_ldl_solve(): argument 'hermitian' must be bool, not int",
         lambda: ag.linalg.ldl_solve(LD, pivots, b, hermitian=1)),
    ]
    for error, text, fn in cases:
        _raises(error, text, fn)
    # PyTorch's kernel reads past the pivots here (a crash); ours refuses the unpaired negative pivot
    with pytest.raises(RuntimeError, match="negative pivots come in pairs"):
        ag.linalg.ldl_solve(LD, ag.tensor([1, 2, -3], dtype=ag.int32), b)


def test_neither_has_a_derivative_as_in_pytorch():
    a = ag.tensor(matrix((3, 3), np.float64), requires_grad=True)
    LD, pivots, info = ag.linalg.ldl_factor_ex(a)
    assert LD.requires_grad and LD.grad_fn.name() == "NotImplemented"
    assert not pivots.requires_grad and not info.requires_grad
    with pytest.raises(RuntimeError, match=r"derivative for aten::linalg_ldl_factor_ex is not implemented"):
        LD.sum().backward()
    b = ag.tensor(matrix((3, 1), np.float64), requires_grad=True)
    x = ag.linalg.ldl_solve(LD.detach(), pivots, b)
    assert x.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match=r"derivative for aten::linalg_ldl_solve is not implemented"):
        x.sum().backward()
    with ag.no_grad():
        assert not ag.linalg.ldl_factor(a).LD.requires_grad


def test_out_takes_each_results_dtype_and_arguments_that_require_grad():
    a = ag.tensor(np.array(HAND_WORKED[3][0]), requires_grad=True)
    LD, pivots, info = ag.empty(0, dtype=ag.float64), ag.empty(0, dtype=ag.int32), ag.empty(0, dtype=ag.int32)
    result = ag.linalg.ldl_factor_ex(a, out=(LD, pivots, info))
    assert type(result).__name__ == "linalg_ldl_factor_ex_out" and result.LD is LD
    np.testing.assert_array_equal(LD.numpy(), HAND_WORKED[3][1])
    assert pivots.numpy().tolist() == HAND_WORKED[3][2] and info.item() == 0
    _raises(RuntimeError, "Expected out tensor to have dtype int, but got long int instead",
            lambda: ag.linalg.ldl_factor(a, out=(ag.empty(0, dtype=ag.float64), ag.empty(0, dtype=ag.int64))))
    b = ag.tensor(matrix((3, 2), np.float64), requires_grad=True)
    x = ag.empty(0, dtype=ag.float64)
    assert ag.linalg.ldl_solve(LD, pivots, b, out=x) is x
    expected = np.linalg.solve(whole(np.array(HAND_WORKED[3][0]), False), b.detach().numpy())
    np.testing.assert_allclose(x.numpy(), expected, atol=1e-12)
    _raises(RuntimeError, "Expected out tensor to have dtype double, but got float instead",
            lambda: ag.linalg.ldl_solve(LD, pivots, b, out=ag.empty(0)))


@pytest.mark.gpu
def test_ldl_on_cuda_gives_the_cpu_numbers(cupy):
    for dtype, hermitian in ((np.float64, False), (np.complex128, True)):
        a = matrix((2, 5, 5), dtype, "zero diagonal")
        b = matrix((2, 5, 2), dtype)
        results = []
        for device in ("cpu", "cuda"):
            LD, pivots, info = ag.linalg.ldl_factor_ex(ag.tensor(a, device=device), hermitian=hermitian)
            x = ag.linalg.ldl_solve(LD, pivots, ag.tensor(b, device=device), hermitian=hermitian)
            assert LD.device is ag.device(device) and pivots.device is ag.device(device) and x.device is LD.device
            results.append([t.cpu().numpy() for t in (LD, pivots, info, x)])
        for got, expected in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
