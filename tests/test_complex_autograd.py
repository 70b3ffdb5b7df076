"""Gradients of complex inputs through the core ops (products, division, powers, the matrix products, the unary
math ops, inv, det), checked against finite differences in the real and imaginary parts; promotion with Python
complex numbers; and the errors of the ops that refuse complex tensors.

PyTorch's convention: a real loss L's gradient in z is dL/d(re z) + i dL/d(im z). A complex output f(z) is made
real by L = Re(sum(f(z) * conj(w))) for a random w, whose gradient in f is w: so `f(z).backward(w)` must give
z.grad = that finite-difference gradient.
"""

import re

import numpy as np
import pytest

import actorgrad as ag

RNG = np.random.default_rng(11)


def _sample(*shape: int) -> np.ndarray:
    """complex128 values with real parts in [0.3, 0.9] and imaginary parts in [0.2, 0.8]: away from every branch
    cut of log, sqrt, the inverse trigonometric functions, and from the zeros of sgn and abs."""
    return RNG.uniform(0.3, 0.9, shape) + 1j * RNG.uniform(0.2, 0.8, shape)


def _loss(f, values: list, w: np.ndarray) -> float:
    """Re(sum(f(values) * conj(w))), without a graph."""
    with ag.no_grad():
        out = f(*[ag.tensor(v) for v in values]).numpy()
    return float(np.sum(out * np.conj(w)).real)


def _numerical_gradients(loss, values: list, eps: float = 1e-6) -> list:
    """dL/d(re x) + i dL/d(im x) by central differences, for each input x (real inputs get real gradients)."""
    grads = []
    for k, x in enumerate(values):
        grad = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            for step in ((1, 1j) if x.dtype.kind == "c" else (1,)):
                up, down = [v.copy() for v in values], [v.copy() for v in values]
                up[k][i] += eps * step
                down[k][i] -= eps * step
                grad[i] += step * (loss(up) - loss(down)) / (2 * eps)
        grads.append(grad)
    return grads


def check_wirtinger(f, *values: np.ndarray) -> None:
    """f's gradients in each input (complex, or real beside complex ones) against finite differences."""
    inputs = [ag.tensor(v, requires_grad=True) for v in values]
    out = f(*inputs)
    w = _sample(*out.shape) if out.dtype.kind == "c" else RNG.standard_normal(out.shape)
    out.backward(ag.tensor(w))
    expected = _numerical_gradients(lambda vs: _loss(f, vs, w), list(values))
    for x, e in zip(inputs, expected):
        assert x.grad.dtype == x.dtype
        np.testing.assert_allclose(x.grad.numpy(), e, rtol=1e-6, atol=1e-7)


