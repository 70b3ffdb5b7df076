"""torch.nn.functional's activations, softmaxes, dropout, pad and one_hot, and the activation modules, as PyTorch
2.13's.

Expected values come from numpy formulas of PyTorch's documented definitions; gradients and second derivatives are
checked against finite differences in float64 (gradcheck / gradgradcheck) at points away from the kinks; error and
warning texts are PyTorch's.
"""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn import functional as F

# away from every kink below: 0, +-1, +-3, 6 and the threshold 0.5
POINTS = [-3.7, -1.3, -0.4, 0.6, 1.9, 4.2]


def points(requires_grad=False):
    return ag.tensor(POINTS, dtype=ag.float64, requires_grad=requires_grad)


def exact(pattern):
    return "^" + re.escape(pattern) + "$"


# -- the new activations: values against numpy formulas (PyTorch's documented definitions), gradients and second
# derivatives against finite differences -------------------------------------------------------------------------
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946  # PyTorch's docs


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(x))


REFERENCES = [
    (F.elu, {}, _elu),
    (F.elu, {"alpha": 0.5}, lambda x: _elu(x, 0.5)),
    (F.selu, {}, lambda x: SELU_SCALE * _elu(x, SELU_ALPHA)),
    (F.celu, {"alpha": 2.0}, lambda x: np.maximum(0, x) + np.minimum(0, 2.0 * np.expm1(x / 2.0))),
    (F.hardtanh, {}, lambda x: np.clip(x, -1, 1)),
    (F.relu6, {}, lambda x: np.clip(x, 0, 6)),
    (F.hardsigmoid, {}, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    (F.hardswish, {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (F.mish, {}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (F.logsigmoid, {}, lambda x: -np.logaddexp(0, -x)),
    (F.softsign, {}, lambda x: x / (1 + np.abs(x))),
    (F.tanhshrink, {}, lambda x: x - np.tanh(x)),
    (F.threshold, {"threshold": 0.5, "value": -2.0}, lambda x: np.where(x > 0.5, x, -2.0)),
]
EXPECTED = [(fn, kwargs, reference(np.array(POINTS))) for fn, kwargs, reference in REFERENCES]
IDS = [f"{fn.__name__}{kw or ''}" for fn, kw, _ in EXPECTED]


@pytest.mark.parametrize("fn, kwargs, expected", EXPECTED, ids=IDS)
def test_activation_values_are_pytorchs(fn, kwargs, expected):
    np.testing.assert_allclose(fn(points(), **kwargs).numpy(), expected, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("fn, kwargs, expected", EXPECTED, ids=IDS)
def test_activation_gradients_and_second_derivatives_match_finite_differences(fn, kwargs, expected):
    x = points(requires_grad=True)
    assert gradcheck(lambda t: fn(t, **kwargs), (x,))
    assert gradgradcheck(lambda t: fn(t, **kwargs), (x,))


def test_activations_are_recorded_as_pytorchs_nodes():
    x = points(requires_grad=True)
    names = {fn.__name__: fn(x, **kw).grad_fn.name() for fn, kw, _ in EXPECTED}
    assert names == {
        "elu": "EluBackward0", "selu": "EluBackward0", "celu": "CeluBackward0", "hardtanh": "HardtanhBackward0",
        "relu6": "HardtanhBackward0", "hardsigmoid": "HardsigmoidBackward0", "hardswish": "HardswishBackward0",
        "mish": "MishBackward0", "logsigmoid": "LogSigmoidBackward0", "softsign": "DivBackward0",
        "tanhshrink": "SubBackward0", "threshold": "ThresholdBackward0",
    }


def test_piecewise_gradients_take_pytorchs_side_at_the_kinks():
    """PyTorch's kinks: elu's slope at 0 is alpha; hardtanh/relu6/hardsigmoid/threshold pass nothing at their
    bounds; hardswish's slope is 0 at -3 and 1 at 3."""
    def grad_at(fn, values, **kwargs):
        x = ag.tensor(values, dtype=ag.float64, requires_grad=True)
        (g,) = ag.autograd.grad(fn(x, **kwargs).sum(), x)
        return g.numpy().tolist()

    assert grad_at(F.elu, [0.0], alpha=0.5) == [0.5]
    assert grad_at(F.hardtanh, [-1.0, 1.0]) == [0.0, 0.0]
    assert grad_at(F.relu6, [0.0, 6.0]) == [0.0, 0.0]
    assert grad_at(F.hardsigmoid, [-3.0, 3.0]) == [0.0, 0.0]
    assert grad_at(F.threshold, [0.5], threshold=0.5, value=1.0) == [0.0]
    assert grad_at(F.hardswish, [-3.0, 3.0]) == [0.0, 1.0]


def test_elu_gradient_of_large_inputs_has_no_overflow():
    x = ag.tensor([800.0, -800.0], dtype=ag.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = ag.autograd.grad(F.elu(x).sum(), x, create_graph=True)
        (gg,) = ag.autograd.grad(g.sum(), x)
    assert g.detach().numpy().tolist() == [1.0, 0.0] and gg.numpy().tolist() == [0.0, 0.0]


def test_relu6_and_hardtanh_keep_integer_dtypes():
    assert F.relu6(ag.tensor([-1, 3, 7])).numpy().tolist() == [0, 3, 6]
    out = F.hardtanh(ag.tensor([1, 5, -3]), -1.5, 2.5)
    assert out.dtype == ag.int64 and out.numpy().tolist() == [1, 2, -1]
    out = F.threshold(ag.tensor([1, 5, -3]), 1.5, 2.7)
    assert out.dtype == ag.int64 and out.numpy().tolist() == [2, 5, 2]


def test_glu_halves_along_dim():
    x = ag.tensor([[-1.0, 2.0, 0.5, -0.3]], dtype=ag.float64, requires_grad=True)
    y = F.glu(x, 1)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    np.testing.assert_allclose(y.detach().numpy(), [[-1.0 * sigmoid(0.5), 2.0 * sigmoid(-0.3)]], rtol=1e-14)
    assert y.grad_fn.name() == "GluBackward0"
    for dim in (0, 1, -1):
        t = ag.tensor(np.random.default_rng(dim + 3).standard_normal((4, 2, 6)), requires_grad=True)
        assert gradcheck(lambda v, d=dim: F.glu(v, d), (t,))
        assert gradgradcheck(lambda v, d=dim: F.glu(v, d), (t,))


def test_prelu_values_and_gradients_for_input_and_weight():
    x = ag.tensor([[-1.0, 2.0, -0.5], [3.0, -4.0, -6.0]], dtype=ag.float64, requires_grad=True)
    w = ag.tensor([0.1, 0.2, 0.3], dtype=ag.float64, requires_grad=True)
    y = F.prelu(x, w)
    np.testing.assert_allclose(y.detach().numpy(), np.where(x.detach().numpy() > 0, x.detach().numpy(),
                                                            w.detach().numpy() * x.detach().numpy()), rtol=1e-15)
    assert y.grad_fn.name() == "PreluKernelBackward0"
    assert gradcheck(F.prelu, (x, w)) and gradgradcheck(F.prelu, (x, w))
    images = ag.tensor(np.random.default_rng(1).standard_normal((2, 3, 2, 2)) + 0.01, requires_grad=True)
    assert gradcheck(F.prelu, (images, w))
    one = ag.tensor([0.25], dtype=ag.float64, requires_grad=True)
    assert gradcheck(F.prelu, (images, one))
    assert F.prelu(ag.tensor(-1.0), ag.tensor([0.25])).shape == ()


PRELU_ERRORS = [
    ((2, 3), (2,), "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel "
                   "size = 3."),
    ((2, 3), (3, 1), "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"),
    ((), (3,), "Not allow zero-dim input tensor."),
    ((3,), (3,), "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel "
                 "size = 1."),
]


@pytest.mark.parametrize("x_shape, w_shape, message", PRELU_ERRORS)
def test_prelu_errors_are_pytorchs(x_shape, w_shape, message):
    with pytest.raises(RuntimeError, match=exact(message)):
        F.prelu(ag.ones(x_shape), ag.ones(w_shape))


def test_prelu_refuses_mixed_and_integer_dtypes():
    with pytest.raises(RuntimeError, match=exact("prelu: Type promoting not supported. Got Float and Double")):
        F.prelu(ag.ones(3), ag.ones(1, dtype=ag.float64))
    with pytest.raises(NotImplementedError, match=exact("\"prelu_cpu\" not implemented for 'Long'")):
        F.prelu(ag.tensor([1]), ag.tensor([1]))


def test_softmin_is_softmax_of_the_negation():
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    y = F.softmin(x, 0)
    np.testing.assert_allclose(y.detach().numpy(), np.exp([-1.0, -2, -3]) / np.exp([-1.0, -2, -3]).sum(), rtol=1e-14)
    assert y.grad_fn.name() == "SoftmaxBackward0"
    assert gradcheck(lambda t: F.softmin(t, 0), (x,)) and gradgradcheck(lambda t: F.softmin(t, 0), (x,))


# -- dtype errors: PyTorch's kernel texts ----------------------------------------------------------------------
KERNELS = [
    (F.silu, "silu_cpu"), (F.gelu, "GeluKernelImpl"), (F.softplus, "softplus_cpu"),
    (F.leaky_relu, "leaky_relu_cpu"), (F.elu, "elu_cpu"), (F.selu, "elu_cpu"), (F.celu, "elu_cpu"),
    (F.hardsigmoid, "hardsigmoid_cpu"), (F.hardswish, "hardswish_cpu"), (F.mish, "mish_cpu"),
    (F.logsigmoid, "log_sigmoid_cpu"), (F.glu, "glu_cpu"),
]


@pytest.mark.parametrize("fn, kernel", KERNELS, ids=[k for _, k in KERNELS])
@pytest.mark.parametrize("dtype, name", [(ag.int64, "Long"), (ag.int32, "Int"), (ag.bool, "Bool")])
def test_integer_and_bool_inputs_get_pytorchs_kernel_error(fn, kernel, dtype, name):
    with pytest.raises(NotImplementedError, match=exact(f"\"{kernel}\" not implemented for '{name}'")):
        fn(ag.tensor([1, 0, 1, 1], dtype=dtype))


BOOL_ERRORS = [
    (F.relu, RuntimeError, "Boolean inputs not supported for relu"),
    (F.hardtanh, RuntimeError, "Bool inputs not supported for hardtanh"),
    (F.relu6, RuntimeError, "Bool inputs not supported for hardtanh"),
    (F.softsign, NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    (F.tanhshrink, RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                 "trying to invert a mask, use the `~` or `logical_not()` operator instead."),
    (lambda t: F.threshold(t, 0, 0), NotImplementedError, "\"threshold_cpu\" not implemented for 'Bool'"),
]


@pytest.mark.parametrize("fn, error, message", BOOL_ERRORS)
def test_bool_inputs_get_pytorchs_errors(fn, error, message):
    with pytest.raises(error, match=exact(message)):
        fn(ag.tensor([True, False]))


def test_argument_errors_are_pytorchs():
    x = ag.ones(3)
    with pytest.raises(RuntimeError, match=exact("approximate argument must be either none or tanh.")):
        F.gelu(x, approximate="foo")
    with pytest.raises(ValueError, match=exact("min_val cannot be greater than max_val")):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match=exact("ZeroDivisionError: alpha cannot be 0 for CELU")):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match=exact("glu does not support scalars because halving size must be even")):
        F.glu(ag.tensor(1.0))
    with pytest.raises(RuntimeError, match=exact("Halving dimension must be even, but dimension 1 is size 3")):
        F.glu(ag.ones(2, 3))


def test_integer_composites_give_floats_as_pytorchs():
    np.testing.assert_allclose(F.softsign(ag.tensor([1, -3])).numpy(), [0.5, -0.75])
    assert F.tanhshrink(ag.tensor([1, -3])).dtype == ag.float32


# -- silu: PyTorch's formula -------------------------------------------------------------------------------------
def test_silu_float32_rounds_as_pytorchs_kernel():
    """x / (1 + exp(-x)), where x * sigmoid(x) is one ulp off at these points."""
    x = ag.tensor([-5.98799991607666, -5.958000183105469, -5.927999973297119, -5.909999847412109])
    v = x.numpy()
    expected = v / (np.float32(1) + np.exp(-v))  # in float32 throughout
    np.testing.assert_array_equal(F.silu(x).numpy(), expected)


def test_silu_far_left_is_negative_zero_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.silu(ag.tensor([-1000.0]))
    assert out.numpy()[0] == 0 and np.signbit(out.numpy()[0])


# -- softmax, log_softmax, softmin -------------------------------------------------------------------------------
IMPLICIT = "Implicit dimension choice for {} has been deprecated. Change the call to include dim=X as an argument."


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, dim", [((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 5), 1)])
def test_softmax_without_dim_warns_and_takes_pytorchs_dim(fn, shape, dim):
    x = ag.tensor(np.random.default_rng(0).standard_normal(shape))
    with pytest.warns(UserWarning, match=exact(IMPLICIT.format(fn.__name__))):
        out = fn(x)
    np.testing.assert_array_equal(out.numpy(), fn(x, dim).numpy())


def test_softmax_modules_without_dim_warn():
    for module, name in ((nn.Softmax(), "softmax"), (nn.LogSoftmax(), "log_softmax"), (nn.Softmin(), "softmin")):
        with pytest.warns(UserWarning, match=exact(IMPLICIT.format(name))):
            module(ag.ones(2, 3))


def test_softmax_dtype_casts_first_and_the_gradient_comes_back_in_the_inputs_dtype():
    out = F.softmax(ag.tensor([1, 2]), 0, dtype=ag.float64)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(out.numpy(), [1 / (1 + math.e), math.e / (1 + math.e)], rtol=1e-15)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ag.autograd.grad(F.log_softmax(x, 0, dtype=ag.float64)[0], x)
    assert g.dtype == ag.float32


SOFTMAX_ERRORS = [
    (lambda: F.softmax(ag.tensor([1, 2, 3]), 0), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda: F.softmax(ag.ones(2, 2, dtype=ag.int64), 0), NotImplementedError,
     "\"softmax_kernel_impl\" not implemented for 'Long'"),
    (lambda: F.log_softmax(ag.ones(2, 2, dtype=ag.int32), 1), NotImplementedError,
     "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Int'"),
    (lambda: F.softmin(ag.tensor([1, 2]), 0), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda: F.softmax(ag.ones(2, 2), (0, 1)), TypeError,
     "softmax(): argument 'dim' (position 1) must be int, not tuple"),
    (lambda: F.log_softmax(ag.ones(2, 2), 1.0), TypeError,
     "log_softmax(): argument 'dim' (position 1) must be int, not float"),
    (lambda: F.softmax(ag.ones(3, 4), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: F.log_softmax(ag.ones(3, 4), -3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda: F.softmax(ag.tensor(1.0), 1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
]


@pytest.mark.parametrize("call, error, message", SOFTMAX_ERRORS)
def test_softmax_errors_are_pytorchs(call, error, message):
    with pytest.raises(error, match=exact(message)):
        call()


@pytest.mark.parametrize("shape, dim", [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), 0)])
def test_softmaxes_of_empty_inputs_are_silent(shape, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.log_softmax(ag.zeros(shape), dim).shape == shape
        assert F.softmax(ag.zeros(shape), dim).shape == shape


# -- dropout -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, name", [(ag.int64, "Long"), (ag.int32, "Int"), (ag.bool, "Bool")])
def test_dropout_of_a_non_float_tensor_is_pytorchs_cast_error(dtype, name):
    with pytest.raises(RuntimeError, match=exact(f"result type Float can't be cast to the desired output type {name}")):
        F.dropout(ag.ones(4, dtype=dtype), 0.5)


def test_dropout_of_a_non_float_tensor_with_p_0_or_1_needs_no_scale():
    assert F.dropout(ag.arange(4), 1.0).numpy().tolist() == [0, 0, 0, 0]
    assert F.dropout(ag.arange(4), 0.0).numpy().tolist() == [0, 1, 2, 3]
    assert F.dropout(ag.arange(4), 0.5, training=False).numpy().tolist() == [0, 1, 2, 3]


# -- pad ---------------------------------------------------------------------------------------------------------
def test_pad_of_a_0d_tensor_with_no_pads_is_a_copy():
    x = ag.tensor(1.0, requires_grad=True)
    y = F.pad(x, ())
    assert y.shape == () and y.item() == 1.0 and y.requires_grad


PAD_ERRORS = [
    ((2, 3), (1,), {}, RuntimeError, "Padding length must be divisible by 2"),
    ((2, 3), (-2, -2), {}, RuntimeError, "narrow(): length must be non-negative."),
    ((2, 3), (-4, 2), {}, RuntimeError, "narrow(): length must be non-negative."),
    ((), (0, 0), {}, RuntimeError, "Padding length should be less than or equal to two times the input dimension "
                                   "but got padding length 2 and input of dimension 0"),
    ((2, 3), (1, 1), {"mode": "foo"}, NotImplementedError, "Unrecognised padding mode foo"),
    ((1, 2, 3), (1, 1), {"mode": "reflect", "value": 1.0}, RuntimeError,
     "Padding mode \"reflect\" doesn't take in value argument"),
    ((3,), (1, 1), {"mode": "reflect"}, NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor.\nSupported combinations for non-constant padding:\n"
     "  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 "
     "dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"),
    ((1, 2, 3), (3, 0), {"mode": "reflect"}, RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 0) at "
     "dimension 2 of input [1, 2, 3]"),
    ((1, 2, 3), (0, 0, 2, 0), {"mode": "reflect"}, RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (2, 0) at "
     "dimension 1 of input [1, 2, 3]"),
    ((1, 2, 0), (1, 1), {"mode": "replicate"}, RuntimeError,
     "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
     "got: [1, 2, 0]"),
    ((1, 2, 3), (-2, -2), {"mode": "replicate"}, RuntimeError, "input (W: 3) is too small. Calculated output W: -1"),
    ((1, 2, 3), (-2, -1) * 2, {"mode": "replicate"}, RuntimeError,
     "input (H: 2, W: 3 ) is too small. Calculated output H: -1 W: 0"),
    ((1, 2, 3), (-2, -1) * 2, {"mode": "reflect"}, RuntimeError,
     "input (H: 2, W: 3) is too small. Calculated output H: -1 W: 0"),
    ((1, 2, 3), (1, 1), {"mode": "reflect", "dtype": ag.bool}, NotImplementedError,
     "\"reflection_pad1d\" not implemented for 'Bool'"),
    ((1, 2, 3), (1, 1, 1, 1), {"mode": "replicate", "dtype": ag.bool}, NotImplementedError,
     "\"replication_pad2d\" not implemented for 'Bool'"),
    ((1, 2, 3), (4, 0), {"mode": "circular"}, RuntimeError, "Padding value causes wrapping around more than once."),
    ((1, 2, 3), (-2, -2), {"mode": "circular"}, RuntimeError,
     "Negative padding value is resulting in an empty dimension"),
]


@pytest.mark.parametrize("shape, pad, kwargs, error, message", PAD_ERRORS)
def test_pad_errors_are_pytorchs(shape, pad, kwargs, error, message):
    dtype = kwargs.pop("dtype", ag.float32)
    with pytest.raises(error, match=exact(message)):
        F.pad(ag.ones(shape, dtype=dtype), pad, **kwargs)


PADDED = {
    "reflect": [[[5.0, 4.0, 3.0, 4.0, 5.0, 4.0], [2.0, 1.0, 0.0, 1.0, 2.0, 1.0], [5.0, 4.0, 3.0, 4.0, 5.0, 4.0]]],
    "replicate": [[[0.0, 0.0, 0.0, 1.0, 2.0, 2.0], [0.0, 0.0, 0.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 4.0, 5.0, 5.0]]],
    "circular": [[[4.0, 5.0, 3.0, 4.0, 5.0, 3.0], [1.0, 2.0, 0.0, 1.0, 2.0, 0.0], [4.0, 5.0, 3.0, 4.0, 5.0, 3.0]]],
}
# the gradient of the sum of F.pad(x, (2, 2), mode) for x of shape (1, 2, 3): how often each element was taken
PADDED_GRAD = {
    "reflect": [[[2.0, 3.0, 2.0], [2.0, 3.0, 2.0]]],
    "replicate": [[[3.0, 1.0, 3.0], [3.0, 1.0, 3.0]]],
    "circular": [[[2.0, 3.0, 2.0], [2.0, 3.0, 2.0]]],
}


@pytest.mark.parametrize("mode", sorted(PADDED))
def test_pad_modes_values_and_gradients_are_pytorchs(mode):
    assert F.pad(ag.arange(6.0).reshape(1, 2, 3), (2, 1, 1, 0), mode=mode).numpy().tolist() == PADDED[mode]
    x = ag.arange(6.0, dtype=ag.float64).reshape(1, 2, 3).requires_grad_()
    F.pad(x, (2, 2), mode=mode).sum().backward()
    assert x.grad.numpy().tolist() == PADDED_GRAD[mode]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [((2, 3, 4), (2, 3)), ((2, 3, 4), (1, -1, 2, 0)),
                                        ((2, 2, 3, 4), (2, 3, 1, 2, 0, 1)), ((0, 2, 4), (1, 1))])
def test_pad_modes_gradients_match_finite_differences(mode, shape, pad):
    x = ag.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))
    assert gradgradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))


def test_pad_modes_keep_integer_dtypes_and_negative_pads_crop():
    x = ag.arange(6).reshape(1, 2, 3)
    assert F.pad(x, (1, 1), mode="reflect").numpy().tolist() == [[[1, 0, 1, 2, 1], [4, 3, 4, 5, 4]]]
    assert F.pad(x, (-1, 1), mode="circular").numpy().tolist() == [[[1, 2, 1], [4, 5, 4]]]
    assert F.pad(x, (-1, 1), mode="replicate").numpy().tolist() == [[[1, 2, 2], [4, 5, 5]]]


# -- one_hot -----------------------------------------------------------------------------------------------------
def test_one_hot_values():
    out = F.one_hot(ag.tensor([0, 2, 1]))
    assert out.dtype == ag.int64 and out.numpy().tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(ag.tensor(2), 4).numpy().tolist() == [0, 0, 1, 0]
    assert F.one_hot(ag.tensor([[1], [0]]), num_classes=3).shape == (2, 1, 3)
    assert F.one_hot(ag.zeros(0, dtype=ag.int64), 3).shape == (0, 3)


ONE_HOT_ERRORS = [
    (ag.tensor([0, -1]), 3, "Class values must be non-negative."),
    (ag.tensor([0, 3]), 3, "Class values must be smaller than num_classes."),
    (ag.tensor([0]), 0, "Class values must be smaller than num_classes."),
    (ag.zeros(0, dtype=ag.int64), -1, "Can not infer total number of classes from empty tensor."),
    (ag.tensor([0, 1], dtype=ag.int32), -1, "one_hot is only applicable to index tensor of type LongTensor."),
    (ag.tensor([0.0]), -1, "one_hot is only applicable to index tensor of type LongTensor."),
]


@pytest.mark.parametrize("tensor, num_classes, message", ONE_HOT_ERRORS)
def test_one_hot_errors_are_pytorchs(tensor, num_classes, message):
    with pytest.raises(RuntimeError, match=exact(message)):
        F.one_hot(tensor, num_classes)


# -- modules -----------------------------------------------------------------------------------------------------
REPRS = [
    (nn.ELU(), "ELU(alpha=1.0)"), (nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"), (nn.SELU(), "SELU()"),
    (nn.SELU(True), "SELU(inplace=True)"), (nn.CELU(2.0, True), "CELU(alpha=2.0, inplace=True)"),
    (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 3, True), "Hardtanh(min_val=-2, max_val=3, inplace=True)"), (nn.ReLU6(), "ReLU6()"),
    (nn.ReLU6(True), "ReLU6(inplace=True)"), (nn.Hardsigmoid(True), "Hardsigmoid()"),
    (nn.Hardswish(True), "Hardswish()"), (nn.Mish(True), "Mish(inplace=True)"), (nn.LogSigmoid(), "LogSigmoid()"),
    (nn.Softsign(), "Softsign()"), (nn.Tanhshrink(), "Tanhshrink()"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (nn.Threshold(1, 2, True), "Threshold(threshold=1, value=2, inplace=True)"), (nn.GLU(), "GLU(dim=-1)"),
    (nn.PReLU(), "PReLU(num_parameters=1)"), (nn.PReLU(3, 0.1), "PReLU(num_parameters=3)"),
    (nn.Softmin(), "Softmin(dim=None)"), (nn.Softmin(1), "Softmin(dim=1)"),
]


@pytest.mark.parametrize("module, text", REPRS, ids=[t for _, t in REPRS])
def test_activation_module_reprs_are_pytorchs(module, text):
    assert repr(module) == text


MODULES = [
    (nn.ELU(0.5), lambda x: F.elu(x, 0.5)), (nn.SELU(), F.selu), (nn.CELU(2.0), lambda x: F.celu(x, 2.0)),
    (nn.Hardtanh(-0.5, 2.0), lambda x: F.hardtanh(x, -0.5, 2.0)), (nn.ReLU6(), F.relu6),
    (nn.Hardsigmoid(), F.hardsigmoid), (nn.Hardswish(), F.hardswish), (nn.Mish(), F.mish),
    (nn.LogSigmoid(), F.logsigmoid), (nn.Softsign(), F.softsign), (nn.Tanhshrink(), F.tanhshrink),
    (nn.Threshold(0.5, -2.0), lambda x: F.threshold(x, 0.5, -2.0)), (nn.GLU(0), lambda x: F.glu(x, 0)),
    (nn.Softmin(0), lambda x: F.softmin(x, 0)),
]


@pytest.mark.parametrize("module, fn", MODULES, ids=[type(m).__name__ for m, _ in MODULES])
def test_activation_modules_run_their_function(module, fn):
    x = points()
    np.testing.assert_array_equal(module(x).numpy(), fn(x).numpy())


def test_inplace_activation_modules_write_into_their_input():
    x = points()
    expected = F.elu(x).numpy()
    assert nn.ELU(inplace=True)(x) is x
    np.testing.assert_array_equal(x.numpy(), expected)


def test_prelu_module_learns_one_slope_per_channel():
    m = nn.PReLU(3, 0.1)
    assert [name for name, _ in m.named_parameters()] == ["weight"]
    assert m.weight.dtype == ag.float32 and m.weight.detach().numpy().tolist() == pytest.approx([0.1] * 3)
    x = ag.tensor([[-1.0, 2.0, -4.0]])
    m(x).sum().backward()
    assert m.weight.grad.numpy().tolist() == [-1.0, 0.0, -4.0]


def test_hardtanh_module_checks_its_bounds_and_takes_the_deprecated_names():
    with pytest.raises(AssertionError, match=exact("max_val (1.0) must be greater than min_val (1.0)")):
        nn.Hardtanh(1.0, 1.0)
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and renamed to `min_val`"):
        assert nn.Hardtanh(min_value=-2.0).min_val == -2.0


# -- gradients recorded under create_graph ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, shape, name",
    [
        (F.relu6, (6,), "HardtanhBackwardBackward0"),
        (lambda t: F.hardtanh(t, -2.0, 2.0), (6,), "HardtanhBackwardBackward0"),
        (lambda t: F.threshold(t, 0.5, -1.0), (6,), "ThresholdBackwardBackward0"),
        (lambda t: ag.threshold(t, 0.5, -1.0), (6,), "ThresholdBackwardBackward0"),
        (lambda t: F.leaky_relu(t, 0.2), (6,), "LeakyReluBackwardBackward0"),
        (F.hardsigmoid, (6,), "HardsigmoidBackwardBackward0"),  # PyTorch's raises on this double backward
        (lambda t: F.pad(t, (2, 1), mode="reflect"), (1, 2, 3), "ReflectionPad1DBackwardBackward0"),
        (lambda t: F.pad(t, (1, 2, 1, 0), mode="reflect"), (1, 2, 3), "ReflectionPad2DBackwardBackward0"),
        (lambda t: F.pad(t, (2, 1), mode="replicate"), (2, 3), "ReplicationPad1DBackwardBackward0"),
        (lambda t: F.pad(t, (1, 2, 1, 0), mode="replicate"), (1, 2, 3), "ReplicationPad2DBackwardBackward0"),
        (lambda t: F.pad(t, (1, 0, 1, 1, 0, 1), mode="replicate"), (1, 1, 2, 3),
         "ReplicationPad3DBackwardBackward0"),
    ],
)
def test_piecewise_linear_gradients_stay_connected_to_the_input_and_differentiate_to_zero(fn, shape, name):
    # from an upstream gradient that needs none, PyTorch's gradient is still a node on the input, whose gradient
    # is zero: a double backward returns zeros rather than failing
    x = ag.tensor(np.reshape(POINTS, shape), dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == name
    (gg,) = ag.autograd.grad(g.sum(), x)
    assert gg.flatten().tolist() == [0.0] * 6


def test_index_padding_is_recorded_as_pytorchs_nodes_and_differentiates_twice():
    x = points(requires_grad=True)
    assert F.pad(x.reshape(2, 3), (2, 1), mode="reflect").grad_fn.name() == "ReflectionPad1DBackward0"
    assert F.pad(x.reshape(1, 2, 3), (1, 1, 1, 0), mode="replicate").grad_fn.name() == "ReplicationPad2DBackward0"
    for mode in ("reflect", "replicate"):
        fn = lambda t, mode=mode: F.pad(t.reshape(1, 2, 3), (2, 1, 1, 0), mode=mode) ** 2  # noqa: E731
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_prelu_gradients_are_connected_to_input_and_weight():
    x = ag.tensor([-4.0, 1.0, 4.0, 0.5], dtype=ag.float64, requires_grad=True)
    w = ag.tensor([0.25], dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(F.prelu(x, w).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "PreluKernelBackwardBackward0"
    assert [t.tolist() for t in ag.autograd.grad(g.sum(), (x, w))] == [[0.0] * 4, [1.0]]
    v = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=ag.float64)
    # prelu(x, w) v w is w^2 v x where x < 0, else w v x: gx = w^2 v or w v, gw = 2 w v x or v x (summed)
    gx, gw = ag.autograd.grad((F.prelu(x, w) * v * w).sum(), (x, w), create_graph=True)
    assert gx.tolist() == [0.0625, 0.5, 0.75, 1.0] and gw.tolist() == [14.0]
    second = ag.autograd.grad((gx * v).sum() + gw.sum() * 3, (x, w))
    assert [t.tolist() for t in second] == [[1.5, 6.0, 9.0, 12.0], [5.5]]
    # the weight's gradient alone, of an input that needs none
    (gw,) = ag.autograd.grad(F.prelu(x.detach(), w).sum(), w, create_graph=True)
    assert gw.tolist() == [-4.0] and ag.autograd.grad(gw.sum(), w)[0].tolist() == [0.0]
    y = ag.tensor(np.arange(12.0).reshape(2, 3, 2) - 5.5, requires_grad=True)
    slopes = ag.tensor([0.25, 0.5, 2.0], dtype=ag.float64, requires_grad=True)
    assert gradgradcheck(lambda t, s: F.prelu(t, s) ** 2, (y, slopes))


@pytest.mark.parametrize(
    "fn, slope",
    [(F.elu, 1.0), (lambda t: F.celu(t, 0.5), 1.0), (F.selu, SELU_SCALE * SELU_ALPHA)],
)
def test_elu_family_second_derivative_at_zero_is_pytorchs(fn, slope):
    # PyTorch takes the exponential side's slope at 0 but its second derivative only where x < 0
    x = ag.zeros(2, dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert g.tolist() == [slope, slope]
    assert ag.autograd.grad(g.sum(), x)[0].tolist() == [0.0, 0.0]


