"""Behaviours of the pointwise ops found to differ from PyTorch's by differential testing, each checked against an
independent computation: the gradient of acosh on complex inputs (the principal branch's slope, by central
differences), nan_to_num on complex tensors (each part replaced; no gradient, as PyTorch's), float16 results
computed in float32 and rounded once (a float16 tensor times, over or floor-divided by a Python number, add/sub
with alpha, lerp, addcmul, addcdiv, sigmoid, rsqrt), and lerp with a zero-dim weight of another dtype."""

import numpy as np
import pytest

import actorgrad as ag

RNG = np.random.default_rng(47)
F16, F32 = np.float16, np.float32
HALVES = RNG.uniform(-4, 4, 3000).astype(F16)
OTHERS = RNG.uniform(-4, 4, 3000).astype(F16)
WEIGHTS = RNG.uniform(-0.5, 1.5, 3000).astype(F16)
# Points off acosh's branch cut (real z < 1), on both sides of the imaginary axis.
ACOSH_POINTS = np.array([-0.3 + 0.5j, 0.4 - 1.2j, 2.0 + 1.0j, -1.0 - 1.0j, -2.0 + 0.1j, -0.7 - 2.2j])


def _ulps(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """How many float16 steps apart two float16 arrays are (same-sign values)."""
    return np.abs(got.view(np.int16).astype(int) - expected.view(np.int16).astype(int))


def _wirtinger_by_differences(f, z: np.ndarray, weights: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """PyTorch's gradient of the real loss sum(Re(w f(z))): dL/dRe(z) + i dL/dIm(z), by central differences."""
    def loss(v):
        return (weights * f(v)).real

    return (loss(z + h) - loss(z - h)) / (2 * h) + 1j * (loss(z + 1j * h) - loss(z - 1j * h)) / (2 * h)


def test_acosh_of_complex_inputs_has_the_slope_of_its_principal_branch():
    weights = RNG.standard_normal(ACOSH_POINTS.size)
    z = ag.tensor(ACOSH_POINTS, requires_grad=True)
    (ag.acosh(z) * ag.tensor(weights.astype(np.complex128))).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), _wirtinger_by_differences(np.arccosh, ACOSH_POINTS, weights),
                               rtol=1e-6, atol=1e-8)
    assert ag.autograd.gradcheck(ag.acosh, (ag.tensor(ACOSH_POINTS, requires_grad=True),))
    assert ag.autograd.gradgradcheck(ag.acosh, (ag.tensor(ACOSH_POINTS, requires_grad=True),))


def test_acosh_of_real_inputs_keeps_one_over_root_of_x_squared_minus_one():
    x = ag.tensor([-2.0, 1.5, 3.0], dtype=ag.float64, requires_grad=True)
    with np.errstate(invalid="ignore"):  # acosh(-2) is NaN; its recorded slope is still finite, as PyTorch's
        ag.acosh(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / np.sqrt(np.array([4.0, 2.25, 9.0]) - 1))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_nan_to_num_of_a_complex_tensor_replaces_in_each_part(dtype):
    nan, inf = np.nan, np.inf
    parts = np.array([[nan, 1.0], [inf, -inf], [1.0, 2.0], [2.0, nan], [-inf, nan]])
    z = np.empty(len(parts), dtype)
    z.real, z.imag = parts[:, 0], parts[:, 1]  # not re + 1j * im: nan * 1j would spread the NaN to the real part
    biggest = np.finfo(np.dtype(dtype).char.lower()).max

    def replaced(v, nan_value, posinf, neginf):
        return np.where(np.isnan(v), nan_value, np.where(v == inf, posinf, np.where(v == -inf, neginf, v)))

    for kwargs, (n, p, m) in [({}, (0.0, biggest, -biggest)),
                              ({"nan": 1.5, "posinf": 2.0, "neginf": -3.0}, (1.5, 2.0, -3.0))]:
        got = ag.nan_to_num(ag.tensor(z), **kwargs).numpy()
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.real, replaced(parts[:, 0], n, p, m).astype(got.real.dtype))
        np.testing.assert_array_equal(got.imag, replaced(parts[:, 1], n, p, m).astype(got.imag.dtype))


