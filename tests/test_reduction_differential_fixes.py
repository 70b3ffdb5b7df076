"""Reductions, statistics and scans at the edges a differential review against PyTorch found: empty inputs,
integer and complex dtypes, numpy's names for dims (`axis`, `keepdims`, numpy integers), 0-d inputs' dims, float16
log-sum-exp and the nuclear norm. Expected values are closed forms, brute-force loops or numpy's formulas."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4, 5))


def quiet(fn, *args, **kwargs):
    """fn's result, failing on any warning (numpy's RuntimeWarnings among them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("shape, dim, out_shape", [((0, 3), None, ()), ((0, 3), 0, (3,)), ((0, 3), 1, (0,)),
                                                   ((2, 0), (), ()), ((2, 0), [0, 1], ())])
def test_mean_of_an_empty_tensor_is_a_quiet_nan(shape, dim, out_shape):
    x = ag.zeros(shape, requires_grad=True)
    out = quiet(ag.mean, x) if dim is None else quiet(ag.mean, x, dim)
    assert out.shape == out_shape and out.dtype == ag.float32
    assert np.isnan(out.detach().numpy()).all()
    out.sum().backward()
    assert x.grad.shape == shape


def test_mean_and_nanmean_name_refused_dtypes_as_pytorch_does():
    with pytest.raises(RuntimeError, match="Input dtype must be either a floating point or complex dtype. Got: Int$"):
        ag.ones(2, dtype=ag.int32).mean()
    optional = "Optional dtype must be either a floating point or complex dtype. Got: Long$"
    with pytest.raises(RuntimeError, match=optional):
        ag.ones(2).nanmean(dtype=ag.int64)
    with pytest.raises(RuntimeError, match="nansum on CPU does not support complex inputs"):
        ag.nansum(ag.ones(2, dtype=ag.complex64))
    with pytest.raises(RuntimeError, match="nansum on CPU does not support complex inputs"):
        ag.nanmean(ag.ones(2, dtype=ag.complex64))


@pytest.mark.parametrize("op", ["var", "std", "var_mean", "std_mean"])
def test_moments_of_a_0d_tensor_check_the_dims(op):
    x = ag.tensor(1.5)
    for dim in (1, (0, 1), -2):
        with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\]"):
            getattr(ag, op)(x, dim)
    assert getattr(ag, op)(x, 0, correction=0)[0 if op.endswith("mean") else ...].item() == 0.0


def test_nanquantile_errors_name_quantile_as_pytorchs_shared_checks_do():
    x = ag.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"^quantile\(\) q must be in the range \[0, 1\] but got 1.5$"):
        ag.nanquantile(x, 1.5)
    with pytest.raises(RuntimeError, match=r"^quantile\(\) input tensor must be non-empty$"):
        ag.nanquantile(ag.zeros(0), 0.5)
    with pytest.raises(RuntimeError, match=r"^quantile\(\) q tensor must be same dtype as the input tensor$"):
        x.nanquantile(ag.tensor([0.5], dtype=ag.float64))
    for bad_input in (ag.zeros(0), ag.ones(2, dtype=ag.int64), ag.ones(2, dtype=ag.float16)):  # a number q first
        with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5$"):
            ag.quantile(bad_input, 1.5, interpolation="cubic")


def test_aminmax_of_a_0d_tensor_checks_the_dim():
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        ag.aminmax(ag.tensor(2.0), dim=1)
    low, high = ag.aminmax(ag.tensor(2.0), dim=-1)
    assert low.item() == high.item() == 2.0


def test_logsumexp_of_float16_is_the_correctly_rounded_float32_result():
    x = np.linspace(-3, 3, 64, dtype=np.float16).reshape(8, 8)[:, RNG.permutation(8)]
    wide = x.astype(np.float64)
    want = np.log(np.exp(wide).sum(1)).astype(np.float32).astype(np.float16)
    got = ag.tensor(x).logsumexp(1).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_logsumexp_needs_a_dim():
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "dim"'):
        ag.logsumexp(ag.ones(2))


def running_product(values, dtype):
    """The running product of a sequence, element by element, wrapped to `dtype` as a C loop wraps it."""
    out, acc = [], 1
    for v in values:
        acc = int(np.array(acc * int(v)).astype(dtype))
        out.append(acc)
    return np.array(out, dtype=dtype)


