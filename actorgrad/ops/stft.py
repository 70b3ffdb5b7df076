"""torch.stft and torch.istft: frames cut from the (padded) signal as a strided view (Tensor.unfold), windowed,
and transformed by one `actorgrad.fft` node; the inverse transforms the frames back with one node and overlap-adds
them with index_add, divided by the summed squared window. Every step is a recorded op, so both are
differentiable (in the signal and the window) to any order."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.complex_parts import view_as_real
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.padding import pad
from actorgrad.ops.scatter import index_add
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn_once

__all__ = ["istft", "stft"]


def _type_name(x: Tensor) -> str:
    """The tensor's type as PyTorch's toString() names it in these errors (complex types have no legacy name)."""
    if x.dtype.kind == "c":
        return f"{'CUDA' if x.is_cuda else 'CPU'}{SCALAR_NAMES[x.dtype]}Type"
    return f"torch.{'cuda.' if x.is_cuda else ''}{SCALAR_NAMES[x.dtype]}Tensor"


def _flag(value: bool | None) -> str:
    """An optional flag as PyTorch's messages print one: None, 1 or 0."""
    return "None" if value is None else str(int(value))


def _shown(window: Tensor | None) -> str:
    return "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"


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
    onesided: bool | None = None, return_complex: bool | None = None, align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a batch of them: (*, n_fft // 2 + 1 or n_fft, frames).
    With center=False, align_to_window=True starts each frame where its window (centred in n_fft) starts."""
    if normalized.__class__ is not bool:
        raise not_bool("stft", "normalized", normalized)
    if onesided is not None and onesided.__class__ is not bool:
        raise not_bool("stft", "onesided", onesided)
    if return_complex is not None and return_complex.__class__ is not bool:
        raise not_bool("stft", "return_complex", return_complex)
    from actorgrad.fft import fft, rfft  # actorgrad.fft builds on the ops package

    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_input = input.dtype.kind == "c" or (window is not None and window.dtype.kind == "c")
    if return_complex is None and not complex_input:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if return_complex is False:
        warn_once("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                  "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                  "still call torch.view_as_real on the complex output to recover the old return format.")
    hop, win = _frame_sizes(n_fft, hop_length, win_length)

    def where() -> str:
        return (f"stft({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
                f"win_length={win}, window={_shown(window)}, normalized={int(normalized)}, "
                f"onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
                f"align_to_window={_flag(align_to_window)})")

    if input.ndim not in (1, 2):
        raise RuntimeError(f"{where()} : expected a 1D or 2D tensor")
    if window is None:
        warn_once("A window was not provided. A rectangular window will be applied,which is known to cause "
                  "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                  "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                  "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    if center and n_fft // 2 > 0:
        signal = input if input.ndim == 2 else input.unsqueeze(0)
        half = n_fft // 2
        signal = pad(signal.unsqueeze(0), (half, half), mode=pad_mode).squeeze(0)
        input = signal if input.ndim == 2 else signal.squeeze(0)
    if input.dtype.kind not in "fc":  # after the centre padding, as PyTorch checks (its message shows the padding)
        raise RuntimeError(f"{where()} : expected a tensor of floating point or complex values")
    length = input.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{where()} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{where()} : expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{where()} : expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{where()} : expected a 1D window tensor of size equal to win_length={win}, but got "
                           f"window with size {list(window.shape)}")
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if align_to_window and win < n_fft:  # the window's zeros before its start (and after its end) fall outside
        input = pad(input, ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2))
    frames = input.unfold(-1, n_fft, hop)
    window = _padded_window(window, input, n_fft, win)
    if window is not None:
        frames = frames * window
    norm = "ortho" if normalized else "backward"
    one_sided = (not complex_input) if onesided is None else onesided
    spectrum = (rfft if one_sided else fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    return spectrum if return_complex or return_complex is None else view_as_real(spectrum)


def istft(
    input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
    window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
    length: int | None = None, return_complex: bool = False,
) -> Tensor:
    """The inverse of stft: each frame's inverse transform, windowed and overlap-added, divided by the summed
    squared window (which must not vanish inside the output: PyTorch's NOLA condition)."""
    if center.__class__ is not bool:
        raise not_bool("istft", "center", center)
    if normalized.__class__ is not bool:
        raise not_bool("istft", "normalized", normalized)
    if onesided is not None and onesided.__class__ is not bool:
        raise not_bool("istft", "onesided", onesided)
    if return_complex.__class__ is not bool:
        raise not_bool("istft", "return_complex", return_complex)
    from actorgrad.fft import ifft, irfft

    if input.dtype.kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if window is None:
        warn_once("A window was not provided. A rectangular window will be applied.Please provide the same window "
                  "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                  "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    hop, win = _frame_sizes(n_fft, hop_length, win_length)
    where = (f"istft({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
             f"window={_shown(window)}, center={int(center)}, normalized={int(normalized)}, "
             f"onesided={_flag(onesided)}, length={length}, return_complex={int(return_complex)})")
    if input.numel() == 0:
        raise RuntimeError(f"{where} : input tensor cannot be empty.")
    if input.ndim not in (2, 3):  # PyTorch counts the dims of view_as_real(input): one more
        raise RuntimeError(f"{where} : expected a tensor with 3 or 4 dimensions, but got {input.ndim + 1}")
    one_sided = input.shape[-2] != n_fft if onesided is None else onesided
    if one_sided and input.shape[-2] != n_fft // 2 + 1:
        raise RuntimeError(f"{where} : expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {input.shape[-2]}")
    if not one_sided and input.shape[-2] != n_fft:
        raise RuntimeError(f"{where} : expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {input.shape[-2]}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{where} : expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{where} : expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{where} : Invalid window shape. window has to be 1D and length of `win_length`")
    norm = "ortho" if normalized else "backward"
    spectra = input.transpose(-1, -2)
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ifft(spectra, dim=-1, norm=norm)
    else:
        if window is not None and window.dtype.kind == "c":
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        # A two-sided spectrum is read as PyTorch reads it: its first half, the rest taken as its mirror
        frames = irfft(spectra if one_sided else spectra[..., :n_fft // 2 + 1], n=n_fft, dim=-1, norm=norm)
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
        raise RuntimeError(f"{where} window overlap add min: 0 (the window's squares do not cover every sample: "
                           "use a window that satisfies the NOLA condition, or a smaller hop_length)")
    signal = signal[..., start:end] / envelope
    if length is not None and end - start < length:
        warn_once("The length of signal is shorter than the length parameter. Result is being padded with zeros in "
                  "the tail. Please check your center and hop_length settings.")
        signal = pad(signal, (0, length - (end - start)))
    return signal


METHODS: dict[str, Any] = {"stft": stft, "istft": istft}
