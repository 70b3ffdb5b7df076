"""The gamma family (lgamma, digamma, polygamma, mvlgamma) and erfinv on cuda:0 give the cpu's values, dtypes
and gradients (first and second order), with every result on cuda:0; the in-place forms too.
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

CUDA = ag.device("cuda:0")
# The GPU's math library rounds log, sin, tan and exp differently from numpy's, in the last bits.
RTOL = 1e-12
# Positive and negative points, poles (0, -0, -2), a NaN, infinities, and past erfinv's domain.
POINTS = [0.3, 1.5, 2.5, 12.5, 1e-8, 150.0, -0.5, -2.3, 0.0, -0.0, -2.0, np.nan, np.inf, -np.inf]
UNIT = [-0.999, -0.4, 0.0, 0.3, 0.9, 0.9999999, 1.0, -1.0, 1.5, np.nan]
OPS = [
    ("lgamma", ag.lgamma, POINTS),
    ("digamma", ag.digamma, POINTS),
    ("polygamma 0", lambda x: ag.polygamma(0, x), POINTS),
    ("polygamma 1", lambda x: ag.polygamma(1, x), POINTS),
    ("polygamma 4", lambda x: x.polygamma(4), POINTS),
    ("mvlgamma 3", lambda x: ag.mvlgamma(x, 3), POINTS),
    ("erfinv", ag.erfinv, UNIT),
    ("special names", lambda x: ag.stack([ag.special.gammaln(x), ag.special.psi(x), ag.special.multigammaln(x, 2),
                                          ag.special.polygamma(2, x)]), POINTS),
]


def host(t):
    return t.detach().cpu().numpy()


def assert_same(got, want):
    assert got.device is CUDA, got.device
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(host(got), host(want), rtol=RTOL, atol=0)


@pytest.mark.parametrize("label, op, points", OPS, ids=[c[0] for c in OPS])
@pytest.mark.parametrize("dtype", [ag.float64, ag.float32, ag.int64])
def test_values_on_cuda_match_the_cpu(label, op, points, dtype):
    values = np.asarray(points)
    if dtype == ag.int64:
        values = np.array([1, 2, 3, 7, 0, -1])
    assert_same(op(ag.tensor(values, dtype=dtype, device="cuda:0")), op(ag.tensor(values, dtype=dtype)))


# Away from the poles, where the gradients are finite.
SMOOTH = [2.5, 0.3, -1.7, 7.25]
GRAD_OPS = [
    ("lgamma", ag.lgamma),
    ("digamma", ag.digamma),
    ("polygamma 2", lambda x: ag.polygamma(2, x)),
    ("mvlgamma 2", lambda x: ag.mvlgamma(x + 3, 2)),
    ("erfinv", lambda x: ag.erfinv(x / 8)),
]


@pytest.mark.parametrize("label, op", GRAD_OPS, ids=[c[0] for c in GRAD_OPS])
def test_gradients_on_cuda_match_the_cpu_to_second_order(label, op):
    def run(where):
        x = ag.tensor(SMOOTH, dtype=ag.float64, device=where, requires_grad=True)
        out = op(x)
        (first,) = ag.autograd.grad(out.sum(), x, create_graph=True)
        (second,) = ag.autograd.grad((first * first).sum(), x)
        return out, first, second

    for got, want in zip(run("cuda:0"), run("cpu")):
        assert_same(got, want)


def test_in_place_forms_on_cuda():
    def run(where):
        leaf = ag.tensor(SMOOTH, dtype=ag.float64, device=where, requires_grad=True)
        outs = []
        for change in (lambda t: t.lgamma_(), lambda t: t.digamma_(), lambda t: t.polygamma_(3),
                       lambda t: t.mvlgamma_(2), lambda t: (t / 8).erfinv_()):
            outs.append(change(leaf * 1 + 2))
        (grad,) = ag.autograd.grad(sum(o.sum() for o in outs), leaf)
        return [*outs, grad]

    for got, want in zip(run("cuda:0"), run("cpu")):
        assert_same(got, want)


@pytest.mark.parametrize("label, op", [(label, op) for label, op, _ in OPS]
                         + [("erf", ag.erf), ("erfc", ag.erfc)],
                         ids=[c[0] for c in OPS] + ["erf", "erfc"])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0)], ids=["0-dim", "empty", "empty 2-D"])
@pytest.mark.parametrize("dtype", [ag.float64, ag.float32])
def test_zero_dim_and_empty_inputs_on_cuda_match_the_cpu(label, op, shape, dtype):
    """The kernels select ranges with boolean masks (CuPy's mask indexing of a 0-dim or empty array)."""
    values = np.full(shape, 0.3)
    assert_same(op(ag.tensor(values, dtype=dtype, device="cuda:0")), op(ag.tensor(values, dtype=dtype)))
