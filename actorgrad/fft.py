"""`actorgrad.fft`: PyTorch's torch.fft, differentiable. Each transform reads PyTorch's arguments (n or s, dim, norm)
with its checks and errors and builds a chain of `actorgrad.ops.spectral` steps, recorded as one node named as
PyTorch names it (FftC2CBackward0, FftR2CBackward0, FftC2RBackward0: for the chain's last transform, PyTorch's last
op); fftshift and ifftshift are rolls; fftfreq and rfftfreq live in `actorgrad.fft_frequencies`.

Real inputs to the complex transforms are taken as complex, integer ones as the default float first, as in PyTorch:
complex64 from float32, complex128 from float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.fft_frequencies import fftfreq, rfftfreq
from actorgrad.ops.linalg_out import FFT
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.ops.out_arguments import give_out_by_rules
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.shape import roll
from actorgrad.ops.spectral import BY_N, BY_ROOT_N, C2C, C2R, NO_SCALE, R2C, Complex, Conj, Resize, transform
from actorgrad.tensor import Tensor, float16

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn", "ifftshift",
    "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]


# -- arguments ----------------------------------------------------------------------------------------------------
def _is_int(value: Any) -> bool:
    """An int as PyTorch's argument parser reads one: a 0-d integer tensor (`n=lengths.max()`) counts."""
    if isinstance(value, Tensor):
        return value.ndim == 0 and value._data.dtype.kind in "iu"
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _int(op: str, name: str, value: Any) -> int:
    if not _is_int(value):
        raise TypeError(f"fft_{op}(): argument '{name}' must be int, not {type_name(value)}")
    return int(value)


def _ints(op: str, name: str, value: Any) -> tuple[int, ...] | None:
    """A `tuple of ints` argument, as PyTorch reads one: None, an int, or a tuple or list of ints."""
    if value is None or _is_int(value):
        return value if value is None else (int(value),)
    if not isinstance(value, tuple | list) or not all(_is_int(v) for v in value):
        raise TypeError(f"fft_{op}(): argument '{name}' must be tuple of ints, not {type_name(value)}")
    return tuple(int(v) for v in value)


