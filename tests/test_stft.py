"""stft and istft: spectra checked against a DFT of each frame written out here (reflect, constant and replicate
padding built by hand, windows shorter than n_fft centred), istft inverting stft, gradients in the signal and the
window against finite differences, and PyTorch's errors and warnings."""

from __future__ import annotations

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(8)


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.complex128 if np.iscomplexobj(x) else ag.float64, **kw)


def padded(x: np.ndarray, half: int, mode: str) -> np.ndarray:
    n = len(x)
    if mode == "reflect":
        index = [abs(i) if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in range(-half, n + half)]
        return x[index]
    if mode == "replicate":
        return x[np.clip(np.arange(-half, n + half), 0, n - 1)]
    return np.concatenate([np.zeros(half), x, np.zeros(half)])


def reference_stft(x: np.ndarray, n_fft: int, hop: int, window: np.ndarray, center: bool, mode: str,
                   normalized: bool, onesided: bool) -> np.ndarray:
    if center:
        x = padded(x, n_fft // 2, mode)
    frames = (len(x) - n_fft) // hop + 1
    bins = n_fft // 2 + 1 if onesided else n_fft
    out = np.zeros((bins, frames), complex)
    for f in range(bins):
        for m in range(frames):
            out[f, m] = sum(window[k] * x[m * hop + k] * np.exp(-2j * np.pi * f * k / n_fft) for k in range(n_fft))
    return out / np.sqrt(n_fft) if normalized else out


CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3, center=False),
    dict(n_fft=8, win_length=6, hop_length=2, pad_mode="constant"),
    dict(n_fft=7, hop_length=2, normalized=True, pad_mode="replicate"),
    dict(n_fft=8, onesided=False),
]


@pytest.mark.parametrize("case", CASES)
def test_stft_is_the_dft_of_each_windowed_frame(case: dict) -> None:
    x = RNG.standard_normal((2, 25))
    win = case.get("win_length", case["n_fft"])
    window = np.hanning(win + 2)[1:-1]
    left = (case["n_fft"] - win) // 2
    full = np.concatenate([np.zeros(left), window, np.zeros(case["n_fft"] - win - left)])
    got = ag.stft(t(x), window=t(window), return_complex=True, **case).numpy()
    for row, signal in zip(got, x):
        expected = reference_stft(signal, case["n_fft"], case.get("hop_length", case["n_fft"] // 4), full,
                                  case.get("center", True), case.get("pad_mode", "reflect"),
                                  case.get("normalized", False), case.get("onesided", True))
        np.testing.assert_allclose(row, expected, atol=1e-12)


def test_stft_without_a_window_uses_a_rectangular_one_and_the_method_form_agrees(monkeypatch) -> None:
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch gives these warnings once per process
    x = RNG.standard_normal(20)
    with pytest.warns(UserWarning, match="A window was not provided. A rectangular window will be applied"):
        got = t(x).stft(8, return_complex=True).numpy()
    np.testing.assert_allclose(got, reference_stft(x, 8, 2, np.ones(8), True, "reflect", False, True), atol=1e-12)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        legacy = ag.stft(t(x), 8, window=t(np.ones(8)), return_complex=False)
    np.testing.assert_allclose(legacy.numpy(), np.stack([got.real, got.imag], -1), atol=1e-12)


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_no_window_with_a_shorter_win_length_is_a_centred_rectangle_of_that_length() -> None:
    x = RNG.standard_normal(40)
    rectangle = np.concatenate([np.zeros(3), np.ones(10), np.zeros(3)])  # 10 ones centred in 16 points
    got = ag.stft(t(x), 16, win_length=10, return_complex=True)
    np.testing.assert_allclose(got.numpy(), reference_stft(x, 16, 4, rectangle, True, "reflect", False, True),
                               atol=1e-12)
    back = ag.istft(got, 16, win_length=10, length=40)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-12)


@pytest.mark.filterwarnings("ignore:The length of signal is shorter")  # center=False: the tail has no frame
@pytest.mark.parametrize("case", CASES)
def test_istft_inverts_stft(case: dict) -> None:
    x = RNG.standard_normal((2, 25))
    win = case.get("win_length", case["n_fft"])
    window = t(np.hanning(win + 2)[1:-1] + 0.1)
    spectrum = ag.stft(t(x), window=window, return_complex=True, **case)
    options = {k: v for k, v in case.items() if k != "pad_mode"}
    back = spectrum.istft(window=window, length=25, **options).numpy()
    kept = slice(None) if case.get("center", True) else slice(0, 24 - (24 - case["n_fft"]) % case["hop_length"])
    np.testing.assert_allclose(back[:, kept], x[:, kept], atol=1e-12)


def test_gradients_in_signal_and_window_match_finite_differences() -> None:
    x = t(RNG.standard_normal(16), requires_grad=True)
    w = t(np.hanning(8) + 0.2, requires_grad=True)

    def forward(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        return ag.view_as_real(ag.stft(x, 8, hop_length=3, window=w, return_complex=True, normalized=True))

    def round_trip(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        spectrum = ag.stft(x, 8, hop_length=2, window=w, return_complex=True)
        return ag.istft(spectrum * 1.5, 8, hop_length=2, window=w, length=16)

    assert gradcheck(forward, (x, w))
    assert gradcheck(round_trip, (x, w))
    assert gradgradcheck(forward, (x, w))


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_errors_and_warnings_match_torch(monkeypatch) -> None:
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = t(RNG.standard_normal(20))
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        ag.stft(x, 8)
    for kwargs, tail in ((dict(n_fft=30, center=False), "expected 0 < n_fft < 20, but got n_fft=30"),
                         (dict(n_fft=8, hop_length=0), "expected hop_length > 0, but got hop_length=0"),
                         (dict(n_fft=8, win_length=9), "expected 0 < win_length <= n_fft, but got win_length=9"),
                         (dict(n_fft=8, window=t(np.ones(5))),
                          "expected a 1D window tensor of size equal to win_length=8, but got window with size [5]")):
        with pytest.raises(RuntimeError, match=re.escape(tail)):
            ag.stft(x, return_complex=True, **kwargs)
    with pytest.raises(RuntimeError, match="expected a 1D or 2D tensor"):
        ag.stft(t(np.ones((2, 2, 20))), 8, return_complex=True)
    spectrum = ag.stft(x, 8, return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ag.istft(spectrum.real, 8, window=t(np.ones(8)))
    with pytest.warns(UserWarning, match="A window was not provided. A rectangular window will be applied.Please"):
        ag.istft(spectrum, 8)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        ag.istft(spectrum, 8, window=t(np.zeros(8)))
    with pytest.warns(UserWarning, match="The length of signal is shorter than the length parameter"):
        assert ag.istft(spectrum, 8, window=t(np.ones(8)), length=30).shape == (30,)


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    x, w = RNG.standard_normal((2, 30)), np.hanning(8) + 0.1
    results = []
    for device in ("cpu", "cuda:0"):
        signal, window = (ag.tensor(v, device=device, requires_grad=True) for v in (x, w))
        spectrum = ag.stft(signal, 8, hop_length=2, window=window, return_complex=True)
        out = ag.istft(spectrum * 2, 8, hop_length=2, window=window, length=30)
        grads = ag.autograd.grad(out.sum() + ag.view_as_real(spectrum).sum(), (signal, window))
        results.append([v.detach().cpu().numpy() for v in (ag.view_as_real(spectrum), out, *grads)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
