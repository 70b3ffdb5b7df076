"""Behaviours of local_response_norm and the dropouts found to differ from PyTorch's by a generated differential
review (norms, dropouts, pad, fold/unfold, pixel shuffles, embedding_bag, one_hot): local_response_norm refuses
the dtypes its pooling kernels refuse, a NaN dropout probability is refused by the kernel's RuntimeError after
the Python checks, a 0-d tensor probability is read as its number, a complex dropout refuses its mask draw, and
the pixel shuffles never return a view of their input, and one_hot's index tensor is the keyword `input`.
Expected values come from closed forms and element loops."""

import math

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F

RNG = np.random.default_rng(47)


def _lrn_ref(x: np.ndarray, size: int, alpha: float, beta: float, k: float) -> np.ndarray:
    """x / (k + alpha * mean of x^2 over the channels c - size // 2 ... c + (size - 1) // 2, zeros past the ends)
    ** beta; an integer input's mean is an integer average, floored, as its average pooling's."""
    out = np.empty(x.shape)
    channels = x.shape[1]
    for c in range(channels):
        lo, hi = max(c - size // 2, 0), min(c + (size - 1) // 2, channels - 1)
        window = (x[:, lo:hi + 1].astype(np.int64 if x.dtype.kind == "i" else np.float64) ** 2).sum(1)
        mean = window // size if x.dtype.kind == "i" else window / size
        out[:, c] = x[:, c] / (k + alpha * mean) ** beta
    return out


@pytest.mark.parametrize("dtype, name", [(ag.int32, "Int"), (ag.uint8, "Byte"), (ag.int8, "Char"),
                                         (ag.bool, "Bool"), (ag.complex64, "ComplexFloat")])
def test_local_response_norm_refuses_the_dtypes_pytorchs_pooling_kernels_refuse(dtype, name):
    with pytest.raises(NotImplementedError, match=f"^\"avg_pool2d\" not implemented for '{name}'$"):
        F.local_response_norm(ag.ones(2, 3, 4, dtype=dtype), 2)
    with pytest.raises(NotImplementedError, match=f"^\"avg_pool3d_out_frame\" not implemented for '{name}'$"):
        nn.LocalResponseNorm(2)(ag.ones(2, 3, 4, 5, dtype=dtype))
    empty = ag.ones(0, 3, 4, dtype=dtype)
    assert F.local_response_norm(empty, 2) is empty  # no values: PyTorch returns it before pooling


def test_local_response_norm_refuses_float16_past_3d_on_the_cpu_and_keeps_int64():
    with pytest.raises(NotImplementedError, match="^\"avg_pool3d_out_frame\" not implemented for 'Half'$"):
        F.local_response_norm(ag.ones(2, 3, 2, 2, dtype=ag.float16), 3)
    x16 = RNG.standard_normal((2, 5, 3)).astype(np.float16)  # 3-D: PyTorch's avg_pool2d has float16
    out = F.local_response_norm(ag.tensor(x16), 3, alpha=0.5, beta=0.75, k=1.0)
    assert out.dtype == ag.float16
    np.testing.assert_allclose(out.numpy().astype(np.float64), _lrn_ref(x16, 3, 0.5, 0.75, 1.0), rtol=1e-2, atol=1e-2)
    xi = RNG.integers(-4, 5, (2, 4, 2, 3))
    out = F.local_response_norm(ag.tensor(xi), 2, alpha=0.3, beta=0.5, k=2.0)
    assert out.dtype == ag.float32  # the division by a float makes it float, as PyTorch's
    np.testing.assert_allclose(out.numpy(), _lrn_ref(xi, 2, 0.3, 0.5, 2.0), rtol=1e-5)


NAN_MESSAGE = "^dropout probability has to be between 0 and 1, but got nan$"


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                                  "feature_alpha_dropout"])
@pytest.mark.parametrize("training", [True, False])
def test_a_nan_dropout_probability_is_the_kernels_runtime_error(name, training):
    x = ag.ones(2, 3, 4) if name == "dropout1d" else ag.ones(2, 3, 4, 5)
    with pytest.raises(RuntimeError, match=NAN_MESSAGE):
        getattr(F, name)(x, math.nan, training=training)
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, but got 1.5$"):
        getattr(F, name)(x, 1.5, training=training)


