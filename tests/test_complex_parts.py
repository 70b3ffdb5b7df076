"""A complex tensor's parts (real, imag, angle, conj, view_as_real ...) and complex tensors from real ones (polar,
complex, view_as_complex): values, views, PyTorch's complex gradient convention and its errors."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
Z = np.array([[1 + 2j, -3 + 0.5j, 0.25 - 1j], [-0.5 - 2j, 2 + 0j, -1 + 1.5j]])


def test_parts_and_angle_are_numpys_and_the_parts_view_the_complex_tensor():
    z = ag.tensor(Z)
    re, im = z.real, ag.imag(z)
    np.testing.assert_array_equal(re.numpy(), Z.real)
    np.testing.assert_array_equal(im.numpy(), Z.imag)
    np.testing.assert_allclose(z.angle().numpy(), np.arctan2(Z.imag, Z.real), rtol=1e-15)
    assert re.dtype == im.dtype == ag.float64 and re._base is z and im._base is z
    assert ag.real(ag.tensor(Z.astype(np.complex64))).dtype == ag.float32
    re.mul_(2)  # writes z
    z.imag = ag.tensor([[1.0, 2, 3], [4, 5, 6]], dtype=ag.float64)
    np.testing.assert_array_equal(z.numpy(), 2 * Z.real + 1j * np.arange(1, 7).reshape(2, 3))
    assert z._version == 2


def test_isreal_is_a_zero_imaginary_part():
    z = ag.tensor([1 + 0j, 1j, 2 - 0j, complex("nan"), 1e-30j])
    assert ag.isreal(z).tolist() == [True, False, True, True, False]
    assert ag.isreal(ag.tensor(1j, dtype=ag.complex64)).tolist() is False


def test_conj_view_as_real_and_view_as_complex():
    z = ag.tensor(Z)
    np.testing.assert_array_equal(ag.conj(z).numpy(), Z.real - 1j * Z.imag)
    np.testing.assert_array_equal(z.conj_physical().numpy(), Z.real - 1j * Z.imag)
    pairs = ag.view_as_real(z)
    assert pairs.shape == (2, 3, 2) and pairs._base is z
    np.testing.assert_array_equal(pairs.numpy(), np.stack([Z.real, Z.imag], -1))
    transposed = ag.view_as_real(z.t())  # any strides
    np.testing.assert_array_equal(transposed.numpy(), np.stack([Z.real.T, Z.imag.T], -1))
    x = ag.tensor(np.arange(8.0).reshape(2, 2, 2), dtype=ag.float32)
    c = ag.view_as_complex(x)
    assert c.dtype == np.complex64 and c._base is x
    np.testing.assert_array_equal(c.numpy(), np.arange(0, 8, 2).reshape(2, 2) + 1j * np.arange(1, 8, 2).reshape(2, 2))
    c.imag.zero_()
    np.testing.assert_array_equal(x.numpy()[..., 1], 0)


def test_polar_and_complex_build_complex_tensors_with_broadcasting():
    r = ag.tensor([[1.0], [2.0]], dtype=ag.float64)
    theta = ag.tensor([0.0, math.pi / 2, 1.0], dtype=ag.float64)
    out = ag.polar(r, theta)
    assert out.shape == (2, 3) and out.dtype == np.complex128
    expected = np.array([[1.0], [2.0]]) * (np.cos([0.0, math.pi / 2, 1.0]) + 1j * np.sin([0.0, math.pi / 2, 1.0]))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-15)
    made = ag.complex(ag.tensor([1.0, 2.0]), ag.tensor([3.0]))
    assert made.dtype == np.complex64
    np.testing.assert_array_equal(made.numpy(), [1 + 3j, 2 + 3j])


def test_real_tensors_are_their_own_real_part_and_conjugate():
    x = ag.tensor([1.0, -2.0], requires_grad=True)
    for f in (ag.real, ag.conj, ag.conj_physical, ag.resolve_conj, ag.resolve_neg):
        assert f(x) is x
    assert x.real is x and not ag.is_conj(x) and not x.is_neg() and not ag.tensor(Z).conj().is_conj()
    np.testing.assert_array_equal(ag.angle(ag.tensor([1, -2, 0])).numpy(), [0, np.float32(math.pi), 0])
    a = ag.angle(ag.tensor([1.0, -2.0, float("nan")], dtype=ag.float64, requires_grad=True))
    np.testing.assert_array_equal(a.detach().numpy(), [0, math.pi, math.nan])
    assert a.grad_fn.name() == "AngleBackward0"


# Real functions of real inputs through every op: gradcheck and gradgradcheck in float64.
COMPOSITIONS = {
    "complex": lambda a, b: ag.view_as_real(ag.complex(a, b)),
    "polar": lambda a, b: ag.view_as_real(ag.polar(a, b)),
    "angle": lambda a, b: ag.angle(ag.complex(a, b)),
    "real and imag": lambda a, b: ag.polar(a, b).real * ag.polar(b, a).imag,
    "conj": lambda a, b: ag.view_as_real(ag.conj(ag.polar(a, b))),
    "conj_physical": lambda a, b: ag.conj_physical(ag.complex(b, a)).imag,
    "view_as_complex": lambda a, b: ag.angle(ag.view_as_complex(ag.stack([a, a * b], -1))),
}


@pytest.mark.parametrize("name", list(COMPOSITIONS))
def test_gradients_pass_gradcheck_and_gradgradcheck(name):
    a = ag.tensor(RNG.uniform(0.5, 2.0, (2, 3)), requires_grad=True)
    b = ag.tensor(RNG.uniform(-2.0, 2.0, (3,)), requires_grad=True)  # broadcast
    assert gradcheck(COMPOSITIONS[name], (a, b))
    assert gradgradcheck(COMPOSITIONS[name], (a, b))


def _numerical_gradient(loss, z: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dL/d(re z) + i dL/d(im z) by central differences: PyTorch's gradient of a real loss in a complex input."""
    grad = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for step in (1, 1j):
            up, down = z.copy(), z.copy()
            up[i] += eps * step
            down[i] -= eps * step
            grad[i] += step * (loss(up) - loss(down)) / (2 * eps)
    return grad


