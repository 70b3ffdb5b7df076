"""conv3d, conv_transpose3d, the 3-d poolings, their modules, BatchNorm3d/InstanceNorm3d and interpolate's area mode
on 5-D input, as PyTorch's.

Expected values and indices come from numpy written out of each op's documented definition (`_conv3d_ref`,
`_conv_transpose3d_ref`, `_max_pool3d_ref`, `_avg_pool3d_ref`, `_adaptive_pool3d_ref`: loops over the output
positions of small inputs), and the gradients of the linear ops from the same references by brute force; the others
are checked against finite differences in float64, conv3d's and conv_transpose3d's to second order. Error messages
are PyTorch's texts. Inputs are fixed formulas (`_wave`).
"""

import itertools
import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _wave(shape, phase=0.0):
    return np.sin(0.7 * np.arange(int(np.prod(shape))) + phase).reshape(shape) * 1.3


def _t(shape, phase=0.0, requires_grad=True):
    return ag.tensor(_wave(shape, phase), requires_grad=requires_grad)


def _leaf(shape, seed):
    return ag.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _close(t, expected, shape=None):
    if shape is not None:
        assert t.shape == shape
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=1e-10, atol=1e-12)


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


def _conv3d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, p] = b[o] + sum over c, k of w[o, c, k] * x_padded[n, group(o) * C + c, p * stride + k * dilation],
    one output position at a time."""
    if x.ndim == 4:
        return _conv3d_ref(x[None], w, b, stride, padding, dilation, groups)[0]
    s, d, k = _triple(stride), _triple(dilation), w.shape[2:]
    if padding == "valid":
        pads = [(0, 0)] * 3
    elif padding == "same":  # the total padding d * (k - 1), the odd one on the right
        pads = [(t // 2, t - t // 2) for t in (di * (ki - 1) for di, ki in zip(d, k))]
    else:
        pads = [(p, p) for p in _triple(padding)]
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    size = [(n - di * (ki - 1) - 1) // si + 1 for n, di, ki, si in zip(xp.shape[2:], d, k, s)]
    cin, cout = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *size))
    for p in np.ndindex(*size):
        spots = (slice(pi * si, pi * si + di * (ki - 1) + 1, di) for pi, si, di, ki in zip(p, s, d, k))
        window = xp[(Ellipsis, *spots)]
        for g in range(groups):
            out[(slice(None), slice(g * cout, (g + 1) * cout), *p)] = np.einsum(
                "ncdhw,ocdhw->no", window[:, g * cin:(g + 1) * cin], w[g * cout:(g + 1) * cout])
    return out if b is None else out + np.reshape(b, (-1, 1, 1, 1))


def _conv_transpose3d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Each input element x[n, c, i] adds w[c, o, k] * x[n, c, i] at out[n, group(c) * O + o, i * stride - padding +
    k * dilation]; output_padding extends the far end."""
    s, p, op, d, k = _triple(stride), _triple(padding), _triple(output_padding), _triple(dilation), w.shape[2:]
    cin, cout = x.shape[1] // groups, w.shape[1]
    full = [(n - 1) * si + di * (ki - 1) + 1 + opi for n, si, di, ki, opi in zip(x.shape[2:], s, d, k, op)]
    out = np.zeros((x.shape[0], cout * groups, *full))
    for i in np.ndindex(*x.shape[2:]):
        spots = tuple(slice(ii * si, ii * si + di * (ki - 1) + 1, di) for ii, si, di, ki in zip(i, s, d, k))
        for g in range(groups):
            out[(slice(None), slice(g * cout, (g + 1) * cout), *spots)] += np.einsum(
                "nc,codhw->nodhw", x[(slice(None), slice(g * cin, (g + 1) * cin), *i)], w[g * cin:(g + 1) * cin])
    out = out[(Ellipsis, *(slice(pi, n - pi) for pi, n in zip(p, full)))]
    return out if b is None else out + np.reshape(b, (-1, 1, 1, 1))


def _grad_of_linear(f, a, upstream):
    """d (f(a) * upstream).sum() / d a for f linear in a, by brute force: f of each unit array."""
    grad = np.zeros(a.shape)
    for j in range(a.size):
        unit = np.zeros(a.shape)
        unit.flat[j] = 1.0
        grad.flat[j] = (f(unit) * upstream).sum()
    return grad


def _pool_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling output length: a ceil_mode window must start inside the input or the left padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= n + p else out