def test_nan_to_num_refuses_a_complex_input_that_requires_grad_but_not_under_no_grad():
    z = ag.tensor([complex(np.nan, 1.0), 2 + 3j], requires_grad=True)
    with pytest.raises(RuntimeError, match="^nan_to_num does not support automatic differentiation for outputs "
                                           "with complex dtype.$"):
        ag.nan_to_num(z)
    with ag.no_grad():
        np.testing.assert_array_equal(ag.nan_to_num(z).numpy(), np.array([1j, 2 + 3j], dtype=np.complex64))


@pytest.mark.parametrize("number", [0.1, 3.3, 1 / 3, 7])
def test_float16_times_over_and_floor_divided_by_a_scalar_rounds_once_from_float32(number):
    x = ag.tensor(HALVES)
    wide, scalar = HALVES.astype(F32), F32(number)
    for got, expected in [(x * number, wide * scalar), (number * x, wide * scalar), (ag.mul(x, number), wide * scalar),
                          (x / number, wide / scalar), (ag.div(x, number), wide / scalar),
                          (x // number, np.floor_divide(wide, scalar)),
                          (ag.div(x, number, rounding_mode="floor"), np.floor_divide(wide, scalar)),
                          (x * ag.tensor(number, dtype=ag.float64), wide * scalar),
                          (x / ag.tensor(number, dtype=ag.float32), wide / scalar)]:
        assert got.dtype == ag.float16
        np.testing.assert_array_equal(got.numpy(), expected.astype(F16))


def test_float16_times_a_scalar_keeps_its_gradients_in_each_operands_dtype():
    x = ag.tensor(HALVES[:4], requires_grad=True)
    scale = ag.tensor(0.25, dtype=ag.float32, requires_grad=True)
    y = x * 0.5 + x / 4.0 + x * scale
    assert y.grad_fn.name() == "AddBackward0"
    y.sum().backward()
    assert x.grad.dtype == ag.float16 and scale.grad.dtype == ag.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 1.0, dtype=F16))
    np.testing.assert_allclose(scale.grad.numpy(), HALVES[:4].astype(np.float64).sum(), rtol=1e-3)


def test_float16_add_and_sub_with_alpha_round_once_from_float32():
    x, y = ag.tensor(HALVES), ag.tensor(OTHERS)
    alpha = F32(F16(0.3))  # PyTorch rounds alpha to the tensors' dtype, then computes in float32
    wide_x, wide_y = HALVES.astype(F32), OTHERS.astype(F32)
    np.testing.assert_array_equal(ag.sub(x, y, alpha=0.3).numpy(), (wide_x - alpha * wide_y).astype(F16))
    np.testing.assert_array_equal(ag.add(x, y, alpha=0.3).numpy(), (wide_x + alpha * wide_y).astype(F16))


def _exactly_rounded(values: np.ndarray) -> np.ndarray:
    return values.astype(F16)


def _assert_rounded_once(got: np.ndarray, exact: np.ndarray) -> None:
    """Within a float16 step of the exact value (plus float32's own rounding where terms cancel): intermediates
    rounded to float16 are off by a few steps of the operands' size."""
    np.testing.assert_array_less(np.abs(got.astype(np.float64) - exact), np.abs(exact) * 2.0 ** -10 + 1e-6)


@pytest.mark.parametrize("weight_kind", ["number", "tensor"])
def test_float16_lerp_is_within_an_ulp_of_the_exact_result(weight_kind):
    a, b = HALVES.astype(np.float64), OTHERS.astype(np.float64)
    if weight_kind == "number":
        got = ag.lerp(ag.tensor(HALVES), ag.tensor(OTHERS), 0.3).numpy()
        w = 0.3
    else:
        got = ag.lerp(ag.tensor(HALVES), ag.tensor(OTHERS), ag.tensor(WEIGHTS)).numpy()
        w = WEIGHTS.astype(np.float64)
    assert got.dtype == F16
    _assert_rounded_once(got, a + w * (b - a))


def test_float16_addcmul_and_addcdiv_are_within_an_ulp_of_the_exact_result():
    a, b = HALVES.astype(np.float64), OTHERS.astype(np.float64)
    divisors = WEIGHTS + F16(1)  # away from 0, for addcdiv
    c = divisors.astype(np.float64)
    for op, exact in [(ag.addcmul, a + 0.3 * b * c), (ag.addcdiv, a + 0.3 * b / c)]:
        got = op(ag.tensor(HALVES), ag.tensor(OTHERS), ag.tensor(divisors), value=0.3).numpy()
        assert got.dtype == F16
        _assert_rounded_once(got, exact)


