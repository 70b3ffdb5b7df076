"""Arguments of a type PyTorch's argument parser refuses: a flag that is no Python bool, a comparison's function
form given a number first, numbers in where's out form; and all/any into a uint8 `out`, which test the input cast
to uint8 as PyTorch's do."""

import numpy as np
import pytest

import actorgrad as ag

X = ag.tensor([[0.5, 1.5, -2.0], [1.0, 2.0, 3.0]])
M = ag.tensor([[2.0, 1.0], [1.0, 3.0]])
IDS = ag.tensor([1, 2, 3])

# (op name in PyTorch's error, flag name, call with the flag's value); each call works with a bool.
FLAG_CASES = [
    ("sum", "keepdim", lambda v: ag.sum(X, 0, keepdim=v)),
    ("sum", "keepdim", lambda v: X.sum(1, v)),
    ("sum", "keepdim", lambda v: ag.sum(X, axis=0, keepdims=v)),
    ("mean", "keepdim", lambda v: X.mean(0, keepdim=v)),
    ("prod", "keepdim", lambda v: ag.prod(X, 0, keepdim=v)),
    ("amax", "keepdim", lambda v: ag.amax(X, 0, keepdim=v)),
    ("amin", "keepdim", lambda v: ag.amin(X, keepdim=v)),
    ("max", "keepdim", lambda v: ag.max(X, 0, keepdim=v)),
    ("min", "keepdim", lambda v: X.min(1, keepdim=v)),
    ("argmax", "keepdim", lambda v: ag.argmax(X, 0, keepdim=v)),
    ("argmin", "keepdim", lambda v: ag.argmin(X, keepdim=v)),
    ("aminmax", "keepdim", lambda v: ag.aminmax(X, dim=0, keepdim=v)),
    ("logsumexp", "keepdim", lambda v: ag.logsumexp(X, 0, keepdim=v)),
    ("nansum", "keepdim", lambda v: ag.nansum(X, 0, keepdim=v)),
    ("nanmean", "keepdim", lambda v: ag.nanmean(X, 0, keepdim=v)),
    ("median", "keepdim", lambda v: ag.median(X, 0, keepdim=v)),
    ("nanmedian", "keepdim", lambda v: X.nanmedian(0, keepdim=v)),
    ("mode", "keepdim", lambda v: ag.mode(X, 0, keepdim=v)),
    ("kthvalue", "keepdim", lambda v: ag.kthvalue(X, 1, 0, keepdim=v)),
    ("quantile", "keepdim", lambda v: ag.quantile(X, 0.5, 0, keepdim=v)),
    ("nanquantile", "keepdim", lambda v: ag.nanquantile(X, 0.5, 0, keepdim=v)),
    ("var", "keepdim", lambda v: ag.var(X, 0, keepdim=v)),
    ("var", "unbiased", lambda v: ag.var(X, unbiased=v)),
    ("std", "unbiased", lambda v: X.std(0, unbiased=v)),
    ("std_mean", "unbiased", lambda v: ag.std_mean(X, unbiased=v)),
    ("var_mean", "keepdim", lambda v: ag.var_mean(X, 0, keepdim=v)),
    ("all", "keepdim", lambda v: ag.all(X, 0, keepdim=v)),
    ("any", "keepdim", lambda v: X.any(1, keepdim=v)),
    ("norm", "keepdim", lambda v: ag.norm(X, 2, 0, keepdim=v)),
    ("linalg_vector_norm", "keepdim", lambda v: ag.linalg.vector_norm(X, keepdim=v)),
    ("linalg_matrix_norm", "keepdim", lambda v: ag.linalg.matrix_norm(M, keepdim=v)),
    ("linalg_norm", "keepdim", lambda v: ag.linalg.norm(M, keepdim=v)),
    ("sort", "descending", lambda v: ag.sort(X, descending=v)),
    ("sort", "stable", lambda v: X.sort(stable=v)),
    ("argsort", "descending", lambda v: ag.argsort(X, descending=v)),
    ("topk", "largest", lambda v: ag.topk(X, 1, largest=v)),
    ("topk", "sorted", lambda v: X.topk(1, 0, True, v)),
    ("_unique2", "sorted", lambda v: ag.unique(X, sorted=v)),
    ("_unique2", "return_inverse", lambda v: X.unique(return_inverse=v)),
    ("unique_dim", "return_counts", lambda v: ag.unique(X, return_counts=v, dim=0)),
    ("unique_consecutive", "return_inverse", lambda v: ag.unique_consecutive(X, return_inverse=v)),
    ("searchsorted", "right", lambda v: ag.searchsorted(IDS, IDS, right=v)),
    ("bucketize", "out_int32", lambda v: ag.bucketize(IDS, IDS, out_int32=v)),
    ("isin", "invert", lambda v: ag.isin(IDS, IDS, invert=v)),
    ("isclose", "equal_nan", lambda v: ag.isclose(X, X, equal_nan=v)),
    ("allclose", "equal_nan", lambda v: ag.allclose(X, X, equal_nan=v)),
    ("nonzero", "as_tuple", lambda v: ag.nonzero(X, as_tuple=v)),
    ("histogram", "density", lambda v: ag.histogram(X, 3, density=v)),
    ("combinations", "with_replacement", lambda v: ag.combinations(IDS, 2, with_replacement=v)),
    ("vander", "increasing", lambda v: ag.vander(IDS, increasing=v)),
    ("multinomial", "replacement", lambda v: ag.multinomial(X.abs(), 2, replacement=v)),
    ("scatter_reduce", "include_self", lambda v: ag.scatter_reduce(IDS, 0, ag.tensor([0, 0]), IDS[:2], "sum",
                                                                   include_self=v)),
    ("index_reduce", "include_self", lambda v: ag.index_reduce(X, 0, ag.tensor([0]), X[:1], "prod",
                                                               include_self=v)),
    ("put", "accumulate", lambda v: ag.put(X, IDS[:2], X[0, :2], accumulate=v)),
    ("put_", "accumulate", lambda v: X.clone().put_(IDS[:2], X[0, :2], accumulate=v)),
    # sparse gradients are refused (actorgrad has no sparse tensors): sparse_grad=True is not called
    ("gather", "sparse_grad", lambda v: v is True or ag.gather(X, 1, IDS[:2].view(2, 1), sparse_grad=v)),
    ("lu_unpack", "unpack_pivots", lambda v: ag.lu_unpack(*ag.linalg.lu_factor(M), unpack_pivots=v)),
    ("ormqr", "transpose", lambda v: ag.ormqr(*ag.geqrf(M), M, transpose=v)),
    ("kl_div", "log_target", lambda v: ag.nn.functional.kl_div(X.log_softmax(1), X.softmax(1), log_target=v,
                                                               reduction="batchmean")),
    ("to", "non_blocking", lambda v: X.to(ag.float64, non_blocking=v)),
    ("to", "copy", lambda v: X.to("cpu", copy=v)),
    ("type", "non_blocking", lambda v: X.type(ag.float64, non_blocking=v)),
    ("copy_", "non_blocking", lambda v: ag.zeros(2, 3).copy_(X, non_blocking=v)),
    ("linalg_svd", "full_matrices", lambda v: ag.linalg.svd(M, full_matrices=v)),
    ("linalg_pinv", "hermitian", lambda v: ag.linalg.pinv(M, hermitian=v)),
    ("linalg_matrix_rank", "hermitian", lambda v: ag.linalg.matrix_rank(M, hermitian=v)),
    ("linalg_cholesky", "upper", lambda v: ag.linalg.cholesky(M, upper=v)),
    ("linalg_cholesky_ex", "check_errors", lambda v: ag.linalg.cholesky_ex(M, check_errors=v)),
    ("linalg_solve", "left", lambda v: ag.linalg.solve(M, M, left=v)),
    ("linalg_solve_ex", "check_errors", lambda v: ag.linalg.solve_ex(M, M, check_errors=v)),
    ("linalg_solve_triangular", "unitriangular", lambda v: ag.linalg.solve_triangular(M, M, upper=True,
                                                                                      unitriangular=v)),
    ("linalg_inv_ex", "check_errors", lambda v: ag.linalg.inv_ex(M, check_errors=v)),
    # LU without pivoting is refused on the cpu, as PyTorch's: pivot=False is not called
    ("linalg_lu_factor", "pivot", lambda v: v is False or ag.linalg.lu_factor(M, pivot=v)),
    ("linalg_lu", "pivot", lambda v: v is False or ag.linalg.lu(M, pivot=v)),
    ("linalg_lu_factor_ex", "check_errors", lambda v: ag.linalg.lu_factor_ex(M, check_errors=v)),
    ("linalg_lu_solve", "adjoint", lambda v: ag.linalg.lu_solve(*ag.linalg.lu_factor(M), M, adjoint=v)),
    ("triangular_solve", "transpose", lambda v: ag.triangular_solve(M, M, transpose=v)),
    ("cholesky_solve", "upper", lambda v: ag.cholesky_solve(M, M, upper=v)),
    ("cholesky_inverse", "upper", lambda v: ag.cholesky_inverse(M, upper=v)),
    ("cholesky", "upper", lambda v: ag.cholesky(M, upper=v)),
    ("svd", "compute_uv", lambda v: ag.svd(M, compute_uv=v)),
    ("qr", "some", lambda v: ag.qr(M, some=v)),
]


