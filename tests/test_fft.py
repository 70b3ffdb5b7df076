"""actorgrad.fft: PyTorch's torch.fft. Values against numpy.fft; gradients against finite differences of the real
and imaginary parts (PyTorch's convention: dL/d(re z) + i dL/d(im z) for a real loss L), against gradcheck and
gradgradcheck through real-to-real compositions, and against the transpose of each transform's real Jacobian, built
from numpy.fft on unit inputs; node names; errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

F = ag.fft
RNG = np.random.default_rng(7)
NORMS = [None, "backward", "ortho", "forward"]


def _signal(shape: tuple[int, ...], complex_: bool, dtype: Any = np.float64) -> np.ndarray:
    x = RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(np.result_type(dtype, np.complex64) if complex_ else dtype)


def _numpy_reference(name: str, x: np.ndarray, kw: dict) -> np.ndarray:
    """numpy.fft's answer for torch.fft's arguments (numpy's norms mean what PyTorch's do)."""
    kernel = getattr(np.fft, name)
    if "s" not in kw and name[-1] not in "2n":
        return kernel(x, n=kw.get("n"), axis=kw.get("dim", -1), norm=kw.get("norm"))
    s, dim = kw.get("s"), kw.get("dim", (-2, -1) if name.endswith("2") else None)
    if dim is None and s is not None:
        dim = tuple(range(x.ndim - len(s), x.ndim))
    return kernel(x, s=s, axes=dim, norm=kw.get("norm"))


ONE_DIM_CASES = [
    (name, {"n": n, "dim": dim, "norm": norm}, complex_)
    for name, complex_ in [("fft", False), ("fft", True), ("ifft", False), ("ifft", True), ("rfft", False),
                           ("ihfft", False), ("irfft", True), ("irfft", False), ("hfft", True), ("hfft", False)]
    for n, dim in [(None, -1), (None, 0), (3, -1), (8, -1), (7, 0), (1, 1)]
    for norm in NORMS
]
MANY_DIM_CASES = [
    (name, kw | {"norm": norm}, complex_)
    for name, complex_ in [("fftn", True), ("fftn", False), ("ifftn", True), ("ifftn", False), ("rfftn", False),
                           ("irfftn", True), ("irfftn", False), ("fft2", True), ("ifft2", False), ("rfft2", False),
                           ("irfft2", True)]
    for kw in [{}, {"s": (3, 6)}, {"s": (5,)}, {"dim": (0, 2)}, {"dim": (2, 0)}, {"s": (2, 4, 7), "dim": (1, 2, 0)},
               {"dim": (1,)}]
    if not name.endswith("2") or len(kw.get("s", kw.get("dim", (-2, -1)))) == 2  # fft2 and its kin take two dims
    for norm in NORMS
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "kw", "complex_"), ONE_DIM_CASES + MANY_DIM_CASES)
def test_the_transforms_give_numpys_values_and_pytorchs_dtypes(name, kw, complex_, dtype):
    data = _signal((4, 5, 3) if name[-1] in "2n" else (4, 6), complex_, dtype)
    out = getattr(F, name)(ag.tensor(data), **kw)
    expected = _numpy_reference(name, data.astype(np.result_type(data, np.float64)), kw)
    wide = np.result_type(data.dtype, np.complex64) if expected.dtype.kind == "c" else np.dtype(dtype)
    assert out.dtype == wide and out.shape == expected.shape
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out.numpy(), expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())


def test_integer_inputs_are_taken_as_the_default_float():
    out = F.fft(ag.tensor([1, 2, 3, 4]))
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out.numpy(), np.fft.fft([1.0, 2.0, 3.0, 4.0]), rtol=1e-6)
    assert F.irfft(ag.tensor([True, False, True])).dtype == ag.float32


def test_a_size_of_minus_one_in_s_is_the_inputs():
    x = ag.tensor(_signal((3, 4), True))
    np.testing.assert_array_equal(F.fftn(x, s=(-1, 6)).numpy(), F.fftn(x, s=(3, 6)).numpy())
    assert F.irfftn(x, s=(2, -1)).shape == (2, 6)


def test_fftn_over_no_dims_is_the_input_as_complex():
    x = ag.tensor(_signal((3, 4), False), requires_grad=True)
    out = F.fftn(x, dim=())
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy().astype(np.complex128))
    assert out.grad_fn.name() == "FftC2CBackward0"
    assert F.fftn(ag.tensor(2.0)).shape == ()


# -- gradients ----------------------------------------------------------------------------------------------------
def _loss_weights(shape: tuple[int, ...], complex_: bool) -> np.ndarray:
    """The output gradient w of the real loss sum(re(w) re(out) + im(w) im(out))."""
    return _signal(shape, complex_)


def _numerical_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dL/d(re x) + i dL/d(im x) (only the first for a real x), by central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for step in (1, 1j) if np.iscomplexobj(x) else (1,):
            up, down = x.copy(), x.copy()
            up[i] += eps * step
            down[i] -= eps * step
            grad[i] += step * (f(up) - f(down)) / (2 * eps)
    return grad


GRADIENT_CASES = [
    ("fft", {"n": 7, "norm": "ortho"}, True), ("fft", {"n": 3, "dim": 0}, False), ("fft", {}, False),
    ("ifft", {"n": 6}, True), ("ifft", {"norm": "forward"}, False), ("ifft", {"n": 2, "dim": 0}, False),
    ("rfft", {}, False), ("rfft", {"n": 8, "norm": "forward"}, False), ("rfft", {"n": 3, "dim": 0}, False),
    ("irfft", {}, True), ("irfft", {"n": 7, "norm": "ortho"}, True), ("irfft", {"n": 4, "dim": 0}, True),
    ("irfft", {"n": 9}, False), ("hfft", {}, True), ("hfft", {"n": 5, "norm": "forward"}, True),
    ("hfft", {"n": 6, "dim": 0}, False), ("ihfft", {}, False), ("ihfft", {"n": 7, "norm": "ortho"}, False),
    ("fft2", {"s": (2, 7)}, True), ("fft2", {}, False), ("ifft2", {"norm": "ortho"}, True),
    ("ifft2", {"s": (4, 3)}, False), ("rfft2", {"s": (5, 4)}, False), ("rfft2", {"norm": "forward"}, False),
    ("irfft2", {}, True), ("irfft2", {"s": (2, 5)}, True), ("irfft2", {"s": (3, 4), "norm": "ortho"}, False),
    ("fftn", {"dim": (1, 0), "norm": "forward"}, True), ("fftn", {"s": (5,)}, False),
    ("ifftn", {"s": (2, 6)}, True), ("ifftn", {"dim": (0,)}, False), ("rfftn", {"dim": (1, 0)}, False),
    ("rfftn", {"s": (3, 3), "norm": "ortho"}, False), ("irfftn", {"s": (4, 3), "dim": (1, 0)}, True),
    ("irfftn", {"s": (5,)}, True), ("irfftn", {"dim": (0,), "norm": "forward"}, False),
    ("hfftn", {}, True), ("hfftn", {"s": (4, 5), "dim": (-1, 0), "norm": "ortho"}, True),
    ("hfftn", {"s": (-1, 3)}, True), ("hfftn", {"dim": (-2,), "norm": "forward"}, False),
    ("hfft2", {"s": (2, 7)}, True), ("hfft2", {"norm": "forward"}, False),
    ("ihfftn", {}, False), ("ihfftn", {"s": (2, 6), "dim": (1, -2), "norm": "ortho"}, False),
    ("ihfftn", {"s": (5,), "norm": "forward"}, False), ("ihfft2", {"s": (4, 3)}, False),
]


@pytest.mark.parametrize(("name", "kw", "complex_"), GRADIENT_CASES)
def test_the_gradient_is_that_of_a_real_loss_by_its_real_and_imaginary_parts(name, kw, complex_):
    data = _signal((3, 5), complex_)
    x = ag.tensor(data, requires_grad=True)
    out = getattr(F, name)(x, **kw)
    w = _loss_weights(out.shape, out.dtype.kind == "c")
    out.backward(ag.tensor(w))

    def loss(values: np.ndarray) -> float:
        with ag.no_grad():
            y = getattr(F, name)(ag.tensor(values), **kw).numpy()
        return float(np.sum(w.real * y.real + w.imag * y.imag))

    assert x.grad.dtype == x.dtype and len(out.grad_fn.next_functions) == 1
    assert isinstance(out.grad_fn.next_functions[0][0], ag.AccumulateGrad)  # one node per transform
    np.testing.assert_allclose(x.grad.numpy(), _numerical_gradient(loss, data), rtol=1e-7, atol=1e-8)


def test_float32_gradients_stay_float32():
    for data in (_signal((4,), False, np.float32), _signal((4,), True, np.float32)):
        x = ag.tensor(data, requires_grad=True)
        out = F.irfft(F.fft(x), n=6)
        out.sum().backward()
        assert out.dtype == ag.float32 and x.grad.dtype == x.dtype


# Real functions of real inputs through every transform: gradcheck (forward mode too), and gradgradcheck (the
# recorded backward).
COMPOSITIONS = {
    "fft of a real input": lambda x: F.irfft(F.fft(x, n=7, norm="ortho"), n=6),
    "fft of a complex input": lambda x: F.irfft(F.fft(F.rfft(x), n=4, dim=0, norm="forward")),
    "ifft": lambda x: F.hfft(F.ifft(F.ifft(x, n=4, dim=0)), n=7),
    "rfft and irfft": lambda x: F.irfft(F.rfft(x, n=8), n=5, norm="forward"),
    "irfft of a real input": lambda x: F.irfft(x, n=9, dim=0),
    "hfft and ihfft": lambda x: F.hfft(F.ihfft(x, n=6, norm="ortho"), n=5),
    "hfft of a real input": lambda x: F.hfft(x, norm="forward"),
    "fft2 and ifft2": lambda x: F.irfft2(F.ifft2(F.fft2(x, s=(4, 6)), norm="ortho")),
    "rfft2 and irfft2": lambda x: F.irfft2(F.rfft2(x, s=(2, 7)), s=(3, 4)),
    "fftn and ifftn": lambda x: F.irfftn(F.ifftn(F.fftn(x, dim=(1, 0)), s=(2,), dim=(0,)), s=(4,)),
    "rfftn and irfftn": lambda x: F.irfftn(F.rfftn(x, dim=(1, 0), norm="ortho"), s=(5, 3), dim=(1, 0)),
    "fftshift and ifftshift": lambda x: F.irfft(F.ifftshift(F.fftshift(F.rfft(x), dim=1)), n=5) + F.fftshift(x),
    "hfftn of a complex input": lambda x: F.hfftn(F.fft(x, dim=0), s=(4, 6), norm="ortho"),
    "hfft2 of a real input": lambda x: F.hfft2(x, dim=(-1, 0), norm="forward"),
    "ihfftn and hfftn": lambda x: F.hfftn(F.ihfftn(x, s=(2, 6), dim=(1, -2)), dim=(-1,)),
    "ihfft2 and irfft2": lambda x: F.irfft2(F.ihfft2(x, norm="ortho"), s=(3, 4)),
}


@pytest.mark.parametrize("name", list(COMPOSITIONS))
def test_real_compositions_pass_gradcheck_and_gradgradcheck(name):
    x = ag.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(COMPOSITIONS[name], (x,), check_forward_ad=True)
    assert gradgradcheck(COMPOSITIONS[name], (x,))


X = np.round(np.sin(np.arange(10) * 1.7 + 0.3), 3).reshape(2, 5)
Z = X + 1j * np.round(np.cos(np.arange(10) * 0.9), 3).reshape(2, 5)


def _reference_weights(shape: tuple[int, ...], complex_: bool) -> np.ndarray:
    size = int(np.prod(shape))
    w = np.round(np.cos(np.arange(size) * 1.3), 3).reshape(shape)
    return w + 1j * np.round(np.sin(np.arange(size) * 0.4 + 1), 3).reshape(shape) if complex_ else w


def _numpy_transform(name: str, x: np.ndarray, kw: dict) -> np.ndarray:
    """_numpy_reference, and the n-dimensional Hermitian transforms numpy lacks by their definitions: hfftn(x) is
    irfftn(conj(x)) and ihfftn(x) is conj(rfftn(x)), each with the opposite norm ("ortho" is its own)."""
    if name not in ("hfft2", "hfftn", "ihfft2", "ihfftn"):
        return _numpy_reference(name, x, kw)
    opposite = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    swapped = kw | {"norm": opposite[kw.get("norm")]}
    if name.startswith("i"):
        return np.conj(_numpy_reference(name.replace("ihfft", "rfft"), x, swapped))
    return _numpy_reference(name.replace("hfft", "irfft"), np.conj(x), swapped)


def _adjoint_gradient(name: str, x: np.ndarray, kw: dict, weights: np.ndarray) -> np.ndarray:
    """The gradient by the chain rule in real coordinates: every transform is R-linear, so its real Jacobian J is
    built column by column from numpy.fft on unit inputs, and the gradient dL/d(re x) + i dL/d(im x) is J^T applied
    to (re w, im w), w = dL/d(re out) + i dL/d(im out) as PyTorch defines it."""
    def as_reals(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a.real.ravel(), a.imag.ravel()]) if np.iscomplexobj(a) else a.ravel()

    units = list(np.eye(x.size))
    if np.iscomplexobj(x):
        units = [*units, *(1j * u for u in units)]
    jacobian = np.stack([as_reals(_numpy_transform(name, u.reshape(x.shape), kw)) for u in units], axis=1)
    grad = jacobian.T @ as_reals(weights)
    return grad[:x.size] + 1j * grad[x.size:] if np.iscomplexobj(x) else grad


ADJOINT_CASES = [  # (function, input, keywords)
    ("fft", "Z", {"n": 6, "dim": 1, "norm": "ortho"}),
    ("fft", "X", {"n": 4}),
    ("ifft", "Z", {"n": 3, "dim": 0}),
    ("ifft", "X", {"norm": "forward"}),
    ("rfft", "X", {"n": 7}),
    ("irfft", "Z", {"n": 7, "norm": "ortho"}),
    ("irfft", "Z", {}),
    ("irfft", "X", {"n": 4, "dim": 0}),
    ("hfft", "Z", {"n": 6, "norm": "forward"}),
    ("ihfft", "X", {"n": 6}),
    ("fft2", "Z", {"s": (3, 4)}),
    ("ifft2", "X", {"norm": "ortho"}),
    ("rfft2", "X", {"s": (2, 6)}),
    ("irfft2", "Z", {"s": (3, 5)}),
    ("fftn", "Z", {"dim": (1, 0), "norm": "forward"}),
    ("ifftn", "Z", {"s": (4,), "dim": (0,)}),
    ("rfftn", "X", {"s": (3, 5), "norm": "ortho"}),
    ("irfftn", "Z", {"s": (3, 4), "dim": (1, 0)}),
    ("hfft2", "Z", {"s": (3, 6), "norm": "ortho"}),
    ("hfftn", "X", {"dim": (1, 0)}),
    ("ihfft2", "X", {"s": (3, 4)}),
    ("ihfftn", "X", {"dim": (-1, 0), "norm": "forward"}),
]


@pytest.mark.parametrize(("name", "which", "kw"), ADJOINT_CASES)
def test_the_gradients_are_the_adjoint_of_the_transform(name, which, kw):
    data = {"X": X, "Z": Z}[which]
    x = ag.tensor(data, requires_grad=True)
    out = getattr(F, name)(x, **kw)
    weights = _reference_weights(out.shape, out.dtype.kind == "c")
    out.backward(ag.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy().ravel(), _adjoint_gradient(name, data, kw, weights), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize(("call", "node"), [
    (lambda x, z: F.fft(z), "FftC2CBackward0"),
    (lambda x, z: F.fft(x), "FftR2CBackward0"),
    (lambda x, z: F.ifft(x), "FftR2CBackward0"),
    (lambda x, z: F.rfft(x), "FftR2CBackward0"),
    (lambda x, z: F.ihfft(x), "FftR2CBackward0"),
    (lambda x, z: F.irfft(z), "FftC2RBackward0"),
    (lambda x, z: F.hfft(x), "FftC2RBackward0"),
    (lambda x, z: F.fftn(x), "FftC2CBackward0"),
    (lambda x, z: F.ifft2(z), "FftC2CBackward0"),
    (lambda x, z: F.rfftn(x), "FftR2CBackward0"),
    (lambda x, z: F.irfft2(z), "FftC2RBackward0"),
    (lambda x, z: F.fftshift(z), "RollBackward0"),
])
def test_each_transform_records_one_node_named_as_pytorchs(call, node):
    x, z = ag.tensor(X, requires_grad=True), ag.tensor(Z, requires_grad=True)
    out = call(x, z)
    assert out.grad_fn.name() == node
    assert isinstance(out.grad_fn.next_functions[0][0], ag.AccumulateGrad)


X2 = ag.tensor(X)
Z2 = ag.tensor(Z)


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: F.fft(X2, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda: F.irfftn(Z2, norm="Ortho"), RuntimeError, 'Invalid normalization mode: "Ortho"'),
    (lambda: F.fft(X2, norm=1), TypeError, "fft_fft(): argument 'norm' must be str, not int"),
    (lambda: F.fft(X2, n=0), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.rfft(X2, n=-1), RuntimeError, "Invalid number of data points (-1) specified"),
    (lambda: F.irfft(Z2[:, :1]), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.fftn(X2, s=(0, 3)), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda: F.fft(X2, n=2.0), TypeError, "fft_fft(): argument 'n' must be int, not float"),
    (lambda: F.fft(X2, dim=(0,)), TypeError, "fft_fft(): argument 'dim' must be int, not tuple"),
    (lambda: F.fftn(X2, s=[2.0]), TypeError, "fft_fftn(): argument 's' must be tuple of ints, not list"),
    (lambda: F.fft([1.0]), TypeError, "fft_fft(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: F.fft(X2, dim=2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: F.fft(ag.tensor(1.0)), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: F.fft2(X2[0]), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (lambda: F.fftn(X2, dim=(1, -1)), RuntimeError, "FFT dims must be unique"),
    (lambda: F.fftn(X2, s=(2,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda: F.fftn(X2, s=(2, 3, 4)), RuntimeError, "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda: F.rfft(Z2), RuntimeError, "rfft expects a real input tensor, but got ComplexDouble"),
    (lambda: F.ihfft(ag.tensor(Z.astype(np.complex64))), RuntimeError,
     "ihfft expects a real input tensor, but got ComplexFloat"),
    (lambda: F.rfft2(Z2), RuntimeError, "rfftn expects a real-valued input tensor, but got ComplexDouble"),
    (lambda: F.rfftn(X2, dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda: F.irfft2(Z2, dim=()), RuntimeError, "irfftn must transform at least one axis"),
    (lambda: F.fft(ag.ones(3, dtype=ag.float16)), RuntimeError, "Unsupported dtype Half"),
    (lambda: F.fftshift(X2, dim=()), RuntimeError, "`shifts` required"),
    (lambda: F.fftshift(X2, dim=1.0), TypeError, "fft_fftshift(): argument 'dim' must be tuple of ints, not float"),
    (lambda: F.fftfreq(5.0), TypeError, "fft_fftfreq(): argument 'n' (position 1) must be int, not float"),
    (lambda: F.fftfreq(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda: F.rfftfreq(5, dtype=ag.int64), RuntimeError, "rfftfreq requires a floating point or complex dtype"),
])
def test_bad_arguments_get_pytorchs_errors(call, error, text):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == text


# -- frequencies and shifts ---------------------------------------------------------------------------------------
def test_fftfreq_and_rfftfreq_give_pytorchs_values():
    # the documented k / (n d), k = 0, 1, ..., then -(n // 2), ..., -1 for fftfreq and 0 ... n // 2 for rfftfreq
    np.testing.assert_allclose(F.fftfreq(5, 0.1).numpy(), [0, 2, 4, -4, -2], rtol=1e-7)
    np.testing.assert_allclose(F.rfftfreq(6, 2.0, dtype=ag.float64).numpy(), [0, 1 / 12, 1 / 6, 1 / 4], rtol=1e-15)
    np.testing.assert_allclose(F.fftfreq(6, 2.0, dtype=ag.float64).numpy(),
                               [0, 1 / 12, 1 / 6, -1 / 4, -1 / 6, -1 / 12], rtol=1e-15)
    # PyTorch rounds 1 / (n d) to the dtype before multiplying: float16's values at 15 and 23 of 64 show it
    halves = F.fftfreq(64, 0.37, dtype=ag.float16).numpy()
    step = float(np.float16(1 / (64 * 0.37)))
    assert halves.dtype == np.float16 and halves[15] == np.float16(15 * step) and halves[23] == np.float16(23 * step)
    assert F.fftfreq(4).dtype == ag.float32 and F.rfftfreq(0).shape == (1,) and F.rfftfreq(-3).shape == (0,)
    made = F.fftfreq(4, requires_grad=True)
    assert made.requires_grad and made.grad_fn is None


@pytest.mark.parametrize("dim", [None, 0, 1, (1, 0), (-1,)])
@pytest.mark.parametrize("complex_", [False, True])
def test_fftshift_and_ifftshift_are_numpys_and_undo_each_other(dim, complex_):
    data = _signal((4, 5), complex_)
    x = ag.tensor(data)
    shifted = F.fftshift(x, dim)
    np.testing.assert_array_equal(shifted.numpy(), np.fft.fftshift(data, dim))
    np.testing.assert_array_equal(F.ifftshift(x, dim).numpy(), np.fft.ifftshift(data, dim))
    np.testing.assert_array_equal(F.ifftshift(shifted, dim).numpy(), data)


# -- the CUDA path ------------------------------------------------------------------------------------------------
DEVICE_CASES = {
    "fft": (lambda x: F.irfft(F.fft(x, n=7, norm="ortho"), n=5), True),
    "ifft": (lambda x: F.hfft(F.ifft(x, dim=0), n=4), True),
    "rfft and irfft": (lambda x: F.irfft(F.rfft(x, n=8), n=6, norm="forward"), False),
    "hfft and ihfft": (lambda x: F.hfft(F.ihfft(x), n=6), False),
    "fftn and irfftn": (lambda x: F.irfftn(F.ifftn(F.fftn(x, s=(4, 5)), dim=(0,)), s=(3, 6)), True),
    "rfft2, fft2 and irfft2": (lambda x: F.irfft2(F.fft2(F.rfft2(x, norm="ortho")), s=(2, 6)), False),
    "shifts and frequencies": (
        lambda x: F.irfft(F.ifftshift(F.fftshift(F.rfft(x)), dim=1)) * F.rfftfreq(10, device=x.device)[:6], False),
    "hfftn": (lambda x: F.hfftn(x, s=(4, 7), dim=(-1, 0), norm="ortho"), True),
    "hfft2 of a real input": (lambda x: F.hfft2(x, norm="forward"), False),
    "ihfftn and hfftn": (lambda x: F.hfftn(F.ihfftn(x, s=(2, 6), dim=(1, -2)), dim=(-1,)), False),
    "ihfft2 and hfft2": (lambda x: F.hfft2(F.ihfft2(x, norm="ortho"), s=(3, 5), norm="ortho"), False),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEVICE_CASES))
def test_the_transforms_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    f, complex_ = DEVICE_CASES[name]
    data = _signal((3, 6), complex_)
    results = []
    for device in (None, cuda):
        x = ag.tensor(data, device=device, requires_grad=True)
        y = f(x)
        (y * y).sum().backward()
        assert y.device == x.device and x.grad.device == x.device and x.grad.dtype == x.dtype
        results.append((y.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    x = ag.tensor(data.real, device=cuda, requires_grad=True)
    assert gradgradcheck(lambda x: F.irfft(F.fft(x, n=5), n=4), (x,))
