"""Spectral ops where a differential review against PyTorch found actorgrad behaving differently: istft of a
two-sided spectrum to a real signal (PyTorch reads the first half only), istft's and stft's argument checks and
once-per-process warnings, stft's align_to_window, complex window dtypes, fftfreq's arguments and the 2-d
transforms' dim. Values against numpy written out here (overlap-add, DFT sums), gradients against gradcheck."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(11)


def overlap_added(frames: np.ndarray, window: np.ndarray, hop: int, center: bool) -> np.ndarray:
    """istft's last step written out: frames (count, n_fft) windowed, summed at their offsets, divided by the
    summed squared window, the centre padding cut off."""
    count, n_fft = frames.shape
    total = n_fft + hop * (count - 1)
    signal, envelope = np.zeros(total), np.zeros(total)
    for m in range(count):
        signal[m * hop:m * hop + n_fft] += frames[m] * window
        envelope[m * hop:m * hop + n_fft] += window ** 2
    start, end = (n_fft // 2, total - n_fft // 2) if center else (0, total)
    return signal[start:end] / envelope[start:end]


@pytest.mark.parametrize("n_fft", [8, 7])
@pytest.mark.parametrize("center", [True, False])
def test_istft_of_a_two_sided_spectrum_to_a_real_signal_reads_its_first_half(n_fft, center):
    """An arbitrary (not Hermitian) two-sided spectrum: PyTorch inverts its first n_fft // 2 + 1 bins as a
    one-sided one, so the other bins change nothing and get no gradient."""
    hop, frames = 2, 6
    spectrum = RNG.standard_normal((n_fft, frames)) + 1j * RNG.standard_normal((n_fft, frames))
    window = RNG.uniform(0.5, 1.5, n_fft)
    expected = overlap_added(np.fft.irfft(spectrum[:n_fft // 2 + 1].T, n=n_fft), window, hop, center)
    z = ag.tensor(spectrum, requires_grad=True)
    got = ag.istft(z, n_fft, hop_length=hop, window=ag.tensor(window), center=center, onesided=False)
    assert got.dtype == ag.float64
    np.testing.assert_allclose(got.detach().numpy(), expected, atol=1e-12)
    (got * ag.tensor(RNG.standard_normal(got.shape))).sum().backward()
    assert np.all(z.grad.numpy()[n_fft // 2 + 1:] == 0)
    assert gradcheck(lambda z: ag.istft(z, n_fft, hop_length=hop, window=ag.tensor(window), center=center,
                                        onesided=False), (ag.tensor(spectrum[:, :3], requires_grad=True),))


def _istft_error(spectrum: ag.Tensor, **kwargs) -> str:
    with pytest.raises(RuntimeError) as info:
        ag.istft(spectrum, 8, **kwargs)
    return str(info.value)


def test_istft_checks_its_arguments_with_pytorchs_errors():
    spectrum = ag.tensor(RNG.standard_normal((5, 4)) + 1j * RNG.standard_normal((5, 4)))
    window = ag.tensor(np.ones(8))
    assert _istft_error(spectrum, hop_length=9, window=window) == (
        "istft(CPUComplexDoubleType[5, 4], n_fft=8, hop_length=9, win_length=8, window=torch.DoubleTensor{[8]}, "
        "center=1, normalized=0, onesided=None, length=None, return_complex=0) : expected 0 < hop_length <= "
        "win_length")
    assert _istft_error(spectrum, hop_length=0, window=window).endswith(" : expected 0 < hop_length <= win_length")
    assert _istft_error(spectrum, win_length=9, window=window).endswith(" : expected 0 < win_length <= n_fft")
    for bad in (ag.ones(5), ag.ones(2, 4)):
        assert _istft_error(spectrum, window=bad).endswith(
            " : Invalid window shape. window has to be 1D and length of `win_length`")
    assert _istft_error(ag.zeros(5, 0, dtype=ag.complex64), window=window).endswith(
        " : input tensor cannot be empty.")
    assert _istft_error(spectrum, window=window.to(ag.complex128)) == (
        "Complex windows are incompatible with return_complex=False")
    assert _istft_error(spectrum.unsqueeze(0).unsqueeze(0), window=window).endswith(
        " : expected a tensor with 3 or 4 dimensions, but got 5")


def test_stft_refuses_integer_signals():
    with pytest.raises(RuntimeError, match=re.escape(
            "stft(torch.LongTensor[28], n_fft=8, hop_length=2, win_length=8, window=torch.FloatTensor{[8]}, "
            "normalized=0, onesided=None, return_complex=1, align_to_window=None) : expected a tensor of floating "
            "point or complex values")):
        ag.stft(ag.arange(20), 8, window=ag.ones(8), return_complex=True)


def test_stft_and_istft_warn_once_per_process_as_pytorch(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = ag.tensor(RNG.standard_normal(32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            spectrum = ag.stft(x, 8, return_complex=True)
            ag.stft(x, 8, window=ag.ones(8, dtype=ag.float64), return_complex=False)
            ag.istft(spectrum, 8, length=40)
    messages = [str(w.message).split(".")[0] for w in caught]
    assert sorted(messages) == sorted([
        "A window was not provided", "stft with return_complex=False is deprecated",
        "A window was not provided", "The length of signal is shorter than the length parameter"])


@pytest.mark.parametrize(("n_fft", "win", "hop"), [(8, 5, 3), (9, 4, 2), (8, 8, 2)])
def test_stft_align_to_window_starts_each_frame_at_its_window(n_fft, win, hop):
    x, w = RNG.standard_normal(21), RNG.uniform(0.5, 1.5, win)
    left = (n_fft - win) // 2
    count = (len(x) - win) // hop + 1
    expected = np.array([[sum(w[k] * x[m * hop + k] * np.exp(-2j * np.pi * f * (k + left) / n_fft)
                              for k in range(win)) for m in range(count)] for f in range(n_fft // 2 + 1)])
    got = ag.stft(ag.tensor(x), n_fft, hop_length=hop, win_length=win, window=ag.tensor(w), center=False,
                  align_to_window=True, return_complex=True)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)
    with pytest.raises(RuntimeError, match="stft align_to_window should only be set when center = false"):
        ag.stft(ag.tensor(x), n_fft, window=ag.tensor(w), win_length=win, align_to_window=False,
                return_complex=True)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_of_a_complex_dtype_are_ones_up_to_one_point_and_refused_beyond(name):
    make = getattr(ag, name)
    one = make(1, dtype=ag.complex64)
    assert one.dtype == ag.complex64 and one.numpy().tolist() == [1 + 0j]
    assert make(0, dtype=ag.complex128).shape == (0,)
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'ComplexDouble'"):
        make(4, dtype=ag.complex128)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        make(-1, dtype=ag.complex64)


def test_fftfreq_reads_its_arguments_as_pytorchs_parser():
    for op in (ag.fft.fftfreq, ag.fft.rfftfreq):
        for bad, shown in (("x", "str"), (None, "NoneType"), (1j, "complex"), ([1.0], "list")):
            with pytest.raises(TypeError, match=re.escape(
                    f"fft_{op.__name__}(): argument 'd' (position 2) must be float, not {shown}")):
                op(4, bad)
    n = ag.tensor(4)
    assert ag.fft.fftfreq(n, ag.tensor(0.5)).numpy().tolist() == [0.0, 0.5, -1.0, -0.5]
    assert ag.fft.rfftfreq(n, 2).numpy().tolist() == [0.0, 0.125, 0.25]
    with pytest.raises(TypeError, match=re.escape("fft_rfftfreq(): argument 'n' (position 1) must be int, not Tensor")):
        ag.fft.rfftfreq(ag.tensor([4]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a step past float32's range is inf, without numpy's overflow warning
        assert ag.fft.fftfreq(3, 1e-300).numpy().tolist()[1:] == [np.inf, -np.inf]


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
def test_the_two_dimensional_transforms_refuse_dim_none(name):
    with pytest.raises(TypeError, match=re.escape(f"fft_{name}(): argument 'dim' must be tuple of ints, not NoneType")):
        getattr(ag.fft, name)(ag.ones(4, 4), dim=None)
    assert ag.fft.fftn(ag.ones(4, 4), dim=None).shape == (4, 4)


@pytest.mark.gpu
def test_on_cuda_istft_of_a_two_sided_spectrum_and_its_gradient_are_the_cpus():
    pytest.importorskip("cupy")
    spectrum, window = RNG.standard_normal((8, 5)) + 1j * RNG.standard_normal((8, 5)), np.hanning(8) + 0.1
    results = []
    for device in ("cpu", "cuda:0"):
        z = ag.tensor(spectrum, device=device, requires_grad=True)
        out = ag.istft(z, 8, hop_length=2, window=ag.tensor(window, device=device), onesided=False)
        (out * out).sum().backward()
        assert out.device == z.device
        results.append((out.detach().cpu().numpy(), z.grad.cpu().numpy()))
    for cuda, cpu in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
    with pytest.raises(NotImplementedError, match="\"arange_cuda\" not implemented for 'ComplexFloat'"):
        ag.hann_window(4, dtype=ag.complex64, device="cuda:0")
