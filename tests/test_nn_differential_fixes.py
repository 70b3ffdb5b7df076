"""Behaviours of actorgrad.nn found to differ from PyTorch's by differential testing, each checked against an
independent computation: embedding's scale_grad_by_freq, the functional norms' float momentum, the norms' and
losses' refusal of integer inputs, and instance_norm of an empty batch with running statistics."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F

RNG = np.random.default_rng(21)
INDICES = np.array([[0, 1, 1], [3, 1, 0], [4, 4, 1]])


def _frequency_scaled_grad(g: np.ndarray, indices: np.ndarray, rows: int, padding_idx: int | None) -> np.ndarray:
    """Each output row's gradient over its index's count in the whole input, summed into that index's row."""
    flat = indices.ravel()
    counts = np.bincount(flat, minlength=rows)
    expected = np.zeros((rows, g.shape[-1]))
    np.add.at(expected, flat, g.reshape(-1, g.shape[-1]) / counts[flat][:, None])
    if padding_idx is not None:
        expected[padding_idx] = 0
    return expected


@pytest.mark.parametrize("padding_idx", [None, 1, -2])
def test_embedding_scale_grad_by_freq_divides_each_rows_gradient_by_its_count(padding_idx):
    weight = ag.tensor(RNG.standard_normal((6, 2)), requires_grad=True)
    g = RNG.standard_normal((3, 3, 2))
    out = F.embedding(ag.tensor(INDICES), weight, padding_idx=padding_idx, scale_grad_by_freq=True)
    np.testing.assert_array_equal(out.detach().numpy(), weight.detach().numpy()[INDICES])
    (grad,) = ag.autograd.grad(out, weight, ag.tensor(g))
    padding = None if padding_idx is None else padding_idx % 6
    np.testing.assert_allclose(grad.numpy(), _frequency_scaled_grad(g, INDICES, 6, padding), rtol=1e-12)


def test_embedding_module_scale_grad_by_freq_and_the_backwards_own_gradient():
    layer = nn.Embedding(6, 2, scale_grad_by_freq=True).double()
    g = RNG.standard_normal((3, 3, 2))
    layer(ag.tensor(INDICES)).backward(ag.tensor(g))
    np.testing.assert_allclose(layer.weight.grad.numpy(), _frequency_scaled_grad(g, INDICES, 6, None), rtol=1e-12)
    # the backward is linear in g; its own gradient (a double backward) agrees with finite differences of it
    weight = ag.tensor(RNG.standard_normal((6, 2)), requires_grad=True)
    assert ag.autograd.gradgradcheck(
        lambda w: F.embedding(ag.tensor(INDICES), w, padding_idx=4, scale_grad_by_freq=True), (weight,))


def test_embedding_sparse_gradients_are_still_refused():
    with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
        F.embedding(ag.tensor([0, 1]), ag.ones(3, 2), sparse=True)


@pytest.mark.parametrize("call, name", [
    (lambda x: F.batch_norm(x, ag.zeros(3), ag.ones(3), training=True, momentum=None), "batch_norm"),
    (lambda x: F.batch_norm(x, ag.zeros(3), ag.ones(3), training=False, momentum=None), "batch_norm"),
    (lambda x: F.batch_norm(x, None, None, training=True, momentum=None), "batch_norm"),
    (lambda x: F.instance_norm(x, momentum=None), "instance_norm"),
    (lambda x: ag.batch_norm(x, None, None, None, None, True, None, 1e-5, False), "batch_norm"),
])
def test_functional_norms_refuse_a_none_momentum_as_pytorch(call, name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'momentum' \(position 7\) must be float, not "
                                        "NoneType$"):
        call(ag.ones(4, 3, 2))


def test_batch_norm_module_with_momentum_none_still_keeps_a_cumulative_average():
    layer = nn.BatchNorm1d(3, momentum=None).double()
    batches = [RNG.standard_normal((5, 3, 4)) for _ in range(3)]
    for batch in batches:
        layer(ag.tensor(batch))
    expected_mean = np.mean([b.mean(axis=(0, 2)) for b in batches], axis=0)
    expected_var = np.mean([b.var(axis=(0, 2), ddof=1) for b in batches], axis=0)
    np.testing.assert_allclose(layer.running_mean.numpy(), expected_mean, rtol=1e-12)
    # the buffer starts at 1 and the first batch's factor is 1, so it is the plain average of the batches' variances
    np.testing.assert_allclose(layer.running_var.numpy(), expected_var, rtol=1e-12)


INTEGER_INPUTS = [(ag.int64, "Long"), (ag.int32, "Int"), (ag.uint8, "Byte"), (ag.bool, "Bool")]


@pytest.mark.parametrize("dtype, name", INTEGER_INPUTS)
@pytest.mark.parametrize("call, kernel", [
    (lambda x: F.layer_norm(x, (4,)), "LayerNormKernelImpl"),
    (lambda x: F.batch_norm(x, None, None, training=True), "batch_norm"),
    (lambda x: F.batch_norm(x, ag.zeros(3), ag.ones(3)), "batch_norm"),
    (lambda x: F.instance_norm(x), "batch_norm"),
    (lambda x: F.group_norm(x, 3), "GroupNormKernelImpl"),
])
def test_norms_refuse_integer_and_bool_inputs(dtype, name, call, kernel):
    x = ag.arange(24).reshape(2, 3, 4).to(dtype)
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for '{name}'$"):
        call(x)


def test_batch_norm_of_an_empty_integer_batch_runs_no_kernel_and_so_no_dtype_check():
    out = F.batch_norm(ag.zeros(0, 3, dtype=ag.int64), None, None, training=True)
    assert out.shape == (0, 3) and out.dtype == ag.int64


