"""Fixes found by differential testing of creation functions, special.round, round with decimals and vander:
each test states the rule PyTorch follows, with expected values from numpy, Python's math or closed forms."""

import math

import numpy as np
import pytest

import actorgrad as ag

NEGATIVE_STRIDES = "At least one stride in the given numpy array is negative"


# -- round --------------------------------------------------------------------------------------------------------
def test_special_round_is_the_decimals_overload():
    x = ag.tensor([0.5, 1.5, 2.5, -0.5, 1.25], dtype=ag.float64, requires_grad=True)
    out = ag.special.round(x)
    np.testing.assert_array_equal(out.detach().numpy(), np.rint(x.detach().numpy()))
    assert out.grad_fn.name() == "RoundBackward1"
    np.testing.assert_array_equal(ag.special.round(x, decimals=1).detach().numpy(), [0.5, 1.5, 2.5, -0.5, 1.2])
    with pytest.raises(NotImplementedError, match="\"round_vml_cpu\" not implemented for 'Long'"):
        ag.special.round(ag.tensor([1, 2]))
    np.testing.assert_array_equal(ag.round(ag.tensor([1, 2])).numpy(), [1, 2])  # the top-level one takes ints


@pytest.mark.parametrize("decimals", [309, 400, -309, -400])
def test_round_past_the_double_range_of_powers_of_ten_gives_nan(decimals):
    # 10 ** |decimals| is inf as a double: x * inf / inf and x / inf * inf are NaN (0 * inf too)
    for dtype in (ag.float32, ag.float64):
        out = ag.round(ag.tensor([1.5, 0.0, -2.25], dtype=dtype), decimals=decimals)
        assert out.dtype == dtype
        assert np.isnan(out.numpy()).all()


def test_round_keeps_working_up_to_the_largest_finite_power():
    out = ag.round(ag.tensor([1.5, -0.25, 0.0], dtype=ag.float64), decimals=308)
    np.testing.assert_array_equal(out.numpy(), [1.5, -0.25, 0.0])  # x * 1e308 stays finite: x back


# -- special functions without a half kernel ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ndtri", "log_ndtr"])
def test_normal_functions_refuse_half(name):
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Half'"):
        getattr(ag.special, name)(ag.tensor([0.5], dtype=ag.float16))
    out = getattr(ag.special, name)(ag.tensor([0.5], dtype=ag.float32))
    want = 0.0 if name == "ndtri" else math.log(0.5 * math.erfc(-0.5 / math.sqrt(2)))  # Phi(0.5)
    assert out.dtype == ag.float32 and math.isclose(out.item(), want, abs_tol=1e-6)


# -- vander -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_keeps_a_complex_dtype(dtype, increasing):
    x = np.array([1 + 1j, -0.5, 2j, 0.25 - 1j], dtype=dtype)
    out = ag.vander(ag.tensor(x), 3, increasing)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), np.vander(x, 3, increasing), rtol=1e-6)


def test_vander_of_complex_input_has_its_gradient():
    x = ag.tensor([1 + 1j, -0.5 + 0.25j, 0.75j], dtype=ag.complex128, requires_grad=True)
    assert ag.vander(x, 4).requires_grad
    assert ag.autograd.gradcheck(lambda t: ag.vander(t, 4), (x,))