@pytest.mark.filterwarnings("ignore:.*(is deprecated|is in beta):UserWarning")  # as PyTorch warns
@pytest.mark.parametrize(("op", "name", "call"), FLAG_CASES, ids=[f"{c[0]}-{c[1]}" for c in FLAG_CASES])
def test_a_flag_takes_only_a_bool(op, name, call):
    call(True)
    call(False)
    for value, kind in ((1, "int"), (0, "int"), (np.True_, "numpy.bool"), (ag.tensor(True), "Tensor")):
        with pytest.raises(TypeError) as caught:
            call(value)
        assert str(caught.value) == f"{op}(): argument '{name}' must be bool, not {kind}"


F = ag.nn.functional
X3, X4 = ag.arange(16.0).reshape(1, 2, 8) / 10, ag.arange(32.0).reshape(1, 2, 4, 4) / 10
X5 = ag.arange(64.0).reshape(1, 1, 4, 4, 4) / 10
SPECTRUM = ag.stft(ag.ones(16), 4, window=ag.ones(4), return_complex=True)
# The functional forms call PyTorch's kernels with their flags by position: the error names the kernel's argument.
FUNCTIONAL_CASES = [
    ("max_pool1d(): argument 'ceil_mode' (position 6)", lambda v: F.max_pool1d(X3, 2, ceil_mode=v)),
    ("max_pool2d(): argument 'ceil_mode' (position 6)", lambda v: F.max_pool2d(X4, 2, ceil_mode=v)),
    ("max_pool3d(): argument 'ceil_mode' (position 6)", lambda v: F.max_pool3d(X5, 2, ceil_mode=v)),
    ("avg_pool1d(): argument 'count_include_pad'", lambda v: F.avg_pool1d(X3, 2, count_include_pad=v)),
    ("avg_pool2d(): argument 'ceil_mode'", lambda v: F.avg_pool2d(X4, 2, ceil_mode=v)),
    ("avg_pool3d(): argument 'count_include_pad'", lambda v: F.avg_pool3d(X5, 2, count_include_pad=v)),
    ("avg_pool2d(): argument 'ceil_mode'", lambda v: F.lp_pool2d(X4, 2, 2, ceil_mode=v)),
    ("grid_sampler(): argument 'align_corners' (position 5)",
     lambda v: F.grid_sample(X4, ag.zeros(1, 2, 2, 2), align_corners=v)),
    ("affine_grid_generator(): argument 'align_corners' (position 3)",
     lambda v: F.affine_grid(ag.eye(2, 3).unsqueeze(0), [1, 1, 2, 2], align_corners=v)),
    ("interpolate(): argument 'align_corners'",
     lambda v: F.interpolate(X4, size=(8, 8), mode="bilinear", align_corners=v)),
    ("dropout(): argument 'train' (position 3)", lambda v: F.dropout(X, 0.5, training=v)),
    ("feature_dropout(): argument 'train' (position 3)", lambda v: F.dropout2d(X4, 0.5, training=v)),
    ("alpha_dropout(): argument 'train' (position 3)", lambda v: F.alpha_dropout(X, 0.5, training=v)),
    ("batch_norm(): argument 'training' (position 6)",
     lambda v: F.batch_norm(X, ag.zeros(3), ag.ones(3), training=v)),
    ("batch_norm(): argument 'training' (position 6)",
     lambda v: ag.batch_norm(X, None, None, ag.zeros(3), ag.ones(3), v, 0.1, 1e-5, False)),
    ("instance_norm(): argument 'use_input_stats' (position 6)",
     lambda v: F.instance_norm(X4, ag.zeros(2), ag.ones(2), use_input_stats=v)),
    ("embedding(): argument 'scale_grad_by_freq' (position 4)",
     lambda v: F.embedding(ag.tensor([0, 1]), X, scale_grad_by_freq=v)),
    ("scaled_dot_product_attention(): argument 'is_causal'",
     lambda v: F.scaled_dot_product_attention(X4, X4, X4, is_causal=v)),
    ("rrelu(): argument 'training' (position 4)", lambda v: F.rrelu(X, training=v)),
    ("triplet_margin_loss(): argument 'swap' (position 7)", lambda v: F.triplet_margin_loss(X, X, X, swap=v)),
    ("poisson_nll_loss(): argument 'full' (position 4)", lambda v: F.poisson_nll_loss(X, X.abs(), full=v)),
    ("stft(): argument 'normalized'",
     lambda v: ag.stft(ag.ones(16), 4, window=ag.ones(4), return_complex=True, normalized=v)),
    ("istft(): argument 'center'", lambda v: ag.istft(SPECTRUM, 4, window=ag.ones(4), center=v)),
    ("hann_window(): argument 'periodic'", lambda v: ag.hann_window(4, periodic=v)),
    ("kaiser_window(): argument 'periodic'", lambda v: ag.kaiser_window(4, periodic=v)),
]