UNARY = {
    name: getattr(ag, name) for name in (
        "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan", "sinh", "cosh", "tanh",
        "sigmoid", "expm1", "log1p", "abs", "sgn", "neg", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2",
        "log10", "exp2",
    )
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops_give_the_conjugate_wirtinger_gradient(name):
    check_wirtinger(UNARY[name], _sample(2, 3))


def test_unary_ops_keep_the_complex_dtype_and_compute_numpys_values():
    z = _sample(4)
    for name, expected in (("exp", np.exp(z)), ("sqrt", np.sqrt(z)), ("sigmoid", 1 / (1 + np.exp(-z))),
                           ("rsqrt", 1 / np.sqrt(z)), ("reciprocal", 1 / z), ("sgn", z / np.abs(z))):
        out = UNARY[name](ag.tensor(z.astype(np.complex64)))
        assert out.dtype == np.complex64, name
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(ag.tensor(np.array([0j, 3 + 4j])).sgn().numpy(), [0, 0.6 + 0.8j], rtol=1e-15)


BINARY = {
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "add alpha": lambda a, b: ag.add(a, b, alpha=1 + 2j),
    "sub alpha": lambda a, b: ag.sub(a, b, alpha=0.5 - 1j),
    "broadcast mul": lambda a, b: a * b[0],
    "matmul": lambda a, b: a @ b,
    "mm": lambda a, b: ag.mm(a, b),
    "mv": lambda a, b: ag.mv(a, b[0]),
    "matvec": lambda a, b: a @ b[:, 0],
    "vecmat": lambda a, b: a[0] @ b,
    "batched matmul": lambda a, b: a.expand(2, 3, 3) @ b,
    "bmm": lambda a, b: ag.bmm(a[None], b[None]),
    "dot": lambda a, b: ag.dot(a[0], b[1]),
    "vdot": lambda a, b: ag.vdot(a[0], b[1]),
    "inner": lambda a, b: ag.inner(a, b),
    "outer": lambda a, b: ag.outer(a[0], b[1]),
    "tensordot": lambda a, b: ag.tensordot(a, b, 1),
    "einsum": lambda a, b: ag.einsum("ij,jk,kl->il", a, b, a),
    "kron": lambda a, b: ag.kron(a[:2, :2], b[:2]),
    "linear": lambda a, b: ag.nn.functional.linear(a, b),
    "linear with bias": lambda a, b: ag.nn.functional.linear(a, b, b[0]),
    "addmm": lambda a, b: ag.addmm(b, a, b, beta=0.5 + 1j, alpha=2 - 1j),
    "addmv": lambda a, b: ag.addmv(b[0], a, b[1], beta=1j, alpha=1 + 1j),
    "addr": lambda a, b: ag.addr(a, a[0], b[1], beta=0.5 + 1j, alpha=2 - 1j),
    "baddbmm": lambda a, b: ag.baddbmm(b[None], a[None], b[None], alpha=1j),
    "addbmm": lambda a, b: ag.addbmm(a, a[None], b[None], beta=2j),
    "chain_matmul": lambda a, b: ag.chain_matmul(a, b, a),
    "prod": lambda a, b: (a * b).prod(0),
    "cumprod": lambda a, b: (a * b).cumprod(1),
    "cumprod through a zero": lambda a, b: (a * b * ag.tensor([1.0, 0.0, 1.0])).cumprod(1),
    "addcmul": lambda a, b: ag.addcmul(a, a, b, value=2 - 1j),
    "addcdiv": lambda a, b: ag.addcdiv(b, a, b, value=0.5 + 1j),
    "cross": lambda a, b: ag.linalg.cross(a, b),
    "trapezoid": lambda a, b: ag.trapezoid(a * b, dx=0.5),
    "var": lambda a, b: (a * b).var(1),
    "std": lambda a, b: (a * b).std(),
}


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
@pytest.mark.parametrize("name", list(BINARY))
def test_products_and_quotients_give_the_conjugate_wirtinger_gradient(name):
    b = _sample(3, 3) if name != "batched matmul" else _sample(2, 3, 3)
    check_wirtinger(BINARY[name], _sample(3, 3), b)


NUMBERS = {
    "tensor * complex": lambda z: z * (2 + 1j),
    "real number * tensor": lambda z: 2 * z,
    "complex - tensor": lambda z: (1 + 1j) - z,
    "number / tensor": lambda z: 2 / z,
    "tensor / complex": lambda z: z / (2 - 1j),
    "tensor ** complex": lambda z: z ** (1.5 - 0.5j),
    "complex ** tensor": lambda z: (2 - 1j) ** z,
    "number ** tensor": lambda z: 2 ** z,
    "tensor + complex": lambda z: z + 1j,
}


@pytest.mark.parametrize("name", list(NUMBERS))
def test_python_numbers_beside_complex_tensors(name):
    check_wirtinger(NUMBERS[name], _sample(2, 2))


def test_a_real_input_beside_a_complex_one_gets_the_real_part_of_its_gradient():
    check_wirtinger(lambda x, z: x * z, RNG.standard_normal((2, 2)), _sample(2, 2))
    check_wirtinger(lambda x, z: x.to(ag.complex128) * z, RNG.standard_normal((2, 2)), _sample(2, 2))


@pytest.mark.parametrize("ord", [1, 2, 3, 1.5, 0.5, -1, float("inf"), -float("inf")])
def test_vector_norms_of_complex_tensors_are_real_with_the_conjugate_wirtinger_gradient(ord):
    z = _sample(2, 3)
    z[0, 2] = z[0, 0]  # a tie for inf and -inf: they share the gradient
    check_wirtinger(lambda a: ag.linalg.vector_norm(a, ord, dim=1), z)
    out = ag.linalg.vector_norm(ag.tensor(z), ord, dim=1)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(z, ord, axis=1), rtol=1e-12)
    assert ag.tensor(z).norm().dtype == np.float64


