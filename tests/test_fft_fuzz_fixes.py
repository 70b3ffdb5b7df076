"""`actorgrad.fft` where a generated differential review against PyTorch found it behaving differently: a 0-d
integer tensor read as an int for n, dim and s entries (as PyTorch's argument parser reads one), the n-d complex
transforms checking s and dim before refusing a half input, and fftfreq/rfftfreq taking `layout` and `pin_memory`.
Values against numpy.fft and the closed form k / (n d), gradients against gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)


def test_a_zero_dim_integer_tensor_is_an_int_for_n_dim_and_s():
    a = RNG.standard_normal((3, 4))
    z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    n, axis = ag.tensor(5), ag.tensor(0, dtype=ag.int32)
    np.testing.assert_allclose(ag.fft.irfft(ag.tensor(z), n=n).numpy(), np.fft.irfft(z, n=5), rtol=1e-12)
    np.testing.assert_allclose(ag.fft.fft(ag.tensor(a), dim=axis).numpy(), np.fft.fft(a, axis=0), rtol=1e-12)
    expected = np.fft.fftn(a, s=(2, 6), axes=(0, 1))
    np.testing.assert_allclose(ag.fft.fftn(ag.tensor(a), s=(ag.tensor(2), 6)).numpy(), expected, rtol=1e-12)
    np.testing.assert_array_equal(ag.fft.fftshift(ag.tensor(a), dim=axis).numpy(), np.fft.fftshift(a, axes=0))
    x = ag.tensor(z, requires_grad=True)
    assert gradcheck(lambda t: ag.fft.hfft(t, n=ag.tensor(7)), (x,))
    assert gradgradcheck(lambda t: ag.fft.irfft(t, n=ag.tensor(4)), (x,))


@pytest.mark.parametrize("n", [ag.tensor(3.0), ag.tensor(True)])
def test_a_float_or_bool_tensor_is_still_no_int(n):
    with pytest.raises(TypeError, match="fft_fft\\(\\): argument 'n' must be int, not Tensor"):
        ag.fft.fft(ag.ones(4), n=n)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda x: ag.fft.fft2(x), IndexError, r"Dimension out of range \(expected to be in range of \[-1, 0\]"),
    (lambda x: ag.fft.ifftn(x, dim=(0, 3)), IndexError, r"expected to be in range of \[-1, 0\], but got 3"),
    (lambda x: ag.fft.fftn(x, s=(2, 3)), RuntimeError, "Got shape with 2 values but input tensor only has 1 dim"),
    (lambda x: ag.fft.ifft2(x, s=(0,), dim=(0,)), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: ag.fft.fftn(x, dim=(0, -1)), RuntimeError, "FFT dims must be unique"),
    (lambda x: ag.fft.fftn(x, s=(4,)), RuntimeError, "Unsupported dtype Half"),
])
def test_the_complex_n_dim_transforms_check_s_and_dim_before_refusing_half(call, error, message):
    with pytest.raises(error, match=message):
        call(ag.ones(6, dtype=ag.float16))


def test_fftfreq_and_rfftfreq_take_layout_and_pin_memory():
    n, d = 7, 0.3
    k = np.array([0, 1, 2, 3, -3, -2, -1])
    freq = ag.fft.fftfreq(n, d, dtype=ag.float64, layout=ag.strided, pin_memory=True)
    np.testing.assert_allclose(freq.numpy(), k / (n * d), rtol=1e-15)
    half = ag.fft.rfftfreq(n, d, dtype=ag.float64, layout=None, pin_memory=False)
    np.testing.assert_allclose(half.numpy(), np.arange(4) / (n * d), rtol=1e-15)
    with pytest.raises(TypeError, match="fft_rfftfreq\\(\\): argument 'layout' must be torch.layout, not int"):
        ag.fft.rfftfreq(4, layout=3)
    with pytest.raises(TypeError, match="fft_fftfreq\\(\\): argument 'pin_memory' must be bool, not int"):
        ag.fft.fftfreq(4, pin_memory=3)


@pytest.mark.gpu
def test_on_cuda_a_zero_dim_tensor_length_and_fftfreqs_layout_match_the_cpu(cupy):
    z = RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4))
    results = []
    for device in ("cpu", "cuda:0"):
        x = ag.tensor(z, device=device, requires_grad=True)
        out = ag.fft.irfft(x, n=ag.tensor(5))
        (out * out).sum().backward()
        freq = ag.fft.fftfreq(5, device=device, layout=ag.strided, pin_memory=False)
        assert out.device == x.device and freq.device == x.device
        results.append([t.detach().cpu().numpy() for t in (out, x.grad, freq)])
    for cpu, gpu in zip(*results, strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-12)