@pytest.mark.parametrize(("head", "call"), FUNCTIONAL_CASES, ids=[c[0].split("(")[0] for c in FUNCTIONAL_CASES])
def test_a_functional_flag_takes_only_a_bool(head, call):
    call(True)
    call(False)
    for value, kind in ((1, "int"), (np.True_, "numpy.bool")):
        with pytest.raises(TypeError) as caught:
            call(value)
        assert str(caught.value) == f"{head} must be bool, not {kind}"


def test_sorts_stable_flag_may_be_none():
    np.testing.assert_array_equal(ag.sort(IDS.flip(0), stable=None).values.numpy(), [1, 2, 3])
    with pytest.raises(TypeError, match=r"^argsort\(\): argument 'stable' must be bool, not NoneType$"):
        ag.argsort(IDS, stable=None)


def test_keepdim_still_keeps_the_dim():
    assert ag.sum(X, 0, keepdim=True).shape == (1, 3)
    assert ag.sum(X, 0).shape == (3,)
    np.testing.assert_allclose(ag.sum(X, 1, keepdim=True).numpy(), X.numpy().sum(1, keepdims=True))


CREATIONS = [
    ("zeros", lambda v: ag.zeros(2, requires_grad=v)),
    ("ones", lambda v: ag.ones((2,), requires_grad=v)),
    ("empty", lambda v: ag.empty(2, requires_grad=v)),
    ("full", lambda v: ag.full((2,), 1.0, requires_grad=v)),
    ("arange", lambda v: ag.arange(3.0, requires_grad=v)),
    ("linspace", lambda v: ag.linspace(0, 1, 3, requires_grad=v)),
    ("eye", lambda v: ag.eye(2, requires_grad=v)),
    ("rand", lambda v: ag.rand(2, requires_grad=v)),
    ("randn", lambda v: ag.randn(2, requires_grad=v)),
    ("zeros_like", lambda v: ag.zeros_like(X, requires_grad=v)),
    ("ones_like", lambda v: ag.ones_like(X, requires_grad=v)),
    ("empty_like", lambda v: ag.empty_like(X, requires_grad=v)),
    ("full_like", lambda v: ag.full_like(X, 2.0, requires_grad=v)),
    ("rand_like", lambda v: ag.rand_like(X, requires_grad=v)),
    ("new_zeros", lambda v: X.new_zeros(2, requires_grad=v)),
    ("new_full", lambda v: X.new_full((2,), 1.0, requires_grad=v)),
]


