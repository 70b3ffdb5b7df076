"""Complex tensors print as PyTorch's: the real parts formatted and aligned as a real tensor of them, then the
imaginary parts formatted on their own, signed and with a j, with the print options and the default dtype followed.
The expected strings are torch 2's output for the same values (with `torch.` read as `actorgrad.`)."""

import numpy as np
import pytest

import actorgrad as ag


@pytest.fixture
def restored():
    yield
    ag.set_printoptions(profile="default")
    ag.set_default_dtype(ag.float32)


@pytest.mark.parametrize("value, expected", [
    (1 + 2j, "tensor(1.+2.j)"),
    (-1.5 - 0.25j, "tensor(-1.5000-0.2500j)"),
    (0j, "tensor(0.+0.j)"),
    (1e-5 + 3j, "tensor(1.0000e-05+3.j)"),
    (complex(float("nan"), 1), "tensor(nan+1.j)"),
    (2 - 0j, "tensor(2.+0.j)"),
])
def test_scalars(value, expected):
    assert repr(ag.tensor(value)) == expected


@pytest.mark.parametrize("values, expected", [
    ([1 + 2j, 3 - 1j], "tensor([1.+2.j, 3.-1.j])"),
    ([1 + 2j, 3 - 10j], "tensor([1.+2.j, 3.-10.j])"),  # imaginary parts are never padded
    ([1.5 + 2j, 3 - 10.25j, -7 + 0.5j], "tensor([ 1.5000+2.0000j,  3.0000-10.2500j, -7.0000+0.5000j])"),
    ([[1 + 2j, 3 - 1j], [0.5j, -2 + 0j]], "tensor([[ 1.+2.0000j,  3.-1.0000j],\n        [ 0.+0.5000j, -2.+0.0000j]])"),
    ([1e-5 + 1j, 1e5 - 2j], "tensor([1.0000e-05+1.j, 1.0000e+05-2.j])"),
    ([complex(float("inf"), 1), complex(1, float("nan"))], "tensor([inf+1.j, 1.+nanj])"),
])
def test_vectors_and_matrices(values, expected):
    assert repr(ag.tensor(values)) == expected


def test_lines_wrap_by_the_width_of_both_parts():
    expected = (
        "tensor([ 0.+0.0000j,  1.+0.5000j,  2.+1.0000j,  3.+1.5000j,  4.+2.0000j,\n"
        "         5.+2.5000j,  6.+3.0000j,  7.+3.5000j,  8.+4.0000j,  9.+4.5000j,\n"
        "        10.+5.0000j, 11.+5.5000j, 12.+6.0000j, 13.+6.5000j, 14.+7.0000j,\n"
        "        15.+7.5000j, 16.+8.0000j, 17.+8.5000j, 18.+9.0000j, 19.+9.5000j,\n"
        "        20.+10.0000j, 21.+10.5000j, 22.+11.0000j, 23.+11.5000j, 24.+12.0000j,\n"
        "        25.+12.5000j, 26.+13.0000j, 27.+13.5000j, 28.+14.0000j, 29.+14.5000j],\n"
        "       dtype=actorgrad.complex128)"
    )
    assert repr(ag.arange(30, dtype=ag.float64) * (1 + 0.5j)) == expected


def test_large_tensors_are_summarized():
    z = (ag.arange(2000, dtype=ag.float64).reshape(2, 1000) * (1 + 0.5j)).to(ag.complex64)
    expected = (
        "tensor([[0.0000e+00+0.0000e+00j, 1.0000e+00+5.0000e-01j, 2.0000e+00+1.0000e+00j,\n"
        "          ..., 9.9700e+02+4.9850e+02j, 9.9800e+02+4.9900e+02j,\n"
        "         9.9900e+02+4.9950e+02j],\n"
        "        [1.0000e+03+5.0000e+02j, 1.0010e+03+5.0050e+02j, 1.0020e+03+5.0100e+02j,\n"
        "          ..., 1.9970e+03+9.9850e+02j, 1.9980e+03+9.9900e+02j,\n"
        "         1.9990e+03+9.9950e+02j]])"
    )
    assert repr(z) == expected


def test_print_options_apply_to_both_parts(restored):
    z = ag.tensor([1.123 + 2.456j, 3 - 1j])
    ag.set_printoptions(precision=2)
    assert repr(z) == "tensor([1.12+2.46j, 3.00-1.00j])"
    ag.set_printoptions(sci_mode=True)
    assert repr(z) == "tensor([1.12e+00+2.46e+00j, 3.00e+00-1.00e+00j])"


def test_the_default_complex_dtype_is_not_named(restored):
    z = ag.tensor([1 + 2j, 3 - 1j], dtype=ag.complex128)
    assert repr(z) == "tensor([1.+2.j, 3.-1.j], dtype=actorgrad.complex128)"
    assert repr(ag.zeros(2, 0, dtype=ag.complex64)) == "tensor([], size=(2, 0), dtype=actorgrad.complex64)"
    assert repr(ag.tensor([1 + 2j], requires_grad=True) * 2) == "tensor([2.+4.j], grad_fn=<MulBackward0>)"
    ag.set_default_dtype(ag.float64)
    assert repr(ag.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(ag.tensor([1 + 2j], dtype=ag.complex64)) == "tensor([1.+2.j], dtype=actorgrad.complex64)"


def test_real_tensors_print_as_before():
    assert repr(ag.tensor([1.5, -2.0, 3.25])) == "tensor([ 1.5000, -2.0000,  3.2500])"
    assert repr(ag.tensor(np.array([1.0, 2.0]))) == "tensor([1., 2.], dtype=actorgrad.float64)"


@pytest.mark.gpu
def test_on_cuda_complex_tensors_print_with_their_device(cupy):
    z = ag.tensor([1 + 2j, 3 - 1j], device="cuda")
    assert repr(z) == "tensor([1.+2.j, 3.-1.j], device='cuda:0')"
