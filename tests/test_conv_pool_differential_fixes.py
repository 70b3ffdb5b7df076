"""Behaviours of the convolutions, poolings and padding found to differ from PyTorch's by differential testing,
each checked against an independent computation: adaptive average pooling of inputs holding NaN or infinity,
float16 average pooling rounded once, numpy integers as sizes, Conv's `_reversed_padding_repeated_twice` and
constant padding values that overflow the dtype."""

import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(29)


def _bins(size: int, out: int) -> list[slice]:
    """Adaptive pooling's bin i along a dim: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [slice(i * size // out, math.ceil((i + 1) * size / out)) for i in range(out)]


def _adaptive_means(x: np.ndarray, outs: tuple[int, ...]) -> np.ndarray:
    """Each bin's mean over the last len(outs) dims, one bin at a time (so a NaN stays in its bins)."""
    dims = len(outs)
    lead = x.shape[:-dims]
    result = np.empty((*lead, *outs))
    grids = [_bins(n, o) for n, o in zip(x.shape[-dims:], outs)]
    for place in np.ndindex(*outs):
        window = x[(..., *(grid[i] for grid, i in zip(grids, place)))]
        result[(..., *place)] = window.reshape(*lead, -1).mean(-1)
    return result


def _adaptive_spread(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The gradient of the means over an (N, C, ...) input: each bin's gradient over its count, added to each of
    its places."""
    outs = g.shape[2:]
    grids = [_bins(n, o) for n, o in zip(shape[2:], outs)]
    grad = np.zeros(shape)
    for place in np.ndindex(*outs):
        where = (..., *(grid[i] for grid, i in zip(grids, place)))
        count = math.prod(s.stop - s.start for s in where[1:])
        grad[where] += g[(..., *place)][(...,) + (None,) * len(outs)] / count
    return grad


@pytest.mark.parametrize("outs", [(3, 4), (2, 5), (7, 1), (4, 6)])
def test_adaptive_avg_pool2d_keeps_nan_and_infinity_in_their_own_bins(outs):
    x = RNG.standard_normal((2, 3, 7, 6))
    x[0, 1, 2, 3] = np.inf
    x[1, 0, 5, 0] = -np.inf
    x[1, 2, 0, 5] = np.nan
    t = ag.tensor(x, requires_grad=True)
    out = F.adaptive_avg_pool2d(t, outs)
    expected = _adaptive_means(x, outs)
    assert np.isfinite(expected).sum() > expected.size // 2  # most bins hold none of them
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    g = RNG.standard_normal(out.shape)
    (grad,) = ag.autograd.grad(out, t, ag.tensor(g))
    np.testing.assert_allclose(grad.numpy(), _adaptive_spread(g, x.shape), rtol=1e-12)


def test_adaptive_avg_pool3d_and_1d_keep_an_infinity_in_its_own_bins():
    x = RNG.standard_normal((1, 2, 5, 4, 7))
    x[0, 1, 3, 2, 6] = np.inf
    out = F.adaptive_avg_pool3d(ag.tensor(x), (2, 3, 3))
    np.testing.assert_allclose(out.numpy(), _adaptive_means(x, (2, 3, 3)), rtol=1e-12)
    line = RNG.standard_normal((2, 9))
    line[1, 4] = np.nan
    out = F.adaptive_avg_pool1d(ag.tensor(line), 4)
    np.testing.assert_allclose(out.numpy(), _adaptive_means(line, (4,)), rtol=1e-12)


@pytest.mark.parametrize("outs", [(3, 4), (None, 2), (5, 9)])
def test_adaptive_avg_pool2d_gradient_and_its_gradient_against_finite_differences(outs):
    x = ag.tensor(RNG.standard_normal((2, 2, 5, 6)), requires_grad=True)
    assert gradcheck(lambda t: F.adaptive_avg_pool2d(t, outs), (x,))
    assert gradgradcheck(lambda t: F.adaptive_avg_pool2d(t, outs) ** 2, (x,))
    assert F.adaptive_avg_pool2d(x, outs).grad_fn.name() == "AdaptiveAvgPool2DBackward0"


def test_adaptive_avg_pool3d_gradient_and_its_gradient_against_finite_differences():
    x = ag.tensor(RNG.standard_normal((1, 2, 5, 3, 4)), requires_grad=True)
    assert gradcheck(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 3)), (x,))
    assert gradgradcheck(lambda t: F.adaptive_avg_pool3d(t, (3, 2, 3)) ** 2, (x,))
    out = F.adaptive_avg_pool3d(x, (2, 3, 3))
    g = RNG.standard_normal(out.shape)
    (grad,) = ag.autograd.grad(out, x, ag.tensor(g))
    np.testing.assert_allclose(grad.numpy(), _adaptive_spread(g, x.shape), rtol=1e-12)


@pytest.mark.parametrize("outs", [(4, 4), (3, 3), (2, 5), (1, 1)])
def test_float16_adaptive_avg_pool2d_is_the_exact_mean_rounded_once(outs):
    x = np.random.default_rng(3).standard_normal((2, 3, 9, 9)).astype(np.float16)  # fixed: exact comparison
    out = F.adaptive_avg_pool2d(ag.tensor(x), outs)
    assert out.dtype == ag.float16
    expected = _adaptive_means(x.astype(np.float64), outs).astype(np.float16)
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("pool, shape, kwargs, windows", [
    (F.avg_pool2d, (2, 3, 9, 8), {"kernel_size": 3}, (3, 3)),
    (F.avg_pool1d, (2, 3, 12), {"kernel_size": 3}, (3,)),
])  # avg_pool3d has no float16 CPU kernel in PyTorch (tests/test_conv_pool_loss_fuzz_fixes.py)
def test_float16_avg_pool_is_the_exact_mean_rounded_once(pool, shape, kwargs, windows):
    x = (np.random.default_rng(5).standard_normal(shape) * 8).astype(np.float16)  # fixed: exact comparison
    out = pool(ag.tensor(x), **kwargs)
    assert out.dtype == ag.float16
    lead = shape[:-len(windows)]
    outs = [n // k for n, k in zip(shape[-len(windows):], windows)]
    crop = x[(..., *(slice(0, o * k) for o, k in zip(outs, windows)))].astype(np.float64)
    split = crop.reshape(*lead, *(v for o, k in zip(outs, windows) for v in (o, k)))
    inner = tuple(len(lead) + 2 * i + 1 for i in range(len(windows)))
    np.testing.assert_array_equal(out.numpy(), split.mean(inner).astype(np.float16))


def test_conv_takes_numpy_integers_and_integer_tensors_for_its_sizes():
    x = ag.tensor(RNG.standard_normal((2, 4, 7, 6)))
    w = ag.tensor(RNG.standard_normal((6, 2, 3, 3)))
    expected = F.conv2d(x, w, stride=2, padding=1, dilation=2, groups=2).numpy()
    got = F.conv2d(x, w, stride=np.int64(2), padding=(np.int32(1), 1), dilation=ag.tensor(2), groups=np.int64(2))
    np.testing.assert_array_equal(got.numpy(), expected)
    wt = ag.tensor(RNG.standard_normal((4, 3, 2, 2)))
    expected = F.conv_transpose2d(x, wt, stride=2, output_padding=1, groups=2).numpy()
    got = F.conv_transpose2d(x, wt, stride=np.int64(2), output_padding=np.int64(1), groups=np.int64(2))
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("call, message", [
    (lambda x, w: F.conv2d(x, w, stride=1.5), "conv2d(): argument 'stride' must be tuple of ints, not float"),
    (lambda x, w: F.conv2d(x, w, padding=(1, 1.0)),
     "conv2d(): argument 'padding' must be tuple of ints, but found element of type float at pos 1"),
    (lambda x, w: F.conv2d(x, w, groups=2.0), "conv2d(): argument 'groups' must be int, not float"),
    (lambda x, w: F.conv2d(x, w, dilation=True), "conv2d(): argument 'dilation' must be tuple of ints, not bool"),
])
def test_conv_refuses_sizes_that_are_not_integers_with_a_type_error(call, message):
    x, w = ag.ones(1, 4, 5, 5), ag.ones(2, 4, 3, 3)
    with pytest.raises(TypeError, match=f"^{message.replace('(', r'[(]').replace(')', r'[)]')}$"):
        call(x, w)


@pytest.mark.parametrize("pool, shape", [
    (F.max_pool1d, (2, 3, 9)), (F.avg_pool1d, (2, 3, 9)), (F.max_pool2d, (2, 3, 7, 6)), (F.avg_pool2d, (2, 3, 7, 6)),
    (F.max_pool3d, (1, 2, 5, 6, 7)), (F.avg_pool3d, (1, 2, 5, 6, 7)),
])
def test_poolings_take_numpy_integers_as_sizes(pool, shape):
    x = ag.tensor(RNG.standard_normal(shape))
    expected = pool(x, 3, 2, 1).numpy()
    np.testing.assert_array_equal(pool(x, np.int64(3), np.int32(2), np.int64(1)).numpy(), expected)
    np.testing.assert_array_equal(pool(x, [np.int64(3)] * (len(shape) - 2), stride=(2,)).numpy(),
                                  pool(x, 3, 2).numpy())


def test_lp_and_adaptive_1d_poolings_take_numpy_integers():
    x = ag.tensor(RNG.standard_normal((2, 3, 9)))
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, np.int64(4)).numpy(), _adaptive_means(x.numpy(), (4,)),
                               rtol=1e-12)
    np.testing.assert_array_equal(F.adaptive_max_pool1d(x, np.int64(4)).numpy(), F.adaptive_max_pool1d(x, 4).numpy())
    np.testing.assert_array_equal(F.lp_pool1d(x, 2, np.int64(3)).numpy(), F.lp_pool1d(x, 2, 3).numpy())


def test_adaptive_max_pool1d_takes_an_empty_batch_or_unbatched_channels():
    assert F.adaptive_max_pool1d(ag.zeros(0, 3, 5), 2).shape == (0, 3, 2)
    assert F.adaptive_max_pool1d(ag.zeros(0, 5), 2).shape == (0, 2)


@pytest.mark.parametrize("shape, dim", [((3, 0), 1), ((2, 0, 5), 1), ((2, 3, 0), 2)])
def test_adaptive_max_pool1d_names_itself_and_the_empty_dim(shape, dim):
    message = ("adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has "
               f"sizes {list(shape)} with dimension {dim} being empty")
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        F.adaptive_max_pool1d(ag.zeros(shape), 2)


def test_avg_pool_divisor_override_takes_a_numpy_integer_and_keeps_the_dtype():
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    out = F.avg_pool2d(ag.tensor(x), 2, divisor_override=np.int64(3))
    assert out.dtype == ag.float32
    expected = x.reshape(1, 2, 2, 2, 2, 2).sum((3, 5)) / 3
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match=r"^avg_pool2d\(\): argument 'divisor_override' must be int, not float$"):
        F.avg_pool2d(ag.tensor(x), 2, divisor_override=3.0)


@pytest.mark.parametrize("call, message", [
    (lambda x: F.max_pool2d(x, 2.0), r"max_pool2d\(\): argument 'kernel_size' \(position 2\) must be tuple of ints, "
                                     "not float"),
    (lambda x: F.max_pool2d(x, (2, 2.0)), r"max_pool2d\(\): argument 'kernel_size' \(position 2\) must be tuple of "
                                          "ints, but found element of type float at pos 1"),
    (lambda x: F.max_pool2d(x, 2, stride=1.0), r"max_pool2d\(\): argument 'stride' \(position 3\) must be tuple of "
                                               "ints, not float"),
    (lambda x: F.avg_pool2d(x, 2.0), r"avg_pool2d\(\): argument 'kernel_size' must be tuple of ints, not float"),
    (lambda x: F.avg_pool1d(x[0], 2.0), r"avg_pool1d\(\): argument 'kernel_size' must be tuple of ints, not float"),
    (lambda x: F.max_pool1d(x[0], True), r"max_pool1d\(\): argument 'kernel_size' \(position 2\) must be tuple of "
                                         "ints, not bool"),
])
def test_poolings_refuse_sizes_that_are_not_integers_with_pytorchs_type_error(call, message):
    with pytest.raises(TypeError, match=f"^{message}$"):
        call(ag.ones(1, 2, 6, 6))


@pytest.mark.parametrize("padding, expected", [(1, (1, 1, 1, 1)), ((1, 2), (2, 2, 1, 1)), (0, (0, 0, 0, 0)),
                                               ("valid", [0, 0, 0, 0]), ("same", [1, 1, 1, 1])])
def test_conv_reversed_padding_is_a_tuple_for_numbers_and_a_list_for_strings(padding, expected):
    widths = nn.Conv2d(2, 2, 3, padding=padding)._reversed_padding_repeated_twice
    assert type(widths) is type(expected) and widths == expected
    assert nn.ConvTranspose2d(2, 2, 3, padding=1)._reversed_padding_repeated_twice == (1, 1, 1, 1)


@pytest.mark.parametrize("dtype, value, c_type", [
    (ag.uint8, -1, "uint8_t"), (ag.uint8, 256, "uint8_t"), (ag.uint8, 255.5, "uint8_t"), (ag.int8, 128, "int8_t"),
    (ag.int16, 40000, "int16_t"), (ag.int32, 2 ** 31, "int"), (ag.int64, float("nan"), "int64_t"),
    (ag.float16, 70000.0, "c10::Half"), (ag.float32, 1e300, "float"),
])
def test_constant_pad_refuses_a_value_its_dtype_cannot_hold(dtype, value, c_type):
    with pytest.raises(RuntimeError, match=f"^value cannot be converted to type {c_type} without overflow$"):
        F.pad(ag.zeros(2, dtype=dtype), (1, 1), value=value)


@pytest.mark.parametrize("dtype, value, fill", [(ag.uint8, 255, 255), (ag.int8, -128.0, -128), (ag.int32, 1.7, 1),
                                                (ag.float16, float("inf"), np.inf), (ag.bool, 2, True)])
def test_constant_pad_takes_a_value_its_dtype_holds(dtype, value, fill):
    out = F.pad(ag.zeros(2, dtype=dtype), (1, 1), value=value)
    np.testing.assert_array_equal(out.numpy(), np.array([fill, 0, 0, fill]).astype(out.numpy().dtype))


def test_constant_pad_refuses_a_complex_value():
    with pytest.raises(TypeError, match=r"^pad\(\): argument 'value' \(position 4\) must be float, not complex$"):
        F.pad(ag.zeros(2), (1, 1), value=1j)


@pytest.mark.gpu
def test_adaptive_and_float16_average_pooling_on_cuda_give_the_exact_means(cupy):
    x = RNG.standard_normal((2, 3, 7, 6))
    x[0, 1, 2, 3] = np.inf
    t = ag.tensor(x, device="cuda", requires_grad=True)
    out = F.adaptive_avg_pool2d(t, (3, 4))
    assert out.device == t.device
    np.testing.assert_allclose(out.detach().cpu().numpy(), _adaptive_means(x, (3, 4)), rtol=1e-12)
    g = RNG.standard_normal(out.shape)
    (grad,) = ag.autograd.grad(out, t, ag.tensor(g, device="cuda"))
    np.testing.assert_allclose(grad.cpu().numpy(), _adaptive_spread(g, x.shape), rtol=1e-12)
    half = np.random.default_rng(3).standard_normal((2, 3, 9, 9)).astype(np.float16)
    out = F.avg_pool2d(ag.tensor(half, device="cuda"), 3)
    expected = half.astype(np.float64).reshape(2, 3, 3, 3, 3, 3).mean((3, 5)).astype(np.float16)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    out = F.adaptive_avg_pool2d(ag.tensor(half, device="cuda"), (2, 5))
    expected = _adaptive_means(half.astype(np.float64), (2, 5)).astype(np.float16)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
