"""Forward AD, the functional API and gradcheck on CUDA: the cpu's numbers, with every result on cuda:0.
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.autograd.forward_ad as fwAD
import actorgrad.functional as async_functional
from actorgrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from actorgrad.autograd import functional as F

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

RNG = np.random.default_rng(0)
X, Y, V, W = (RNG.uniform(0.5, 1.5, (2, 3)) for _ in range(4))


def _on(device, *arrays, requires_grad=False):
    return tuple(ag.tensor(a, dtype=ag.float64, device=device, requires_grad=requires_grad) for a in arrays)


def _assert_same(got, expected):
    """`got` (on cuda:0) holds `expected`'s values (from the cpu), tuple for tuple."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    assert got.device is ag.device("cuda:0")
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)


def _on_both(compute, *arrays):
    """`compute(*tensors)` on the cpu and on cuda:0: (cuda result, cpu result)."""
    return compute(*_on("cuda", *arrays)), compute(*_on("cpu", *arrays))


def _two_outputs(x, y):
    return (x * y).sin(), (x.exp() * y).sum(0)


def _scalar(x, y):
    return (x.sin() * y).sum() + (x * x * x * y).sum()


# -- forward AD ------------------------------------------------------------------------------------------------

def test_a_dual_of_a_cuda_tensor_is_on_cuda_and_its_tangents_match_the_cpu():
    def tangents(x, t):
        with fwAD.dual_level():
            dual = fwAD.make_dual(x, t)
            assert dual.device is x.device
            y = (dual.exp() * dual).sin() + (dual @ dual.T).sum()
            return fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(dual.exp() * dual).tangent

    _assert_same(*_on_both(tangents, X, V))


def test_a_tangent_that_is_zero_everywhere_is_on_cuda():
    def tangent(x, t):
        with fwAD.dual_level():
            return fwAD.unpack_dual(ag.sign(fwAD.make_dual(x, t))).tangent

    _assert_same(*_on_both(tangent, X, V))


# -- the functional API ----------------------------------------------------------------------------------------

def test_vjp_on_cuda_matches_the_cpu_with_an_unused_input_zero_on_cuda():
    def vjp(x, y, v):
        return F.vjp(lambda a, b: a.sin() * 2, (x, y), v)

    _assert_same(*_on_both(vjp, X, Y, V))


def test_jvp_on_cuda_matches_the_cpu_with_a_constant_output_zero_on_cuda():
    def jvp(x, y, v, w):
        return F.jvp(lambda a, b: (*_two_outputs(a, b), ag.ones(3, dtype=ag.float64, device=a.device)),
                     (x, y), (v, w))

    _assert_same(*_on_both(jvp, X, Y, V, W))


@pytest.mark.parametrize("options", [
    {}, {"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"},
])
def test_jacobian_on_cuda_matches_the_cpu(options):
    def jacobian(x, y):
        return F.jacobian(lambda a, b: (*_two_outputs(a, b), a.cos()), (x, y), **options)

    _assert_same(*_on_both(jacobian, X, Y))


def test_a_jacobian_with_create_graph_on_cuda_backpropagates_as_on_the_cpu():
    def gradient_of_jacobian(x, y):
        x.requires_grad_()
        jac = F.jacobian(_two_outputs, (x, y), create_graph=True)
        return ag.autograd.grad(sum(block.sum() for row in jac for block in row), x)

    _assert_same(*_on_both(gradient_of_jacobian, X, Y))


@pytest.mark.parametrize("options", [{}, {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}])
def test_hessian_on_cuda_matches_the_cpu(options):
    def hessian(x, y, w):
        return F.hessian(lambda a, b, unused: _scalar(a, a) + b.sum(), (x, y, w), **options)

    _assert_same(*_on_both(hessian, X, Y, W))


@pytest.mark.parametrize("product", [F.hvp, F.vhp])
def test_hessian_vector_products_on_cuda_match_the_cpu_with_an_unused_input_zero_on_cuda(product):
    def compute(x, y, z, v, w, u):
        return product(lambda a, b, unused: _scalar(a, b), (x, y, z), (v, w, u))

    _assert_same(*_on_both(compute, X, Y, W, V, W, X))


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"])
async def test_the_awaitable_twins_on_cuda_match_the_cpu(name):
    def call(module, x, y, z, v, w, u):
        vector = ((v, w, u),) if name in ("jvp", "hvp", "vhp") else ()
        return getattr(module, name)(lambda a, b, unused: _scalar(a, b), (x, y, z), *vector)

    got = await call(async_functional, *_on("cuda", X, Y, W, V, W, X))
    _assert_same(got, await call(async_functional, *_on("cpu", X, Y, W, V, W, X)))


# -- gradcheck and gradgradcheck -------------------------------------------------------------------------------

class _Square(Function):
    """x * x with a backward that can be wrong in its first derivative (`scale`), or lose its second (`detach`)."""

    scale = 2.0
    detach = False

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        return g * cls.scale * (x.detach() if cls.detach else x)


class _WrongFirst(_Square):
    scale = 2.1


class _WrongSecond(_Square):
    detach = True


def test_gradcheck_and_gradgradcheck_pass_on_cuda_with_a_constant_and_a_number():
    x, y = _on("cuda", X, Y, requires_grad=True)
    (c,) = _on("cuda", W)

    def f(a, b, constant, scale):
        return (a * b * constant * scale).tanh(), _Square.apply(a - b).sum(0)

    assert gradcheck(f, (x, y, c, 0.5))
    assert gradgradcheck(f, (x, y, c, 0.5))
    assert gradgradcheck(f, (x, y, c, 0.5), _on("cuda", V, W[0]))


def test_a_wrong_first_derivative_on_cuda_is_caught():
    (x,) = _on("cuda", X, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_WrongFirst.apply, (x,))
    assert gradcheck(_WrongFirst.apply, (x,), raise_exception=False) is False


def test_a_lost_second_derivative_on_cuda_is_caught_by_gradgradcheck_only():
    (x,) = _on("cuda", X, requires_grad=True)
    assert gradcheck(_WrongSecond.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(_WrongSecond.apply, (x,))
    assert gradgradcheck(_WrongSecond.apply, (x,), raise_exception=False) is False