PARTS = {
    "real": ag.real, "imag": ag.imag, "angle": ag.angle, "view_as_real": ag.view_as_real,
    "conj": lambda z: ag.view_as_real(ag.conj(z)), "conj_physical": lambda z: ag.view_as_real(z.conj_physical()),
}


@pytest.mark.parametrize("name", list(PARTS))
def test_complex_inputs_get_the_gradient_in_their_real_and_imaginary_parts(name):
    f = PARTS[name]
    z = ag.tensor(Z, requires_grad=True)
    out = f(z)
    w = RNG.standard_normal(out.shape)
    out.backward(ag.tensor(w))

    def loss(values: np.ndarray) -> float:
        with ag.no_grad():
            return float(np.sum(w * f(ag.tensor(values)).numpy()))

    assert z.grad.dtype == np.complex128
    np.testing.assert_allclose(z.grad.numpy(), _numerical_gradient(loss, Z), rtol=1e-7, atol=1e-8)


def test_angle_has_a_zero_gradient_at_zero_and_on_real_tensors():
    z = ag.tensor(np.array([0j, 3 + 4j]), requires_grad=True)
    ag.angle(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [0, 1j * (3 + 4j) / 25], rtol=1e-15)
    x = ag.tensor([-1.0, 2.0], requires_grad=True)
    ag.angle(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0])