def _scale(op: str, norm: Any, forward: bool) -> int:
    """PyTorch's normalization for `norm`: "backward" (the default) scales the inverse transform by 1/n, "forward"
    the forward one, "ortho" both by 1/sqrt(n)."""
    if norm is None or norm == "backward":
        return NO_SCALE if forward else BY_N
    if norm == "ortho":
        return BY_ROOT_N
    if norm == "forward":
        return BY_N if forward else NO_SCALE
    if not isinstance(norm, str):
        raise TypeError(f"fft_{op}(): argument 'norm' must be str, not {type_name(norm)}")
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _dim(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _promoted(input: Tensor) -> Tensor:
    """Integers and bools as the default float (a new tensor: they carry no gradient); half is refused."""
    dtype = input._data.dtype
    if dtype == float16:
        raise RuntimeError("Unsupported dtype Half")
    if dtype.kind in "biu":
        return Tensor(input._data.astype(default_float()), device=input._device)
    return input


def _real_only(op: str, x: Tensor, what: str) -> None:
    if x._data.dtype.kind == "c":
        raise RuntimeError(f"{op} expects a {what} input tensor, but got {SCALAR_NAMES[x._data.dtype]}")


def _resized(x: Tensor, dims: tuple[int, ...], sizes: tuple[int, ...]) -> tuple:
    """The step that crops or zero-pads `dims` to `sizes`, if any differs."""
    before = tuple(x.shape[d] for d in dims)
    return () if before == tuple(sizes) else (Resize(dims, before, tuple(sizes)),)


def _as_complex(x: Tensor) -> tuple:
    return () if x._data.dtype.kind == "c" else (Complex(),)


def _shape_and_dims(op: str, x: Tensor, s: Any, dim: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The signal sizes and dims of an n-dimensional transform, as PyTorch's canonicalize_fft_shape_and_dim_args
    reads them: dims default to the last len(s) (or all); a size of -1 is the input's. The 2-d forms' dim is no
    optional argument in PyTorch: None is refused."""
    if dim is None and op.endswith("2"):
        raise TypeError(f"fft_{op}(): argument 'dim' must be tuple of ints, not NoneType")
    s, dim = _ints(op, "s", s), _ints(op, "dim", dim)
    ndim = x.ndim
    dims = None if dim is None else tuple(_dim(d, ndim) for d in dim)
    if dims is not None and len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        dims = tuple(range(ndim - len(s), ndim)) if dims is None else dims
        sizes = tuple(x.shape[d] if n == -1 else n for n, d in zip(s, dims))
    else:
        dims = tuple(range(ndim)) if dims is None else dims
        sizes = tuple(x.shape[d] for d in dims)
    for n in sizes:
        _points(n)
    return sizes, dims


# -- one-dimensional transforms -----------------------------------------------------------------------------------
def _one_dim(op: str, input: Tensor, n: Any, dim: Any, norm: Any, forward: bool) -> tuple[Tensor, int, int, int]:
    """The promoted input, its dim, the signal length (the input's by default) and the scale."""
    n = None if n is None else _int(op, "n", n)
    dim = _int(op, "dim", dim)
    x = _promoted(input)
    d = _dim(dim, x.ndim)
    size = _points(x.shape[d] if n is None else n)
    return x, d, size, _scale(op, norm, forward)


def _complex_1d(op: str, input: Tensor, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """fft and ifft: a complex transform; a real input's goes through a real one (its gradient is real)."""
    x, d, size, scale = _one_dim(op, input, n, dim, norm, forward)
    steps = _resized(x, (d,), (size,))
    if x._data.dtype.kind == "c":
        return transform(x, steps + (C2C((d,), scale, forward),))
    return transform(x, steps + (R2C((d,), scale, False, size),) + (() if forward else (Conj(),)))


def _onesided_1d(op: str, input: Tensor, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """rfft and ihfft: the n // 2 + 1 bins of a real signal's transform (ihfft's the inverse, conjugated)."""
    _real_only(op, input, "real")
    x, d, size, scale = _one_dim(op, input, n, dim, norm, forward)
    steps = _resized(x, (d,), (size,)) + (R2C((d,), scale, True, size),)
    return transform(x, steps if forward else steps + (Conj(),))


def _hermitian_1d(op: str, input: Tensor, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """irfft and hfft: the real signal of length n (2 (m - 1) by default) whose one-sided spectrum is the input's
    first n // 2 + 1 bins (hfft's the conjugated spectrum of the forward transform)."""
    n = None if n is None else _int(op, "n", n)
    dim = _int(op, "dim", dim)
    x = _promoted(input)
    d = _dim(dim, x.ndim)
    size = _points(2 * (x.shape[d] - 1) if n is None else n)
    scale = _scale(op, norm, forward)
    steps = _as_complex(x) + (() if n is None else _resized(x, (d,), (size // 2 + 1,)))
    return transform(x, steps + ((Conj(),) if forward else ()) + (C2R((d,), scale, size),))


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The discrete Fourier transform along `dim`, of the input cropped or zero-padded to `n`."""
    return _complex_1d("fft", input, n, dim, norm, forward=True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse discrete Fourier transform along `dim`, of the input cropped or zero-padded to `n`."""
    return _complex_1d("ifft", input, n, dim, norm, forward=False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The first n // 2 + 1 bins of a real input's transform along `dim` (the others mirror them)."""
    return _onesided_1d("rfft", input, n, dim, norm, forward=True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of rfft: a real signal of length n from its one-sided spectrum along `dim`."""
    return _hermitian_1d("irfft", input, n, dim, norm, forward=False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The (real) transform of a Hermitian-symmetric signal given by its first half along `dim`."""
    return _hermitian_1d("hfft", input, n, dim, norm, forward=True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of hfft: the first n // 2 + 1 bins of a real input's inverse transform along `dim`."""
    return _onesided_1d("ihfft", input, n, dim, norm, forward=False)


# -- n-dimensional transforms -------------------------------------------------------------------------------------
def _complex_nd(op: str, input: Tensor, s: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """fftn and ifftn: PyTorch checks s and dim before the dtype (a half input with a bad dim is an IndexError)."""
    sizes, dims = _shape_and_dims(op, input, s, dim)
    x = _promoted(input)
    scale = _scale(op, norm, forward)
    return transform(x, _as_complex(x) + _resized(x, dims, sizes) + (C2C(dims, scale, forward),))


def _onesided_nd(op: str, input: Tensor, s: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """rfftn and ihfftn: a real input's transform over `dim`, one-sided (s[-1] // 2 + 1 bins) along the last of
    them. ihfftn's is the inverse, conjugated, in PyTorch's order: the last dim's one-sided transform, conj, then
    the other dims' (whose node it is named for)."""
    name = "rfftn" if forward else "ihfftn"
    if forward:
        _real_only(name, input, "real-valued")
    sizes, dims = _shape_and_dims(op, input, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _promoted(input)
    scale = _scale(op, norm, forward)
    if x._data.dtype.kind == "c":
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {SCALAR_NAMES[x._data.dtype]}")
    steps = _resized(x, dims, sizes)
    if forward:
        return transform(x, steps + (R2C(dims, scale, True, sizes[-1]),))
    others = (C2C(dims[:-1], scale, False),) if len(dims) > 1 else ()
    return transform(x, steps + (R2C(dims[-1:], scale, True, sizes[-1]), Conj()) + others)


def _hermitian_nd(op: str, input: Tensor, s: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    """irfftn and hfftn: the real signal over `dim` whose spectrum, one-sided along the last of them, is the input
    (hfftn's the conjugated spectrum of the forward transform). The last dim's output length is s[-1], or 2 (m - 1)
    when s is not given or its last is -1."""
    sizes, dims = _shape_and_dims(op, input, s, dim)
    if not dims:
        raise RuntimeError(f"{'hfftn' if forward else 'irfftn'} must transform at least one axis")
    last = sizes[-1] if s is not None and _ints(op, "s", s)[-1] != -1 else 2 * (input.shape[dims[-1]] - 1)
    _points(last)
    x = _promoted(input)
    scale = _scale(op, norm, forward)
    steps = _as_complex(x) + _resized(x, dims, sizes[:-1] + (last // 2 + 1,))
    return transform(x, steps + ((Conj(),) if forward else ()) + (C2R(dims, scale, last),))


def fft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """fftn over two dims, the last two by default."""
    return _complex_nd("fft2", input, s, dim, norm, forward=True)


def ifft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """ifftn over two dims, the last two by default."""
    return _complex_nd("ifft2", input, s, dim, norm, forward=False)


def fftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The transform over `dim` (the last len(s) dims, or all), of the input cropped or zero-padded to `s`."""
    return _complex_nd("fftn", input, s, dim, norm, forward=True)


def ifftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The inverse transform over `dim` (the last len(s) dims, or all), of the input cropped or zero-padded to s."""
    return _complex_nd("ifftn", input, s, dim, norm, forward=False)


def rfft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """rfftn over two dims, the last two by default."""
    return _onesided_nd("rfft2", input, s, dim, norm, forward=True)


def irfft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """irfftn over two dims, the last two by default."""
    return _hermitian_nd("irfft2", input, s, dim, norm, forward=False)


def rfftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The transform of a real input over `dim`, one-sided (s[-1] // 2 + 1 bins) along the last of them."""
    return _onesided_nd("rfftn", input, s, dim, norm, forward=True)


def irfftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The inverse of rfftn: a real signal of shape `s` over `dim` from its one-sided spectrum."""
    return _hermitian_nd("irfftn", input, s, dim, norm, forward=False)


def hfft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """hfftn over two dims, the last two by default."""
    return _hermitian_nd("hfft2", input, s, dim, norm, forward=True)


def ihfft2(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] = (-2, -1), norm: str | None = None
) -> Tensor:
    """ihfftn over two dims, the last two by default."""
    return _onesided_nd("ihfft2", input, s, dim, norm, forward=False)


def hfftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The (real) transform over `dim` of a Hermitian-symmetric signal given by its first half along the last of
    them: a real output of shape `s`, s[-1] being 2 (m - 1) by default."""
    return _hermitian_nd("hfftn", input, s, dim, norm, forward=True)


def ihfftn(
    input: Tensor, s: tuple[int, ...] | None = None, dim: tuple[int, ...] | None = None, norm: str | None = None
) -> Tensor:
    """The inverse of hfftn: a real input's inverse transform over `dim`, one-sided (s[-1] // 2 + 1 bins) along
    the last of them."""
    return _onesided_nd("ihfftn", input, s, dim, norm, forward=False)


# -- shifts -------------------------------------------------------------------------------------------------------
def _shifted(op: str, input: Tensor, dim: Any, forward: bool) -> Tensor:
    dims = tuple(range(input.ndim)) if dim is None else tuple(_dim(d, input.ndim) for d in _ints(op, "dim", dim))
    if not dims:
        raise RuntimeError("`shifts` required")
    return roll(input, tuple((input.shape[d] + (not forward)) // 2 for d in dims), dims)


def fftshift(input: Tensor, dim: int | tuple[int, ...] | None = None) -> Tensor:
    """The zero frequency moved to the middle of `dim` (all dims by default): a roll by n // 2."""
    return _shifted("fftshift", input, dim, forward=True)


def ifftshift(input: Tensor, dim: int | tuple[int, ...] | None = None) -> Tensor:
    """The inverse of fftshift: a roll by (n + 1) // 2."""
    return _shifted("ifftshift", input, dim, forward=False)


check_tensor_arguments(globals(), __all__, "fft_")
give_out_by_rules(globals(), FFT, "fft_")  # after the check: `out=` wraps the checked names