def test_float16_sigmoid_and_rsqrt_round_once():
    every = np.arange(1, 0x7C00, dtype=np.uint16).view(F16)  # every positive finite float16
    signed = np.concatenate([every, -every])
    with np.errstate(over="ignore"):
        exact_sigmoid = _exactly_rounded(1 / (1 + np.exp(-signed.astype(np.float64))))
    got = ag.sigmoid(ag.tensor(signed)).numpy()
    ulps = _ulps(got, exact_sigmoid)
    assert ulps.max() <= 1 and np.count_nonzero(ulps) <= signed.size // 1000
    np.testing.assert_array_equal(ag.rsqrt(ag.tensor(every)).numpy(),
                                  _exactly_rounded(1 / np.sqrt(every.astype(np.float64))))


def test_lerp_takes_a_zero_dim_weight_of_another_dtype_as_a_number():
    start = ag.tensor([1.0, -2.0, 0.5], dtype=ag.float32, requires_grad=True)
    end = ag.tensor([3.0, 2.0, -1.5], dtype=ag.float32, requires_grad=True)
    weight = ag.tensor(0.25, dtype=ag.float64, requires_grad=True)
    out = ag.lerp(start, end, weight)
    assert out.dtype == ag.float32
    np.testing.assert_allclose(out.detach().numpy(), [1.5, -1.0, 0.0])
    out.sum().backward()
    assert weight.grad.dtype == ag.float64
    np.testing.assert_allclose(weight.grad.numpy(), (3.0 - 1.0) + (2.0 + 2.0) + (-1.5 - 0.5))
    np.testing.assert_allclose(start.grad.numpy(), [0.75] * 3)
    np.testing.assert_allclose(end.grad.numpy(), [0.25] * 3)
    whole = ag.lerp(ag.tensor([1.0, 2.0], dtype=ag.float64), ag.tensor([3.0, 6.0], dtype=ag.float64), ag.tensor(1))
    np.testing.assert_array_equal(whole.numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="^expected dtype double for `weight` but got dtype float$"):
        ag.lerp(ag.ones(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64), ag.tensor([0.5] * 3))


@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        x, y = ag.tensor(HALVES, device=device), ag.tensor(OTHERS, device=device)
        z = ag.tensor(np.array([complex(np.nan, 1.0), complex(np.inf, -2.0)]), device=device)
        weight = ag.tensor(0.25, dtype=ag.float64, device=device)
        acosh_in = ag.tensor(ACOSH_POINTS, device=device, requires_grad=True)
        ag.acosh(acosh_in).real.sum().backward()
        results.append([t.cpu().numpy() for t in (
            x * 0.1, x / 3.3, x // 0.3, x % 0.3, x * ag.tensor(0.1, dtype=ag.float64, device=device),
            x * ag.tensor(0.1),
            ag.sub(x, y, alpha=0.3), ag.lerp(x, y, 0.3), ag.addcmul(x, x, y, value=0.3),
            ag.sigmoid(x), ag.rsqrt(x.abs() + 1), ag.nan_to_num(z), ag.lerp(x.float(), y.float(), weight),
            acosh_in.grad)])
    for on_cpu, on_cuda in zip(*results):
        assert on_cpu.dtype == on_cuda.dtype
        np.testing.assert_array_equal(np.signbit(on_cuda.real), np.signbit(on_cpu.real))  # zeros' signs too
        np.testing.assert_allclose(on_cuda, on_cpu, rtol=1e-3 if on_cpu.dtype == F16 else 1e-6)


def test_a_float_remainder_of_zero_keeps_the_dividends_sign():
    dividends = [-3.0, 3.0, -0.0, 0.0, -1.5, 2.0, -1.0, 1.0, 5.0, -5.0]
    divisors = [1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 0.75, -0.75, np.inf, np.inf]
    for dtype in (ag.float16, ag.float32, ag.float64):
        got = (ag.tensor(dividends, dtype=dtype) % ag.tensor(divisors, dtype=dtype)).numpy()
        scalar = ag.remainder(ag.tensor(dividends, dtype=dtype), -1.0).numpy()
        for a, b, r, s in zip(dividends, divisors, got, scalar):
            # Python's % for the value (the divisor's sign, -5 % inf is inf); a zero takes the dividend's sign
            assert r == a % b and (r != 0 or np.signbit(r) == np.signbit(a)), (a, b, r)
            assert s == a % -1.0 and (s != 0 or np.signbit(s) == np.signbit(a)), (a, s)
