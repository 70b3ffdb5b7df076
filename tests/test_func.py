"""actorgrad.func's gradient transforms (grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian)
against closed-form derivatives, central differences in float64 and actorgrad.autograd.functional; their nesting,
pytrees, has_aux and argnums, PyTorch's errors, and that they leave every `.grad` alone."""

from __future__ import annotations

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad import func
from actorgrad.autograd import functional as AF

RNG = np.random.default_rng(7)


def _t(*shape: int, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(RNG.uniform(0.5, 1.5, shape), requires_grad=requires_grad)


def _close(got, expected, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if isinstance(got, ag.Tensor) else got),
                               np.asarray(expected.detach().numpy() if isinstance(expected, ag.Tensor) else expected),
                               rtol=tol, atol=tol)


def _poly(x):
    return (x ** 3 + ag.sin(x) * ag.exp(x)).sum()


def _poly_grad(x: np.ndarray) -> np.ndarray:
    return 3 * x ** 2 + np.exp(x) * (np.sin(x) + np.cos(x))


def _poly_second(x: np.ndarray) -> np.ndarray:
    return 6 * x + 2 * np.exp(x) * np.cos(x)


def _two_in_two_out(x, y):
    return ag.tanh(x @ y), (x * x).sum(0) * ag.exp(y[:, 0])


# -- grad and grad_and_value -----------------------------------------------------------------------------------

def test_grad_matches_the_closed_form_and_grad_and_value_returns_the_value():
    x = _t(4)
    _close(func.grad(_poly)(x), _poly_grad(x.numpy()))
    gradient, value = func.grad_and_value(_poly)(x)
    _close(gradient, _poly_grad(x.numpy()))
    _close(value, np.sum(x.numpy() ** 3 + np.sin(x.numpy()) * np.exp(x.numpy())))


def test_grad_takes_argnums_pytrees_and_keyword_arguments():
    x, y, z = _t(3), _t(3), _t(3)

    def f(x, y, z, *, scale):
        return scale * (x * y ** 2 * z).sum()

    gx, gz = func.grad(f, argnums=(0, -1))(x, y, z, scale=2.0)
    _close(gx, 2 * y.numpy() ** 2 * z.numpy())
    _close(gz, 2 * x.numpy() * y.numpy() ** 2)
    params = {"w": x, "pair": (y, [z])}
    g = func.grad(lambda p: (p["w"] * p["pair"][0] * p["pair"][1][0]).sum())(params)
    assert set(g) == {"w", "pair"} and isinstance(g["pair"], tuple) and isinstance(g["pair"][1], list)
    _close(g["pair"][1][0], x.numpy() * y.numpy())
    _close(g["w"], y.numpy() * z.numpy())


def test_grad_with_has_aux_returns_the_aux_detached():
    x = _t(3)
    g, aux = func.grad(lambda x: ((x ** 2).sum(), {"y": x * 3}), has_aux=True)(x)
    _close(g, 2 * x.numpy())
    _close(aux["y"], 3 * x.numpy())
    assert not aux["y"].requires_grad
    g, (value, aux) = func.grad_and_value(lambda x: ((x ** 2).sum(), x.sum() * 5), has_aux=True)(x)
    _close(aux, 5 * x.numpy().sum())
    assert not aux.requires_grad
    _close(value, (x.numpy() ** 2).sum())


def test_grad_of_an_unused_argument_is_zeros():
    x, y = _t(2), _t(3)
    gx, gy = func.grad(lambda x, y: (x ** 2).sum(), argnums=(0, 1))(x, y)
    _close(gy, np.zeros(3))
    _close(gx, 2 * x.numpy())


def test_nested_grad_gives_second_derivatives():
    x = _t(4)
    second = func.grad(lambda x: func.grad(_poly)(x).sum())(x)
    _close(second, _poly_second(x.numpy()))
    third = func.grad(lambda x: func.grad(lambda x: func.grad(_poly)(x).sum())(x).sum())(x)
    _close(third, 6 + 2 * np.exp(x.numpy()) * (np.cos(x.numpy()) - np.sin(x.numpy())))


def test_nested_grad_keeps_levels_apart():
    """d/dx [x * d/dy (x*y)] = d/dx x**2 = 2x: the inner gradient must treat x as a constant, not perturb it."""
    x, c = ag.tensor(1.5, dtype=ag.float64), ag.tensor(4.0, dtype=ag.float64)
    _close(func.grad(lambda x: x * func.grad(lambda y: x * y)(c))(x), 3.0)
    # the inner function closes over the outer input and takes it as its own argument too
    _close(func.grad(lambda x: func.grad(lambda y: y * y * x)(x))(x), 4 * 1.5)


