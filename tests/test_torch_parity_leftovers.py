"""Odd corners that behave as PyTorch's: numbers stored out of an integer dtype's range (fill_, masked_fill,
`x[i] = v`), masked_fill_, Python ints past int64 beside bool tensors, bool operands of `-`, bitwise ops on
floating dtypes, relu of bools, the p=0 norm's missing gradient, the signs of zero in p-norm gradients, and linear's
and expand's errors for a bias or size that does not fit.

Expected values follow from the documented formulas (computed in the tests, or exact closed forms); messages and
the conventions for signs of zero and NaN were read off torch 2.13 (torch is not a test dependency).
"""

import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

INT8_OVERFLOW = "value cannot be converted to type int8_t without overflow"
UNSIGNED_PROMOTION = re.escape(
    "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote Bool and UInt64"
)
BOOL_SUBTRACTION = re.escape(
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
    "`~` or `logical_not()` operator instead."
)
TWO_BOOL_SUBTRACTION = re.escape(
    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator "
    "instead."
)


def _int8() -> ag.Tensor:
    return ag.tensor([1, 2], dtype=ag.int8)


def _bits(t: ag.Tensor) -> list:
    """Values with the sign of each zero kept apart (as their repr), for exact comparisons."""
    return [repr(v) for v in np.ravel(t.detach().numpy()).tolist()]


# -- numbers stored into an integer tensor ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [1000, -129, 127.5, 200.0, math.nan, math.inf])
@pytest.mark.parametrize("store", [
    lambda t, v: t.fill_(v),
    lambda t, v: t.masked_fill(ag.tensor([True, False]), v),
    lambda t, v: t.masked_fill(ag.tensor([True, False]), ag.tensor(v)),
    lambda t, v: t.masked_fill_(ag.tensor([True, False]), v),
    lambda t, v: t.__setitem__(0, v),
    lambda t, v: t.__setitem__(slice(None), v),
    lambda t, v: t.__setitem__(ag.tensor([1]), v),
    lambda t, v: t.__setitem__(ag.tensor([False, True]), v),
], ids=["fill_", "masked_fill", "masked_fill tensor", "masked_fill_", "x[0]", "x[:]", "x[index]", "x[mask]"])
def test_a_number_out_of_an_integer_dtypes_range_is_refused_before_anything_is_written(store, value):
    x = _int8()
    with pytest.raises(RuntimeError, match=INT8_OVERFLOW):
        store(x, value)
    assert x.tolist() == [1, 2]


def test_numbers_in_range_are_stored_as_pytorch_stores_them():
    mask = ag.tensor([True, False])
    assert _int8().fill_(-128).tolist() == [-128, -128]
    assert _int8().masked_fill(mask, 100.7).tolist() == [100, 2]  # toward zero, as C's casts
    assert _int8().masked_fill(mask, ag.tensor(-5.5)).tolist() == [-5, 2]
    assert ag.tensor([1, 2], dtype=ag.uint8).fill_(-1).tolist() == [255, 255]  # an unsigned dtype wraps down to -max
    assert ag.tensor([1, 2], dtype=ag.uint8).masked_fill(mask, -255).tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        ag.tensor([1, 2], dtype=ag.uint8).fill_(-256)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        ag.tensor([1, 2]).masked_fill(mask, 2**63)
    x = _int8()
    x[0] = ag.tensor(1000)  # a tensor is copied, so it wraps
    assert x.tolist() == [-24, 2]
    y = ag.tensor([1, 2], dtype=ag.uint8)
    y[0] = -1
    assert y.tolist() == [255, 2]


def test_python_ints_past_64_bits_get_pythons_overflow_error():
    for store in (lambda t: t.fill_(2**64), lambda t: t.masked_fill(ag.tensor([True, False]), 2**64)):
        with pytest.raises(OverflowError, match="int too big to convert"):
            store(ag.tensor([1.0, 2.0]))
    x = ag.tensor([1.0, 2.0])
    for value in (2**63, -(2**63) - 1):  # `x[i] = v` unpacks a Python int as a C long long
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            x[0] = value
    x[0] = 2**63 - 1
    assert x.tolist() == [2.0**63, 2.0]