@pytest.mark.parametrize(("op", "call"), CREATIONS, ids=[c[0] for c in CREATIONS])
def test_a_creation_function_takes_a_bool_or_none_for_requires_grad(op, call):
    assert call(True).requires_grad
    assert not call(False).requires_grad
    assert not call(None).requires_grad  # PyTorch's optional bool: None is the default
    for value, kind in ((1, "int"), (0, "int"), (np.True_, "numpy.bool"), ("yes", "str")):
        with pytest.raises(TypeError) as caught:
            call(value)
        assert str(caught.value) == f"{op}(): argument 'requires_grad' must be bool, not {kind}"


@pytest.mark.parametrize(("op", "call"), [
    ("tensor", lambda v: ag.tensor([1.0], requires_grad=v)),
    ("new_tensor", lambda v: X.new_tensor([1.0], requires_grad=v)),
])
def test_tensor_and_new_tensor_refuse_none_too(op, call):
    assert call(True).requires_grad
    for value, kind in ((1, "int"), (None, "NoneType"), (np.False_, "numpy.bool")):
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'requires_grad' must be bool, not {kind}$"):
            call(value)


def test_asarray_takes_none_or_a_bool():
    assert ag.asarray([1.0], requires_grad=True).requires_grad
    assert not ag.asarray([1.0]).requires_grad
    with pytest.raises(TypeError, match=r"^asarray\(\): argument 'requires_grad' must be bool, not int$"):
        ag.asarray([1.0], requires_grad=1)


