"""nn.functional behaviours found to differ from PyTorch's by a generated (fuzz) differential review, each checked
against an independent computation: class targets of uint8 refused for spatial inputs, multilabel_soft_margin_loss
summing over the input's last dim when the target broadcasts it up, the pointwise losses promoting their operands
as broadcast tensors and refusing bool subtraction, kl_div's errors for shapes that do not broadcast and for complex
operands, hardtanh's and threshold's checks and limits on integer and complex tensors, normalize of complex
tensors, embedding's refusal of indices other than int64 and int32 (after max_norm's own), and the refusals of
complex tensors by max and average pooling and of a conv bias of another dtype, and fractional max pooling's
empty outputs recorded as nodes (their gradient zeros), as PyTorch's, silu of complex tensors (without a
gradient, as PyTorch's), and unfold and fold of bool tensors (overlapping blocks folding as an or)."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(47)
SPATIAL = RNG.standard_normal((2, 3, 4))
SPATIAL_TARGET = RNG.integers(0, 3, (2, 4))
BYTE_TARGET = "^expected scalar type Long but found Byte$"


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis, keepdims=True))


@pytest.mark.parametrize("loss", [F.nll_loss, F.cross_entropy])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 2), (2, 3, 1, 2, 2)])
def test_a_spatial_class_loss_refuses_a_uint8_target(loss, shape):
    x = ag.tensor(SPATIAL.reshape(shape))
    target = ag.tensor(SPATIAL_TARGET.reshape((2, *shape[2:])), dtype=ag.uint8)
    with pytest.raises(RuntimeError, match=BYTE_TARGET):
        loss(x, target)


def test_the_uint8_refusal_comes_after_the_weight_and_input_dtype_checks():
    target = ag.tensor(SPATIAL_TARGET, dtype=ag.uint8)
    with pytest.raises(RuntimeError, match="^expected scalar type Double but found Float$"):
        F.nll_loss(ag.tensor(SPATIAL), target, weight=ag.ones(3))
    with pytest.raises(NotImplementedError, match="nll_loss2d_forward_out_frame"):
        F.nll_loss(ag.tensor(SPATIAL).long(), target)


def test_uint8_targets_of_unbatched_and_batched_rows_still_pick_their_classes():
    x = RNG.standard_normal((4, 3))
    classes = np.array([2, 0, 1, 1])
    got = F.cross_entropy(ag.tensor(x), ag.tensor(classes, dtype=ag.uint8), reduction="none")
    np.testing.assert_allclose(got.numpy(), -_log_softmax(x, 1)[np.arange(4), classes], rtol=1e-12)
    long_target = F.nll_loss(ag.tensor(SPATIAL), ag.tensor(SPATIAL_TARGET))  # the spatial form takes int64
    picked = np.take_along_axis(SPATIAL, SPATIAL_TARGET[:, None], 1)[:, 0]
    np.testing.assert_allclose(long_target.item(), -picked.mean(), rtol=1e-12)


def test_multilabel_soft_margin_loss_sums_over_the_inputs_last_dim_of_a_broadcast_loss():
    x = RNG.standard_normal((2, 3))
    target = RNG.integers(0, 2, (4, 1, 1)).astype(np.float64)
    got = F.multilabel_soft_margin_loss(ag.tensor(x), ag.tensor(target), reduction="none")
    log_sig = -np.logaddexp(0, -x)
    log_sig_neg = -np.logaddexp(0, x)
    elementwise = -(target * log_sig + (1 - target) * log_sig_neg)  # (4, 2, 3)
    expected = elementwise.sum(1) / 3  # dim input.ndim - 1 = 1 of the broadcast loss, as PyTorch sums
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("loss", [F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss])
def test_pointwise_losses_promote_a_zero_dim_operand_as_a_broadcast_one(loss):
    x, y = np.float64(0.3), RNG.standard_normal((2, 3)).astype(np.float32)
    with pytest.warns(UserWarning, match="^Using a target size"):
        got = loss(ag.tensor(x), ag.tensor(y), reduction="none")
    assert got.dtype == ag.float64
    d = x - y.astype(np.float64)
    expected = {F.mse_loss: d * d, F.l1_loss: np.abs(d)}.get(
        loss, np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_l1_loss_and_weighted_losses_refuse_bool_operands_as_subtraction_does():
    flags, values = ag.tensor([True, False]), ag.tensor([0.5, 1.0])
    with pytest.raises(RuntimeError, match="^Subtraction, the `-` operator, with a bool tensor is not supported"):
        F.l1_loss(flags, values)
    with pytest.raises(RuntimeError, match="^Subtraction, the `-` operator, with two bool tensors"):
        F.mse_loss(flags, flags, weight=ag.ones(2))
    np.testing.assert_allclose(F.mse_loss(values, flags).item(), (0.25 + 1.0) / 2)  # the kernel takes bool


def test_kl_div_names_shapes_that_do_not_broadcast_and_refuses_complex_operands():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 2$"):
        F.kl_div(ag.zeros(3), ag.ones(2, 3, 2), reduction="sum")
    with pytest.raises(RuntimeError, match="^kl_div: Complex inputs not supported.$"):
        F.kl_div(ag.zeros(2, dtype=ag.complex64), ag.ones(2, dtype=ag.int64), reduction="sum")
    x, p = RNG.standard_normal((2, 3)), RNG.uniform(0.1, 1, 3)
    got = F.kl_div(ag.tensor(x), ag.tensor(p), reduction="none")
    np.testing.assert_allclose(got.numpy(), p * (np.log(p) - x), rtol=1e-12)


def test_hardtanh_refuses_complex_tensors_negative_unsigned_limits_and_limits_out_of_range():
    with pytest.raises(NotImplementedError, match="^clamp is not supported for complex types$"):
        F.relu6(ag.zeros(2, dtype=ag.complex64))
    small = ag.tensor([0, 1, 2], dtype=ag.uint8)
    with pytest.raises(RuntimeError, match="^cannot do hardtanh on an unsigned type with negative limits$"):
        F.hardtanh(small, -1.0, 2.0)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int8_t without overflow$"):
        F.hardtanh(ag.tensor([1], dtype=ag.int8), -129.0, 2.0)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        F.hardtanh(ag.tensor([1], dtype=ag.int8), 0.0, float("inf"))
    # limits are truncated toward zero: -0.5 is 0 for uint8, -128.7 is -128 for int8
    np.testing.assert_array_equal(F.hardtanh(small, -0.5, 1.0).numpy(), [0, 1, 1])
    signed = ag.tensor([-128, 5], dtype=ag.int8)
    np.testing.assert_array_equal(F.hardtanh(signed, -128.7, 2.0).numpy(), [-128, 2])


def test_threshold_reads_its_numbers_in_an_integer_dtype_and_refuses_complex_tensors():
    x = ag.tensor([-1, 0, 1, 2], dtype=ag.int8)
    # a threshold of -0.3 is 0 in int8, so 0 is replaced too
    np.testing.assert_array_equal(F.threshold(x, -0.3, 5).numpy(), [5, 5, 1, 2])
    with pytest.raises(RuntimeError, match="^value cannot be converted to type uint8_t without overflow$"):
        F.threshold(ag.tensor([1, 2], dtype=ag.uint8), 0.5, 300.0)
    with pytest.raises(NotImplementedError, match="^\"threshold_cpu\" not implemented for 'ComplexFloat'$"):
        F.threshold(ag.zeros(2, dtype=ag.complex64), 0.5, 1.0)


@pytest.mark.parametrize("p", [1, 2, 3.0, float("inf")])
def test_normalize_divides_a_complex_tensor_by_its_real_norm(p):
    z = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    got = F.normalize(ag.tensor(z), p=p, dim=1)
    magnitudes = np.abs(z)
    norms = magnitudes.max(1) if p == float("inf") else (magnitudes ** p).sum(1) ** (1 / p)
    np.testing.assert_allclose(got.numpy(), z / norms[:, None], rtol=1e-12)
    leaf = ag.tensor(z, requires_grad=True)
    assert gradcheck(lambda t: F.normalize(t, p=p, dim=1), (leaf,))


@pytest.mark.parametrize("dtype, name", [(ag.uint8, "ByteTensor"), (ag.int16, "ShortTensor"),
                                         (ag.float32, "FloatTensor"), (ag.bool, "BoolTensor")])
def test_embedding_takes_int64_and_int32_indices_only(dtype, name):
    weight = ag.tensor(RNG.standard_normal((4, 3)))
    indices = ag.tensor([[0, 1], [3, 1]], dtype=dtype)
    for argument, op, kwargs in (("#1", "embedding", {}), ("#2", "embedding_renorm_", {"max_norm": 1.0})):
        message = (rf"^Expected tensor for argument {argument} 'indices' to have one of the following scalar types: "
                   rf"Long, Int; but got actorgrad.{name} instead \(while checking arguments for {op}\)$")
        with pytest.raises(RuntimeError, match=message):
            F.embedding(indices, weight, **kwargs)
    with pytest.raises(RuntimeError, match="while checking arguments for embedding_bag"):
        F.embedding_bag(indices, weight)
    picked = F.embedding(ag.tensor([[0, 1], [3, 1]], dtype=ag.int32), weight)
    np.testing.assert_array_equal(picked.numpy(), weight.numpy()[[[0, 1], [3, 1]]])


@pytest.mark.parametrize("pool, shape", [(F.max_pool1d, (1, 4)), (F.max_pool2d, (1, 4, 4)), (F.avg_pool2d, (1, 4, 4)),
                                         (F.max_pool3d, (1, 4, 4, 4)), (F.lp_pool2d, (1, 4, 4))])
def test_max_and_average_pooling_refuse_complex_tensors(pool, shape):
    z = ag.zeros(*shape, dtype=ag.complex64)
    with pytest.raises(NotImplementedError, match=r"not implemented for 'ComplexFloat'$"):
        pool(z, 2, 2) if pool is F.lp_pool2d else pool(z, 2)


def test_a_conv_bias_of_another_dtype_is_named_for_a_complex_input_too():
    x = ag.zeros(1, 2, 4, 4, dtype=ag.complex64)
    with pytest.raises(RuntimeError, match=r"^Input type \(c10::complex<float>\) and bias type \(double\) "
                                           r"should be the same$"):
        F.conv2d(x, ag.zeros(3, 2, 3, 3, dtype=ag.complex64), ag.zeros(3, dtype=ag.float64))


@pytest.mark.parametrize("pool, shape, ratio", [(F.fractional_max_pool2d, (1, 2, 1, 5), (0.7, 0.7)),
                                                (F.fractional_max_pool3d, (1, 2, 1, 5, 3), 0.7)])
def test_fractional_max_pooling_to_an_empty_output_is_a_node_with_a_zero_gradient(pool, shape, ratio):
    x = ag.tensor(RNG.standard_normal(shape), requires_grad=True)
    samples = ag.full((1, 2, len(shape) - 2), 0.5, dtype=ag.float64)
    out = pool(x, 1, output_ratio=ratio, _random_samples=samples)
    assert out.numel() == 0 and out.requires_grad
    (grad,) = ag.autograd.grad(out.sum(), x)
    np.testing.assert_array_equal(grad.numpy(), np.zeros(shape))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_silu_takes_complex_tensors_and_refuses_their_gradient(dtype):
    z = (RNG.standard_normal(5) + 1j * RNG.standard_normal(5)).astype(dtype)
    got = F.silu(ag.tensor(z))
    assert got.dtype == dtype
    np.testing.assert_allclose(got.numpy(), z / (1 + np.exp(-z)), rtol=1e-6)
    leaf = ag.tensor(z, requires_grad=True)
    with pytest.raises(RuntimeError, match="^silu does not support automatic differentiation for outputs with "
                                           "complex dtype.$"):
        F.silu(leaf)
    with ag.no_grad():
        assert not F.silu(leaf).requires_grad


def _unfold_by_loops(x: np.ndarray, k: int) -> np.ndarray:
    """im2col of an (N, C, H, W) array for a k x k kernel, stride 1, no padding, block by block."""
    n, c, h, w = x.shape
    cols = [x[:, :, i:i + k, j:j + k].reshape(n, c * k * k) for i in range(h - k + 1) for j in range(w - k + 1)]
    return np.stack(cols, axis=-1)


def _fold_or_by_loops(cols: np.ndarray, size: tuple, k: int) -> np.ndarray:
    n, ck, _ = cols.shape
    out = np.zeros((n, ck // (k * k), *size), bool)
    blocks = [(i, j) for i in range(size[0] - k + 1) for j in range(size[1] - k + 1)]
    for b, (i, j) in enumerate(blocks):
        out[:, :, i:i + k, j:j + k] |= cols[:, :, b].reshape(n, -1, k, k)
    return out


def test_unfold_and_fold_take_bool_tensors():
    mask = RNG.uniform(size=(2, 2, 4, 5)) < 0.5
    got = F.unfold(ag.tensor(mask), 2)
    assert got.dtype == ag.bool
    np.testing.assert_array_equal(got.numpy(), _unfold_by_loops(mask, 2))
    cols = RNG.uniform(size=(2, 8, 12)) < 0.3
    got = F.fold(ag.tensor(cols), (4, 5), 2)
    assert got.dtype == ag.bool
    np.testing.assert_array_equal(got.numpy(), _fold_or_by_loops(cols, (4, 5), 2))
    with pytest.raises(NotImplementedError, match="^\"im2col_out_cpu\" not implemented for 'Byte'$"):
        F.unfold(ag.tensor(mask, dtype=ag.uint8), 2)


@pytest.mark.gpu
def test_the_fixed_checks_and_values_on_cuda(cupy):
    target = ag.tensor(SPATIAL_TARGET, dtype=ag.uint8, device="cuda:0")
    with pytest.raises(RuntimeError, match=BYTE_TARGET):
        F.nll_loss(ag.tensor(SPATIAL, device="cuda:0"), target)
    x, y = np.float64(0.3), RNG.standard_normal((2, 3)).astype(np.float32)
    with pytest.warns(UserWarning, match="^Using a target size"):
        got = F.mse_loss(ag.tensor(x, device="cuda:0"), ag.tensor(y, device="cuda:0"), reduction="none")
    assert got.dtype == ag.float64 and got.device == ag.device("cuda:0")
    np.testing.assert_allclose(got.cpu().numpy(), (x - y.astype(np.float64)) ** 2, rtol=1e-12)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        F.kl_div(ag.zeros(3, device="cuda:0"), ag.ones(2, 3, 2, device="cuda:0"), reduction="sum")
    z = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    got = F.normalize(ag.tensor(z, device="cuda:0"), dim=1)
    np.testing.assert_allclose(got.cpu().numpy(), z / np.linalg.norm(z, axis=1, keepdims=True), rtol=1e-12)
    x = ag.tensor(RNG.standard_normal((2, 3)), device="cuda:0")
    target = ag.tensor(RNG.integers(0, 2, (4, 1, 1)).astype(np.float64), device="cuda:0")
    assert F.multilabel_soft_margin_loss(x, target, reduction="none").shape == (4, 3)
    cols = RNG.uniform(size=(2, 8, 12)) < 0.3
    got = F.fold(ag.tensor(cols, device="cuda:0"), (4, 5), 2)
    np.testing.assert_array_equal(got.cpu().numpy(), _fold_or_by_loops(cols, (4, 5), 2))
    z = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
    np.testing.assert_allclose(F.silu(ag.tensor(z, device="cuda:0")).cpu().numpy(), z / (1 + np.exp(-z)), rtol=1e-12)