# -- masked_fill_ -------------------------------------------------------------------------------------------------
def test_masked_fill_in_place_writes_through_and_records_masked_fill_backward0():
    mask = ag.tensor([True, False, True])
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    version = y._version
    assert y.masked_fill_(mask, 0.0) is y
    assert y.tolist() == [0.0, 2.0, 0.0] and y._version == version + 1
    assert y.grad_fn.name() == "MaskedFillBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.masked_fill_(mask, 0.0)


def test_masked_fill_in_place_with_a_tensor_value_gives_it_the_masked_gradient():
    mask = ag.tensor([True, False, True])
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = ag.tensor(2.0, requires_grad=True)
    y = x * 1
    y.masked_fill_(mask, v)
    assert y.grad_fn.name() == "MaskedFillBackward1"
    (y * ag.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0] and v.grad.item() == 4.0
    z = ag.zeros(3)
    z.masked_fill_(mask, v)  # a tensor that needs no gradient takes one from the value
    assert z.tolist() == [2.0, 0.0, 2.0] and z.grad_fn.name() == "MaskedFillBackward1"


def test_masked_fill_in_place_through_a_view_and_with_a_broadcasting_mask():
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    b[1:].masked_fill_(ag.tensor([True, False]), 5.0)
    assert b.tolist() == [1.0, 5.0, 3.0]
    b.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    w = ag.zeros(2, 3)
    w.masked_fill_(ag.tensor([True, False, True]), 1.0)
    assert w.tolist() == [[1.0, 0.0, 1.0]] * 2
    with pytest.raises(RuntimeError, match=re.escape("output with shape [1] doesn't match the broadcast shape [2, 1]")):
        ag.tensor([1.0]).masked_fill_(ag.tensor([[True], [False]]), 3.0)


# -- Python ints in [2**63, 2**64) are uint64 numbers to PyTorch --------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda b: b + 2**63, lambda b: 2**63 + b, lambda b: b * (2**64 - 1), lambda b: b / 2**63, lambda b: b % 2**63,
    lambda b: b // 2**63, lambda b: ag.add(b, 2**63, alpha=2), lambda b: b == 2**63, lambda b: 2**63 == b,
    lambda b: b != 2**63, lambda b: b < 2**63, lambda b: b & 2**63, lambda b: ag.tensor(True) + 2**63,
], ids=["+", "radd", "*", "/", "%", "//", "add alpha", "==", "reflected ==", "!=", "<", "&", "zero-dim"])
def test_a_bool_tensor_and_a_uint64_number_do_not_promote(op):
    with pytest.raises(RuntimeError, match=UNSIGNED_PROMOTION):
        op(ag.tensor([True, False]))


def test_a_uint64_number_beside_other_dtypes_and_past_uint64():
    with pytest.raises(OverflowError, match="int too big to convert"):
        ag.tensor([True, False]) + 2**64
    assert (_int8() + 2**63).tolist() == [1, 2]  # the int8 tensor decides the dtype; the number wraps to 0
    assert (_int8() == 2**63).tolist() == [False, False]
    with pytest.raises(RuntimeError, match=BOOL_SUBTRACTION):  # `-` checks its bool operands first
        ag.tensor([True, False]) - 2**63


# -- bool operands of `-` -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda b: b - 300, lambda b: b - 0.5, lambda b: 300 - b, lambda b: 0.5 - b, lambda b: b - ag.tensor([0.5]),
    lambda b: ag.tensor([0.5]) - b, lambda b: ag.tensor([1]) - b, lambda b: ag.tensor([1.0]) - True,
    lambda b: True - ag.tensor([1.0]), lambda b: ag.sub(ag.tensor([1.0]), b, alpha=2), lambda b: b.clone().sub_(1),
    lambda b: ag.tensor([1.0]).sub_(b[:1]),
    lambda b: ag.tensor([1.0], requires_grad=True) - b[:1],
], ids=["b-300", "b-0.5", "300-b", "0.5-b", "b-float", "float-b", "int-b", "x-True", "True-x", "sub alpha",
        "b.sub_", "x.sub_(b)", "requires grad"])
def test_subtraction_refuses_any_bool_operand(op):
    with pytest.raises(RuntimeError, match=BOOL_SUBTRACTION):
        op(ag.tensor([True, False]))


def test_subtraction_of_two_bools_names_xor():
    b = ag.tensor([True, False])
    for op in (lambda: b - True, lambda: True - b, lambda: b - ag.tensor(True), lambda: ag.sub(b, b, alpha=2)):
        with pytest.raises(RuntimeError, match=TWO_BOOL_SUBTRACTION):
            op()


