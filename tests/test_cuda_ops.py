"""Every op family on cuda:0: forward values and gradients equal the CPU's, in float64 (CuPy's API is not
numpy's: a function numpy dispatches to CuPy may lack a keyword, and a host array never mixes with a device one).
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

RNG = np.random.default_rng(11)


def any_(*shape):
    return RNG.uniform(-1.5, 1.5, shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return ((RNG.permutation(n) - n / 2) * 0.25).reshape(shape)


IMAGE = any_(2, 3, 6, 6)
KERNEL = any_(4, 3, 3, 3)
LABELS = np.array([1, 0, 2, 1])

# label, function of the leaves (and of the device, for ops that take constant tensors), leaf arrays
CASES = [
    ("exp log tanh sigmoid", lambda x, d: (x.exp() + x.tanh() + x.sigmoid()).log(), [positive(3, 4)]),
    ("relu gelu silu softplus leaky_relu", lambda x, d: F.relu(x) + F.gelu(x) + F.silu(x) + F.softplus(x)
     + F.leaky_relu(x, 0.1), [any_(3, 4)]),
    ("sin cos sqrt rsqrt abs square erf", lambda x, d: x.sin() * x.cos() + x.sqrt() + x.rsqrt() + x.abs()
     + x.square() + ag.erf(x), [positive(3, 4)]),
    ("pow, both ways", lambda x, y, d: x ** y + 2.0 ** x + x ** 3, [positive(3, 4), any_(4)]),
    ("add sub mul div, broadcast", lambda x, y, d: (x + y) * (x - y) / (y + 3) - 1 / (x + 3), [any_(3, 4), any_(4)]),
    ("clamp maximum minimum where", lambda x, y, d: x.clamp(-0.5, 0.5) + ag.maximum(x, y) + ag.minimum(x, y)
     + ag.where(x > y, x, y), [distinct(3, 4), distinct(3, 4) + 0.1]),
    ("sum mean prod over dims", lambda x, d: x.sum(0) + x.mean(1).sum() + x.prod(1, keepdim=True).sum(),
     [positive(3, 4)]),
    ("amax amin max min", lambda x, d: x.amax(0).sum() + x.amin(1).sum() + x.max(1)[0].sum() + x.min(),
     [distinct(3, 4)]),
    ("logsumexp softmax log_softmax", lambda x, d: x.logsumexp(1).sum() + x.softmax(0).pow(2).sum()
     + x.log_softmax(1).sum() + x.log_softmax(0).pow(2).sum(), [any_(3, 4)]),
    ("cummax cummin logcumsumexp", lambda x, d: ag.cummax(x, 1).values * ag.cummin(x, 0).values
     + ag.logcumsumexp(x, 1) + ag.logcumsumexp(x, 0) + ag.cummax(x, 0).indices, [distinct(3, 9)]),
    ("var std norm cumsum", lambda x, d: x.var(1) + x.std(1) + x.norm() + x.cumsum(1).sum(1), [any_(3, 4)]),
    ("reshape transpose permute expand flip roll", lambda x, d: x.reshape(4, 3).T.permute(1, 0).unsqueeze(0)
     .expand(2, 4, 3).flip(2).roll(1, 1).sum(0), [any_(3, 4)]),
    ("cat stack split chunk", lambda x, y, d: ag.cat([x, y]).sum(0) + ag.stack([x, y]).sum((0, 1))
     + sum(ag.split(x, 2, 1)[0].sum(1)) + ag.chunk(y, 2, 0)[1].sum(), [any_(2, 4), any_(2, 4)]),
    ("pad tril triu repeat", lambda x, d: F.pad(x, (1, 2)).sum(0) + x.tril().sum() + x.triu(1).sum()
     + x.repeat(2, 1).sum(), [any_(3, 4)]),
    ("basic indexing", lambda x, d: x[1:, ::2].sum() + x[0] * x[-1] + x[:, None, 1].sum(), [any_(3, 4)]),
    ("advanced and boolean indexing", lambda x, d: x[ag.tensor([2, 0], device=d)].sum(0)
     + x[x > 0].sum() + x[:, ag.tensor([1, 1, 3], device=d)].sum(), [any_(3, 4)]),
    ("gather scatter_add index_select masked_fill", lambda x, d: x.gather(1, ag.tensor([[0, 1], [2, 3], [1, 1]],
     device=d)).sum() + ag.zeros(3, 5, dtype=ag.float64, device=d).scatter_add(1, ag.tensor(
         [[0, 1, 4, 4]] * 3, device=d), x).sum(0).sum() + x.index_select(1, ag.tensor([3, 0], device=d)).sum()
     + x.masked_fill(x < 0, 2.0).sum(), [any_(3, 4)]),
    ("matmul mm bmm outer einsum", lambda a, b, d: (a @ b).sum() + ag.bmm(a[None], b[None]).sum()
     + ag.outer(a[0], b[:, 0]).sum() + ag.einsum("ij,jk->ik", a, b).tanh().sum() + (a[0] @ b).sum(),
     [any_(3, 4), any_(4, 2)]),
    ("linear conv2d conv1d pools", lambda x, w, d: F.conv2d(x, w, padding=1).tanh().sum()
     + F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 2).sum() + F.conv1d(x[:, :, 0], w[:, :, 0], stride=2).sum()
     + F.linear(x[0, 0], x[1, 0], x[0, 1, 0]).sum(),
     [IMAGE, KERNEL]),
    ("layer_norm batch_norm", lambda x, w, d: F.layer_norm(x, (4,), w, w).sum() + F.batch_norm(
        x, None, None, w, w * 2, training=True).pow(2).sum(), [any_(3, 4), positive(4)]),
    ("cross_entropy nll_loss mse l1 bce", lambda x, t, d: F.cross_entropy(x, ag.tensor(LABELS, device=d))
     + F.nll_loss(x.log_softmax(1), ag.tensor(LABELS, device=d)) + F.mse_loss(x, t) + F.l1_loss(x, t)
     + F.binary_cross_entropy_with_logits(x, t.sigmoid()), [any_(4, 3), any_(4, 3) + 2]),
    ("embedding", lambda w, d: F.embedding(ag.tensor([[0, 2], [3, 3]], device=d), w).tanh().sum(),
     [any_(5, 3)]),
    ("in-place ops and setitem", lambda x, d: _changed_in_place(x * 1, d), [any_(3, 4)]),
    ("in-place ops through views", lambda x, d: _changed_through_views(x * 1), [any_(3, 4)]),
    ("clone, a copy to the cpu and back", lambda x, d: (x.clone().cpu().tanh().to(d) * x).sum(), [any_(3, 4)]),
]


def _changed_in_place(y, d):
    y.add_(1).mul_(2).sub_(0.5)
    y[0] = 0
    y[1:, 1] *= 3
    y.clamp_(-2, 2)
    return y.exp()


def _changed_through_views(y):
    """A view's in-place op changes its base, and the base's gradient flows back through it."""
    y[0].mul_(2)
    y.T[1].add_(y[:, 2] * 1)
    flat = y.reshape(4, 3)
    flat[1:, :2].clamp_(-0.3, 0.3)
    return y * flat.reshape(3, 4)


@pytest.mark.parametrize("label, fn, arrays", CASES, ids=[c[0] for c in CASES])
def test_an_op_on_cuda_gives_the_cpu_values_and_gradients(label, fn, arrays):
    def run(where):
        leaves = [ag.tensor(a, dtype=ag.float64, device=where, requires_grad=True) for a in arrays]
        out = fn(*leaves, where)
        assert out.device is ag.device(where), f"{label}: output on {out.device}"
        grads = ag.autograd.grad(out.sum(), leaves)
        return out.detach().cpu().numpy(), [g.cpu().numpy() for g in grads]

    want, want_grads = run("cpu")
    got, got_grads = run("cuda:0")
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=label)
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{label}: gradient of input {i}")


@pytest.mark.parametrize("make", [
    lambda d: ag.zeros(2, 3, device=d), lambda d: ag.ones(2, 3, device=d), lambda d: ag.full((2, 3), 7.0, device=d),
    lambda d: ag.empty(2, 3, device=d), lambda d: ag.arange(5, device=d), lambda d: ag.linspace(0, 1, 4, device=d),
    lambda d: ag.eye(3, device=d), lambda d: ag.rand(2, 3, device=d), lambda d: ag.randn(2, 3, device=d),
    lambda d: ag.randint(0, 5, (2, 3), device=d), lambda d: ag.zeros_like(ag.ones(2, device=d)),
    lambda d: ag.ones_like(ag.ones(2, device=d)), lambda d: ag.full_like(ag.ones(2, device=d), 3.0),
    lambda d: ag.rand_like(ag.ones(2, device=d)), lambda d: ag.randn_like(ag.ones(2, device=d)),
])
def test_creation_functions_place_their_tensor_on_the_device(make):
    t = make("cuda:0")
    assert t.device is ag.device("cuda:0") and isinstance(t._data, cupy.ndarray)
    assert make("cpu").shape == t.shape and make("cpu").dtype == t.dtype


@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a @ b, lambda a, b: a ** b, lambda a, b: a > b,
    lambda a, b: ag.maximum(a, b), lambda a, b: ag.where(a > 0, a, b), lambda a, b: ag.cat([a, b]),
    lambda a, b: ag.stack([a, b]), lambda a, b: a.clamp(b, None), lambda a, b: F.mse_loss(a, b),
    lambda a, b: ag.einsum("ij,jk->ik", a, b), lambda a, b: F.linear(a, b),
    lambda a, b: F.binary_cross_entropy_with_logits(a, b),
])
@pytest.mark.parametrize("order", ["cuda first", "cpu first"])
def test_tensors_on_two_devices_get_pytorchs_error(op, order):
    a, b = ag.ones(3, 3, device="cuda"), ag.ones(3, 3)
    if order == "cpu first":
        a, b = b, a
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, (cuda:0 and cpu|cpu and cuda:0)!"):
        op(a, b)


def test_running_extremes_on_cuda_take_the_cpus_indices_through_ties_and_nans():
    """CuPy's maximum and minimum have no accumulate: the scan that stands in for it keeps the cpu's ties (the
    latest equal element) and NaNs (one stays the extreme) along a dim of a length that is no power of two."""
    x = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0, 5.0, 4.0], [2.0, np.nan, 1.0, 4.0, 4.0, 0.0, 1.0, 9.0, 9.0]])
    for op in (ag.cummax, ag.cummin):
        got, want = op(ag.tensor(x, device="cuda:0"), 1), op(ag.tensor(x), 1)
        np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())


@pytest.mark.parametrize("dtype", [ag.int8, ag.uint8, ag.int16, ag.bool, ag.float16, ag.int32])
def test_scatter_add_and_index_add_on_cuda_add_in_every_dtype_as_the_cpu(dtype):
    """CuPy's add.at adds only int32/64, uint32/64 and floats: the others add wider and wrap back, as the cpu's."""
    def run(where):
        x = ag.tensor([100, 0, 1], dtype=dtype, device=where)
        index = ag.tensor([0, 0, 1, 2], device=where)
        values = ag.tensor([100, 100, 5, 0], dtype=dtype, device=where)
        return [out.cpu().numpy() for out in (x.scatter_add(0, index, values), x.index_add(0, index, values))]

    for got, want in zip(run("cuda:0"), run("cpu")):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", [
    ag.linalg.inv, ag.linalg.cholesky, lambda a: ag.linalg.solve(a, ag.ones(2, 1, dtype=ag.float64, device=a.device)),
    lambda a: ag.linalg.inv(ag.stack([ag.eye(2, dtype=ag.float64, device=a.device), a])),
    lambda a: ag.linalg.solve(ag.stack([ag.eye(2, dtype=ag.float64, device=a.device), a]),
                              ag.ones(2, 2, 1, dtype=ag.float64, device=a.device)),
], ids=["inv", "cholesky", "solve", "batched inv", "batched solve"])
def test_a_singular_matrix_on_cuda_raises_the_cpus_error(op):
    """CuPy's linalg reports a zero pivot (or a minor that is not positive-definite) only when asked to raise."""
    def error(where):
        with pytest.raises(ag.linalg.LinAlgError) as raised:
            op(ag.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=ag.float64, device=where))
        return str(raised.value)

    assert error("cuda:0") == error("cpu")