def _max_pool3d_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """The maximum over each window's in-input elements and its flat index in the (D, H, W) volume: the first of
    equal maxima, the last NaN."""
    k, p, d = _triple(kernel_size), _triple(padding), _triple(dilation)
    s = k if stride is None else _triple(stride)
    size = [_pool_size(*a, ceil_mode) for a in zip(x.shape[2:], k, s, p, d)]
    values, indices = np.zeros((*x.shape[:2], *size)), np.zeros((*x.shape[:2], *size), dtype=np.int64)
    for nc in np.ndindex(*x.shape[:2]):
        for o in np.ndindex(*size):
            spots = [[oi * si - pi + j * di for j in range(ki) if 0 <= oi * si - pi + j * di < n]
                     for oi, si, pi, di, ki, n in zip(o, s, p, d, k, x.shape[2:])]
            best, where = -math.inf, -1
            for spot in itertools.product(*spots):
                value = x[(*nc, *spot)]
                if value > best or math.isnan(value):
                    best, where = value, np.ravel_multi_index(spot, x.shape[2:])
            values[(*nc, *o)], indices[(*nc, *o)] = best, where
    return values, indices


def _avg_pool3d_ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    """Each window's sum over its in-input elements, divided by divisor_override, or by the window's size clipped to
    the padded input (count_include_pad) or to the input; integer sums divide toward zero."""
    k, p = _triple(kernel_size), _triple(padding)
    s = k if stride is None else _triple(stride)
    size = [_pool_size(n, ki, si, pi, 1, ceil_mode) for n, ki, si, pi in zip(x.shape[2:], k, s, p)]
    out = np.zeros((*x.shape[:2], *size), dtype=x.dtype)
    for o in np.ndindex(*size):
        starts = [oi * si - pi for oi, si, pi in zip(o, s, p)]
        ends = [min(a + ki, n + pi) for a, ki, n, pi in zip(starts, k, x.shape[2:], p)]
        padded = math.prod(e - a for a, e in zip(starts, ends))
        inside = [slice(max(a, 0), min(e, n)) for a, e, n in zip(starts, ends, x.shape[2:])]
        total = x[(Ellipsis, *inside)].sum(axis=(2, 3, 4))
        divisor = divisor_override or (padded if count_include_pad else math.prod(i.stop - i.start for i in inside))
        if np.issubdtype(x.dtype, np.integer):
            out[(Ellipsis, *o)] = np.sign(total) * (np.abs(total) // divisor)
        else:
            out[(Ellipsis, *o)] = total / divisor
    return out


def _adaptive_pool3d_ref(x, size):
    """Output cell i of a dim of length n -> m averages (and maximises over) input [floor(i n / m), ceil((i+1) n / m)),
    with _max_pool3d_ref's choice of index."""
    size = [n if m is None else m for n, m in zip(x.shape[2:], _triple(size))]
    means, maxima = np.zeros((*x.shape[:2], *size)), np.zeros((*x.shape[:2], *size))
    indices = np.zeros((*x.shape[:2], *size), dtype=np.int64)
    for o in np.ndindex(*size):
        bins = [slice(i * n // m, -(-(i + 1) * n // m)) for i, n, m in zip(o, x.shape[2:], size)]
        window = x[(Ellipsis, *bins)]
        means[(Ellipsis, *o)] = window.mean(axis=(2, 3, 4))
        top, where = _max_pool3d_ref(window, window.shape[2:])
        maxima[(Ellipsis, *o)] = top[..., 0, 0, 0]
        spot = np.unravel_index(where[..., 0, 0, 0], window.shape[2:])
        indices[(Ellipsis, *o)] = np.ravel_multi_index(tuple(a + b.start for a, b in zip(spot, bins)), x.shape[2:])
    return means, maxima, indices


# -- conv3d -----------------------------------------------------------------------------------------------------------
def test_conv3d_values_and_gradients_match_the_definition():
    x, w, b = _t((1, 2, 2, 3, 3)), _t((2, 2, 2, 2, 2), 1.0), _t((2,), 2.0)
    y = F.conv3d(x, w, b)
    xv, wv, bv = _wave(x.shape), _wave(w.shape, 1.0), _wave(b.shape, 2.0)
    _close(y, _conv3d_ref(xv, wv, bv), (1, 2, 1, 2, 2))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    upstream = np.arange(8.0).reshape(y.shape)
    gx, gw, gb = ag.autograd.grad((y * ag.tensor(upstream)).sum(), (x, w, b))
    _close(gx, _grad_of_linear(lambda t: _conv3d_ref(t, wv), xv, upstream))
    _close(gw, _grad_of_linear(lambda t: _conv3d_ref(xv, t), wv, upstream))
    _close(gb, upstream.sum(axis=(0, 2, 3, 4)))


@pytest.mark.parametrize("x_shape, w_shape, bias, kw, out_shape", [
    ((1, 4, 4, 4, 5), (4, 2, 3, 3, 3), True, {"groups": 2, "stride": (2, 1, 2), "padding": (1, 0, 1),
                                              "dilation": (1, 1, 2)}, (1, 4, 2, 2, 2)),
    ((2, 2, 3, 2), (3, 2, 3, 1, 3), False, {"padding": "same", "dilation": 2}, (3, 2, 3, 2)),  # unbatched
    ((1, 3, 3, 4, 5), (3, 1, 2, 2, 3), True, {"groups": 3, "stride": 2, "padding": "valid"}, (1, 3, 1, 2, 2)),
])
def test_conv3d_strides_padding_dilation_and_groups_match_the_definition(x_shape, w_shape, bias, kw, out_shape):
    b = _wave((w_shape[0],), 2.0) if bias else None
    y = F.conv3d(_t(x_shape), _t(w_shape, 1.0), None if b is None else ag.tensor(b), **kw)
    _close(y, _conv3d_ref(_wave(x_shape), _wave(w_shape, 1.0), b, **kw), out_shape)


@pytest.mark.parametrize("kw", [
    {},
    {"stride": (2, 1, 2), "padding": 1},
    {"dilation": (2, 1, 1), "padding": (1, 0, 1), "groups": 2},
    {"padding": "same"},
])
def test_conv3d_gradients_to_second_order(kw):
    groups = kw.get("groups", 1)
    x, w, b = _leaf((2, 4, 4, 3, 4), 0), _leaf((4, 4 // groups, 3, 1, 3), 1), _leaf((4,), 2)
    f = lambda *t: F.conv3d(*t, **kw)  # noqa: E731
    assert gradcheck(f, [x, w, b], **TOL)
    assert gradgradcheck(f, [x, w, b], **TOL)


# -- conv_transpose3d -------------------------------------------------------------------------------------------------
def test_conv_transpose3d_values_and_gradients_match_the_definition():
    x, w, b = _t((1, 2, 2, 2, 2)), _t((2, 1, 2, 2, 2), 1.0), _t((2,), 2.0)
    kw = {"stride": (2, 1, 1), "output_padding": (1, 0, 0), "padding": (0, 1, 0), "groups": 2}
    y = F.conv_transpose3d(x, w, b, **kw)
    xv, wv, bv = _wave(x.shape), _wave(w.shape, 1.0), _wave(b.shape, 2.0)
    _close(y, _conv_transpose3d_ref(xv, wv, bv, **kw), (1, 2, 5, 1, 3))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    upstream = np.arange(30.0).reshape(y.shape)
    gx, gw, gb = ag.autograd.grad((y * ag.tensor(upstream)).sum(), (x, w, b))
    _close(gx, _grad_of_linear(lambda t: _conv_transpose3d_ref(t, wv, **kw), xv, upstream))
    _close(gw, _grad_of_linear(lambda t: _conv_transpose3d_ref(xv, t, **kw), wv, upstream))
    _close(gb, upstream.sum(axis=(0, 2, 3, 4)))


@pytest.mark.parametrize("kw, out_shape", [
    ({}, (2, 3, 4, 4, 5)),
    ({"stride": (2, 1, 3), "output_padding": (1, 0, 2)}, (2, 3, 7, 4, 13)),
    ({"dilation": 2, "output_padding": (1, 1, 0), "padding": (0, 1, 1)}, (2, 3, 6, 4, 4)),  # output_padding > stride
    ({"groups": 3, "stride": 2, "padding": 1}, (2, 3, 4, 4, 6)),
])
def test_conv_transpose3d_values_and_gradients_to_second_order(kw, out_shape):
    groups = kw.get("groups", 1)
    x, w, b = _leaf((2, 3, 3, 3, 4), 3), _leaf((3, 3 // groups, 2, 2, 2), 4), _leaf((3,), 5)
    y = F.conv_transpose3d(x, w, b, **kw)
    _close(y, _conv_transpose3d_ref(*(t.detach().numpy() for t in (x, w, b)), **kw), out_shape)
    f = lambda *t: F.conv_transpose3d(*t, **kw)  # noqa: E731
    assert gradcheck(f, [x, w, b], **TOL)
    assert gradgradcheck(f, [x, w, b], **TOL)


def test_conv_transpose3d_is_the_adjoint_of_conv3d_and_takes_unbatched_input():
    x, w, h = _leaf((2, 2, 3, 2, 3), 6), _leaf((2, 3, 2, 3, 2), 7), _leaf((2, 3, 5, 6, 5), 8)
    y = F.conv_transpose3d(x, w, stride=2, padding=(1, 0, 1), output_padding=1)
    lhs = (y * h).sum().item()
    rhs = (F.conv3d(h, w, stride=2, padding=(1, 0, 1)) * x).sum().item()
    assert y.shape == h.shape and lhs == pytest.approx(rhs, rel=1e-12)
    np.testing.assert_allclose(F.conv_transpose3d(x[0], w, stride=2).detach().numpy(),
                               F.conv_transpose3d(x, w, stride=2)[0].detach().numpy())


_X = (2, 4, 5, 6, 7)
_W = (6, 2, 2, 3, 3)
_WT = (4, 3, 2, 3, 3)


@pytest.mark.parametrize("fn, x_shape, w_shape, kw, dtype, error, message", [
    (F.conv3d, (4, 5), _W, {}, "float64", RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [4, 5]"),
    (F.conv3d, _X, (6, 4, 3, 3), {}, "float64", RuntimeError,
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got "
     "stride=[1, 1, 1]"),
    (F.conv3d, _X, _W, {"groups": 2, "stride": (1, 2)}, "float64", RuntimeError,
     "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but got "
     "stride=[1, 2]"),
    (F.conv3d, _X, _W, {}, "float64", RuntimeError,
     "Given groups=1, weight of size [6, 2, 2, 3, 3], expected input[2, 4, 5, 6, 7] to have 2 channels, but got 4 "
     "channels instead"),
    (F.conv3d, _X, (6, 2, 9, 3, 3), {"groups": 2}, "float64", RuntimeError,
     "Calculated padded input size per channel: (5 x 6 x 7). Kernel size: (9 x 3 x 3). Kernel size can't be greater "
     "than actual input size"),
    (F.conv3d, _X, _W, {"groups": 2, "dilation": (1, 0, 1)}, "float64", RuntimeError,
     "dilation should be greater than zero, but got [1, 0, 1]"),
    (F.conv3d, _X, _W, {"groups": 2, "padding": "same", "stride": 2}, "float64", RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (F.conv3d, (1, 4, 3, 3, 3), (4, 4, 2, 2, 2), {}, "bool", NotImplementedError,
     "\"compute_columns3d\" not implemented for 'Bool'"),
    (F.conv_transpose3d, _X, _WT, {"stride": 2, "output_padding": 2}, "float64", RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_depth: 2 "
     "output_padding_height: 2 output_padding_width: 2 stride_depth: 2 stride_height: 2 stride_width: 2 "
     "dilation_depth: 1 dilation_height: 1 dilation_width: 1"),
    (F.conv_transpose3d, _X, _WT, {"dilation": (1, 0, 1)}, "float64", RuntimeError,
     "dilation should be greater than zero, but got dilation_depth: 1, dilation_height: 0, dilation_width: 1"),
    (F.conv_transpose3d, _X, _WT, {"padding": 4}, "float64", RuntimeError,
     "Given input size per channel: (5 x 6 x 7). Calculated output size per channel: (-2 x 0 x 1). Output size is "
     "too small"),
    (F.conv_transpose3d, _X, (3, 3, 2, 2, 2), {}, "float64", RuntimeError,
     "Given transposed=1, weight of size [3, 3, 2, 2, 2], expected input[2, 4, 5, 6, 7] to have 3 channels, but got "
     "4 channels instead"),
    (F.conv_transpose3d, (4, 5, 6), _WT, {}, "float64", RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: [4, 5, 6]"),
    (F.conv_transpose3d, _X, _WT, {"padding": "same"}, "float64", TypeError,
     "conv_transpose3d(): argument 'padding' must be tuple of ints, not str"),
    (F.conv_transpose3d, (1, 4, 3, 3, 3), (4, 4, 2, 2, 2), {}, "int32", NotImplementedError,
     "\"slow_conv_transpose3d_out_cpu\" not implemented for 'Int'"),
])
def test_conv3d_errors_match_torch(fn, x_shape, w_shape, kw, dtype, error, message):
    dtype = getattr(ag, dtype)
    _raises(lambda: fn(ag.zeros(x_shape, dtype=dtype), ag.zeros(w_shape, dtype=dtype), **kw), error, message)


# -- max_pool3d -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, out_shape", [
    ({"kernel_size": 2}, (1, 2, 1, 2, 2)),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": 1, "dilation": (1, 1, 2)}, (1, 2, 4, 2, 2)),
    ({"kernel_size": (2, 2, 3), "stride": 2, "ceil_mode": True}, (1, 2, 2, 2, 2)),
    ({"kernel_size": 3, "stride": (2, 1, 2), "padding": 1, "ceil_mode": True, "dilation": (2, 1, 1)}, (1, 2, 1, 4, 3)),
])
def test_max_pool3d_values_indices_and_gradient_match_the_definition(kw, out_shape):
    x = _t((1, 2, 3, 4, 5), 0.3)
    y, index = F.max_pool3d(x, return_indices=True, **kw)
    expected, indices = _max_pool3d_ref(_wave(x.shape, 0.3), **kw)
    _close(y, expected, out_shape)
    assert index.dtype == ag.int64 and index.shape == out_shape
    np.testing.assert_array_equal(index.numpy(), indices)
    assert y.grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    upstream = np.arange(1.0, y.numel() + 1).reshape(y.shape)
    (grad,) = ag.autograd.grad((y * ag.tensor(upstream)).sum(), (x,))
    expected_grad = np.zeros((2, 60))  # each window's gradient lands on the element its index names
    np.add.at(expected_grad, (np.arange(2)[:, None], np.reshape(indices, (2, -1))), upstream.reshape(2, -1))
    np.testing.assert_allclose(grad.numpy().reshape(2, 60), expected_grad)
    leaf = _leaf((2, 2, 3, 4, 5), 9)
    assert gradcheck(lambda t: F.max_pool3d(t, **kw), [leaf], **TOL)
    assert gradgradcheck(lambda t: F.max_pool3d(t, **kw), [leaf], **TOL)


def test_max_pool3d_takes_unbatched_input_and_names_the_last_nan_of_a_window():
    x = np.arange(16.0).reshape(1, 2, 2, 4)
    x[0, 0, 1, 0], x[0, 1, 0, 1] = np.nan, np.nan
    y, index = F.max_pool3d(ag.tensor(x), 2, return_indices=True)
    assert y.shape == (1, 1, 1, 2) and np.isnan(y.numpy()[0, 0, 0, 0])
    np.testing.assert_array_equal(index.numpy().ravel(), [9, 15])  # NaNs at flat 4 and 9; the other window's max


# -- avg_pool3d -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, out_shape", [
    ({"kernel_size": 2}, (1, 1, 1, 2, 2)),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": (1, 1, 1)}, (1, 1, 4, 2, 3)),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": (1, 1, 1), "count_include_pad": False},
     (1, 1, 4, 2, 3)),
    ({"kernel_size": (2, 2, 3), "stride": 2, "padding": (0, 1, 1), "ceil_mode": True}, (1, 1, 2, 3, 3)),
    ({"kernel_size": (2, 2, 3), "stride": 2, "padding": (0, 1, 1), "ceil_mode": True, "count_include_pad": False},
     (1, 1, 2, 3, 3)),
    ({"kernel_size": (3, 2, 2), "stride": (1, 3, 3), "padding": (1, 0, 1), "divisor_override": 5}, (1, 1, 3, 1, 2)),
])
def test_avg_pool3d_values_and_gradients_match_the_definition(kw, out_shape):
    y = F.avg_pool3d(_t((1, 1, 3, 4, 5), 0.3), **kw)
    _close(y, _avg_pool3d_ref(_wave((1, 1, 3, 4, 5), 0.3), **kw), out_shape)
    assert y.grad_fn.name() == "AvgPool3DBackward0"
    assert gradcheck(lambda t: F.avg_pool3d(t, **kw), [_leaf((2, 2, 3, 4, 5), 10)], **TOL)
    assert gradgradcheck(lambda t: F.avg_pool3d(t, **kw), [_leaf((1, 2, 3, 4, 5), 11)], **TOL)


def test_avg_pool3d_divides_int64_sums_toward_zero_on_unbatched_input():
    values = (_wave((1, 3, 4, 5)) * 40).astype(np.int64)
    kw = {"kernel_size": (2, 2, 3), "stride": (1, 2, 2), "padding": (0, 1, 1)}
    y = F.avg_pool3d(ag.tensor(values), **kw)
    expected = _avg_pool3d_ref(values[None], **kw)[0]
    assert y.dtype == ag.int64 and y.shape == (1, 2, 3, 3)
    assert (expected != _avg_pool3d_ref(values[None].astype(np.float64), **kw)[0]).any()  # some sums do not divide
    np.testing.assert_array_equal(y.numpy(), expected)


# -- adaptive 3-d pooling and interpolate's area mode ----------------------------------------------------------------
@pytest.mark.parametrize("size, out_shape", [((2, 3, 2), (1, 2, 2, 3, 2)), ((None, 2, 3), (1, 2, 3, 2, 3)),
                                             (1, (1, 2, 1, 1, 1))])
def test_adaptive_pool3d_values_and_indices_match_the_definition(size, out_shape):
    x = _t((1, 2, 3, 5, 4), 0.3)
    means, maxima, indices = _adaptive_pool3d_ref(_wave(x.shape, 0.3), size)
    _close(F.adaptive_avg_pool3d(x, size), means, out_shape)
    y, index = F.adaptive_max_pool3d(x, size, return_indices=True)
    _close(y, maxima, out_shape)
    np.testing.assert_array_equal(index.numpy(), indices)
    _close(F.adaptive_max_pool3d(x[0], size), maxima[0])  # unbatched


@pytest.mark.parametrize("size", [(2, 3, 2), (4, 1, 3), (None, 2, None)])
def test_adaptive_pool3d_gradcheck(size):
    x = _leaf((2, 2, 3, 5, 4), 12)
    assert gradcheck(lambda t: F.adaptive_avg_pool3d(t, size), [x], **TOL)
    assert gradgradcheck(lambda t: F.adaptive_avg_pool3d(t, size), [x], **TOL)
    assert gradcheck(lambda t: F.adaptive_max_pool3d(t, size), [x], **TOL)


def test_adaptive_max_pool3d_names_the_last_nan_of_a_bin_and_takes_an_empty_output():
    x = np.arange(8.0).reshape(1, 1, 2, 2, 2)
    x[0, 0, 0, 1, 0], x[0, 0, 1, 0, 1] = np.nan, np.nan
    y, index = F.adaptive_max_pool3d(ag.tensor(x), 1, return_indices=True)
    assert np.isnan(y.item()) and index.item() == 5  # NaNs at flat 2 and 5
    assert F.adaptive_avg_pool3d(ag.zeros(2, 3, 4, 4, 4), (0, 2, 2)).shape == (2, 3, 0, 2, 2)


def test_interpolate_area_on_5d_input_is_the_adaptive_average_pool():
    x = _t((1, 1, 3, 5, 4), 0.3)
    y = F.interpolate(x, size=(2, 3, 2), mode="area")
    _close(y, _adaptive_pool3d_ref(_wave(x.shape, 0.3), (2, 3, 2))[0], (1, 1, 2, 3, 2))
    assert gradcheck(lambda t: F.interpolate(t, scale_factor=0.5, mode="area"), [_leaf((1, 2, 4, 3, 5), 13)], **TOL)


_P = (2, 3, 5, 6, 7)


@pytest.mark.parametrize("fn, shape, kw, error, message", [
    (F.max_pool3d, _P, {"kernel_size": (2, 2)}, RuntimeError,
     "max_pool3d: kernel_size must either be a single int, or a tuple of three ints"),
    (F.avg_pool3d, _P, {"kernel_size": (2, 2)}, RuntimeError,
     "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    (F.avg_pool3d, _P, {"kernel_size": 2, "stride": (1, 1)}, RuntimeError,
     "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints"),
    (F.max_pool3d, _P, {"kernel_size": 2, "dilation": (1, 1)}, RuntimeError,
     "max_pool3d: dilation must be either a single int, or a tuple of three ints"),
    (F.max_pool3d, (5, 6, 7), {"kernel_size": 2}, RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (F.avg_pool3d, (1, *_P), {"kernel_size": 2}, RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (F.max_pool3d, _P, {"kernel_size": 2, "stride": -1}, RuntimeError,
     "stride should be greater than zero, but got dT: -1 dH: -1 dW: -1"),
    (F.avg_pool3d, _P, {"kernel_size": (2, 0, 2), "stride": 1}, RuntimeError,
     "kernel size should be greater than zero, but got kT: 2 kH: 0 kW: 2"),
    (F.max_pool3d, _P, {"kernel_size": 2, "dilation": (1, 0, 1)}, RuntimeError,
     "dilation should be greater than zero, but got dilationT: 1 dilationH: 0 dilationW: 1"),
    (F.max_pool3d, _P, {"kernel_size": 2, "padding": 2}, RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    (F.max_pool3d, _P, {"kernel_size": 3, "stride": 2, "padding": 2, "dilation": 2}, RuntimeError,
     "pad should be smaller than or equal to half of kernel size, but got kT: 3 kW: 3 kH: 3 padT: 2 padW: 2 padH: 2"),
    (F.max_pool3d, _P, {"kernel_size": (6, 2, 2)}, RuntimeError,
     "Given input size: (3x5x6x7). Calculated output size: (3x0x3x3). Output size is too small"),
    (F.avg_pool3d, _P, {"kernel_size": (6, 2, 2), "padding": (1, 0, 0)}, RuntimeError,
     "input image (T: 5 H: 6 W: 7) smaller than kernel size (kT: 6 kH: 2 kW: 2)"),
    (F.max_pool3d, (2, 3, 0, 6, 7), {"kernel_size": 2}, RuntimeError,
     "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have positive length, but "
     "input has a shape of [2, 3, 0, 6, 7] and non-batch dimension 0 has length zero!"),
    (F.avg_pool3d, _P, {"kernel_size": 2, "divisor_override": 0}, RuntimeError, "divisor must be not zero"),
    (F.adaptive_avg_pool3d, _P, {"output_size": (2, 2)}, RuntimeError, "adaptive_avg_pool3d: output_size must be 3"),
    (F.adaptive_max_pool3d, _P, {"output_size": (2, 2)}, RuntimeError,
     "adaptive_max_pool3d(): internal error: output_size.size() must be 3"),
    (F.adaptive_avg_pool3d, _P, {"output_size": (2, -1, 2)}, RuntimeError,
     "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {2, -1,2}"),
    (F.adaptive_max_pool3d, _P, {"output_size": (2, -1, 2)}, RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, 3, 2, -1, 2]"),
    (F.adaptive_avg_pool3d, (5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [5, 6, 7]"),
    (F.adaptive_max_pool3d, (5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [5, 6, 7]"),
    (F.adaptive_avg_pool3d, (2, 0, 5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 0, 5, 6, 7] with dimension 1 being empty"),
    (F.adaptive_max_pool3d, (3, 5, 6, 7), {"output_size": (2, 2, 2, 2)}, ValueError,
     "Input dimension should be at least 5"),
])
def test_pool3d_errors_match_torch(fn, shape, kw, error, message):
    _raises(lambda: fn(ag.zeros(shape, dtype=ag.float64), **kw), error, message)


@pytest.mark.parametrize("fn, dtype, message", [
    (F.max_pool3d, "bool", "\"max_pool3d\" not implemented for 'Bool'"),
    (F.avg_pool3d, "int32", "\"avg_pool3d_out_frame\" not implemented for 'Int'"),
    (F.adaptive_avg_pool3d, "int64", "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"),
    (F.adaptive_max_pool3d, "int64", "\"adaptive_max_pool3d_cpu\" not implemented for 'Long'"),
])
def test_pool3d_refuses_dtypes_as_torch(fn, dtype, message):
    _raises(lambda: fn(ag.zeros(1, 2, 2, 2, 2, dtype=getattr(ag, dtype)), 2), NotImplementedError, message)


def test_max_pool3d_takes_integers():
    x = ag.tensor(np.arange(16).reshape(1, 2, 2, 4))
    np.testing.assert_array_equal(F.max_pool3d(x, 2).numpy().ravel(), [13, 15])


# -- modules ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, args, kw, weight_shape, text", [
    (nn.Conv3d, (4, 6, 3), {}, (6, 4, 3, 3, 3), "Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))"),
    (nn.Conv3d, (4, 6, (1, 2, 3), 2, 1, 2, 2, False, "reflect"), {}, (6, 2, 1, 2, 3),
     "Conv3d(4, 6, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2), groups=2, "
     "bias=False, padding_mode=reflect)"),
    (nn.ConvTranspose3d, (4, 6, 3), {"groups": 2}, (4, 3, 3, 3, 3),
     "ConvTranspose3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1), groups=2)"),
    (nn.ConvTranspose3d, (4, 6, (1, 2, 3), 2, 1, 1, 2, False, 2), {}, (4, 3, 1, 2, 3),
     "ConvTranspose3d(4, 6, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2), "
     "output_padding=(1, 1, 1), groups=2, bias=False)"),
])
def test_conv3d_modules_parameters_and_repr(cls, args, kw, weight_shape, text):
    m = cls(*args, **kw)
    assert m.weight.shape == weight_shape and repr(m) == text
    assert (m.bias is None) == ("bias=False" in text)
    bound = 1 / np.sqrt(np.prod(weight_shape[1:]))  # PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(m.weight.detach().numpy()).max() <= bound


@pytest.mark.parametrize("cls", [nn.Conv3d, nn.ConvTranspose3d])
def test_conv3d_modules_defaults(cls):
    m = cls(4, 6, 3)
    assert (m.kernel_size, m.stride, m.padding, m.dilation, m.output_padding) == ((3, 3, 3), (1, 1, 1), (0, 0, 0),
                                                                                  (1, 1, 1), (0, 0, 0))
    assert (m.groups, m.padding_mode, m.bias.shape) == (1, "zeros", (6,))
    assert nn.Conv3d(4, 6, (1, 2, 3), padding="same")._reversed_padding_repeated_twice == [1, 1, 0, 1, 0, 0]


def test_conv3d_modules_run_their_functions():
    x = _leaf((2, 4, 3, 4, 5), 14)
    conv = nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=1, groups=2, dtype=ag.float64)
    np.testing.assert_allclose(conv(x).detach().numpy(), F.conv3d(x, conv.weight, conv.bias, (1, 2, 1), 1, 1, 2)
                               .detach().numpy())
    reflect = nn.Conv3d(4, 2, 3, padding=(1, 0, 1), padding_mode="reflect", bias=False, dtype=ag.float64)
    padded = F.pad(x, [1, 1, 0, 0, 1, 1], mode="reflect")
    np.testing.assert_allclose(reflect(x).detach().numpy(), F.conv3d(padded, reflect.weight).detach().numpy())
    up = nn.ConvTranspose3d(4, 2, 3, stride=2, dtype=ag.float64)
    assert up(x, output_size=(8, 10, 12)).shape == (2, 2, 8, 10, 12)
    _raises(lambda: up(x, output_size=(8, 10)), ValueError,
            "ConvTranspose3D: for 5D input, output_size must have 3 or 5 elements (got 2)")


def test_pool3d_modules():
    x = _t((2, 2, 3, 4, 5), 0.3)
    m = nn.MaxPool3d((2, 3, 2), 1, 1, 2, True, True)
    assert repr(m) == "MaxPool3d(kernel_size=(2, 3, 2), stride=1, padding=1, dilation=2, ceil_mode=True)"
    y, index = m(x)
    ref, ref_index = F.max_pool3d(x, (2, 3, 2), 1, 1, 2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    avg = nn.AvgPool3d(2, padding=1, count_include_pad=False, divisor_override=3)
    assert repr(avg) == "AvgPool3d(kernel_size=2, stride=2, padding=1)"
    assert (avg.ceil_mode, avg.count_include_pad, avg.divisor_override) == (False, False, 3)
    np.testing.assert_array_equal(avg(x).detach().numpy(), F.avg_pool3d(x, 2, 2, 1, False, False, 3).detach().numpy())
    mean, top = nn.AdaptiveAvgPool3d((2, None, 3)), nn.AdaptiveMaxPool3d(2, return_indices=True)
    assert repr(mean) == "AdaptiveAvgPool3d(output_size=(2, None, 3))"
    assert repr(top) == "AdaptiveMaxPool3d(output_size=2)"
    assert mean(x).shape == (2, 2, 2, 4, 3) and top(x)[1].shape == (2, 2, 2, 2, 2)


def test_batch_norm3d_normalises_each_channel_and_updates_its_running_statistics():
    x = _t((2, 2, 2, 1, 3), 0.5)
    bn = nn.BatchNorm3d(2, dtype=ag.float64)
    assert repr(bn) == "BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    values, axes = _wave(x.shape, 0.5), (0, 2, 3, 4)  # statistics per channel over 12 elements
    mean, var = values.mean(axes, keepdims=True), values.var(axes, keepdims=True)
    _close(bn(x), (values - mean) / np.sqrt(var + 1e-5))
    _close(bn.running_mean, 0.1 * mean.ravel())  # (1 - momentum) * 0 + momentum * batch mean
    _close(bn.running_var, 0.9 + 0.1 * values.var(axes, ddof=1))  # the unbiased batch variance
    assert bn.num_batches_tracked.item() == 1
    assert gradcheck(lambda t: bn(t), [_leaf((2, 2, 2, 1, 3), 15)], **TOL)
    _raises(lambda: bn(x[0]), ValueError, "expected 5D input (got 4D input)")


def test_instance_norm3d_takes_unbatched_input_and_tracks_statistics():
    x = _t((2, 2, 2, 1, 3), 0.5)
    norm = nn.InstanceNorm3d(2, affine=True, track_running_stats=True, dtype=ag.float64)
    values, axes = _wave(x.shape, 0.5), (2, 3, 4)  # statistics per sample and channel over 6 elements
    mean, var = values.mean(axes, keepdims=True), values.var(axes, keepdims=True)
    _close(norm(x), (values - mean) / np.sqrt(var + 1e-5))
    _close(norm.running_mean, 0.1 * mean.mean(0).ravel())  # the running stats average the samples' statistics
    running_var = 0.9 + 0.1 * values.var(axes, ddof=1).mean(0)
    _close(norm.running_var, running_var)
    norm.eval()
    _close(norm(x[0]), (values[0] - 0.1 * mean.mean(0)) / np.sqrt(running_var.reshape(2, 1, 1, 1) + 1e-5))
    plain = nn.InstanceNorm3d(2)
    assert repr(plain) == "InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, " \
                          "track_running_stats=False)"
    assert gradcheck(lambda t: plain(t), [_leaf((2, 2, 3, 2), 16)], **TOL)
    _raises(lambda: plain(x[0, 0]), ValueError, "expected 4D or 5D input (got 3D input)")
    _raises(lambda: nn.InstanceNorm3d(4, affine=True)(x), ValueError,
            "expected input's size at dim=1 to match num_features (4), but got: 2.")


# -- the CUDA path ----------------------------------------------------------------------------------------------------
DEVICE_CASES = {
    "conv3d": lambda x, p: F.conv3d(x, p((4, 2, 2, 3, 2), 1.0), p((4,), 2.0), stride=(1, 2, 1), padding=1, groups=2),
    "conv_transpose3d": lambda x, p: F.conv_transpose3d(x, p((4, 2, 2, 2, 3), 1.0), p((4,), 2.0), stride=2,
                                                        output_padding=(1, 0, 1), groups=2),
    "max_pool3d": lambda x, p: F.max_pool3d(x, (2, 3, 3), (1, 2, 2), 1, (1, 1, 2), ceil_mode=True),
    "avg_pool3d": lambda x, p: F.avg_pool3d(x, (2, 2, 3), 2, (0, 1, 1), ceil_mode=True, count_include_pad=False),
    "adaptive_avg_pool3d": lambda x, p: F.adaptive_avg_pool3d(x, (2, 3, 2)),
    "adaptive_max_pool3d": lambda x, p: F.adaptive_max_pool3d(x, (2, 3, 2)),
    "interpolate_area": lambda x, p: F.interpolate(x, size=(2, 2, 3), mode="area"),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(DEVICE_CASES))
def test_the_3d_ops_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    results = []
    for device in (None, cuda):
        leaves = []

        def parameter(shape, phase, device=device, leaves=leaves):
            leaves.append(ag.tensor(_wave(shape, phase), device=device, requires_grad=True))
            return leaves[-1]

        x = parameter((2, 4, 3, 5, 4), 0.3)
        y = DEVICE_CASES[name](x, parameter)
        (y * y).sum().backward()
        assert y.device == x.device and all(leaf.grad.device == x.device for leaf in leaves)
        results.append([y.detach().cpu().numpy(), *(leaf.grad.cpu().numpy() for leaf in leaves)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