# -- bitwise ops on floating dtypes -------------------------------------------------------------------------------
@pytest.mark.parametrize("op, kernel", [
    (lambda x: x & 2.7, "bitwise_and"), (lambda x: x | 2.7, "bitwise_or"), (lambda x: x ^ 2.7, "bitwise_xor"),
    (lambda x: 2.7 & x, "bitwise_and"), (lambda x: 2.7 | x, "bitwise_or"), (lambda x: 2.7 ^ x, "bitwise_xor"),
    (lambda x: ag.bitwise_and(x, ag.tensor([1.5, 2.0])), "bitwise_and"),
    (lambda x: ag.bitwise_xor(ag.tensor([1.5, 2.0]), x), "bitwise_xor"),
    (lambda x: ag.bitwise_or(ag.tensor(1), 1.5), "bitwise_or"),
])
def test_bitwise_ops_have_no_floating_kernel(op, kernel):
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}_cpu\" not implemented for 'Float'$"):
        op(_int8())


def test_bitwise_errors_name_the_floating_dtype_and_invert_is_a_type_error():
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for 'Double'"):
        ag.bitwise_and(ag.tensor([1.5], dtype=ag.float64), 1)
    with pytest.raises(NotImplementedError, match="\"bitwise_or_cpu\" not implemented for 'Half'"):
        ag.tensor([1.5], dtype=ag.float16) | 1
    with pytest.raises(NotImplementedError, match="\"bitwise_not_cpu\" not implemented for 'Float'"):
        ag.bitwise_not(ag.tensor([1.5]))
    with pytest.raises(TypeError, match=re.escape("~ (operator.invert) is only implemented on integer and Boolean")):
        ~ag.tensor([1.5])
    assert (~_int8()).tolist() == [-2, -3] and (_int8() & True).tolist() == [1, 0]


# -- relu of bools ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [ag.relu, lambda t: t.relu(), lambda t: t.relu_(), F.relu])
@pytest.mark.parametrize("shape", [(1,), (), (0,)])
def test_relu_refuses_bool_inputs(op, shape):
    with pytest.raises(RuntimeError, match="^Boolean inputs not supported for relu$"):
        op(ag.tensor(np.ones(shape, bool)))


def test_relu_keeps_integer_dtypes():
    out = ag.relu(ag.tensor([-1, 3], dtype=ag.int8))
    assert out.tolist() == [0, 3] and out.dtype == ag.int8


@pytest.mark.parametrize("dtype", [ag.float16, ag.float32, ag.float64])
@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_passes_no_inf_or_nan_gradient_where_its_output_is_zero(dtype, create_graph):
    # torch 2.13: threshold_backward picks the gradient where the output is not 0 (NaN included), else 0
    x = ag.tensor([-1.0, 0.0, 2.0, 3.0, -0.0, math.nan], dtype=dtype, requires_grad=True)
    g = ag.tensor([math.inf, math.nan, 1.0, math.nan, -math.inf, 5.0], dtype=dtype)
    (grad,) = ag.autograd.grad(x.relu(), x, g, create_graph=create_graph)
    got = grad.detach().numpy()
    np.testing.assert_array_equal(got, np.array([0.0, 0.0, 1.0, math.nan, 0.0, 5.0], dtype))
    assert not np.signbit(got[[0, 1, 4]]).any()  # +0, as torch gives


# -- the p=0 norm --------------------------------------------------------------------------------------------------
def test_the_zero_norm_counts_nonzeros_and_passes_no_gradient():
    x = ag.tensor([[1.0, 0.0, -2.0], [0.0, 0.0, 3.0]], dtype=ag.float64, requires_grad=True)
    assert x.norm(0, dim=1).tolist() == [2.0, 1.0] and x.norm(0).item() == 3.0
    y = x.norm(0)
    assert y.grad_fn.name() == "LinalgVectorNormBackward0"
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 0 appears to not have been used"):
        ag.autograd.grad(y, x, retain_graph=True)
    assert ag.autograd.grad(y, x, retain_graph=True, allow_unused=True) == (None,)
    (materialized,) = ag.autograd.grad(y, x, retain_graph=True, materialize_grads=True)
    assert materialized.tolist() == [[0.0] * 3] * 2
    y.backward()
    assert x.grad is None  # no gradient, not zeros
    (x.norm(0, dim=0) * 2 + x.sum(0)).sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 2
    w = x * 2
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        ag.autograd.grad(w.norm(0), w)