@pytest.mark.parametrize("x", [
    np.array([[True, False], [False, False], [True, False], [True, True]]),
    np.array([[100, 1], [-100, 1], [5, 0], [100, 1]], np.int8),
    np.array([[2**62, 1], [-2**62, 1], [2**62, 0], [5, 5], [-2**62, 1]], np.int64),
    np.array([[np.inf, 0], [-np.inf, 1], [np.inf, -np.inf], [np.inf, 0], [np.nan, 1], [-np.inf, 1], [1, np.nan],
              [-0.0, 2], [0.0, 2], [np.inf, -1]]),
    np.array([[np.inf, 3], [np.inf, 1], [-np.inf, 3], [np.inf, 2], [np.inf, 1]], np.float32),
], ids=["bool", "int8 whose differences wrap", "int64 whose differences overflow", "float64 inf and nan",
        "float32 inf"])
def test_unique_slices_on_cuda_are_the_cpus(x):
    """CuPy's unique along an axis orders slices by the sign of their first nonzero difference, which it refuses
    for bools, which wraps for ints and which is NaN for inf - inf."""

    def run(where):
        out = ag.unique(ag.tensor(x, device=where), dim=0, return_inverse=True, return_counts=True)
        return [t.cpu().numpy() for t in out]

    for got, want in zip(run("cuda:0"), run("cpu")):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_complex_sums_at_repeated_indexes_on_cuda_are_the_cpus():
    """CuPy's add.at refuses complex arrays (cupy/_core/_routines_indexing.pyx, _scatter_op_single): index_add and
    the gradient of advanced indexing add the real and imaginary parts apart."""
    x = np.array([1 + 2j, 3 - 1j, 0.5j])

    def run(where):
        index = ag.tensor([0, 0, 2], device=where)
        leaf = ag.tensor(x, device=where, requires_grad=True)
        (leaf[index] * ag.tensor(np.array([1j, 2, 3]), device=where)).sum().abs().backward()
        added = ag.zeros(3, dtype=leaf.dtype, device=where).index_add(0, index, leaf.detach())
        return [leaf.grad.cpu().numpy(), added.cpu().numpy()]

    for got, want in zip(run("cuda:0"), run("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy warns of the infs and NaNs on purpose here (CuPy never)
@pytest.mark.parametrize("dtype", [ag.float64, ag.float32])
def test_float_floor_divide_and_remainder_on_cuda_are_the_cpus(dtype):
    """CuPy's float floor_divide and remainder are floor(x / y) and x - floor(x / y) * y, not fmod's as PyTorch's
    and numpy's: 1.0 // 0.1 would be 10 and 5.0 % inf NaN."""
    x = np.array([1.0, 5.0, -5.0, 5.0, -5.0, 7.5, 3.0, 0.7])
    y = np.array([0.1, np.inf, np.inf, -np.inf, 0.3, -2.0, 0.0, 0.1])

    def run(where):
        a = ag.tensor(x, dtype=dtype, device=where, requires_grad=True)
        b = ag.tensor(y, dtype=dtype, device=where, requires_grad=True)
        (a % b).sum().backward()
        return [t.detach().cpu().numpy() for t in (a // b, a % b, a % 0.1, 1.0 % a, b.grad)]

    for got, want in zip(run("cuda:0"), run("cpu")):
        np.testing.assert_array_equal(got, want)
