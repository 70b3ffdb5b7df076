"""actorgrad.utils.checkpoint: the same gradients as the plain model, from far less memory."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.utils.checkpoint import checkpoint

WIDTH, LAYERS, SEGMENT = 256, 16, 4


def mlp(seed=0, requires_grad=True, dropout=0.0, width=WIDTH):
    """A tanh MLP (with dropout after each layer when asked) as a function of the layer range to run."""
    rng = np.random.default_rng(seed)
    weights = [ag.tensor(rng.standard_normal((width, width)) / 16, requires_grad=requires_grad)
               for _ in range(LAYERS)]
    biases = [ag.tensor(rng.standard_normal(width) / 16, requires_grad=requires_grad) for _ in range(LAYERS)]

    def layers(lo, hi):
        def run(h):
            for i in range(lo, hi):
                h = ag.tanh(h @ weights[i] + biases[i])
                if dropout:
                    h = ag.nn.functional.dropout(h, dropout)
            return h
        return run

    return layers, weights + biases


def plain(layers, x):
    return layers(0, LAYERS)(x)


def checkpointed(layers, x):
    for start in range(0, LAYERS, SEGMENT):
        x = checkpoint(layers(start, start + SEGMENT), x, use_reentrant=True)
    return x


def test_checkpointed_model_has_the_plain_models_gradients_with_dropout_repeated():
    layers, params = mlp(dropout=0.2)
    x = ag.tensor(np.random.default_rng(1).standard_normal((8, WIDTH)), requires_grad=True)
    results = []
    for model in (plain, checkpointed):
        ag.manual_seed(7)
        out = model(layers, x)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), [p.grad.numpy() for p in params]))
        x.grad = None
        for p in params:
            p.grad = None
    (out_a, gx_a, gp_a), (out_b, gx_b, gp_b) = results
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_allclose(gx_b, gx_a, rtol=1e-12, atol=1e-14)
    for a, b in zip(gp_a, gp_b):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


def test_backward_restores_the_random_stream_it_found():
    layers, _ = mlp(dropout=0.5)
    x = ag.tensor(np.ones((2, WIDTH)), requires_grad=True)
    ag.manual_seed(3)
    out = checkpoint(layers(0, 2), x, use_reentrant=True)
    expected = ag.rand(4).numpy()
    ag.manual_seed(3)
    out = checkpoint(layers(0, 2), x, use_reentrant=True)
    out.sum().backward()  # recomputes with the forward's random state, then puts the current one back
    np.testing.assert_array_equal(ag.rand(4).numpy(), expected)


async def test_checkpoint_works_in_an_async_backward():
    layers, params = mlp()
    x = ag.tensor(np.random.default_rng(2).standard_normal((4, WIDTH)), requires_grad=True)
    await ag.backward(plain(layers, x).sum())
    expected = [p.grad.numpy().copy() for p in params]
    for p in params:
        p.grad = None
    with trio.fail_after(10):
        await ag.backward(checkpointed(layers, x).sum())
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-12, atol=1e-14)


def peak_bytes(model, layers, x):
    gc.collect()
    tracemalloc.start()
    try:
        model(layers, x).sum().backward()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checkpointing_every_four_layers_at_least_halves_the_peak_memory():
    # A batch large beside the width, as in training, so activations (tanh's result and dropout's mask, two
    # per layer) hold the memory rather than the weights and their gradients.
    layers, _ = mlp(dropout=0.1, width=64)
    x = ag.tensor(np.random.default_rng(3).standard_normal((1024, 64)), requires_grad=True)
    plain_peak = peak_bytes(plain, layers, x)
    checkpointed_peak = peak_bytes(checkpointed, layers, x)
    assert checkpointed_peak <= plain_peak / 2, (checkpointed_peak, plain_peak)


def test_checkpoint_refuses_grad_and_backward_with_inputs():
    layers, params = mlp()
    x = ag.tensor(np.ones((2, WIDTH)), requires_grad=True)
    message = "incompatible with .grad"
    with pytest.raises(RuntimeError, match=message):
        ag.autograd.grad(checkpoint(layers(0, 2), x, use_reentrant=True).sum(), x)
    with pytest.raises(RuntimeError, match=message):
        checkpoint(layers(0, 2), x, use_reentrant=True).sum().backward(inputs=[x])
    assert all(p.grad is None for p in params)


def test_checkpoint_node_of_each_variant():
    layers, _ = mlp()
    x = ag.tensor(np.ones((2, WIDTH)), requires_grad=True)
    assert checkpoint(layers(0, 1), x, use_reentrant=True).grad_fn.name() == "CheckpointFunctionBackward"
    # the non-reentrant variant records the segment's own nodes, as without checkpointing
    assert checkpoint(layers(0, 1), x, use_reentrant=False).grad_fn.name() == layers(0, 1)(x).grad_fn.name()


def test_non_tensor_arguments_and_several_outputs_pass_through():
    def split(h, scale):
        return h * scale, ag.tanh(h)

    x = ag.tensor(np.linspace(-1, 1, 6), requires_grad=True)
    scaled, bent = checkpoint(split, x, 3.0, use_reentrant=True)
    (scaled.sum() + bent.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 + 1 - np.tanh(np.linspace(-1, 1, 6)) ** 2)


def test_inputs_without_grad_warn_that_gradients_will_be_none():
    layers, params = mlp()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(layers(0, 1), ag.tensor(np.ones((2, WIDTH))), use_reentrant=True)
    assert not out.requires_grad