# -- signs of zero in p-norm gradients ----------------------------------------------------------------------------
# torch's signs of the zeros in the gradient of x.norm(p) at x = [-0.0, 0.0, 1.0, -2.0], and of z.norm(p) at
# z = [-0.0, 0.0] (a zero norm) for a gradient of -1
PNORM_ZEROS = {
    3: (["-0.0", "0.0"], ["-0.0", "0.0"]),
    2.5: (["-0.0", "0.0"], ["-0.0", "0.0"]),
    1.5: (["0.0", "0.0"], ["0.0", "0.0"]),
    0.5: (["0.0", "0.0"], ["-0.0", "-0.0"]),
    -1.5: (["0.0", "0.0"], ["-0.0", "-0.0"]),
    2: (["-0.0", "0.0"], ["-0.0", "-0.0"]),
}


def _p_norm_gradient_of_one_and_minus_two(p: float) -> list:
    """d ||x||_p / dx_i = sign(x_i) |x_i|^(p-1) / ||x||_p^(p-1) at x = [0, 0, 1, -2], for the 1 and the -2; for p < 0
    a zero's |x|^p is inf, the norm 0 and the gradient 0 (its sign that of x_i)."""
    if p < 0:
        return [0.0, -0.0]
    norm = (1 + 2.0 ** p) ** (1 / p)
    return [1 / norm ** (p - 1), -(2.0 ** (p - 1)) / norm ** (p - 1)]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("p", list(PNORM_ZEROS))
