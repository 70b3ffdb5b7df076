"""Differences from PyTorch that a generated (fuzzed) comparison of reductions, scans, statistics, sorting and
searching found, each fixed: dist's gradient for a 0-d operand broadcast against the other, unique's values
recording a node that refuses its backward, float16 logcumsumexp's gradient, prod and cumprod with a `dtype=`
differentiated at the cast values, an integer `dtype=` refused where the input requires grad, trapezoid's bool and
empty-dim cases, histogram's refusal of fewer than two edges, nansum's of a complex dtype for floating input,
numpy's `axis` in sort, argsort, topk, kthvalue and logcumsumexp, and float16 cumprod accumulated in float32."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)


# -- dist --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf])
def test_dist_gives_a_broadcast_0d_operand_a_gradient_of_its_own_shape(p):
    x = ag.tensor([1.0, 2.5, -3.0], dtype=ag.float64, requires_grad=True)
    y = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    gx, gy = ag.autograd.grad(ag.dist(x, y, p), [x, y])
    assert gx.shape == (3,) and gy.shape == ()
    # the difference is x - y: y's gradient is minus the sum of x's
    np.testing.assert_allclose(gy.item(), -gx.sum().item(), rtol=1e-12)
    assert gradcheck(lambda a, b: ag.dist(a, b, p), (x, y))


def test_dist_gradients_match_finite_differences_in_both_broadcast_directions():
    x = ag.tensor(RNG.uniform(-2, 2, (2, 1, 3)), requires_grad=True)
    y = ag.tensor(RNG.uniform(-2, 2, (4, 1)), requires_grad=True)
    assert gradcheck(lambda a, b: ag.dist(a, b, 2.5), (x, y))
    assert gradgradcheck(lambda a, b: ag.dist(a, b, 2.5), (x, y))
    assert gradcheck(lambda a, b: ag.dist(b, a, 2.5), (x, y))


# -- unique ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, node, op", [
    ({}, "Unique2Backward0", "_unique2"),
    ({"return_counts": True}, "Unique2Backward0", "_unique2"),
    ({"dim": 0, "return_inverse": True}, "UniqueDimBackward0", "unique_dim"),
])
def test_unique_values_require_grad_and_their_backward_raises(kwargs, node, op):
    x = ag.tensor([3.0, 1.0, 3.0], requires_grad=True)
    out = ag.unique(x, **kwargs)
    values = out if isinstance(out, ag.Tensor) else out[0]
    assert values.requires_grad and values.grad_fn.name() == node
    assert values.tolist() == [1.0, 3.0]
    if not isinstance(out, ag.Tensor):
        assert not any(t.requires_grad for t in out[1:])
    with pytest.raises(NotImplementedError, match=f"the derivative for '{op}' is not implemented."):
        values.sum().backward()


def test_unique_of_integers_or_without_grad_records_nothing():
    assert ag.unique(ag.tensor([2, 1, 2])).grad_fn is None
    assert ag.unique(ag.tensor([2.0, 1.0])).grad_fn is None


# -- logcumsumexp ------------------------------------------------------------------------------------------------
def test_float16_logcumsumexp_gradient_is_finite_over_a_wide_range():
    values = np.arange(40) * 0.5  # running values spanning 20: exp of that overflows float16
    x = ag.tensor(values.astype(np.float16), requires_grad=True)
    ag.logcumsumexp(x, 0).sum().backward()
    # d/dx_i sum_j logsumexp(x_0..x_j) = sum over j >= i of softmax(x_0..x_j)_i, in float64
    expected = [sum(math.exp(values[i] - np.logaddexp.reduce(values[: j + 1])) for j in range(i, 40))
                for i in range(40)]
    grad = x.grad.numpy()
    assert grad.dtype == np.float16 and np.isfinite(grad).all()
    # the running values near 20 are rounded to float16's spacing there (1/64): about 1% in each exponential
    np.testing.assert_allclose(grad.astype(np.float64), expected, rtol=1.5e-2)


@pytest.mark.parametrize("create_graph", [False, True])
def test_logcumsumexp_gradient_past_a_positive_infinity_is_zero_and_finite_before_it(create_graph):
    """The total of a row holding +inf is +inf, and exp(x - inf) made every element's gradient NaN; PyTorch's is
    finite before the +inf, NaN at it and 0 after it (exp(x_i - inf) for the later running values)."""
    inf = math.inf
    x = ag.tensor([[-800.0, inf, 3.0, -inf], [inf, 800.0, 1.0, 2.0], [0.5, 1.0, 2.0, 3.0]], dtype=ag.float64,
                  requires_grad=True)
    g = ag.tensor([[0.5, -1.0, 2.0, 1.0]] * 3, dtype=ag.float64)
    (grad,) = ag.autograd.grad(ag.logcumsumexp(x, 1), x, g, create_graph=create_graph)
    row = x.detach().numpy()[2]
    finite_row = [sum(g.numpy()[2, j] * math.exp(row[i] - np.logaddexp.reduce(row[: j + 1])) for j in range(i, 4))
                  for i in range(4)]
    np.testing.assert_allclose(grad.detach().numpy(), [[0.5, np.nan, 0.0, 0.0], [np.nan, 0.0, 0.0, 0.0], finite_row],
                               rtol=1e-12)


# -- prod and cumprod with dtype= ----------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_prod_with_a_real_dtype_of_complex_input_differentiates_the_real_parts():
    a = np.array([[1 + 2j, 3 - 1j], [0.5 + 0.5j, 2 + 1j]])
    x = ag.tensor(a, requires_grad=True)
    out = ag.prod(x, 1, dtype=ag.float64)
    np.testing.assert_allclose(out.detach().numpy(), a.real.prod(1))
    (grad,) = ag.autograd.grad(out.sum(), x)
    # d prod(Re x) / d Re x_i: the product of the other real parts, and nothing along the imaginary parts
    np.testing.assert_allclose(grad.numpy(), a.real[:, ::-1] + 0j)


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_cumprod_with_a_real_dtype_of_complex_input_differentiates_the_real_parts():
    a = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j])
    x = ag.tensor(a, requires_grad=True)
    (grad,) = ag.autograd.grad(ag.cumprod(x, 0, dtype=ag.float64).sum(), x)
    r = a.real  # d/dr_i of r0 + r0 r1 + r0 r1 r2
    expected = [1 + r[1] + r[1] * r[2], r[0] + r[0] * r[2], r[0] * r[1]]
    np.testing.assert_allclose(grad.numpy(), np.array(expected) + 0j)


WIDER_DTYPE_FORMS = {
    "prod along a dim": lambda t: ag.prod(t, 1, dtype=ag.float64),
    "prod of all": lambda t: ag.prod(t, dtype=ag.float64),
    "cumprod": lambda t: ag.cumprod(t, 0, dtype=ag.float64),
}


@pytest.mark.parametrize("form", WIDER_DTYPE_FORMS)
def test_prod_and_cumprod_with_a_wider_dtype_match_finite_differences(form):
    fn = WIDER_DTYPE_FORMS[form]
    x = ag.tensor(RNG.uniform(0.5, 2, (3, 4)).astype(np.float32), requires_grad=True)
    out = fn(x)
    assert out.dtype == ag.float64
    (grad,) = ag.autograd.grad(out.sum(), x)
    assert grad.dtype == ag.float32
    x64 = x.detach().double().requires_grad_()
    assert gradcheck(lambda t: fn(t).sum(), (x64,))
    (expected,) = ag.autograd.grad(fn(x64).sum(), x64)
    np.testing.assert_allclose(grad.numpy(), expected.numpy(), rtol=1e-5)


# -- integer dtype= on an input that requires grad --------------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "cumprod", "nansum"])
@pytest.mark.parametrize("dtype, name", [(ag.int64, "Long"), (ag.uint8, "Byte")])
def test_an_integer_dtype_is_refused_where_the_input_requires_grad(op, dtype, name):
    x = ag.tensor([1.5, 2.5], requires_grad=True)
    with pytest.raises(RuntimeError, match=f"Autograd not support dtype: {name}"):
        getattr(ag, op)(x, 0, dtype=dtype)
    with ag.no_grad():
        assert getattr(ag, op)(x, 0, dtype=dtype).dtype == dtype
    assert getattr(ag, op)(x.detach(), 0, dtype=dtype).dtype == dtype


def test_sum_of_bool_dtype_is_refused_where_the_input_requires_grad():
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Bool"):
        ag.ones(3, requires_grad=True).sum(dtype=ag.bool)
    assert ag.tensor([1, 2]).sum().dtype == ag.int64  # integer inputs still sum in int64


def test_prod_checks_its_dim_before_its_dtype():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.prod(ag.ones(2, requires_grad=True), 1, dtype=ag.int64)


# -- trapezoid ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_refuses_bool_samples(op):
    with pytest.raises(RuntimeError, match=f"{op}: received a bool input for `y`, but bool is not supported"):
        getattr(ag, op)(ag.tensor([True, False, True]))
    with pytest.raises(RuntimeError, match="received a bool input for `x` or `y`"):
        getattr(ag, op)(ag.ones(3), ag.tensor([True, False, True]))


@pytest.mark.parametrize("dtype", [ag.int64, ag.int8, ag.float32, ag.bool])
def test_trapezoid_over_an_empty_dim_gives_zeros_of_the_input_dtype(dtype):
    y = ag.zeros((4, 0, 2), dtype=dtype)
    out = ag.trapezoid(y, dim=1)
    assert out.dtype == dtype and out.shape == (4, 2) and not out.any().item()


def test_trapezoid_of_integers_still_integrates_in_the_default_float():
    out = ag.trapezoid(ag.tensor([1, 2, 4]))
    assert out.dtype == ag.float32 and out.item() == 4.5  # (1 + 2) / 2 + (2 + 4) / 2


# -- histogram ---------------------------------------------------------------------------------------------------
def test_histogram_refuses_fewer_than_two_edges():
    with pytest.raises(RuntimeError, match=r"bins must be > 0, but got 0 for dimension 0"):
        ag.histogram(ag.ones(3), ag.zeros(1))
    with pytest.raises(RuntimeError, match="bins tensor should have at least 1 element, but got 0 elements"):
        ag.histogram(ag.ones(3), ag.zeros(0))


# -- device ------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor([1.0, 2.5, -3.0], dtype=ag.float64, device=device, requires_grad=True)
        y = ag.tensor(0.5, dtype=ag.float64, device=device, requires_grad=True)
        h = ag.tensor((np.arange(12) * 0.5).astype(np.float16), device=device, requires_grad=True)
        c = ag.tensor([1 + 2j, 3 - 1j, 0.5 + 0.5j], device=device, requires_grad=True)
        p = ag.tensor(np.linspace(0.95, 1.05, 50).astype(np.float16), device=device, requires_grad=True)
        products = ag.cumprod(p, 0)
        products.sum().backward()
        ag.dist(x, y, 3.0).backward()
        ag.logcumsumexp(h, 0).sum().backward()
        ag.cumprod(c, 0, dtype=ag.float64).sum().backward()
        values = ag.unique(x)
        assert values.requires_grad
        with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
            x.sum(dtype=ag.int64)
        results.append([t.detach().cpu().numpy() for t in (x.grad, y.grad, h.grad, c.grad, values, products, p.grad,
                                                            ag.trapezoid(ag.zeros((2, 0), device=device)))])
    for cpu, cuda in zip(*results):
        assert cpu.dtype == cuda.dtype
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12)


# -- nansum and nanmean with a complex dtype= ---------------------------------------------------------------------
@pytest.mark.parametrize("op", ["nansum", "nanmean"])
def test_nansum_refuses_a_complex_dtype_as_pytorch_kernel_has_none(op):
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for 'ComplexFloat'"):
        getattr(ag, op)(ag.tensor([1.0, math.nan]), dtype=ag.complex64)
    assert getattr(ag, op)(ag.tensor([1.0, math.nan, 3.0]), dtype=ag.float64).item() == (4.0 if op == "nansum" else 2.0)
    assert ag.nansum(ag.tensor([1, 2]), dtype=ag.complex64).item() == 3  # integers sum as sum does


# -- numpy's axis / keepdims -------------------------------------------------------------------------------------
def test_sort_argsort_topk_and_kthvalue_take_numpys_axis():
    a = RNG.permutation(12).reshape(3, 4).astype(np.float64)
    x = ag.tensor(a)
    np.testing.assert_array_equal(ag.sort(x, axis=0).values.numpy(), np.sort(a, axis=0))
    np.testing.assert_array_equal(x.argsort(axis=0).numpy(), np.argsort(a, axis=0))
    np.testing.assert_array_equal(ag.topk(x, 2, axis=0).values.numpy(), -np.sort(-a, axis=0)[:2])
    kth = ag.kthvalue(x, 2, axis=1, keepdims=True)
    np.testing.assert_array_equal(kth.values.numpy(), np.sort(a, axis=1)[:, 1:2])
    np.testing.assert_array_equal(x.kthvalue(2, dim=0, keepdims=True).values.numpy(), np.sort(a, axis=0)[1:2])


def test_logcumsumexp_takes_numpys_axis_and_still_needs_a_dim():
    a = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(ag.logcumsumexp(ag.tensor(a), axis=1).numpy(),
                               np.log(np.cumsum(np.exp(a), axis=1)), rtol=1e-12)
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "dim"'):
        ag.logcumsumexp(ag.tensor(a))


# -- float16 cumprod ---------------------------------------------------------------------------------------------
def test_float16_cumprod_multiplies_in_float32_and_rounds_once():
    a = RNG.uniform(0.95, 1.05, 3000).astype(np.float16)
    out = ag.cumprod(ag.tensor(a), 0)
    assert out.dtype == ag.float16
    # each running product rounded once from float32's: step by step in float16 it drifts by about 1% here
    np.testing.assert_array_equal(out.numpy(), np.cumprod(a.astype(np.float32)).astype(np.float16))


def test_float16_cumprod_gradient_stays_within_float16_rounding():
    a = RNG.uniform(0.95, 1.05, (2, 400))
    x = ag.tensor(a.astype(np.float16), requires_grad=True)
    ag.cumprod(x, 1).sum().backward()
    # d/dx_i sum_j prod_{k<=j} x_k = sum over j >= i of prod_{k<=j, k != i} x_k, in float64
    b = a.astype(np.float16).astype(np.float64)
    running = np.cumprod(b, axis=1)
    expected = np.flip(np.cumsum(np.flip(running, 1), 1), 1) / b
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), expected, rtol=2e-3)
