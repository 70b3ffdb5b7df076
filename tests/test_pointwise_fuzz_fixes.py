"""Pointwise ops and promotion as PyTorch's, found by a fuzz-differential review: `out=` on the elementwise ops'
public names, clamp's overloads, add/sub's alpha checks, abs_ of complex tensors, addcmul's and lerp's number
checks, Python's three-argument pow, float16 trunc division by a scalar, and the log in pow's and xlogy's gradients."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

RESIZED = "An output with one or more elements was resized since it had shape \\[5\\]"


# -- out= ----------------------------------------------------------------------------------------------------------
def test_out_is_written_and_returned():
    a, b = np.array([1.0, -2.0, 3.5]), np.array([0.5, 4.0, -1.0])
    out = ag.zeros(3, dtype=ag.float64)
    version = out._version
    result = ag.add(ag.tensor(a), ag.tensor(b), alpha=2, out=out)
    assert result is out and out._version > version
    np.testing.assert_array_equal(out.numpy(), a + 2 * b)
    base = ag.zeros(2, 3)  # a view as `out` writes into its base
    ag.mul(ag.tensor([1.0, 2.0, 3.0]), 2, out=base[1])
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0], [2, 4, 6]])
    x = ag.tensor([4.0, 9.0])
    ag.sqrt(x, out=x)  # the input itself as `out`
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])


def test_out_takes_the_result_cast_to_its_dtype():
    wrapped = ag.add(ag.tensor([100], dtype=ag.int8), 100, out=ag.zeros(1))  # the int8 sum, then the cast
    assert wrapped.item() == -56.0
    sine = ag.sin(ag.tensor([1, 2]), out=ag.zeros(2, dtype=ag.float64))  # computed in float32, as PyTorch's
    np.testing.assert_array_equal(sine.numpy(), np.sin(np.array([1, 2], dtype=np.float32)).astype(np.float64))
    equal = ag.eq(ag.tensor([1, 2]), 2, out=ag.zeros(2, dtype=ag.int32))
    assert equal.dtype == ag.int32 and equal.tolist() == [0, 1]
    modulus = ag.abs(ag.tensor([3 + 4j]), out=ag.zeros(1, dtype=ag.float32))  # complex abs: a real result, cast
    assert modulus.item() == 5.0


@pytest.mark.parametrize("call, message", [
    (lambda: ag.add(ag.ones(2), 1, out=ag.zeros(2, dtype=ag.int64)),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: ag.sqrt(ag.tensor([4]), out=ag.zeros(1, dtype=ag.int64)),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: ag.add(ag.ones(2, dtype=ag.int64), 1, out=ag.zeros(2, dtype=ag.bool)),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: ag.abs(ag.tensor([-1]), out=ag.zeros(1, dtype=ag.float64)), "Found dtype Double but expected Long"),
    (lambda: ag.clamp(ag.tensor([-1]), 0, 1, out=ag.zeros(1, dtype=ag.float64)),
     "Found dtype Double but expected Long"),
    (lambda: ag.lerp(ag.ones(3), ag.ones(3), ag.ones(3), out=ag.zeros(3, dtype=ag.float64)),
     "Found dtype Double but expected Float"),
    (lambda: ag.float_power(ag.ones(1), 2, out=ag.zeros(1)),
     "the output given to float_power has dtype Float but the operation's result requires dtype Double"),
    (lambda: ag.signbit(ag.ones(1), out=ag.zeros(1)), "signbit does not support non-boolean outputs."),
    (lambda: ag.nan_to_num(ag.ones(1), out=ag.zeros(1, dtype=ag.float64)),
     "nan_to_num: dtype of out: Double should be same as input: Float"),
    (lambda: ag.where(ag.tensor([True]), ag.ones(1), ag.zeros(1), out=ag.zeros(1, dtype=ag.float64)),
     "Expected out type to be Float but got Double"),
])
def test_out_refuses_a_dtype_its_op_cannot_write(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_out_takes_any_dtype_its_op_casts_to():
    clamped = ag.clamp(ag.tensor([-1, 5]), ag.tensor(0), ag.tensor(3), out=ag.zeros(2, dtype=ag.float64))
    assert clamped.dtype == ag.float64 and clamped.tolist() == [0.0, 3.0]  # tensor bounds: castable
    mixed = ag.lerp(ag.ones(2), ag.full((2,), 3.0), 0.5, out=ag.zeros(2, dtype=ag.float64))  # a number weight
    assert mixed.tolist() == [2.0, 2.0]


def test_out_of_another_shape_is_resized_with_a_warning():
    with pytest.warns(UserWarning, match=RESIZED):
        out = ag.add(ag.ones(2, 3), 1, out=ag.zeros(5))
    assert out.shape == (2, 3) and out.numpy().tolist() == [[2.0] * 3] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized quietly
        assert ag.neg(ag.ones(2), out=ag.zeros(0)).tolist() == [-1.0, -1.0]


def test_out_refuses_autograd_but_for_ops_without_a_derivative():
    x = ag.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=... arguments don't support automatic"):
        ag.add(x, 1, out=ag.zeros(2))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ag.exp(ag.ones(2), out=ag.zeros(2, requires_grad=True))
    assert ag.eq(x, 1, out=ag.zeros(2, dtype=ag.bool)).tolist() == [True, True]
    with ag.no_grad():
        assert ag.add(x, 1, out=ag.zeros(2)).tolist() == [2.0, 2.0]


def test_out_must_be_a_tensor():
    with pytest.raises(TypeError, match=r"add\(\): argument 'out' must be Tensor, not list"):
        ag.add(ag.ones(2), 1, out=[0, 0])


# -- clamp -----------------------------------------------------------------------------------------------------------
def test_clamp_refuses_a_tensor_bound_beside_a_number():
    for call in (lambda: ag.clamp(ag.ones(2), ag.zeros(2), 3), lambda: ag.ones(2).clamp(min=ag.zeros(2), max=3),
                 lambda: ag.ones(2).clamp_(0, ag.zeros(2))):
        with pytest.raises(TypeError, match=r"clamp\(\) received an invalid combination of arguments"):
            call()
    with pytest.raises(TypeError, match=r"clip\(\) received an invalid combination of arguments - got \(Tensor, "
                                        r"int, Tensor\)"):
        ag.clip(ag.ones(2), 0, ag.zeros(2))


def test_clamp_reads_a_zero_dim_tensor_beside_a_number_as_a_number():
    clamped = ag.clamp(ag.tensor([-9, 0, 5], dtype=ag.int16), ag.tensor(-4, dtype=ag.int16), -1.5)
    assert clamped.dtype == ag.float32 and clamped.tolist() == [-4.0, -1.5, -1.5]
    assert ag.clamp(ag.tensor([3.0, -3.0]), -1, ag.tensor(2.0)).tolist() == [2.0, -1.0]
    with pytest.raises(TypeError, match="invalid combination"):  # but not one that requires grad
        ag.clamp(ag.ones(2), ag.tensor(0.0, requires_grad=True), 1)


def test_clamp_kernels_of_bools_and_complex_bounds():
    flags = ag.tensor([True, False])
    for call, kernel in ((lambda: ag.clamp(flags, True, True), "clamp_scalar_cpu"),
                         (lambda: ag.clamp(flags, None, True), "clamp_max_scalar_cpu"),
                         (lambda: ag.clamp_min(flags, False), "clamp_min_scalar_cpu"),
                         (lambda: ag.clamp(flags, flags, flags), "clamp_cpu"),
                         (lambda: ag.clamp_min(ag.ones(2), ag.ones(2, dtype=ag.complex64)), "maximum_cpu")):
        with pytest.raises(NotImplementedError, match=kernel):
            call()
    assert ag.clamp(flags, None, -0.5).tolist() == [-0.5, -0.5]  # a float bound promotes: no bool kernel needed
    assert ag.clamp(flags, flags).tolist() == [True, False]
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        ag.clamp_min(ag.ones(2, dtype=ag.complex64), 1)
    assert ag.clamp(ag.tensor([0.5, 3.0]), 1 + 0j).tolist() == [1.0, 3.0]  # a real complex number is a double
    with pytest.raises(RuntimeError, match="value cannot be converted to type double without overflow"):
        ag.clamp(ag.ones(2), 1j)


# -- alpha, abs_, addcmul, pow ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: ag.add(ag.ones(2), ag.ones(2), alpha=True), "Boolean alpha only supported for Boolean results."),
    (lambda: ag.ones(2).sub_(1, alpha=False), "Boolean alpha only supported for Boolean results."),
    (lambda: ag.add(ag.ones(2, dtype=ag.int64), 1, alpha=1.0),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: ag.add(ag.ones(2, dtype=ag.int8), 1, alpha=2j),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: ag.sub(ag.ones(2), 1, alpha=1 + 0j),
     "For non-complex input tensors, argument alpha must not be a complex number."),
])
def test_alpha_is_checked_against_the_result_dtype(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_alpha_of_bools_and_complex_results():
    assert ag.add(ag.tensor([True, False]), ag.tensor([False, False]), alpha=True).tolist() == [True, False]
    assert ag.add(ag.ones(1, dtype=ag.complex64), 1, alpha=2j).tolist() == [1 + 2j]


def test_abs_in_place_refuses_complex_tensors():
    z = ag.tensor([3 + 4j])
    for method in (z.abs_, z.absolute_):
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors."):
            method()
    assert z.tolist() == [3 + 4j]
    assert ag.tensor([-2.0, 1.0]).abs_().tolist() == [2.0, 1.0]


def test_addcmul_value_is_checked_as_pytorch_casts_it():
    ones = ag.ones(2)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        ag.addcmul(ones, ones, ones, value=1j)
    assert ag.addcmul(ones, ones, ones, value=2 + 0j).tolist() == [3.0, 3.0]
    small = ag.ones(2, dtype=ag.int8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ag.addcmul(small, small, small, value=300)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        ag.addcmul(small.byte(), small.byte(), small.byte(), value=-0.5)
    assert ag.addcmul(small.byte(), small.byte(), small.byte(), value=-2).tolist() == [255, 255]  # -1 wraps
    flags = ag.tensor([True, False])
    with pytest.raises(NotImplementedError, match="addcmul_cpu_out"):
        ag.addcmul(flags, flags, flags)


def test_lerp_takes_a_complex_number_weight_only_from_the_real_line():
    x = ag.ones(2, requires_grad=True)
    ag.lerp(x, ag.zeros(2), 0.25 + 0j).sum().backward()
    assert x.grad.dtype == ag.float32 and x.grad.tolist() == [0.75, 0.75]
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        ag.lerp(ag.ones(2), ag.zeros(2), 0.5j)


def test_three_argument_pow_is_pythons_unsupported_operand():
    for base, exponent in ((ag.ones(2), 3), (3, ag.ones(2))):
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*\* or pow\(\)"):
            pow(base, exponent, 5)
    assert pow(ag.tensor([2.0]), 3).tolist() == [8.0] and pow(2, ag.tensor([3.0])).tolist() == [8.0]


def test_float16_trunc_division_by_a_scalar_takes_it_unrounded():
    x = np.array([2048.0, 3.0, -7.0], dtype=np.float16)
    for divisor in (1.0001, ag.tensor(1.0001, dtype=ag.float64)):
        expected = np.trunc(x.astype(np.float32) / np.float32(1.0001)).astype(np.float16)  # 1.0001 -> 1.0 in float16
        result = ag.div(ag.tensor(x), divisor, rounding_mode="trunc")
        assert result.dtype == ag.float16
        np.testing.assert_array_equal(result.numpy(), expected)
    assert ag.div(ag.tensor([6e4], dtype=ag.float16), 0.5, rounding_mode="trunc").item() == math.inf


# -- gradients -------------------------------------------------------------------------------------------------------
def test_pow_exponent_gradient_takes_the_log_in_the_result_dtype():
    x = np.array([0.3, -1.2, 2.5])
    exponent = ag.tensor(x, dtype=ag.float64, requires_grad=True)
    (ag.tensor([7], dtype=ag.uint8) ** exponent).sum().backward()  # numpy's log of uint8 would be float16
    np.testing.assert_allclose(exponent.grad.numpy(), 7.0**x * math.log(7.0), rtol=1e-13)
    base = ag.tensor([-3, 2], dtype=ag.int32)  # a negative base: the complex log, not NaN
    exponents = ag.tensor([0.3 + 0.2j, -0.5 + 1.0j], dtype=ag.complex128, requires_grad=True)
    assert gradcheck(lambda e: base**e, (exponents,))


def test_xlogy_gradient_takes_the_log_in_the_gradient_dtype():
    x = ag.tensor([0.3, -1.2], dtype=ag.float64, requires_grad=True)
    ag.xlogy(x, ag.tensor([7], dtype=ag.uint8)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [math.log(7.0)] * 2, rtol=1e-13)
    x.grad = None
    ag.special.xlog1py(x, ag.tensor([7], dtype=ag.uint8)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [math.log(8.0)] * 2, rtol=1e-13)


@pytest.mark.gpu
def test_out_and_clamp_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        out = ag.zeros(5, dtype=ag.float64, device=device)
        with pytest.warns(UserWarning, match=RESIZED):
            ag.sin(ag.tensor([[1, 2], [3, 4]], device=device), out=out)
        clamped = ag.clamp(ag.tensor([-9.0, 0.0, 5.0], device=device), ag.tensor(-4.0, device=device), 1)
        quotient = ag.div(ag.tensor([2048.0, 3.0], dtype=ag.float16, device=device), 1.0001, rounding_mode="trunc")
        results.append((out.cpu().numpy(), clamped.cpu().numpy(), quotient.cpu().numpy()))
    for cpu, cuda in zip(*results):  # a GPU's float32 sin may round its last bit the other way
        np.testing.assert_allclose(cuda, cpu, rtol=np.finfo(np.float32).eps, atol=0)