def test_grad_results_are_detached_for_plain_inputs_and_differentiable_for_inputs_that_require_grad():
    plain = _t(3)
    assert not func.grad(_poly)(plain).requires_grad
    x = _t(3, requires_grad=True)
    g = func.grad(_poly)(x)
    assert g.requires_grad
    (second,) = ag.autograd.grad(g.sum(), x)
    _close(second, _poly_second(x.detach().numpy()))
    with ag.no_grad():
        assert not func.grad(_poly)(x).requires_grad


def test_grad_of_a_function_closing_over_a_parameter_stays_differentiable_in_it():
    w, x = _t(3, requires_grad=True), _t(3)
    g = func.grad(lambda x: (w * x ** 2).sum())(x)  # 2 w x
    assert g.requires_grad
    (dw,) = ag.autograd.grad(g.sum(), w)
    _close(dw, 2 * x.numpy())


def test_transforms_touch_no_grad_attribute():
    x, w = _t(3, requires_grad=True), _t(3, requires_grad=True)

    def f(x):
        return (ag.sin(x) * w).sum()

    func.grad(f)(x)
    func.grad(lambda x: func.grad(f)(x).sum())(x)
    func.vjp(lambda x: ag.sin(x) * w, x)[1](ag.ones(3, dtype=ag.float64))
    func.jvp(lambda x: ag.sin(x) * w, (x,), (ag.ones(3, dtype=ag.float64),))
    func.jacrev(lambda x: ag.sin(x) * w)(x)
    func.jacfwd(lambda x: ag.sin(x) * w)(x)
    func.hessian(f)(x)
    func.vmap(func.grad(f))(_t(2, 3, requires_grad=True))
    assert x.grad is None and w.grad is None