def test_nodes_are_named_as_pytorchs():
    a = ag.tensor([1.0], requires_grad=True)
    z = ag.polar(a, a)
    assert z.grad_fn.name() == "PolarBackward0"
    assert ag.complex(a, a).grad_fn.name() == "ComplexBackward0"
    assert z.real.grad_fn.name() == "SelectBackward0"
    assert z.real.grad_fn.next_functions[0][0].name() == "ViewAsRealBackward0"
    assert ag.view_as_complex(ag.stack([a, a], -1)).grad_fn.name() == "ViewAsComplexBackward0"
    assert (z.conj().grad_fn.name(), z.conj_physical().grad_fn.name()) == ("ConjBackward0", "ConjPhysicalBackward0")


def test_an_in_place_change_with_a_gradient_through_a_view_of_another_dtype_is_refused():
    z = ag.complex(*ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True))
    with pytest.raises(RuntimeError, match="views its base as another dtype"):
        z.real.mul_(2)
    with ag.no_grad():
        z.imag.mul_(2)
    np.testing.assert_array_equal(z.detach().numpy(), [1 + 6j, 2 + 8j])
    im = z.imag
    z[0] = 0
    with pytest.raises(RuntimeError, match="base or another view of its base has been modified inplace"):
        im.sum().backward()


def test_a_view_of_another_dtype_made_without_history_refuses_use_after_its_base_gets_one():
    w = ag.tensor([1.0, 1.0], dtype=ag.float64, requires_grad=True)
    z = ag.tensor(Z[0, :2].copy())
    re = z.real
    z[0] = ag.complex(w, w)[0]
    assert re.grad_fn.name() == "torch::autograd::Error"
    np.testing.assert_array_equal(re.detach().numpy(), [1, -3])


ERRORS = [
    (lambda: ag.imag(ag.tensor([1.0])), "imag is not implemented for tensors with non-complex dtypes."),
    (lambda: ag.view_as_real(ag.tensor([1.0])), "view_as_real is only supported for complex tensors"),
    (lambda: ag.polar(ag.tensor([1]), ag.tensor([1])),
     "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
    (lambda: ag.complex(ag.tensor([1.0]), ag.tensor([1.0], dtype=ag.float64)),
     "Expected object of scalar type Float but got scalar type Double for second argument"),
    (lambda: ag.complex(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.0, 3.0])),
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
    (lambda: ag.view_as_complex(ag.tensor([1, 2])),
     "view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: Long"),
    (lambda: ag.view_as_complex(ag.zeros(())), "Input tensor must have one or more dimensions"),
    (lambda: ag.view_as_complex(ag.zeros(3)), "Tensor must have a last dimension of size 2"),
    (lambda: ag.view_as_complex(ag.zeros(2, 3).t()), "Tensor must have a last dimension with stride 1"),
    (lambda: ag.view_as_complex(ag.zeros(3, 3)[:, :2]),
     "Tensor must have a stride divisible by 2 for all but last dimension"),
    (lambda: ag.view_as_complex(ag.zeros(3, 4)[:, 1:3]), "Tensor must have a storage_offset divisible by 2"),
]


@pytest.mark.parametrize(("call", "message"), ERRORS)
def test_errors_are_pytorchs(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_a_number_in_a_tensors_place_is_refused():
    with pytest.raises(TypeError, match=r"polar\(\): argument 'angle' \(position 2\) must be Tensor, not float"):
        ag.polar(ag.tensor([1.0]), 2.0)


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy):
    a0, b0 = RNG.uniform(0.5, 2.0, (2, 3)), RNG.uniform(-2.0, 2.0, (3,))
    results = []
    for device in ("cpu", "cuda"):
        a = ag.tensor(a0, requires_grad=True, device=device)
        b = ag.tensor(b0, requires_grad=True, device=device)
        z = ag.polar(a, b)
        out = (ag.view_as_real(ag.conj(z)).sum(-1) + ag.angle(ag.complex(a, b)) + z.real * z.imag
               + ag.angle(ag.view_as_complex(ag.stack([a, a + 1], -1))))
        out.sum().backward()
        assert out.device == a.device
        results.append([out.detach().cpu().numpy(), a.grad.cpu().numpy(), b.grad.cpu().numpy()])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12)
