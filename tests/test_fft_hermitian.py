"""actorgrad.fft's Hermitian transforms in 2 and n dims (hfft2, hfftn, ihfft2, ihfftn): values against numpy, by
the transforms' definitions and by the identities hfftn(x) = irfftn(conj x) and ihfftn(x) = conj(rfftn(x)) with the
normalization's direction swapped; node names; PyTorch's errors. Their gradients against finite differences,
compositions under gradcheck and gradgradcheck, PyTorch's own gradients and the CUDA path are rows of test_fft.py's
tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import actorgrad as ag

F = ag.fft
RNG = np.random.default_rng(11)
NORMS = [None, "backward", "ortho", "forward"]
SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
X = np.random.default_rng(5).standard_normal((2, 5))  # a real and a complex input for the names and errors
Z = X + 1j * np.random.default_rng(6).standard_normal((2, 5))


def _signal(shape: tuple[int, ...], complex_: bool, dtype: Any = np.float64) -> np.ndarray:
    x = RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(np.result_type(dtype, np.complex64) if complex_ else dtype)


def _numpy_reference(name: str, x: np.ndarray, kw: dict) -> np.ndarray:
    """numpy's answer for torch.fft's arguments, the sizes spelled out (numpy has no -1 in s)."""
    s, dim = kw.get("s"), kw.get("dim", (-2, -1) if name.endswith("2") else None)
    if dim is None:
        dim = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    sizes = [x.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dim)]
    norm = SWAPPED[kw.get("norm")]
    if name.startswith("ihfft"):
        return np.conj(np.fft.rfftn(x, s=sizes, axes=dim, norm=norm))
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (x.shape[dim[-1]] - 1)
    return np.fft.irfftn(np.conj(x), s=sizes, axes=dim, norm=norm)


VALUE_CASES = [
    (name, kw | {"norm": norm}, complex_)
    for name, complex_ in [("hfftn", True), ("hfftn", False), ("ihfftn", False), ("hfft2", True), ("hfft2", False),
                           ("ihfft2", False)]
    for kw in [{}, {"s": (3, 6)}, {"s": (5,)}, {"s": (2, -1)}, {"s": (-1, 7)}, {"dim": (0, -1)}, {"dim": (-1, 0)},
               {"s": (2, 4, 7), "dim": (1, -1, 0)}, {"dim": (-2,)}]
    if not name.endswith("2") or len(kw.get("s", kw.get("dim", (-2, -1)))) == 2  # the 2-d forms take two dims
    for norm in NORMS
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "kw", "complex_"), VALUE_CASES)
def test_the_transforms_give_numpys_values_and_pytorchs_dtypes(name, kw, complex_, dtype):
    data = _signal((4, 5, 3), complex_, dtype)
    out = getattr(F, name)(ag.tensor(data), **kw)
    expected = _numpy_reference(name, data.astype(np.result_type(data, np.float64)), kw)
    wide = np.result_type(data.dtype, np.complex64) if expected.dtype.kind == "c" else np.dtype(dtype)
    assert out.dtype == wide and out.shape == expected.shape
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out.numpy(), expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape", [(4, 6), (3, 4, 5)])
def test_hfftn_is_the_transform_of_the_hermitian_signal_its_half_stands_for(shape, norm):
    full = np.fft.fftn(RNG.standard_normal(shape))  # Hermitian over all dims: full[-k] = conj(full[k])
    half = full[..., :shape[-1] // 2 + 1]
    out = F.hfftn(ag.tensor(half), s=shape, norm=norm)
    expected = np.fft.fftn(full, norm=norm).real
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    assert F.hfft2(ag.tensor(half), s=shape[-2:], dim=(-2, -1), norm=norm).shape == shape[:-2] + shape[-2:]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dim", [None, (0, -1), (-1, 0), (1,)])
def test_ihfftn_is_the_first_half_of_the_inverse_transform_and_hfftn_undoes_it(dim, norm):
    data = _signal((4, 5, 3), False)
    axes = tuple(range(3)) if dim is None else dim
    out = F.ihfftn(ag.tensor(data), dim=dim, norm=norm)
    expected = np.fft.ifftn(data, axes=axes, norm=norm)
    expected = np.take(expected, range(data.shape[axes[-1]] // 2 + 1), axis=axes[-1])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)
    back = F.hfftn(out, s=tuple(data.shape[d] for d in axes), dim=dim, norm=norm)
    np.testing.assert_allclose(back.numpy(), data, rtol=1e-12, atol=1e-12)


def test_integer_and_bool_inputs_are_taken_as_the_default_float():
    assert F.hfftn(ag.tensor([1, 2, 3])).dtype == ag.float32
    assert F.ihfftn(ag.tensor([1, 2, 3])).dtype == np.complex64
    np.testing.assert_allclose(F.ihfft2(ag.tensor([[True, False], [False, False]])).numpy(), np.full((2, 2), 0.25))


@pytest.mark.parametrize(("call", "node"), [
    (lambda x, z: F.hfftn(z), "FftC2RBackward0"),
    (lambda x, z: F.hfft2(x), "FftC2RBackward0"),
    (lambda x, z: F.hfftn(z, dim=(0,)), "FftC2RBackward0"),
    (lambda x, z: F.ihfftn(x), "FftC2CBackward0"),  # PyTorch's last op: the other dims' inverse transform
    (lambda x, z: F.ihfft2(x, s=(3, 4)), "FftC2CBackward0"),
    (lambda x, z: F.ihfftn(x, dim=(-1,)), "FftR2CBackward0"),  # one dim: named as ihfft's
])
def test_each_transform_records_one_node_named_as_pytorchs(call, node):
    x, z = ag.tensor(X, requires_grad=True), ag.tensor(Z, requires_grad=True)
    out = call(x, z)
    assert out.grad_fn.name() == node
    assert len(out.grad_fn.next_functions) == 1 and isinstance(out.grad_fn.next_functions[0][0], ag.AccumulateGrad)


X2 = ag.tensor(X)
Z2 = ag.tensor(Z)


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: F.hfftn(Z2, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda: F.ihfftn(Z2, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda: F.ihfft2(X2, norm=3), TypeError, "fft_ihfft2(): argument 'norm' must be str, not int"),
    (lambda: F.hfftn(Z2[:, :1]), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.hfftn(Z2, s=(2, 0)), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.ihfftn(X2, s=(0, 3)), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.hfft2(Z2, s=[2.0, 3]), TypeError, "fft_hfft2(): argument 's' must be tuple of ints, not list"),
    (lambda: F.ihfftn(X2, dim=1.0), TypeError, "fft_ihfftn(): argument 'dim' must be tuple of ints, not float"),
    (lambda: F.hfftn([1.0]), TypeError, "fft_hfftn(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: F.hfft2(Z2[0]), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (lambda: F.ihfft2(X2[0]), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (lambda: F.hfftn(Z2, dim=(0, 2)), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: F.ihfftn(X2, dim=(0, -3)), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda: F.hfftn(Z2, dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda: F.ihfftn(X2, s=(2,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda: F.hfft2(Z2, s=(3, -1, 2)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda: F.ihfftn(X2, s=(2, 3, 4)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda: F.ihfft2(Z2), RuntimeError, "Only supports floating-point dtypes, but found: ComplexDouble"),
    (lambda: F.ihfftn(ag.tensor(Z.astype(np.complex64))), RuntimeError,
     "Only supports floating-point dtypes, but found: ComplexFloat"),
    (lambda: F.hfft2(Z2, dim=()), RuntimeError, "hfftn must transform at least one axis"),
    (lambda: F.hfftn(ag.tensor(2.0)), RuntimeError, "hfftn must transform at least one axis"),
    (lambda: F.ihfft2(X2, dim=()), RuntimeError, "ihfftn must transform at least one axis"),
    (lambda: F.ihfftn(ag.tensor(2.0)), RuntimeError, "ihfftn must transform at least one axis"),
    (lambda: F.hfftn(ag.ones(3, dtype=ag.float16)), RuntimeError, "Unsupported dtype Half"),
    (lambda: F.ihfftn(ag.ones(3, dtype=ag.float16)), RuntimeError, "Unsupported dtype Half"),
])
def test_bad_arguments_get_pytorchs_errors(call, error, text):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == text