def test_grad_refuses_what_pytorch_refuses():
    x = _t(2)
    with pytest.raises(RuntimeError, match=r"^grad_and_value\(f\)\(\*args\): Expected f\(\*args\) to return a scalar "
                       r"Tensor, got tensor with 1 dims. Maybe you wanted to use the vjp or jacrev APIs instead\?$"):
        func.grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match=r"to return a Tensor, got <class 'int'>"):
        func.grad(lambda x: 3)(x)
    with pytest.raises(ValueError, match="^Thing passed to transform API must be Tensor, got <class 'float'>$"):
        func.grad(lambda x: x)(3.0)
    with pytest.raises(RuntimeError, match=r"^Got argnum=2, but only 1 positional inputs$"):
        func.grad(lambda x: x.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match=r"^argnums elements must be unique, got \(0, 0\)$"):
        func.grad(lambda x: x.sum(), argnums=(0, 0))(x)
    with pytest.raises(RuntimeError, match="^argnums must be non-empty$"):
        func.grad(lambda x: x.sum(), argnums=())(x)
    with pytest.raises(RuntimeError, match=r"^argnums must be int or Tuple\[int, \.\.\.\], got: <class 'float'>$"):
        func.grad(lambda x: x.sum(), argnums=1.0)(x)
    with pytest.raises(RuntimeError, match=r"output of function f should be a tuple: \(output, aux\) if has_aux"):
        func.grad(lambda x: x.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        func.grad(lambda x: x.sum())(ag.ones(2, dtype=ag.int64))


async def test_transforms_are_refused_inside_a_running_trio_loop():
    await trio.lowlevel.checkpoint()
    x = _t(2)
    for call in (lambda: func.grad(_poly)(x), lambda: func.vjp(ag.sin, x), lambda: func.jacfwd(ag.sin)(x),
                 lambda: func.jvp(ag.sin, (x,), (x,))):
        with pytest.raises(RuntimeError, match=r"actorgrad\.func\.\w+\(\) was called inside a running trio event loop"):
            call()


# -- vjp, jvp, linearize ---------------------------------------------------------------------------------------

def test_vjp_matches_the_transposed_jacobian_and_can_be_called_twice():
    x, y = _t(2, 3), _t(3, 2)
    output, vjp_fn = func.vjp(_two_in_two_out, x, y)
    _close(output[0], np.tanh(x.numpy() @ y.numpy()))
    u = (_t(2, 2), _t(3))
    jac = AF.jacobian(_two_in_two_out, (x, y))
    for _ in range(2):
        gx, gy = vjp_fn(u)
        _close(gx, np.einsum("ab,abij->ij", u[0].numpy(), jac[0][0].numpy())
               + np.einsum("b,bij->ij", u[1].numpy(), jac[1][0].numpy()))
        _close(gy, np.einsum("ab,abij->ij", u[0].numpy(), jac[0][1].numpy())
               + np.einsum("b,bij->ij", u[1].numpy(), jac[1][1].numpy()))


def test_vjp_takes_pytree_outputs_and_has_aux():
    x = _t(3)
    output, vjp_fn, aux = func.vjp(lambda x: ({"a": x ** 2, "b": [x.sum()]}, x.exp()), x, has_aux=True)
    _close(aux, np.exp(x.numpy()))
    (g,) = vjp_fn({"a": ag.ones(3, dtype=ag.float64), "b": [ag.tensor(2.0, dtype=ag.float64)]})
    _close(g, 2 * x.numpy() + 2)
    with pytest.raises(RuntimeError, match=r"^Expected pytree structure of cotangents to be the same as pytree "
                       r"structure of outputs to the function. cotangents: \*, primal output: "
                       r"\{'a': \*, 'b': \[\*\]\}$"):
        vjp_fn(ag.ones(3, dtype=ag.float64))


def test_vjp_refuses_non_tensor_and_integer_outputs():
    x = _t(2)
    with pytest.raises(RuntimeError, match=r"^vjp\(f, \*primals\): expected f\(\*primals\) to return only tensors, "
                       r"got unsupported type <class 'int'>$"):
        func.vjp(lambda x: 3, x)
    with pytest.raises(RuntimeError, match=r"^vjp\(f, \.\.\.\): All outputs of f must be floating-point or complex "
                       r"Tensors, got Tensor with dtype int64$"):
        func.vjp(lambda x: x.long(), x)


def test_jvp_matches_central_differences(central_jacobian):
    x, y = RNG.uniform(0.5, 1.5, (2, 3)), RNG.uniform(0.5, 1.5, (3, 2))
    tx, ty = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))
    output, tangent = func.jvp(_two_in_two_out, (ag.tensor(x), ag.tensor(y)), (ag.tensor(tx), ag.tensor(ty)))
    for i in range(2):
        def part(x, y, i=i):
            return _two_in_two_out(x, y)[i]
        expected = (np.tensordot(central_jacobian(part, [x, y], 0), tx, axes=2)
                    + np.tensordot(central_jacobian(part, [x, y], 1), ty, axes=2))
        _close(tangent[i], expected, tol=1e-7)
    _close(output[1], (x * x).sum(0) * np.exp(y[:, 0]))


def test_jvp_strict_has_aux_and_independent_outputs():
    x = _t(3)
    out, tangent, aux = func.jvp(lambda x: (x ** 2, x.sum()), (x,), (ag.ones(3, dtype=ag.float64),), has_aux=True)
    _close(tangent, 2 * x.numpy())
    _close(aux, x.numpy().sum())
    _, tangent = func.jvp(lambda x: ag.ones(2), (x,), (x,))
    _close(tangent, np.zeros(2))
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents, strict=True\): The output of f is "
                       r"independent of the inputs. This is not allowed with strict=True.$"):
        func.jvp(lambda x: ag.ones(2), (x,), (x,), strict=True)


def test_jvp_refuses_what_pytorch_refuses():
    x = _t(2)
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents\): Expected primals to be a tuple"):
        func.jvp(ag.sin, x, x)
    with pytest.raises(RuntimeError, match=r"Expected primals and tangents to have the same python structure.*"
                       r"Got primals with structure TreeSpec\(tuple, None, \[\*\]\) and tangents with structure "
                       r"TreeSpec\(list, None, \[\*\]\)$"):
        func.jvp(ag.sin, (x,), [x])
    with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given forward gradient is of size "
                       r"\[3\]\.$"):
        func.jvp(ag.sin, (x,), (_t(3),))
    with pytest.raises(RuntimeError, match=r"^jvp\(f, primals, tangents\): expected f\(\*primals\) to return only "
                       r"tensors, got unsupported type <class 'int'>$"):
        func.jvp(lambda x: 3, (x,), (x,))


