"""PyTorch's memory formats: taken by clone, contiguous, to, is_contiguous, empty and the `*_like` functions; a
channels-last tensor keeps its NCHW shape with its memory in NHWC order."""

import pickle

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F


def nhwc_strides(shape: tuple) -> tuple:
    """Element strides of an N, C, H, W shape whose memory runs N, H, W, C (channels last)."""
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def ndhwc_strides(shape: tuple) -> tuple:
    n, c, d, h, w = shape
    return (d * h * w * c, 1, h * w * c, w * c, c)


def row_major_strides(shape: tuple) -> tuple:
    return tuple(int(np.prod(shape[k + 1:])) for k in range(len(shape)))


X = np.arange(120.0).reshape(2, 3, 4, 5)


def test_the_formats_are_named_singletons_that_pickle_as_themselves():
    formats = (ag.contiguous_format, ag.preserve_format, ag.channels_last, ag.channels_last_3d)
    assert [repr(f) for f in formats] == [f"actorgrad.{f.name}" for f in formats]
    assert all(isinstance(f, ag.memory_format) for f in formats)
    assert all(pickle.loads(pickle.dumps(f)) is f for f in formats)


def test_clone_in_channels_last_keeps_values_and_shape_and_passes_gradients():
    x = ag.tensor(X, requires_grad=True)
    y = x.clone(memory_format=ag.channels_last)
    assert y.shape == x.shape and y.stride() == nhwc_strides(X.shape)
    np.testing.assert_array_equal(y.detach().numpy(), X)
    assert y.is_contiguous(memory_format=ag.channels_last) and not y.is_contiguous()
    weights = np.random.default_rng(0).normal(size=X.shape)
    (y * ag.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), weights)


def test_contiguous_returns_the_tensor_already_in_the_format_else_a_copy_in_it():
    x = ag.tensor(X)
    last = x.contiguous(memory_format=ag.channels_last)
    assert last is not x and last.stride() == nhwc_strides(X.shape)
    assert last.contiguous(memory_format=ag.channels_last) is last
    back = last.contiguous()
    assert back.stride() == row_major_strides(X.shape) and back.is_contiguous()
    assert x.contiguous(memory_format=ag.preserve_format) is x  # preserve asks about the default layout
    volume = ag.zeros(2, 3, 2, 4, 5).contiguous(memory_format=ag.channels_last_3d)
    assert volume.stride() == ndhwc_strides((2, 3, 2, 4, 5))
    assert volume.is_contiguous(memory_format=ag.channels_last_3d)
    assert not volume.is_contiguous(memory_format=ag.channels_last)  # another rank: False, not an error


def test_to_with_a_memory_format():
    x = ag.tensor(X)
    assert x.to(memory_format=ag.channels_last).stride() == nhwc_strides(X.shape)
    assert x.to(memory_format=ag.preserve_format) is x
    converted = x.to(ag.float32, memory_format=ag.channels_last)
    assert converted.dtype == ag.float32 and converted.stride() == nhwc_strides(X.shape)


@pytest.mark.parametrize("make", [
    lambda x, f: ag.zeros_like(x, memory_format=f),
    lambda x, f: ag.ones_like(x, memory_format=f),
    lambda x, f: ag.full_like(x, 2.5, memory_format=f),
    lambda x, f: ag.empty_like(x, memory_format=f),
    lambda x, f: ag.rand_like(x, memory_format=f),
    lambda x, f: ag.randn_like(x, memory_format=f),
    lambda x, f: ag.randint_like(x, 5, memory_format=f),
])
def test_the_like_functions_take_each_format(make):
    x = ag.tensor(X)
    for fmt in (ag.preserve_format, ag.contiguous_format):
        made = make(x, fmt)
        assert made.shape == X.shape and made.is_contiguous()
    assert make(x, ag.channels_last).stride() == nhwc_strides(X.shape)
    np.testing.assert_array_equal(ag.full_like(x, 2.5, memory_format=ag.channels_last).numpy(), np.full(X.shape, 2.5))


def test_empty_in_channels_last():
    assert ag.empty(2, 3, 4, 5, memory_format=ag.channels_last).stride() == nhwc_strides((2, 3, 4, 5))
    assert ag.empty(2, 3, memory_format=ag.contiguous_format).stride() == (3, 1)


def test_a_convolution_of_a_channels_last_input_gives_the_same_values():
    rng = np.random.default_rng(1)
    x, w = ag.tensor(rng.normal(size=(2, 3, 6, 6))), ag.tensor(rng.normal(size=(4, 3, 3, 3)))
    np.testing.assert_allclose(F.conv2d(x.contiguous(memory_format=ag.channels_last), w).numpy(),
                               F.conv2d(x, w).numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda x: x.contiguous(memory_format=ag.channels_last), "required rank 4 tensor to use channels_last format"),
    (lambda x: x.clone(memory_format=ag.channels_last_3d), "required rank 5 tensor to use channels_last_3d format"),
    (lambda x: ag.zeros_like(x, memory_format=ag.channels_last), "required rank 4 tensor to use channels_last format"),
])
def test_a_channels_last_format_of_another_rank_is_refused(call, message):
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        call(ag.zeros(2, 3))


@pytest.mark.parametrize("call, op", [
    (lambda x: x.clone(memory_format="channels_last"), "clone"),
    (lambda x: ag.zeros_like(x, memory_format=0), "zeros_like"),
    (lambda x: x.to(memory_format="x"), "to"),
])
def test_a_memory_format_of_another_type_is_refused(call, op):
    with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'memory_format' must be torch.memory_format, not "):
        call(ag.zeros(2, 3, 4, 5))


@pytest.mark.gpu
def test_on_cuda_channels_last_copies_hold_the_same_values(cupy):
    x = ag.tensor(X, device="cuda", requires_grad=True)
    y = x.clone(memory_format=ag.channels_last)
    assert y.device == x.device and y.stride() == nhwc_strides(X.shape)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), X)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.ones(X.shape))
