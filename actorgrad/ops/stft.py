"""torch.stft and torch.istft: frames cut from the (padded) signal as a strided view (Tensor.unfold), windowed,
and transformed by one `actorgrad.fft` node; the inverse transforms the frames back with one node and overlap-adds
them with index_add, divided by the summed squared window. Every step is a recorded op, so both are
differentiable (in the signal and the window) to any order."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.complex_parts import view_as_real
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.padding import pad
from actorgrad.ops.scatter import index_add
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["istft", "stft"]

def _type_name(x: Tensor) -> str:
    return f"torch.{SCALAR_NAMES[x.dtype]}Tensor"


def _frame_sizes(n_fft: int, hop_length: int | None, win_length: int | None) -> tuple[int, int]:
    return (n_fft // 4 if hop_length is None else hop_length), (n_fft if win_length is None else win_length)


def _padded_window(window: Tensor | None, like: Tensor, n_fft: int, win_length: int) -> Tensor | None:
    """The window centred in n_fft points (zeros either side), as PyTorch pads a shorter one; no window is a
    rectangular one of win_length points (None where that is all n_fft: nothing to multiply by)."""
    if win_length == n_fft:
        return window
    if window is None:
        window = (like.real if like.dtype.kind == "c" else like).new_ones((win_length,))
    left = (n_fft - win_length) // 2
    return pad(window, (left, n_fft - win_length - left))


def stft(
    input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
    window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
    onesided: bool | None = None, return_complex: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a batch of them: (*, n_fft // 2 + 1 or n_fft, frames)."""
    from actorgrad.fft import fft, rfft  # actorgrad.fft builds on the ops package

    complex_input = input.dtype.kind == "c" or (window is not None and window.dtype.kind == "c")
    if return_complex is None and not complex_input:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if return_complex is False:
        warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex "
             "tensors for all inputs, and return_complex=False will raise an error.\nNote: you can still call "
             "torch.view_as_real on the complex output to recover the old return format.")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{_call(input, n_fft, hop_length, win_length, window, normalized, onesided)} : "
                           "expected a 1D or 2D tensor")
    if window is None:
        warn("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
             "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
             "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
             "`window=torch.ones(n_fft, device=<device>)`.")
    if center and n_fft // 2 > 0:
        signal = input if input.ndim == 2 else input.unsqueeze(0)
        half = n_fft // 2
        signal = pad(signal.unsqueeze(0), (half, half), mode=pad_mode).squeeze(0)
        input = signal if input.ndim == 2 else signal.squeeze(0)
    hop, win = _frame_sizes(n_fft, hop_length, win_length)
    length = input.shape[-1]
    where = _call(input, n_fft, hop, win, window, normalized, onesided)
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{where} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{where} : expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{where} : expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{where} : expected a 1D window tensor of size equal to win_length={win}, but got "
                           f"window with size {list(window.shape)}")
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = input.unfold(-1, n_fft, hop)
    window = _padded_window(window, input, n_fft, win)
    if window is not None:
        frames = frames * window
    norm = "ortho" if normalized else "backward"
    one_sided = (not complex_input) if onesided is None else onesided
    spectrum = (rfft if one_sided else fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    return spectrum if return_complex or return_complex is None else view_as_real(spectrum)


def _call(input: Tensor, n_fft: int, hop: Any, win: Any, window: Tensor | None, normalized: bool,
          onesided: bool | None) -> str:
    shown = "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"
    return (f"stft({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={shown}, normalized={int(normalized)}, onesided={onesided})")


def istft(
    input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
    window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
    length: int | None = None, return_complex: bool = False,
) -> Tensor:
    """The inverse of stft: each frame's inverse transform, windowed and overlap-added, divided by the summed
    squared window (which must not vanish inside the output: PyTorch's NOLA condition)."""
    from actorgrad.fft import ifft, irfft

    if input.dtype.kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if window is None:
        warn("A window was not provided. A rectangular window will be applied.Please provide the same window used "
             "by stft to make the inversion lossless.To suppress this warning and use a rectangular window, "
             "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    hop, win = _frame_sizes(n_fft, hop_length, win_length)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.ndim}")
    one_sided = input.shape[-2] != n_fft if onesided is None else onesided
    if one_sided and input.shape[-2] != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {input.shape[-2]}")
    if not one_sided and input.shape[-2] != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {input.shape[-2]}")
    if return_complex and one_sided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectra = input.transpose(-1, -2)
    frames = irfft(spectra, n=n_fft, dim=-1, norm=norm) if one_sided else ifft(spectra, dim=-1, norm=norm)
    if not return_complex and not one_sided:
        frames = frames.real
    window = _padded_window(window, input, n_fft, win)
    if window is None:
        window = frames.new_ones((n_fft,)) if frames.dtype.kind != "c" else frames.real.new_ones((n_fft,))
    frames = frames * window
    count = frames.shape[-2]
    expected = n_fft + hop * (count - 1)
    xp = frames._device.xp
    positions = Tensor((xp.arange(count)[:, None] * hop + xp.arange(n_fft)).reshape(-1), device=frames._device)
    flat = frames.reshape(frames.shape[:-2] + (count * n_fft,))
    signal = index_add(flat.new_zeros(frames.shape[:-2] + (expected,)), -1, positions, flat)
    squared = (window * window).expand(count, n_fft).reshape(-1)
    envelope = index_add(squared.new_zeros((expected,)), 0, positions, squared)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    end = min(end, expected)
    envelope = envelope[start:end]
    if bool((envelope.detach().abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 0 (the window's squares do not cover every sample: "
                           "use a window that satisfies the NOLA condition, or a smaller hop_length)")
    signal = signal[..., start:end] / envelope
    if length is not None and end - start < length:
        warn("The length of signal is shorter than the length parameter. Result is being padded with zeros in the "
             "tail. Please check your center and hop_length settings.")
        signal = pad(signal, (0, length - (end - start)))
    return signal


METHODS: dict[str, Any] = {"stft": stft, "istft": istft}
