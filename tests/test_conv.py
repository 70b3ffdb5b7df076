"""conv1d, conv2d, max_pool2d and avg_pool2d: values against loop-based numpy references, gradients and second
derivatives against finite differences (float64), PyTorch's node names, tie rule and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import grad, gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
FEW = settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=True)


def reference_conv2d(x, w, b, stride, padding, dilation, groups):
    """A direct convolution: one loop per output element (tiny shapes only)."""
    (sh, sw), ((pt, pb), (pl, pr)), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for ni in range(n):
        for oi in range(o):
            g = oi // og
            for i in range(oh):
                for j in range(ow):
                    patch = xp[ni, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                               j * sw:j * sw + dw * (kw - 1) + 1:dw]
                    out[ni, oi, i, j] = (patch * w[oi]).sum() + (0 if b is None else b[oi])
    return out


@st.composite
def conv2d_cases(draw):
    groups = draw(st.sampled_from([1, 2]))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from([0, 1, (1, 0), "valid", "same"]))
    if padding == "same":
        stride = (1, 1)
    h = draw(st.integers(dilation[0] * (kh - 1) + 1, 5))
    w = draw(st.integers(dilation[1] * (kw - 1) + 1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(size=(2, cg * groups, h, w))
    weight = rng.normal(size=(og * groups, cg, kh, kw))
    bias = rng.normal(size=og * groups) if draw(st.booleans()) else None
    return x, weight, bias, dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def _pads(padding, kernel, dilation):
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        return tuple((t // 2, t - t // 2) for t in totals)
    p = (padding, padding) if isinstance(padding, int) else padding
    return tuple((v, v) for v in p)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # PyTorch's warning, on purpose
@FEW
@given(conv2d_cases())
def test_conv2d_matches_a_direct_convolution_and_its_gradients(case):
    x, w, b, kw = case
    pads = _pads(kw["padding"], w.shape[2:], kw["dilation"])
    want = reference_conv2d(x, w, b, kw["stride"], pads, kw["dilation"], kw["groups"])
    with ag.no_grad():
        got = F.conv2d(ag.tensor(x), ag.tensor(w), None if b is None else ag.tensor(b), **kw).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    arrays = [x, w] + ([] if b is None else [b])

    def f(*ts):
        return F.conv2d(ts[0], ts[1], ts[2] if len(ts) > 2 else None, **kw)

    assert gradcheck(f, [leaf(a) for a in arrays], **TOL)
    assert gradgradcheck(f, [leaf(a) for a in arrays], **TOL)


def test_conv2d_records_pytorchs_node_names():
    x, w = leaf(np.ones((1, 2, 4, 4))), leaf(np.ones((3, 2, 3, 3)))
    y = F.conv2d(x, w, stride=2)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    (gx,) = grad(y.sum(), [x], create_graph=True)
    assert gx.grad_fn.name() == "ConvolutionBackwardBackward0"


def test_conv2d_transposed_input_and_unbatched_input():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 5, 2, 1)).transpose(3, 2, 1, 0)  # (1, 2, 5, 5), not contiguous
    w = rng.normal(size=(3, 2, 2, 2))
    want = reference_conv2d(x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(F.conv2d(ag.tensor(x), ag.tensor(w), padding=1).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(F.conv2d(ag.tensor(x[0]), ag.tensor(w), padding=1).numpy(), want[0], rtol=1e-12)
    assert gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1), [leaf(x), leaf(w)], **TOL)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=2), dict(padding="same")])
def test_conv1d_is_conv2d_on_a_unit_height(kw):
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(2, 4, 7)), rng.normal(size=(4, 4 // kw.get("groups", 1), 3)), rng.normal(size=4)
    kw2 = {k: (1, v) if k in ("stride", "dilation") else (0, v) if k == "padding" and v != "same" else v
           for k, v in kw.items()}
    want = F.conv2d(ag.tensor(x[:, :, None]), ag.tensor(w[:, :, None]), ag.tensor(b), **kw2).numpy()[:, :, 0]
    np.testing.assert_allclose(F.conv1d(ag.tensor(x), ag.tensor(w), ag.tensor(b), **kw).numpy(), want, rtol=1e-12)
    assert gradgradcheck(lambda *t: F.conv1d(*t, **kw), [leaf(x), leaf(w), leaf(b)], **TOL)


def test_conv2d_float32_stays_float32():
    x = ag.tensor(np.ones((1, 1, 4, 4), np.float32), requires_grad=True)
    w = ag.tensor(np.ones((2, 1, 3, 3), np.float32), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == w.grad.dtype == ag.float32


@pytest.mark.parametrize("x_shape, w_shape, kw, match", [
    ((2, 1, 5, 5), (16, 3, 3, 3), {}, r"Given groups=1, weight of size \[16, 3, 3, 3\], expected input\[2, 1, 5, 5\] "
                                      r"to have 3 channels, but got 1 channels instead"),
    ((1, 1, 2, 2), (1, 1, 3, 3), {}, r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\)"),
    ((1, 1, 5, 5), (1, 1, 3, 3), {"stride": 2, "padding": "same"}, "padding='same' is not supported for strided"),
    ((1, 2, 5, 5), (3, 1, 3, 3), {"groups": 2}, "expected weight to be divisible by 2 at dimension 0"),
    ((2, 3), (1, 1, 3, 3), {}, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"),
])
def test_conv2d_bad_input_raises_pytorchs_errors(x_shape, w_shape, kw, match):
    with pytest.raises(RuntimeError, match=match):
        F.conv2d(ag.tensor(np.ones(x_shape)), ag.tensor(np.ones(w_shape)), **kw)


# -- pooling -----------------------------------------------------------------------------------------------------
def reference_max_pool2d(x, k, s, p, d, ceil_mode):
    n, c, h, w = x.shape

    def size(n_, k_, s_, p_, d_):
        span = n_ + 2 * p_ - d_ * (k_ - 1) - 1
        out = (-(-span // s_) if ceil_mode else span // s_) + 1
        return out - 1 if ceil_mode and (out - 1) * s_ >= n_ + p_ else out

    oh, ow = size(h, k[0], s[0], p[0], d[0]), size(w, k[1], s[1], p[1], d[1])
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    r, q = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, r, q])
    return out


@FEW
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(0, 1), st.integers(1, 2), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_max_pool2d_matches_a_loop_reference_and_gradchecks(kh, kw, stride, pad, dil, ceil_mode, seed):
    pad = min(pad, (dil * (kh - 1) + 1) // 2, (dil * (kw - 1) + 1) // 2)
    rng = np.random.default_rng(seed)
    x = rng.permutation(2 * 2 * 6 * 5).reshape(2, 2, 6, 5) * 0.1  # distinct values: no ties
    kwargs = dict(kernel_size=(kh, kw), stride=stride, padding=pad, dilation=dil, ceil_mode=ceil_mode)
    want = reference_max_pool2d(x, (kh, kw), (stride,) * 2, (pad,) * 2, (dil,) * 2, ceil_mode)
    np.testing.assert_array_equal(F.max_pool2d(ag.tensor(x), **kwargs).numpy(), want)
    assert gradcheck(lambda t: F.max_pool2d(t, **kwargs), [leaf(x)], **TOL)
    assert gradgradcheck(lambda t: F.max_pool2d(t, **kwargs) ** 2, [leaf(x)], **TOL)


def test_max_pool2d_sends_a_tied_windows_gradient_to_its_first_maximum():
    x = leaf(np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0]]]]))
    y, index = F.max_pool2d(x, 2, return_indices=True)
    assert y.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(index.numpy(), [[[[0, 3]]]])
    np.testing.assert_array_equal(x.grad.numpy(), [[[[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]])


def test_max_pool2d_propagates_nan():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan
    out = F.max_pool2d(ag.tensor(x), 2).numpy()
    assert np.isnan(out[0, 0, 0, 0]) and out[0, 0, 1, 1] == 15.0


def test_max_pool2d_overlapping_windows_accumulate_gradients():
    x = leaf(np.array([[[[0.0, 5.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]))
    F.max_pool2d(x, 2, stride=1).sum().backward()
    assert x.grad.numpy()[0, 0, 0, 1] == 2.0


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=(2, 3), stride=(2, 1), divisor_override=5)])
def test_avg_pool2d_values_and_gradients(kw):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 2, 5, 6))
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    s = kw.get("stride", k)
    s = s if isinstance(s, tuple) else (s, s)
    p = kw.get("padding", 0)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ones = np.pad(np.ones(x.shape), ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = (5 + 2 * p - k[0]) // s[0] + 1, (6 + 2 * p - k[1]) // s[1] + 1
    want = np.zeros((2, 2, oh, ow))
    for i in range(oh):
        for j in range(ow):
            window = (slice(None), slice(None), slice(i * s[0], i * s[0] + k[0]), slice(j * s[1], j * s[1] + k[1]))
            count = kw.get("divisor_override") or (k[0] * k[1] if kw.get("count_include_pad", True)
                                                   else ones[window].sum((2, 3)))
            want[:, :, i, j] = xp[window].sum((2, 3)) / count
    y = F.avg_pool2d(leaf(x), **kw)
    assert y.grad_fn.name() == "AvgPool2DBackward0"
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12)
    assert gradcheck(lambda t: F.avg_pool2d(t, **kw), [leaf(x)], **TOL)
    assert gradgradcheck(lambda t: F.avg_pool2d(t, **kw) ** 2, [leaf(x)], **TOL)


@pytest.mark.parametrize("padding", [0, 1])
def test_avg_pool2d_ceil_mode_counts_only_places_inside_the_padded_input(padding):
    x = np.arange(1.0, 49.0).reshape(1, 1, 6, 8)  # 3x3 windows at stride 2: the last ones overhang
    y = F.avg_pool2d(leaf(x), 3, stride=2, padding=padding, ceil_mode=True)
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    want = np.array([[xp[0, 0, 2 * i:2 * i + 3, 2 * j:2 * j + 3].mean() for j in range(y.shape[3])]
                     for i in range(y.shape[2])])
    assert y.shape == (1, 1, 3 + padding, 4 + padding)
    np.testing.assert_allclose(y.detach().numpy()[0, 0], want, rtol=1e-12)
    assert gradcheck(lambda t: F.avg_pool2d(t, 3, stride=2, padding=padding, ceil_mode=True), [leaf(x)], **TOL)


def test_pooling_bad_padding_raises():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(ag.tensor(np.ones((1, 1, 4, 4))), 2, padding=2)
