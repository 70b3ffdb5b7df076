"""Fixes from a generated torch-vs-actorgrad comparison of the convolutions, poolings, resampling and losses: each
test's expectation is worked out here (numpy formulas, finite differences), never copied from PyTorch."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)


def _leaf(shape, dtype=np.float64):
    return ag.tensor(RNG.standard_normal(shape).astype(dtype), requires_grad=True)


# -- interpolate(antialias=True) ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_leaves_a_dim_whose_size_the_scale_keeps_alone(mode):
    """floor(3 * 1.3) = 3: no dim changes size, so nothing is resampled (the filter would otherwise run with the
    1/1.3 step and shift the image); the result is a new tensor, not the input."""
    x = _leaf((1, 2, 3, 3))
    out = F.interpolate(x, scale_factor=1.3, mode=mode, antialias=True)
    assert out is not x
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(x.shape))


def test_antialias_resamples_only_the_dims_that_change_size():
    """Height 2 -> floor(2.6) = 2 stays; width 6 -> 9 is upsampled with the given scale (step 1/1.5), where the
    antialiased triangle filter is plain linear interpolation at (i + 0.5) * step - 0.5, clamped to the edges."""
    x = _leaf((1, 1, 2, 6))
    out = F.interpolate(x, scale_factor=(1.3, 1.5), mode="bilinear", antialias=True)
    source = np.clip((np.arange(9) + 0.5) / 1.5 - 0.5, 0, 5)
    rows = x.detach().numpy()[0, 0]
    expected = np.stack([np.interp(source, np.arange(6), row) for row in rows])
    np.testing.assert_allclose(out.detach().numpy()[0, 0], expected, rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda t: F.interpolate(t, scale_factor=(1.3, 1.5), mode="bilinear", antialias=True), (x,))


# -- pooling ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pool", [F.adaptive_avg_pool2d, F.adaptive_max_pool2d])
def test_adaptive_pool2d_sequence_size_needs_a_dim_more_than_it_names(pool):
    """nn.functional's _list_with_default runs first: a (H, W) input with a pair of sizes is a ValueError."""
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        pool(ag.ones(3, 4), (2, 2))
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        pool(ag.ones(3, 4), (2, None))
    with pytest.raises(ValueError, match="Input dimension should be at least 4"):
        pool(ag.ones(1, 3, 4), (2, 2, 2))
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        pool(ag.ones(3, 4), 2)  # an int size reaches the kernel's own check
    out = pool(ag.ones(1, 3, 4), (None, 2))
    assert (out[0] if isinstance(out, tuple) else out).shape == (1, 3, 2)


def test_avg_pool3d_has_no_float16_cpu_kernel():
    x = ag.ones(1, 1, 2, 2, 2, dtype=ag.float16)
    with pytest.raises(NotImplementedError, match="\"avg_pool3d_out_frame\" not implemented for 'Half'"):
        F.avg_pool3d(x, 2)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        F.lp_pool3d(x, 2, 2)
    assert F.avg_pool3d(ag.ones(1, 1, 2, 2, 2), 2).item() == 1.0


@pytest.mark.gpu
def test_float16_avg_pool3d_on_cuda_is_the_exact_mean_rounded_once(cupy):
    x = (np.random.default_rng(5).standard_normal((1, 2, 6, 6, 6)) * 8).astype(np.float16)
    out = F.avg_pool3d(ag.tensor(x, device="cuda:0"), 3)
    assert out.dtype == ag.float16
    means = x.astype(np.float64).reshape(1, 2, 2, 3, 2, 3, 2, 3).mean((3, 5, 7))
    np.testing.assert_array_equal(out.cpu().numpy(), means.astype(np.float16))