def test_p_norm_gradients_give_zeros_pytorchs_signs(p, create_graph):
    zeros, zero_norm = PNORM_ZEROS[p]
    x = ag.tensor([-0.0, 0.0, 1.0, -2.0], dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(x.norm(p), x, create_graph=create_graph)
    assert _bits(g)[:2] == zeros
    np.testing.assert_allclose(g.detach().numpy()[2:], _p_norm_gradient_of_one_and_minus_two(p), rtol=1e-14)
    z = ag.tensor([-0.0, 0.0], dtype=ag.float64, requires_grad=True)
    (gz,) = ag.autograd.grad(z.norm(p), z, ag.tensor(-1.0, dtype=ag.float64), create_graph=create_graph)
    assert _bits(gz) == zero_norm


# -- linear's bias and expand's sizes -----------------------------------------------------------------------------
def _expand_error(n, have, dim, target, sizes):
    return re.escape(
        f"The expanded size of the tensor ({n}) must match the existing size ({have}) at non-singleton dimension "
        f"{dim}.  Target sizes: {target}.  Tensor sizes: {sizes}"
    )


@pytest.mark.parametrize("input_shape, bias_shape, target", [
    ((3, 4), (3,), [3, 2]), ((5, 3, 4), (3,), [15, 2]), ((4,), (3,), [1, 2]), ((0, 4), (3,), [0, 2]),
])
def test_linear_expands_a_1d_bias_with_expands_error(input_shape, bias_shape, target):
    with pytest.raises(RuntimeError, match=_expand_error(2, 3, 1, target, list(bias_shape))):
        F.linear(ag.ones(*input_shape), ag.ones(2, 4), ag.ones(*bias_shape))
    with pytest.raises(RuntimeError, match=_expand_error(2, 3, 1, [3, 2], [2, 3])):  # the last clashing dim
        F.linear(ag.ones(3, 4), ag.ones(2, 4), ag.ones(2, 3))


def test_linear_adds_other_biases_as_in_place_add_does():
    assert F.linear(ag.ones(3, 4), ag.ones(2, 4), ag.ones(3, 1)).shape == (3, 2)
    assert F.linear(ag.ones(5, 3, 4), ag.ones(2, 4), ag.ones(3, 2)).shape == (5, 3, 2)
    with pytest.raises(RuntimeError, match=re.escape("output with shape [2] doesn't match the broadcast shape [3, 2]")):
        F.linear(ag.ones(4), ag.ones(2, 4), ag.ones(3, 2))
    with pytest.raises(RuntimeError, match=re.escape("output with shape [5, 3, 2] doesn't match the broadcast shape "
                                                     "[1, 5, 3, 2]")):
        F.linear(ag.ones(5, 3, 4), ag.ones(2, 4), ag.ones(1, 5, 3, 2))
    with pytest.raises(RuntimeError, match=re.escape("output with shape [5, 3] doesn't match the broadcast shape "
                                                     "[2, 5, 3]")):
        F.linear(ag.ones(5, 3, 4), ag.ones(4), ag.ones(2, 5, 3))


def test_expand_errors_print_sizes_as_lists_and_name_the_last_clashing_dim():
    with pytest.raises(RuntimeError, match=_expand_error(2, 3, 1, [3, 2], [2, 3])):
        ag.ones(2, 3).expand(3, 2)
    with pytest.raises(RuntimeError, match=_expand_error(4, 3, 0, [4, -1], [3, 1])):
        ag.ones(3, 1).expand(4, -1)
    with pytest.raises(RuntimeError, match=_expand_error(4, 3, 2, [-1, 2, 4], [2, 3])):  # before the leading -1
        ag.ones(2, 3).expand(-1, 2, 4)
    assert ag.ones(1, 3).expand(5, -1).shape == (5, 3) and ag.ones(2, 3).expand(2, -1, 3).shape == (2, 2, 3)


def test_repeat_with_a_negative_count_names_the_negative_size_as_torch():
    with pytest.raises(RuntimeError, match=re.escape("Trying to create tensor with negative dimension -3: [4, -3]")):
        ag.ones(2, 3).repeat(2, -1)  # torch 2.13


def test_logsumexp_of_integers_is_in_the_default_float_dtype():
    out = ag.logsumexp(ag.tensor([1, 2]), 0)
    assert out.dtype == ag.float32 and abs(out.item() - math.log(math.e + math.e ** 2)) < 1e-6


# -- edge arguments found by comparing with torch 2.13 on random inputs --------------------------------------------
LOGIT_X = [-0.5, 0.1, 0.5, 0.95, 1.5, 0.0, 1.0]


def _numpy_logit(x: np.ndarray, eps: float) -> tuple:
    """log(z / (1 - z)) and its derivative 1 / (z (1 - z)) as PyTorch's kernel has them: a negative eps is "none"
    (its default is -1): no clamp, NaN gradients outside [0, 1]; else z is eps below eps, otherwise 1 - eps above
    1 - eps (so an eps above 0.5 clamps everything), and the clamped elements pass no gradient."""
    if eps < 0:
        z, clamped = x, np.zeros(x.shape, bool)
    else:
        z = np.where(x < eps, eps, np.where(x > 1 - eps, 1 - eps, x))
        clamped = (x < eps) | (x > 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(z / (1 - z))
        grads = np.where(clamped, 0.0, np.where((x < 0) | (x > 1), np.nan, 1 / (z * (1 - z))))
    return values, grads


@pytest.mark.parametrize("eps", [-1.0, 0.6])
def test_logit_eps_outside_zero_to_a_half_as_torch(eps):
    values, grads = _numpy_logit(np.array(LOGIT_X), eps)
    x = ag.tensor(LOGIT_X, dtype=ag.float64, requires_grad=True)
    y = ag.logit(x, eps)
    y.backward(ag.ones(7, dtype=ag.float64))
    np.testing.assert_allclose(y.detach().numpy(), values, rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), grads, rtol=1e-14)


def test_cumprod_of_a_zero_dim_tensor_passes_the_gradient_on():
    x = ag.tensor(2.0, dtype=ag.float64, requires_grad=True)
    (grad,) = ag.autograd.grad(x.cumprod(0) * 3, x, create_graph=True)
    assert grad.item() == 3.0
    assert ag.autograd.gradcheck(lambda t: t.cumprod(-1) ** 2, (x,))


def test_repeat_an_empty_dim_a_negative_number_of_times_gives_an_empty_dim():
    x = ag.zeros(2, 0, 3, requires_grad=True)
    y = x.repeat(1, -1, 0)
    assert y.shape == (2, 0, 0) and ag.tile(ag.zeros(2, 0, 3), (-1, 0)).shape == (2, 0, 0)
    y.sum().backward()
    assert x.grad.shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match=re.escape("Trying to create tensor with negative dimension -1: [2, -1, 0]")):
        ag.zeros(2, 1, 3).repeat(1, -1, 0)