COMPARISONS = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
    "less_equal": np.less_equal, "not_equal": np.not_equal,
}


@pytest.mark.parametrize("op", COMPARISONS)
def test_a_comparisons_function_form_takes_a_tensor_first(op):
    fn, y = getattr(ag, op), ag.tensor([1.0, 2.0, 3.0])
    for first, kind in ((2, "int"), (2.0, "float"), (True, "bool"), (np.float64(2), "numpy.float64")):
        with pytest.raises(TypeError) as caught:
            fn(first, y)
        assert str(caught.value).startswith(f"{op}() received an invalid combination of arguments - got ({kind}, "
                                            "Tensor), but expected one of:\n * (Tensor input, Tensor other")
    with pytest.raises(TypeError, match="got \\(int, int\\)"):
        fn(1, 2)
    np.testing.assert_array_equal(fn(y, 2).numpy(), COMPARISONS[op](y.numpy(), 2))
    np.testing.assert_array_equal(getattr(y, op)(2).numpy(), COMPARISONS[op](y.numpy(), 2))
    np.testing.assert_array_equal(fn(y, y.flip(0)).numpy(), COMPARISONS[op](y.numpy(), y.numpy()[::-1]))


def test_the_comparison_operators_take_a_number_on_either_side():
    y = ag.tensor([1.0, 2.0, 3.0])
    a = y.numpy()
    np.testing.assert_array_equal((2 < y).numpy(), 2 < a)
    np.testing.assert_array_equal((2 >= y).numpy(), 2 >= a)
    np.testing.assert_array_equal((2 == y).numpy(), 2 == a)
    np.testing.assert_array_equal((2 != y).numpy(), 2 != a)
    assert (y == None) is False  # noqa: E711 (the operator, not an identity test)