@pytest.mark.gpu
def test_margin_fill_and_float16_margin_losses_on_cuda(cupy):
    """The hinge loss's margin tensor is made on the input's device; PyTorch's CUDA margin kernels take float16."""
    x = np.array([[1, -2], [3, 0]], np.int64)
    out = F.hinge_embedding_loss(ag.tensor(x, device="cuda:0"), ag.tensor([1, -1], device="cuda:0"), margin=1.5,
                                 reduction="none")
    assert out.device.type == "cuda" and out.dtype == ag.int64
    np.testing.assert_array_equal(out.cpu().numpy(), np.where([1, 0], x, np.maximum(1 - x, 0)))
    scores = np.array([[0.25, -0.5, 1.0], [0.75, 0.5, -0.25]], np.float16)
    got = F.multi_margin_loss(ag.tensor(scores, device="cuda:0"), ag.tensor([0, 2], device="cuda:0"))
    assert got.dtype == ag.float16
    gaps = np.maximum(1 - scores[[0, 1], [0, 2]][:, None].astype(np.float64) + scores, 0)
    gaps[[0, 1], [0, 2]] = 0
    np.testing.assert_allclose(got.cpu().numpy(), (gaps.sum(1) / 3).mean(), rtol=2e-3)


@pytest.mark.parametrize("unpool, kernel, message", [
    (F.max_unpool2d, (2,), "exactly two elements \\(height, width\\) in output_size, but got 1"),
    (F.max_unpool3d, (2, 2), "exactly three elements \\(depth, height, width\\) in output_size, but got 2"),
])
def test_max_unpool_refuses_a_kernel_size_of_another_length(unpool, kernel, message):
    shape = (1, 3, 3) if unpool is F.max_unpool2d else (1, 3, 3, 3)
    with pytest.raises(RuntimeError, match=message):
        unpool(ag.ones(*shape), ag.zeros(*shape, dtype=ag.int64), kernel)


# -- convolutions ----------------------------------------------------------------------------------------------------
def test_conv_of_a_bool_input_names_the_missing_kernel_before_the_weight_dtype():
    x = ag.ones(1, 2, 3, 3, dtype=ag.bool)
    with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu\" not implemented for 'Bool'"):
        F.conv2d(x, ag.ones(2, 2, 2, 2))
    with pytest.raises(NotImplementedError, match="\"compute_columns3d\" not implemented for 'Bool'"):
        F.conv3d(ag.ones(1, 2, 3, 3, 3, dtype=ag.bool), ag.ones(2, 2, 2, 2, 2, dtype=ag.int64))