def test_linearize_pushes_many_tangents_through_one_call():
    calls = []

    def f(x):
        calls.append(1)
        return ag.sin(x) * x

    x = _t(3)
    output, jvp_fn = func.linearize(f, x)
    _close(output, np.sin(x.numpy()) * x.numpy())
    for _ in range(3):
        t = _t(3)
        _close(jvp_fn(t), (np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())) * t.numpy())
    assert len(calls) == 1
    with pytest.raises(RuntimeError, match=r"^tangent:0 with shape \(2,\) in flattened pytree doesn't match the "
                       r"shape \(3,\) of the corresponding primal.$"):
        jvp_fn(_t(2))
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn(t, t)


def test_jvp_of_a_jvp_gives_second_directional_derivatives():
    x, t = _t(3), _t(3)

    def directional(x):
        return func.jvp(lambda x: ag.exp(x) * x, (x,), (t,))[1]

    _, second = func.jvp(directional, (x,), (t,))
    _close(second, np.exp(x.numpy()) * (x.numpy() + 2) * t.numpy() ** 2)


# -- jacrev, jacfwd, hessian -----------------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [func.jacrev, func.jacfwd])
def test_jacobians_match_autograd_functional_and_central_differences(transform, central_jacobian):
    x, y = _t(2, 3), _t(3, 2)
    got = transform(_two_in_two_out, argnums=(0, 1))(x, y)
    expected = AF.jacobian(_two_in_two_out, (x, y))
    for i in range(2):
        for j in range(2):
            _close(got[i][j], expected[i][j])
    def first(x, y):
        return _two_in_two_out(x, y)[0]

    _close(transform(first)(x, y), central_jacobian(first, [x.numpy(), y.numpy()], 0), tol=1e-7)
    _close(transform(first, argnums=1)(x, y), central_jacobian(first, [x.numpy(), y.numpy()], 1), tol=1e-7)


@pytest.mark.parametrize("transform", [func.jacrev, func.jacfwd])
def test_jacobians_nest_as_torch_func_does(transform):
    x = _t(3)
    jac = transform(lambda p: {"a": p["w"] * 2, "b": p["w"].sum()})({"w": x})
    _close(jac["a"]["w"], 2 * np.eye(3))
    _close(jac["b"]["w"], np.ones(3))
    jac, aux = transform(lambda x: (x ** 2, x.sum()), has_aux=True)(x)
    _close(jac, np.diag(2 * x.numpy()))
    _close(aux, x.numpy().sum())
    scalar = transform(lambda x: x * 2)(ag.tensor(3.0, dtype=ag.float64))
    assert scalar.shape == () and scalar.item() == 2.0
    (alone,) = transform(lambda x: x * 2, argnums=(0,))(x)
    _close(alone, 2 * np.eye(3))


def test_jacrev_chunk_size_and_complex_inputs():
    x = _t(5)
    _close(func.jacrev(ag.sin, chunk_size=2)(x), np.diag(np.cos(x.numpy())))
    with pytest.raises(ValueError, match="^jacrev: `chunk_size` should be greater than 0.$"):
        func.jacrev(ag.sin, chunk_size=0)
    with pytest.raises(RuntimeError, match="^jacfwd: Expected all inputs to be real but received complex tensor at "
                       "flattened input idx: 0$"):
        func.jacfwd(ag.sin)(ag.ones(2, dtype=ag.complex128))


def test_hessians_match_the_closed_form_and_autograd_functional():
    x = _t(4)
    expected = np.diag(_poly_second(x.numpy()))
    _close(func.hessian(_poly)(x), expected)
    _close(func.jacrev(func.jacrev(_poly))(x), expected)
    _close(func.jacfwd(func.jacfwd(_poly))(x), expected)

    def mixed(x, y):
        return (ag.exp(x @ y) * x.sum()).sum()

    x, y = _t(2, 3), _t(3, 2)
    got = func.hessian(mixed, argnums=(0, 1))(x, y)
    reference = AF.hessian(mixed, (x, y))
    for i in range(2):
        for j in range(2):
            _close(got[i][j], reference[i][j])


def test_jacfwd_refuses_random_draws_in_error_mode():
    x = _t(3)
    with pytest.raises(RuntimeError, match="^vmap: called random operation while in randomness error mode"):
        func.jacfwd(lambda x: x * ag.rand(3))(x)
    ag.manual_seed(0)
    jac = func.jacfwd(lambda x: x * ag.rand(3, dtype=ag.float64), randomness="same")(x)
    ag.manual_seed(0)
    _close(jac, np.diag(ag.rand(3, dtype=ag.float64).numpy()))