@pytest.mark.parametrize("op", [ag.var_mean, ag.std_mean])
def test_var_mean_and_std_mean_of_complex_tensors(op):
    z = _sample(3, 4)
    spread, mean = op(ag.tensor(z), 1)
    variance = (np.abs(z - z.mean(1, keepdims=True)) ** 2).sum(1) / 3
    want = variance if op is ag.var_mean else np.sqrt(variance)
    assert spread.dtype == np.float64 and mean.dtype == np.complex128
    np.testing.assert_allclose(spread.numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(mean.numpy(), z.mean(1), rtol=1e-13)
    check_wirtinger(lambda a: op(a, 1)[0], z)
    check_wirtinger(lambda a: op(a, 1)[1], z)


@pytest.mark.parametrize("p", [1, 2, 3, float("inf")])
def test_dist_of_complex_tensors_is_the_norm_of_their_difference(p):
    a, b = _sample(2, 3), _sample(3)
    got = ag.dist(ag.tensor(a), ag.tensor(b), p)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.item(), np.linalg.norm((a - b).ravel(), p), rtol=1e-13)
    check_wirtinger(lambda x, y: ag.dist(x, y, p), a, b)


def test_inv_and_det_of_complex_matrices():
    a = _sample(3, 3) + 2 * np.eye(3)
    check_wirtinger(ag.linalg.inv, a)
    check_wirtinger(ag.linalg.det, a)
    check_wirtinger(ag.linalg.det, np.stack([a, a.T]))
    singular = a.copy()
    singular[2] = singular[0] * (1 - 1j)  # det = 0: the SVD form of the cofactors
    check_wirtinger(ag.linalg.det, singular)
    np.testing.assert_allclose(ag.linalg.inv(ag.tensor(a)).numpy() @ a, np.eye(3), atol=1e-12)


def _second_order_check(f, values: list) -> None:
    """create_graph: the gradient of h(values) = Re(sum(grad_z L * conj(u))), taken through the recorded backward
    of L = Re(sum(f * conj(w))), against finite differences of h (each h from a first-order backward)."""
    w = _sample(3, 3)
    us = [_sample(*v.shape) for v in values]

    def h(vs: list, create_graph: bool) -> object:
        inputs = [ag.tensor(v, requires_grad=True) for v in vs]
        grads = ag.autograd.grad(f(*inputs), inputs, ag.tensor(w), create_graph=create_graph)
        total = sum((g * ag.tensor(np.conj(u))).real.sum() for g, u in zip(grads, us))
        return inputs, total

    inputs, total = h(values, True)
    total.backward()
    expected = _numerical_gradients(lambda vs: float(h(vs, False)[1].detach().numpy()), values)
    for x, e in zip(inputs, expected):
        np.testing.assert_allclose(x.grad.numpy(), e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", [lambda a, b: a * b * a, lambda a, b: a @ b @ a, lambda a, b: (a @ b).exp() / b],
                         ids=["mul", "matmul", "exp and div"])
def test_second_derivatives_through_create_graph(f):
    _second_order_check(f, [_sample(3, 3), _sample(3, 3)])