def test_conv_transpose_bias_of_another_dtype_follows_pytorchs_kernels():
    x64, w64 = _leaf((1, 2, 3, 3)), _leaf((2, 2, 2, 2))
    bias32 = ag.tensor(np.array([0.5, -1.25], np.float32))
    # 1-d and 2-d add the bias into the output in place: a float32 bias on a float64 output is cast
    plain = F.conv_transpose2d(x64, w64).detach().numpy()
    got = F.conv_transpose2d(x64, w64, bias32)
    assert got.dtype == ag.float64
    np.testing.assert_allclose(got.detach().numpy(), plain + np.array([0.5, -1.25])[:, None, None], rtol=1e-14)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv_transpose3d(_leaf((1, 2, 3, 3, 3)), _leaf((2, 2, 2, 2, 2)), bias32)
    ints = ag.ones(1, 2, 3, 3, dtype=ag.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        F.conv_transpose2d(ints, ints[0, :, :2, :2].reshape(2, 1, 2, 2).expand(2, 2, 2, 2), bias32)
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        F.conv_transpose1d(ag.ones(1, 2, 3), ag.ones(2, 2, 2), ag.ones(2, dtype=ag.complex64))
    with pytest.raises(RuntimeError, match="and bias type .* should be the same"):
        F.conv_transpose1d(ag.ones(1, 2, 3, dtype=ag.float16), ag.ones(2, 2, 2, dtype=ag.float16), ag.ones(2))


# -- losses ----------------------------------------------------------------------------------------------------------
def test_hinge_embedding_loss_fills_the_margin_into_the_input_dtype():
    """PyTorch computes margin - input as a tensor like the input filled with the margin: an integer input truncates
    the margin and keeps its dtype (so its mean has no dtype to infer)."""
    x = np.array([[1, -2], [3, 0]], np.int32)
    target = ag.tensor([1, -1])
    for margin in (0.5, 2):
        out = F.hinge_embedding_loss(ag.tensor(x), target, margin=margin, reduction="none")
        assert out.dtype == ag.int32
        expected = np.where(np.array([1, -1]) == 1, x, np.maximum(int(margin) - x, 0))
        np.testing.assert_array_equal(out.numpy(), expected)
    expected_sum = np.where(np.array([1, -1]) == 1, x, np.maximum(1 - x, 0)).sum()
    assert F.hinge_embedding_loss(ag.tensor(x), target, reduction="sum").item() == expected_sum
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        F.hinge_embedding_loss(ag.tensor(x), target)


def test_hinge_embedding_loss_float_gradients():
    x = _leaf((3, 4))
    target = ag.tensor([1.0, -1.0, 1.0, -1.0])
    x.data.copy_(ag.tensor(np.array([0.3, -0.9, 1.7, 0.2]) + np.arange(3)[:, None] * 0.11))  # off margin - x = 0
    out = F.hinge_embedding_loss(x, target, margin=0.7, reduction="none")
    xs = x.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), np.where([1, 0, 1, 0], xs, np.maximum(0.7 - xs, 0)))
    assert gradcheck(lambda t: F.hinge_embedding_loss(t, target, margin=0.7), (x,))
    assert gradgradcheck(lambda t: F.hinge_embedding_loss(t, target, margin=0.7, reduction="sum") ** 2, (x,))


@pytest.mark.parametrize("loss, target", [
    (F.multi_margin_loss, [0, 2]),
    (F.multilabel_margin_loss, [[0, -1, 1], [2, 1, -1]]),
])
def test_margin_losses_have_no_float16_cpu_kernel(loss, target):
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        loss(ag.zeros(2, 3, dtype=ag.float16), ag.tensor(target))
    assert loss(ag.zeros(2, 3), ag.tensor(target)).dtype == ag.float32


def test_cross_entropy_label_smoothing_with_weights_refuses_a_uint8_target():
    x, weight = _leaf((3, 4)), ag.tensor([1.0, 2.0, 0.5, 1.5], dtype=ag.float64)
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        F.cross_entropy(x, ag.tensor([0, 3, 1], dtype=ag.uint8), weight, label_smoothing=0.1)
    # without weights (or smoothing) a uint8 target is read as class indices
    logp = x.detach().numpy() - np.log(np.exp(x.detach().numpy()).sum(1, keepdims=True))
    classes = np.array([0, 3, 1])
    expected = (0.9 * -logp[np.arange(3), classes] + 0.1 * -logp.mean(1)).mean()
    got = F.cross_entropy(x, ag.tensor(classes, dtype=ag.uint8), label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-12)


def test_soft_margin_loss_refuses_a_complex_target_instead_of_dropping_its_imaginary_part():
    x = ag.tensor([0.5, -1.5, 2.0])
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        F.soft_margin_loss(x, ag.tensor([1 + 1j, -1, 1], dtype=ag.complex64))
    with pytest.raises(RuntimeError, match="result type ComplexDouble can't be cast to the desired output type Double"):
        F.soft_margin_loss(x.double(), ag.tensor([1, -1, 1], dtype=ag.complex64))
    y = np.array([1.0, -1.0, 1.0])
    got = F.soft_margin_loss(x, ag.tensor(y), reduction="none")  # a float64 target: the input's dtype
    assert got.dtype == ag.float32
    np.testing.assert_allclose(got.numpy(), np.log1p(np.exp(-y * [0.5, -1.5, 2.0])), rtol=1e-6)