def test_instance_norm_of_an_empty_batch_leaves_the_running_statistics_alone():
    mean, var = ag.tensor([0.5, -1.0, 2.0]), ag.tensor([1.5, 2.0, 0.25])
    out = F.instance_norm(ag.zeros(0, 3, 4), mean, var, use_input_stats=True, momentum=0.3)
    assert out.shape == (0, 3, 4)
    np.testing.assert_array_equal(mean.numpy(), np.array([0.5, -1.0, 2.0], np.float32))
    np.testing.assert_array_equal(var.numpy(), np.array([1.5, 2.0, 0.25], np.float32))


@pytest.mark.parametrize("dtype, name", INTEGER_INPUTS)
@pytest.mark.parametrize("shape, target_shape, kernel", [
    ((3, 4), (3,), "nll_loss_out_frame"),
    ((4,), (), "nll_loss_out_frame"),
    ((2, 4, 3), (2, 3), "nll_loss2d_forward_out_frame"),
    ((2, 4, 3, 2), (2, 3, 2), "nll_loss2d_forward_out_frame"),
])
def test_nll_loss_refuses_integer_and_bool_inputs(dtype, name, shape, target_shape, kernel):
    x = ag.zeros(*shape, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for '{name}'$"):
        F.nll_loss(x, ag.zeros(target_shape, dtype=ag.int64))


@pytest.mark.parametrize("dtype, name", INTEGER_INPUTS)
def test_binary_cross_entropies_refuse_integer_and_bool_inputs(dtype, name):
    x = ag.zeros(2, 3, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"^\"binary_cross_entropy\" not implemented for '{name}'$"):
        F.binary_cross_entropy(x, x)
    for target in (x, ag.zeros(2, 3)):
        with pytest.raises(NotImplementedError, match=f"^\"log_sigmoid_cpu\" not implemented for '{name}'$"):
            F.binary_cross_entropy_with_logits(x, target)
    # an integer target of a floating input is still the dtype clash it was
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        F.binary_cross_entropy_with_logits(ag.zeros(2, 3), ag.zeros(2, 3, dtype=ag.int64))


@pytest.mark.parametrize("target_dtype, result", [(ag.float32, "Float"), (ag.float64, "Double")])
def test_huber_loss_of_an_integer_input_and_a_floating_target_is_refused(target_dtype, result):
    x = ag.arange(6).reshape(2, 3)
    target = ag.ones(2, 3, dtype=target_dtype)
    for reduction in ("none", "mean", "sum"):
        with pytest.raises(RuntimeError, match=f"^result type {result} can't be cast to the desired output type "
                                               "Long$"):
            F.huber_loss(x, target, reduction=reduction)
    # the other way round the loss is the floating one: 0.5 d² below delta, delta (|d| - delta / 2) above
    d = np.arange(6.0).reshape(2, 3) - 1
    expected = np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)
    np.testing.assert_allclose(F.huber_loss(ag.tensor(np.arange(6.0).reshape(2, 3)), ag.ones(2, 3, dtype=ag.int64),
                                            reduction="none").numpy(), expected)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("margin", [0, 1, -2])
def test_margin_ranking_loss_of_integer_inputs_is_a_float_loss(reduction, margin):
    x1, x2 = np.arange(6).reshape(2, 3) - 2, np.ones((2, 3), np.int64)
    target = np.array([[1, -1, 1], [-1, 1, -1]])
    losses = np.maximum(-target * (x1 - x2) + margin, 0).astype(np.float32)
    expected = {"none": losses, "mean": losses.mean(), "sum": losses.sum()}[reduction]
    out = F.margin_ranking_loss(ag.tensor(x1), ag.tensor(x2), ag.tensor(target), margin=margin, reduction=reduction)
    assert out.dtype == ag.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("widths, message", [
    ((1.5, 1), "but found element of type float at pos 0"),
    ((1, np.float64(2.0)), "but found element of type numpy.float64 at pos 1"),
    ((True, 1), "but found element of type bool at pos 0"),
    ((ag.tensor(1.0), 1), "but found element of type Tensor at pos 0"),
    (1, "not int"),
    (np.array([1, 1]), "not numpy.ndarray"),
])
def test_pad_refuses_widths_that_are_not_integers_with_pytorchs_argument_error(widths, message):
    with pytest.raises(TypeError, match=rf"^pad\(\): argument 'pad' \(position 2\) must be tuple of ints, {message}$"):
        F.pad(ag.ones(2, 3), widths)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_takes_numpy_integers_and_integer_tensors_as_widths(mode):
    x = RNG.standard_normal((2, 3, 4))
    numpy_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    expected = np.pad(x, ((0, 0), (0, 0), (1, 2)), mode=numpy_mode)
    for widths in ((np.int64(1), 2), [ag.tensor(1), ag.tensor(2, dtype=ag.int32)]):
        np.testing.assert_array_equal(F.pad(ag.tensor(x), widths, mode=mode).numpy(), expected)


@pytest.mark.gpu
def test_embedding_scale_grad_by_freq_on_cuda_gives_the_cpu_gradients(cupy):
    weight = RNG.standard_normal((6, 2))
    g = RNG.standard_normal((3, 3, 2))
    grads = []
    for device in ("cpu", "cuda"):
        w = ag.tensor(weight, device=device, requires_grad=True)
        out = F.embedding(ag.tensor(INDICES, device=device), w, padding_idx=3, scale_grad_by_freq=True)
        (first,) = ag.autograd.grad(out, w, ag.tensor(g, device=device), create_graph=True)
        assert first.device == w.device
        grads.append(first.detach().cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    np.testing.assert_allclose(grads[0], _frequency_scaled_grad(g, INDICES, 6, 3), rtol=1e-12)