def test_cumprod_keeps_the_integer_dtype_it_is_given():
    x = np.array([3, -2, 5, 7, 11, 13, 17, 19, 23, 29], dtype=np.int32)
    got = ag.tensor(x).cumprod(0, dtype=ag.int32)
    assert got.dtype == ag.int32
    np.testing.assert_array_equal(got.numpy(), running_product(x, np.int32))
    got = ag.tensor(x.astype(np.float64) / 2).cumprod(0, dtype=ag.int16)  # cast first: 1, -1, 2, 3, 5, ...
    assert got.dtype == ag.int16
    np.testing.assert_array_equal(got.numpy(), running_product((x.astype(np.float64) / 2).astype(np.int16), np.int16))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_running_ops_refuse_a_bool_dtype(op):
    with pytest.raises(NotImplementedError, match=f"\"{op}_out_cpu\" not implemented for 'Bool'"):
        getattr(ag, op)(ag.ones(3), 0, dtype=ag.bool)
    with pytest.raises(IndexError, match="Dimension out of range"):  # the dim is checked first, as in PyTorch
        getattr(ag, op)(ag.ones(3), 2, dtype=ag.bool)


@pytest.mark.parametrize("dim", [np.int64(1), np.int32(-1), ag.tensor(1)])
def test_dims_may_be_numpy_integers_or_integer_0d_tensors(dim):
    x = ag.tensor(X)
    d = int(dim)
    np.testing.assert_allclose(x.sum(dim).numpy(), X.sum(d))
    np.testing.assert_allclose(x.mean((0, dim)).numpy(), X.mean((0, d)))
    np.testing.assert_allclose(x.var((dim,), correction=0).numpy(), X.var(d))
    if not isinstance(dim, ag.Tensor):  # a tensor in max's second place is the elementwise form's other
        np.testing.assert_array_equal(x.max(dim).indices.numpy(), X.argmax(d))
    np.testing.assert_array_equal(x.argmin(dim).numpy(), X.argmin(d))
    np.testing.assert_allclose(x.prod(dim).numpy(), X.prod(d))


def test_errors_name_the_dims_as_pytorch_does():
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim -1 to have non-zero size\.$"):
        ag.zeros(2, 0).amax((0, -1))
    with pytest.raises(RuntimeError, match=r"dim 0 appears multiple times in the list of dims$"):
        ag.zeros(2, 3).sum((0, -2))


def test_histogram_density_of_nothing_is_a_quiet_nan():
    hist, edges = quiet(ag.histogram, ag.zeros(0, dtype=ag.float64), 4, density=True)
    assert np.isnan(hist.numpy()).all() and hist.shape == (4,)
    np.testing.assert_allclose(edges.numpy(), np.linspace(0, 1, 5))


def test_norm_nuc_is_the_sum_of_singular_values():
    a = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(ag.norm(ag.tensor(a), "nuc").item(), np.linalg.svd(a, compute_uv=False).sum())
    stacked = RNG.standard_normal((3, 4, 5))
    want = [np.linalg.svd(stacked[:, :, k], compute_uv=False).sum() for k in range(5)]
    got = ag.tensor(stacked).norm(p="nuc", dim=(0, 1), keepdim=True)
    assert got.shape == (1, 1, 5)
    np.testing.assert_allclose(got.numpy().ravel(), want)
    assert gradcheck(lambda t: ag.norm(t, "nuc"), (ag.tensor(a, requires_grad=True),))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        ag.norm(ag.tensor(stacked), "nuc")


@pytest.mark.parametrize("p", [3, 4, 2.5])
def test_pnorm_second_derivative_at_an_exact_zero_element(p):
    """For p > 2 the gradient of the norm at a zero element, x |x|^(p-2) / norm^(p-1), is flat there: the Hessian
    has no entry in that element's row."""
    a = RNG.standard_normal((2, 4))
    a[0, 1] = a[1, 3] = 0.0
    x = ag.tensor(a, requires_grad=True)
    if p != 2.5:  # x |x|^0.5 has an infinite slope at 0: no finite difference to check against
        assert gradgradcheck(lambda t: ag.linalg.vector_norm(t, p, 1), (x,))
    (g,) = ag.autograd.grad(ag.linalg.vector_norm(x, p, 1).sum(), x, create_graph=True)
    (hessian_row,) = ag.autograd.grad(g[0, 1], x)  # the zero element's gradient is 0 near it: x |x|^(p-2) ...
    assert hessian_row.abs().sum().item() == 0.0


NUMPY_NAMED = [
    ("sum", np.sum), ("mean", np.mean), ("prod", np.prod), ("amax", np.amax), ("amin", np.amin),
    ("nansum", np.nansum), ("nanmean", np.nanmean), ("std", lambda a, axis, keepdims: a.std(axis, ddof=1,
                                                                                             keepdims=keepdims)),
    ("var", lambda a, axis, keepdims: a.var(axis, ddof=1, keepdims=keepdims)),
    ("logsumexp", lambda a, axis, keepdims: np.log(np.exp(a).sum(axis, keepdims=keepdims))),
]