def test_python_complex_numbers_and_tensors_promote_as_pytorchs():
    assert ag.tensor(1 + 2j).dtype == np.complex64
    assert ag.tensor([1j, 2]).dtype == np.complex64
    assert (ag.ones(2) * (1 + 1j)).dtype == np.complex64
    assert (ag.ones(2, dtype=ag.float64) * 1j).dtype == np.complex128
    assert (ag.ones(2, dtype=ag.int64) * 1j).dtype == np.complex64
    assert (ag.ones(2, dtype=ag.float64) + ag.tensor(1j)).dtype == np.complex128  # a zero-dim complex tensor
    assert (ag.tensor(np.ones(2, np.complex64)) * 2.5).dtype == np.complex64
    assert (ag.tensor(np.ones(2, np.complex64)) * ag.ones(2, dtype=ag.float64)).dtype == np.complex128
    assert ag.promote_types(ag.float64, ag.complex64) == np.complex128
    assert ag.promote_types(ag.int64, ag.complex64) == np.complex64
    np.testing.assert_array_equal((ag.tensor([1.0, 2.0]) * (1 + 1j)).numpy(), [1 + 1j, 2 + 2j])
    z = _sample(3, 4)
    variance = ag.tensor(z).var(1)
    assert variance.dtype == np.float64  # real, as PyTorch's: the mean of |x - mean|^2
    np.testing.assert_allclose(variance.numpy(), (np.abs(z - z.mean(1, keepdims=True)) ** 2).sum(1) / 3, rtol=1e-12)
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.tensor(1j).dtype == np.complex128
        assert (ag.ones(2, dtype=ag.int64) * 1j).dtype == np.complex128
    finally:
        ag.set_default_dtype(ag.float32)


@pytest.mark.parametrize("call, error, message", [
    (lambda z: z.relu(), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: z.sign(), NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers"),
    (lambda z: ag.deg2rad(z), RuntimeError, "deg2rad is not supported for complex tensors."),
    (lambda z: z.clamp(0, 1), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: z.max(), NotImplementedError, "\"max_all\" not implemented for 'ComplexDouble'"),
    (lambda z: z.min(0), RuntimeError, "min(): does not support complex input"),
    (lambda z: z.argmax(), RuntimeError, "argmax(): does not support complex input"),
    (lambda z: ag.maximum(z, z), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda z: z < 1, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: z >= z, NotImplementedError, "\"ge_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: ag.ones(2, 2, dtype=ag.float64).add_(z), RuntimeError,
     "result type ComplexDouble can't be cast to the desired output type Double"),
    (lambda z: z.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    (lambda z: z.round(), NotImplementedError, "\"round_vml_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: z.sort(), RuntimeError, " Sort does not support complex dtypes on CPU"),
    (lambda z: z.topk(1), RuntimeError, " topk does not support complex dtypes on CPU"),
    (lambda z: z.median(), NotImplementedError, "\"median_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: z.amax(), NotImplementedError, "\"max_values_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: z.cummax(0), NotImplementedError, "\"cummax_cpu\" not implemented for 'ComplexDouble'"),
    (lambda z: ag.logit(z), NotImplementedError, "logit does not support complex tensors in actorgrad"),
])
def test_ops_that_refuse_complex_tensors_say_so(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call(ag.tensor(_sample(2, 2)))
    assert ((ag.tensor(_sample(2)) == 1j) | (ag.tensor(_sample(2)) != 1j)).all()  # equality is defined


def test_real_tensors_take_the_same_formulas_unchanged():
    x = ag.tensor(RNG.uniform(0.5, 1.5, (3, 3)), requires_grad=True)
    y = ag.tensor(RNG.uniform(0.5, 1.5, (3, 3)), requires_grad=True)
    ((x @ y) * x / y).exp().sum().backward()
    assert x.grad.dtype == np.float64 and y.grad.dtype == np.float64
    check_wirtinger(lambda a, b: (a @ b) * a / b, RNG.uniform(0.5, 1.5, (3, 3)), RNG.uniform(0.5, 1.5, (3, 3)))


@pytest.mark.gpu
def test_on_cuda_complex_gradients_are_the_cpus(cupy):
    a0, b0 = _sample(3, 3), _sample(3, 3)
    results = []
    for device in ("cpu", "cuda"):
        a = ag.tensor(a0, requires_grad=True, device=device)
        b = ag.tensor(b0, requires_grad=True, device=device)
        out = ((a @ b) * a / b).exp().sqrt() + ag.einsum("ij,jk->ik", a, b).sgn() * (2 + 1j) + a.abs()
        (out * ag.tensor(np.conj(b0), device=device)).real.sum().backward()
        assert a.grad.device == a.device
        results.append([out.detach().cpu().numpy(), a.grad.cpu().numpy(), b.grad.cpu().numpy()])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12)