def test_where_with_out_takes_tensors_only():
    c, x = ag.tensor([True, False]), ag.tensor([1.0, 2.0])
    out = ag.empty(2)
    for args, kwargs, message in (
        ((c, 1.0, x), {}, "argument 'input' (position 2) must be Tensor, not float"),
        ((c, x, 2), {}, "argument 'other' (position 3) must be Tensor, not int"),
        ((c,), {"input": True, "other": x}, "argument 'input' must be Tensor, not bool"),
    ):
        with pytest.raises(TypeError) as caught:
            ag.where(*args, **kwargs, out=out)
        assert str(caught.value) == f"where(): {message}"
    ag.where(c, x, ag.tensor(5.0), out=out)
    np.testing.assert_array_equal(out.numpy(), np.where([True, False], [1.0, 2.0], 5.0))
    np.testing.assert_array_equal(ag.where(c, 7.0, x).numpy(), np.where([True, False], 7.0, [1.0, 2.0]))


VALUES = np.array([[0.5, 1.0], [256.0, 3.0], [300.5, 2.0], [-0.5, 4.0], [1.0, 2.0], [0.0, 0.25]])


def _as_uint8(values: np.ndarray) -> np.ndarray:
    """PyTorch's float to uint8 cast, written out: truncated to an integer, then wrapped modulo 256."""
    return np.trunc(values).astype(np.int64) % 256


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_and_any_into_a_uint8_out_test_the_input_cast_to_uint8(op):
    truth = getattr(np, op)
    x = ag.tensor(VALUES)
    u8, flags = ag.empty(0, dtype=ag.uint8), ag.empty(0, dtype=ag.bool)
    getattr(ag, op)(x, 1, out=u8)
    getattr(ag, op)(x, 1, out=flags)
    np.testing.assert_array_equal(u8.numpy(), truth(_as_uint8(VALUES) != 0, axis=1).astype(np.uint8))
    np.testing.assert_array_equal(flags.numpy(), truth(VALUES != 0, axis=1))
    whole = ag.empty(0, dtype=ag.uint8)
    getattr(ag, op)(input=x, out=whole)
    assert whole.item() == int(truth(_as_uint8(VALUES) != 0))
    ints = ag.tensor([256, 512, -1])
    getattr(ag, op)(ints, out=whole)
    assert whole.item() == int(truth(np.array([256, 512, -1]) % 256 != 0))


def test_all_and_any_with_out_take_an_input_that_requires_grad():
    x = ag.tensor([0.5, 1.0], requires_grad=True)
    out = ag.empty(0, dtype=ag.uint8)
    ag.all(x, out=out)  # no derivative, so PyTorch does not refuse out= here
    assert out.item() == 0
    flags = ag.empty(0, dtype=ag.bool)
    ag.any(x, 0, out=flags)
    assert flags.item() is True


@pytest.mark.gpu
def test_on_cuda(cupy):
    x = ag.tensor(VALUES, device="cuda")
    out = ag.empty(0, dtype=ag.uint8, device="cuda")
    ag.all(x, 1, out=out)
    np.testing.assert_array_equal(out.cpu().numpy(), np.all(_as_uint8(VALUES) != 0, axis=1).astype(np.uint8))
    with pytest.raises(TypeError, match=r"^sum\(\): argument 'keepdim' must be bool, not int$"):
        x.sum(0, keepdim=1)
    with pytest.raises(TypeError, match=r"^zeros\(\): argument 'requires_grad' must be bool, not int$"):
        ag.zeros(2, device="cuda", requires_grad=1)
    with pytest.raises(TypeError, match="got \\(float, Tensor\\)"):
        ag.lt(1.0, x)