@pytest.mark.parametrize("op, reference", NUMPY_NAMED)
def test_reductions_take_numpys_axis_and_keepdims(op, reference):
    x = ag.tensor(X, requires_grad=True)
    for axis, keepdims in ((1, True), (-1 if op == "prod" else (0, 2), False), (-1, None)):  # prod: one dim
        kwargs = {"axis": axis} if keepdims is None else {"axis": axis, "keepdims": keepdims}
        got = getattr(x, op)(**kwargs)
        want = reference(X, axis=axis, keepdims=bool(keepdims))
        assert got.shape == want.shape
        np.testing.assert_allclose(got.detach().numpy(), want)
        np.testing.assert_allclose(getattr(ag, op)(x, **kwargs).detach().numpy(), want)
    getattr(x, op)(axis=1).sum().backward()
    assert x.grad.shape == X.shape


def test_selections_and_scans_take_numpys_axis():
    x = ag.tensor(X)
    values, indices = x.max(axis=1, keepdims=True)
    np.testing.assert_array_equal(values.numpy(), X.max(1, keepdims=True))
    np.testing.assert_array_equal(indices.numpy(), X.argmax(1)[:, None])
    np.testing.assert_array_equal(x.min(axis=2).indices.numpy(), X.argmin(2))
    np.testing.assert_array_equal(x.argmax(axis=0, keepdims=True).numpy(), X.argmax(0)[None])
    np.testing.assert_array_equal(ag.argmin(x, axis=-1).numpy(), X.argmin(-1))
    np.testing.assert_array_equal(x.median(axis=1).values.numpy(), np.sort(X, 1)[:, 1])  # the lower of 4
    np.testing.assert_array_equal(x.nanmedian(axis=2).values.numpy(), np.median(X, 2))  # the middle of 5
    np.testing.assert_allclose(x.cumsum(axis=1).numpy(), X.cumsum(1))
    np.testing.assert_allclose(x.cumprod(axis=2).numpy(), X.cumprod(2))
    np.testing.assert_array_equal(x.cummax(axis=0).values.numpy(), np.maximum.accumulate(X, 0))
    np.testing.assert_array_equal(x.cummin(axis=0).values.numpy(), np.minimum.accumulate(X, 0))
    e = np.exp(X - X.max(1, keepdims=True))
    np.testing.assert_allclose(x.softmax(axis=1).numpy(), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(x.log_softmax(axis=1).numpy(), np.log(e / e.sum(1, keepdims=True)))
    low, high = ag.aminmax(x, axis=2, keepdims=True)
    np.testing.assert_array_equal(low.numpy(), X.min(2, keepdims=True))
    np.testing.assert_array_equal(high.numpy(), X.max(2, keepdims=True))
    std, mean = ag.std_mean(x, axis=0)
    np.testing.assert_allclose(std.numpy(), X.std(0, ddof=1))
    np.testing.assert_allclose(mean.numpy(), X.mean(0))
    counts = ag.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]])
    np.testing.assert_array_equal(counts.mode(axis=1).values.numpy(), [2.0, 3.0])


def test_changed_paths_keep_their_gradients():
    x = ag.tensor(X[0], requires_grad=True)
    assert gradcheck(lambda t: t.sum(axis=1, keepdims=True), (x,))
    assert gradcheck(lambda t: t.var(axis=0), (x,))
    assert gradcheck(lambda t: t.logsumexp(axis=(0, 1)), (x,))
    assert gradcheck(lambda t: t.cumprod(axis=1), (x,))
    assert gradcheck(lambda t: t.amax(np.int64(1)), (x,))


@pytest.mark.gpu
def test_fixed_paths_on_cuda_match_the_cpu(cupy):
    cpu, gpu = ag.tensor(X), ag.tensor(X, device="cuda:0")
    np.testing.assert_allclose(gpu.sum(axis=1, keepdims=True).cpu().numpy(), cpu.sum(1, True).numpy())
    np.testing.assert_allclose(gpu.std(axis=np.int64(0)).cpu().numpy(), cpu.std(0).numpy())
    got = gpu.cumprod(axis=1, dtype=ag.int32)
    assert got.dtype == ag.int32
    np.testing.assert_array_equal(got.cpu().numpy(), cpu.cumprod(1, dtype=ag.int32).numpy())
    empty = ag.zeros(0, 3, device="cuda:0")
    assert math.isnan(quiet(empty.mean).item()) and quiet(empty.mean, 1).shape == (0,)
    half = ag.tensor(X[0].astype(np.float16), device="cuda:0")
    np.testing.assert_array_equal(half.logsumexp(1).cpu().numpy(), ag.tensor(X[0].astype(np.float16)).logsumexp(1)
                                  .numpy())