# -- linspace and logspace ----------------------------------------------------------------------------------------
def _integer_points(start: int, end: int, steps: int, bits: int, signed: bool) -> list[int]:
    """PyTorch's integer linspace: the bounds wrapped into the dtype, a step in double, the first half counted up
    from start and the rest down from end, each point truncated toward zero and wrapped."""
    def wrap(v: int) -> int:
        v %= 1 << bits
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    low, high = wrap(start), wrap(end)
    step = (high - low) / (steps - 1)
    points = [low + step * i if i < steps // 2 else high - step * (steps - 1 - i) for i in range(steps)]
    return [wrap(math.trunc(p)) for p in points]


@pytest.mark.parametrize("start, end, steps", [(1, 0, 5), (1, 0, 10), (-2, 5, 5), (-2, 5, 7), (5, -2, 6)])
def test_integer_linspace_converts_the_bounds_before_the_step(start, end, steps):
    out = ag.linspace(start, end, steps, dtype=ag.uint8)
    assert out.tolist() == _integer_points(start, end, steps, 8, False)
    assert ag.linspace(start, end, steps, dtype=ag.int8).tolist() == _integer_points(start, end, steps, 8, True)


def test_one_point_is_the_start_filled_as_full_fills():
    assert ag.logspace(0.5, 3.7, 1, dtype=ag.int64).tolist() == [int(10**0.5)]
    assert ag.logspace(0.5, 3.7, 1, base=0.5, dtype=ag.int64).tolist() == [int(0.5**0.5)]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        ag.logspace(3, 3, 1, dtype=ag.uint8)  # 1000
    assert ag.linspace(0, 1e10, 1, dtype=ag.int32).tolist() == [0]  # the end is never converted
    assert ag.linspace(0, 1e10, 0, dtype=ag.int32).shape == (0,)
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half without overflow"):
        ag.linspace(0, 1e10, 2, dtype=ag.float16)


def test_bool_linspace_and_logspace_fill_but_do_not_step():
    assert ag.linspace(0, 1, 1, dtype=ag.bool).tolist() == [False]
    assert ag.linspace(2, 0, 1, dtype=ag.bool).tolist() == [True]
    assert ag.logspace(0, 1, 1, dtype=ag.bool).tolist() == [True]
    assert ag.linspace(0, 1, 0, dtype=ag.bool).dtype == ag.bool
    for op in ("linspace", "logspace"):
        with pytest.raises(NotImplementedError, match=f"\"{op}_cpu\" not implemented for 'Bool'"):
            getattr(ag, op)(0, 1, 5, dtype=ag.bool)


@pytest.mark.parametrize("start, end", [(0, 1 + 1j), (1j, 2), (1 + 2j, -3 - 1j)])
@pytest.mark.parametrize("steps", [1, 2, 5, 6])
def test_complex_bounds_give_complex_points(start, end, steps):
    out = ag.linspace(start, end, steps)
    assert out.dtype == ag.complex64
    np.testing.assert_allclose(out.numpy(), np.linspace(start, end, steps), rtol=1e-6, atol=1e-7)
    out = ag.logspace(start, end, steps, base=2.0, dtype=ag.complex128)
    np.testing.assert_allclose(out.numpy(), 2.0 ** np.linspace(start, end, steps), rtol=1e-12)


def test_complex_bounds_refuse_a_real_dtype():
    with pytest.raises(RuntimeError, match=r"torch.linspace\(\): inferred dtype c10::complex<float> can't be safely "
                                           "cast to passed dtype Float"):
        ag.linspace(0, 1 + 1j, 3, dtype=ag.float32)


# -- arange, eye, zeros, full --------------------------------------------------------------------------------------
def test_arange_has_no_complex_kernel():
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'ComplexFloat'"):
        ag.arange(5, dtype=ag.complex64)
    with pytest.raises(NotImplementedError, match="'ComplexDouble'"):
        ag.arange(0, -1, dtype=ag.complex128)  # the dtype is refused before the bounds are checked


def test_size_argument_errors_name_pytorchs_texts():
    with pytest.raises(TypeError, match=r"eye\(\): argument 'n' \(position 1\) must be int, not float"):
        ag.eye(2.0)
    with pytest.raises(RuntimeError, match="^zeros: Dimension size must be non-negative.$"):
        ag.zeros(2, -1)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        ag.ones(2, -1)


def test_full_infers_the_default_float_for_a_numpy_bool():
    out = ag.full((2,), np.True_)
    assert out.dtype == ag.float32 and out.tolist() == [1.0, 1.0]
    assert ag.full((2,), True).dtype == ag.bool


def test_a_tensor_requiring_grad_is_no_number():
    value = ag.tensor(2.5, dtype=ag.float64, requires_grad=True)
    with pytest.raises(TypeError, match=r"full\(\): argument 'fill_value' \(position 2\) must be Number, not Tensor"):
        ag.full((2,), value)
    with pytest.raises(TypeError, match=r"full_like\(\): argument 'fill_value' \(position 2\) must be Number"):
        ag.full_like(ag.ones(2), value)
    with pytest.raises(TypeError, match=r"arange\(\): argument 'end' \(position 1\) must be Number, not Tensor"):
        ag.arange(value)
    assert ag.full((2,), value.detach()).tolist() == [2.5, 2.5]
    assert ag.arange(value.detach()).tolist() == [0.0, 1.0, 2.0]


# -- random tensors -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ag.complex64, ag.complex128])
def test_rand_and_randn_draw_complex_parts(dtype):
    ag.manual_seed(0)
    uniform = ag.rand(50_000, dtype=dtype).numpy()
    assert uniform.dtype == dtype
    for part in (uniform.real, uniform.imag):
        assert part.min() >= 0 and part.max() < 1 and abs(part.mean() - 0.5) < 0.01
    normal = ag.randn(50_000, dtype=dtype).numpy()
    assert normal.dtype == dtype
    for part in (normal.real, normal.imag):  # variance 1 in all: 1/2 in each part
        assert abs(part.var() - 0.5) < 0.02 and abs(part.mean()) < 0.02
    assert abs(np.corrcoef(normal.real, normal.imag)[0, 1]) < 0.02
    like = ag.randn_like(ag.ones(3, 4), dtype=dtype)
    assert like.dtype == dtype and like.shape == (3, 4)
    assert ag.rand_like(ag.ones(2, dtype=dtype)).dtype == dtype


def test_randn_still_refuses_integer_dtypes():
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ag.randn(2, dtype=ag.int64)


@pytest.mark.parametrize("dtype", [ag.complex64, ag.complex128])
def test_randint_refuses_complex_dtypes(dtype):
    message = "^check_random_bounds handles only integral, floating-point and boolean types$"
    for draw in (lambda: ag.randint(0, 2, (2,), dtype=dtype), lambda: ag.randint(5, (2,), dtype=dtype),
                 lambda: ag.randint_like(ag.ones(2), 3, dtype=dtype)):
        with pytest.raises(RuntimeError, match=message):
            draw()
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        ag.randint(3, 3, (2,), dtype=dtype)  # the empty range is found first


# -- tensors from data --------------------------------------------------------------------------------------------
def test_a_complex_number_is_no_real_number():
    with pytest.raises(TypeError, match="^must be real number, not complex$"):
        ag.tensor([1, 2 + 1j], dtype=ag.float64)
    with pytest.raises(TypeError, match="^'complex' object cannot be interpreted as an integer$"):
        ag.tensor([[1], [1j]], dtype=ag.int64)
    with pytest.raises(TypeError, match="must be real number"):
        ag.tensor(1 + 1j, dtype=ag.float32)
    assert ag.tensor([True, 1j], dtype=ag.bool).tolist() == [True, True]
    assert ag.tensor([1, 2 + 1j], dtype=ag.complex128).tolist() == [1, 2 + 1j]


@pytest.mark.parametrize("make", [ag.from_numpy, ag.as_tensor, ag.tensor, ag.asarray])
def test_arrays_with_negative_strides_are_refused(make):
    with pytest.raises(ValueError, match=NEGATIVE_STRIDES):
        make(np.arange(6.0)[::-1])
    with pytest.raises(ValueError, match=NEGATIVE_STRIDES):
        make(np.arange(12.0).reshape(3, 4)[:, ::-2])
    assert make(np.arange(6.0)[::-1].copy()).tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    assert make(np.arange(6.0)[::2]).tolist() == [0.0, 2.0, 4.0]


def test_arrays_inside_a_list_may_have_negative_strides():
    backwards = np.arange(3.0)[::-1]
    assert ag.tensor([backwards, backwards]).tolist() == [[2.0, 1.0, 0.0]] * 2


# -- on a GPU -----------------------------------------------------------------------------------------------------
@pytest.fixture
def cuda(cupy):
    return ag.device("cuda:0")


@pytest.mark.gpu
def test_fixed_ops_run_on_the_gpu(cuda):
    x = ag.tensor([1.5, 0.0, -2.25], dtype=ag.float64, device=cuda)
    out = ag.round(x, decimals=400)
    assert out.device is cuda and np.isnan(out.cpu().numpy()).all()
    assert ag.special.round(x).device is cuda
    z = np.array([1 + 1j, -0.5, 2j])
    powers = ag.vander(ag.tensor(z, device=cuda), 3)
    assert powers.device is cuda and powers.dtype == ag.complex128
    np.testing.assert_allclose(powers.cpu().numpy(), np.vander(z, 3), rtol=1e-12)
    for make in (ag.rand, ag.randn):
        draws = make(4, dtype=ag.complex64, device=cuda)
        assert draws.device is cuda and draws.dtype == ag.complex64
    points = ag.linspace(0, 1 + 1j, 5, device=cuda)
    assert points.device is cuda
    np.testing.assert_allclose(points.cpu().numpy(), np.linspace(0, 1 + 1j, 5), rtol=1e-6)