def test_a_nan_dropout_probability_passes_the_python_checks_before_it():
    with pytest.raises(RuntimeError, match="^dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ag.ones(2, 3, 4, 5), math.nan)  # the rank check comes first, as in PyTorch
    layer = nn.Dropout(math.nan)  # PyTorch's layer takes it: `p < 0 or p > 1` is False for a NaN
    with pytest.raises(RuntimeError, match=NAN_MESSAGE):
        layer(ag.ones(3))
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, but got -0.5$"):
        nn.Dropout2d(-0.5)


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "dropout2d", "dropout3d"])
def test_a_zero_dim_tensor_dropout_probability_is_read_as_its_number(name):
    ag.manual_seed(0)
    values = RNG.standard_normal((4, 8, 3) if name == "dropout1d" else (4, 8, 3, 2)) + 3.0
    out = getattr(F, name)(ag.tensor(values), ag.tensor(0.25), training=True).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], values[kept] / 0.75, rtol=1e-12)
    assert 0 < kept.sum() < kept.size  # some of the 32 channels dropped, some kept
    np.testing.assert_array_equal(getattr(F, name)(ag.tensor(values), ag.tensor(1.0)).numpy(), 0.0)
    alpha = F.alpha_dropout(ag.tensor(values), ag.tensor(0.5), training=True).numpy()
    a = (0.5 * (1 + 0.5 * 1.7580993408473766 ** 2)) ** -0.5
    shift = 0.5 * 1.7580993408473766 * a
    dropped = np.isclose(alpha, -1.7580993408473766 * a + shift, rtol=1e-12)
    np.testing.assert_allclose(alpha[~dropped], a * values[~dropped] + shift, rtol=1e-12)


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout"])
def test_complex_dropout_refuses_its_mask_draw_and_keeps_the_draw_free_cases(name):
    shape = (2, 3, 4) if name == "dropout1d" else (2, 3, 4, 5)
    x = ag.tensor(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape), dtype=ag.complex64)
    with pytest.raises(NotImplementedError, match="^\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'$"):
        getattr(F, name)(x, 0.5, training=True)
    assert getattr(F, name)(x, 0.5, training=False) is x
    assert getattr(F, name)(x, 0.0, training=True) is x
    dropped = getattr(F, name)(x, 1.0, training=True)
    assert dropped.dtype == ag.complex64
    np.testing.assert_array_equal(dropped.numpy(), np.zeros(shape))


def _pixel_shuffle_ref(x: np.ndarray, r: int) -> np.ndarray:
    """out[n, c, h * r + i, w * r + j] = x[n, c * r * r + i * r + j, h, w], element by element."""
    n, cr, height, width = x.shape
    out = np.empty((n, cr // (r * r), height * r, width * r), x.dtype)
    for c, i, j, h, w in np.ndindex(cr // (r * r), r, r, height, width):
        out[:, c, h * r + i, w * r + j] = x[:, c * r * r + i * r + j, h, w]
    return out


@pytest.mark.parametrize("shape, r", [((2, 3, 2, 4), 1), ((1, 4, 1, 1), 2), ((3, 9, 1, 2), 3)])
def test_pixel_shuffles_write_a_new_tensor_that_in_place_ops_change_alone(shape, r):
    values = RNG.standard_normal(shape)
    x = ag.tensor(values, requires_grad=True)
    out = F.pixel_shuffle(x, r)
    np.testing.assert_array_equal(out.detach().numpy(), _pixel_shuffle_ref(values, r))
    out.relu_()  # no view of a leaf that requires grad: PyTorch's result is its own tensor
    np.testing.assert_array_equal(x.detach().numpy(), values)
    w = RNG.standard_normal(out.shape)
    (out * ag.tensor(w)).sum().backward()
    expected = np.where(_pixel_shuffle_ref(values, r) > 0, w, 0.0)
    np.testing.assert_array_equal(_pixel_shuffle_ref(x.grad.numpy(), r), expected)
    back = F.pixel_unshuffle(ag.tensor(_pixel_shuffle_ref(values, r)), r)
    np.testing.assert_array_equal(back.numpy(), values)
    inner = ag.tensor(values)
    nn.PixelUnshuffle(1)(inner).add_(1.0)
    np.testing.assert_array_equal(inner.numpy(), values)


def test_one_hot_takes_its_index_tensor_by_pytorchs_keyword_input():
    indices = np.array([[2, 0], [3, 3]])
    out = F.one_hot(input=ag.tensor(indices), num_classes=5)
    expected = np.zeros((2, 2, 5), np.int64)
    for i, j in np.ndindex(2, 2):
        expected[i, j, indices[i, j]] = 1
    assert out.dtype == ag.int64
    np.testing.assert_array_equal(out.numpy(), expected)
    with pytest.raises(TypeError):  # the name in PyTorch's docs, which its binding refuses too
        F.one_hot(tensor=ag.tensor(indices))


@pytest.mark.gpu
def test_local_response_norm_on_cuda_keeps_float16_and_refuses_int32(cupy):
    x = RNG.standard_normal((2, 3, 2, 2)).astype(np.float16)
    out = F.local_response_norm(ag.tensor(x, device="cuda:0"), 3, alpha=0.5)
    assert out.dtype == ag.float16 and out.device.type == "cuda"
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), _lrn_ref(x, 3, 0.5, 0.75, 1.0), rtol=1e-2,
                               atol=1e-2)
    with pytest.raises(NotImplementedError, match="^\"avg_pool3d_out_frame\" not implemented for 'Int'$"):
        F.local_response_norm(ag.ones(2, 3, 2, 2, dtype=ag.int32, device="cuda:0"), 3)
    with pytest.raises(RuntimeError, match=NAN_MESSAGE):
        F.dropout(ag.ones(3, device="cuda:0"), math.nan)
    x = ag.ones(1, 4, 1, 1, device="cuda:0")
    F.pixel_shuffle(x, 2).add_(1.0)
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones((1, 4, 1, 1)))
