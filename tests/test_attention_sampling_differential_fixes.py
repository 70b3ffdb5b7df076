"""Differences from PyTorch found by comparing attention and resampling ops with it, each fixed: interpolate's
antialias=True (bilinear, bicubic), scaled_dot_product_attention's errors for a mask that does not broadcast
and for integer inputs, and pixel_shuffle's and pixel_unshuffle's for a factor that is not an int."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _triangle(x: float) -> float:
    return max(0.0, 1.0 - abs(x))


def _keys(x: float, a: float = -0.5) -> float:
    """Keys' cubic convolution kernel."""
    x = abs(x)
    if x < 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    if x < 2:
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
    return 0.0


def _filter_matrix(n_in: int, n_out: int, kernel) -> np.ndarray:
    """Brute force over every source pixel: output i averages them with the kernel stretched by the shrink factor
    s = n_in / n_out and centred on its source position s * (i + 0.5), the weights normalised to sum to 1."""
    s = n_in / n_out
    stretch = max(s, 1.0)
    m = np.array([[kernel((j + 0.5 - s * (i + 0.5)) / stretch) for j in range(n_in)] for i in range(n_out)])
    return m / m.sum(1, keepdims=True)


@pytest.mark.parametrize("mode, kernel", [("bilinear", _triangle), ("bicubic", _keys)])
@pytest.mark.parametrize("size", [(4, 5), (3, 13), (2, 1)])
def test_antialiased_downsampling_averages_every_pixel_under_the_stretched_filter(mode, kernel, size):
    x = RNG.standard_normal((2, 3, 9, 13))
    got = F.interpolate(ag.tensor(x), size=size, mode=mode, antialias=True).numpy()
    rows, cols = _filter_matrix(9, size[0], kernel), _filter_matrix(13, size[1], kernel)
    np.testing.assert_allclose(got, rows @ x @ cols.T, rtol=1e-12, atol=1e-12)


def test_antialiased_bilinear_halving_is_the_1_3_3_1_filter():
    x = RNG.standard_normal((1, 1, 1, 8))
    got = F.interpolate(ag.tensor(x), size=(1, 4), mode="bilinear", antialias=True).numpy()[0, 0, 0]
    v = x[0, 0, 0]
    expected = [(3 * v[0] + 3 * v[1] + v[2]) / 7] + [
        (v[2 * i - 1] + 3 * v[2 * i] + 3 * v[2 * i + 1] + v[2 * i + 2]) / 8 for i in (1, 2)
    ] + [(v[5] + 3 * v[6] + 3 * v[7]) / 7]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_antialiased_float32_stays_float32_and_keeps_a_constant_image():
    x = ag.full((1, 2, 10, 7), 2.5, dtype=ag.float32)
    out = F.interpolate(x, scale_factor=0.4, mode="bicubic", antialias=True)
    assert out.dtype == ag.float32 and out.shape == (1, 2, 4, 2)
    np.testing.assert_allclose(out.numpy(), 2.5, rtol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_interpolate_gradients_pass_gradcheck(mode):
    x = ag.tensor(RNG.standard_normal((1, 2, 7, 6)), requires_grad=True)
    assert gradcheck(lambda t: F.interpolate(t, size=(3, 4), mode=mode, antialias=True), [x], **TOL)
    assert gradgradcheck(lambda t: F.interpolate(t, size=(3, 4), mode=mode, antialias=True) ** 2, [x], **TOL)


@pytest.mark.parametrize("dtype, name", [(ag.int64, "Long"), (ag.float16, "Half")])
def test_antialiased_interpolate_rejects_dtypes_pytorch_rejects(dtype, name):
    with pytest.raises(NotImplementedError, match=f"\"compute_index_ranges_weights\" not implemented for '{name}'"):
        F.interpolate(ag.zeros(1, 2, 6, 6, dtype=dtype), scale_factor=0.5, mode="bilinear", antialias=True)


def test_sdpa_mask_that_does_not_broadcast_raises_pytorchs_runtime_error():
    q, k, v = (ag.tensor(RNG.standard_normal(s)) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)))
    mask = ag.ones(3, 6, dtype=ag.bool)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(4\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 2$"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_sdpa_on_integer_inputs_names_the_scalar_type_as_pytorch_does():
    q = ag.zeros(2, 3, 4, dtype=ag.int64)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Long$"):
        F.scaled_dot_product_attention(q, q, q)


@pytest.mark.parametrize("op, name", [(F.pixel_shuffle, "upscale_factor"), (F.pixel_unshuffle, "downscale_factor")])
@pytest.mark.parametrize("factor, type_name", [(2.0, "float"), (True, "bool")])
def test_pixel_shuffle_factor_that_is_not_an_int_raises_pytorchs_type_error(op, name, factor, type_name):
    with pytest.raises(TypeError, match=rf"^{op.__name__}\(\): argument '{name}' \(position 2\) must be int, "
                                        rf"not {type_name}$"):
        op(ag.zeros(1, 4, 2, 2), factor)


def test_pixel_shuffle_takes_a_numpy_integer_factor():
    x = ag.arange(16.0).reshape(1, 4, 2, 2)
    np.testing.assert_array_equal(F.pixel_shuffle(x, np.int64(2)).numpy(), F.pixel_shuffle(x, 2).numpy())
    assert F.pixel_unshuffle(F.pixel_shuffle(x, np.int64(2)), np.int32(2)).equal(x)


@pytest.mark.gpu
def test_antialiased_interpolate_on_cuda_matches_the_cpu(cupy):
    x = RNG.standard_normal((1, 2, 9, 8))
    expected = F.interpolate(ag.tensor(x), size=(4, 3), mode="bicubic", antialias=True)
    xc = ag.tensor(x, device="cuda", requires_grad=True)
    got = F.interpolate(xc, size=(4, 3), mode="bicubic", antialias=True)
    assert got.device == ag.device("cuda:0")
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.numpy(), rtol=1e-12)
    got.sum().backward()
    assert xc.grad.device == ag.device("cuda:0")
    rows, cols = _filter_matrix(9, 4, _keys), _filter_matrix(8, 3, _keys)
    np.testing.assert_allclose(xc.grad.cpu().numpy(), np.broadcast_to(np.outer(rows.sum(0), cols.sum(0)), x.shape),
                               rtol=1e-12)
