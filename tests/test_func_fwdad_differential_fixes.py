"""Forward-mode AD and the forward transforms where they used to differ from PyTorch: integer primals and tangents
refused with make_dual's ValueError by jvp, linearize, jacfwd, hessian and the functional jacobian and hessian
in forward mode; complex duals' tangents; a dual changed in place refused rather than given a stale tangent;
exiting a dual level that was never entered; vmap refusing to repeat, once per example, an in-place change to an
unmapped input."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func
from actorgrad.autograd import forward_ad as fwad

RNG = np.random.default_rng(11)


def _t(*shape):
    return ag.tensor(RNG.uniform(0.5, 1.5, shape))


def _c(*shape):
    return ag.tensor(RNG.uniform(-1.0, 1.0, shape) + 1j * RNG.uniform(-1.0, 1.0, shape))


@pytest.mark.parametrize("call", [
    lambda: func.jvp(lambda x: x * 2, (ag.arange(3),), (ag.arange(3),)),
    lambda: func.linearize(lambda x: x * 2, ag.arange(3)),
    lambda: func.jacfwd(lambda x: x * 2)(ag.arange(3)),
    lambda: func.hessian(lambda x: (x * 2).sum())(ag.arange(3)),
], ids=["jvp", "linearize", "jacfwd", "hessian"])
def test_forward_transforms_refuse_integer_primals_as_make_dual(call):
    with pytest.raises(ValueError, match=r"^Expected primal to be floating point or complex, but got: int64$"):
        call()


def test_jvp_refuses_an_integer_tangent_of_a_float_primal():
    with pytest.raises(ValueError, match=r"^Expected tangent to be floating point or complex, but got: int64$"):
        func.jvp(lambda x: x * 2, (ag.ones(3),), (ag.arange(3),))


def test_jacfwd_refuses_a_bool_primal():
    with pytest.raises(ValueError, match=r"^Expected primal to be floating point or complex, but got: bool$"):
        func.jacfwd(lambda x: x * 2)(ag.tensor([True, False]))


def test_jacfwd_takes_an_integer_argument_it_does_not_differentiate():
    x, y = _t(3), ag.arange(3)
    jac = func.jacfwd(lambda x, y: x * y, argnums=0)(x, y)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.arange(3.0)))


@pytest.mark.parametrize("call", [
    lambda: ag.autograd.functional.jacobian(lambda x: x * 2.0, ag.arange(3), vectorize=True,
                                            strategy="forward-mode"),
    lambda: ag.autograd.functional.jacobian(lambda x, y: x * y, (ag.ones(3), ag.arange(3)), vectorize=True,
                                            strategy="forward-mode"),
    lambda: ag.autograd.functional.hessian(lambda x: (x * 2.0).sum(), ag.arange(3), vectorize=True,
                                           outer_jacobian_strategy="forward-mode"),
], ids=["jacobian", "jacobian-tuple", "hessian"])
def test_forward_mode_functional_refuses_integer_inputs_as_make_dual(call):
    with pytest.raises(ValueError, match=r"^Expected primal to be floating point or complex, but got: int64$"):
        call()


def test_forward_mode_functional_jacobian_of_float_inputs():
    x, y = _t(3), _t(3)
    jx, jy = ag.autograd.functional.jacobian(lambda x, y: x * y.exp(), (x, y), vectorize=True,
                                             strategy="forward-mode")
    np.testing.assert_allclose(jx.numpy(), np.diag(np.exp(y.numpy())), rtol=1e-12)
    np.testing.assert_allclose(jy.numpy(), np.diag(x.numpy() * np.exp(y.numpy())), rtol=1e-12)


def _tangent(f, z, t):
    with fwad.dual_level():
        return fwad.unpack_dual(f(fwad.make_dual(z, t))).tangent


def test_tangent_of_a_holomorphic_function_of_a_complex_dual():
    z, t = _c(4), _c(4)
    tangent = _tangent(lambda d: d * d, z, t)
    np.testing.assert_allclose(tangent.numpy(), 2 * z.numpy() * t.numpy(), rtol=1e-12)


def test_tangent_of_a_non_holomorphic_function_of_a_complex_dual():
    z, t = _c(4), _c(4)
    zn, tn = z.numpy(), t.numpy()
    tangent = _tangent(lambda d: d.conj() * d * 3, z, t)
    np.testing.assert_allclose(tangent.numpy(), 3 * (np.conj(tn) * zn + np.conj(zn) * tn), rtol=1e-12)


def test_tangent_of_a_real_output_of_a_complex_dual_matches_central_differences():
    z, t = _c(4), _c(4)
    zn, tn, h = z.numpy(), t.numpy(), 1e-6
    tangent = _tangent(lambda d: (d.abs() ** 2).sum(), z, t)
    expected = (np.sum(np.abs(zn + h * tn) ** 2) - np.sum(np.abs(zn - h * tn) ** 2)) / (2 * h)
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-7)


def test_tangent_of_a_float32_tangent_on_a_float64_primal_is_float64():
    x, t = _t(3), _t(3).float()
    tangent = _tangent(lambda d: d.sin() * 2, x, t)
    assert tangent.dtype == ag.float64
    np.testing.assert_allclose(tangent.numpy(), 2 * np.cos(x.numpy()) * t.numpy().astype(np.float64), rtol=1e-12)


def test_tangents_of_several_real_duals_add_up():
    a, b, ta, tb = _t(3), _t(3), _t(3), _t(3)
    with fwad.dual_level():
        tangent = fwad.unpack_dual(fwad.make_dual(a, ta) * fwad.make_dual(b, tb).exp()).tangent
    an, bn = a.numpy(), b.numpy()
    np.testing.assert_allclose(tangent.numpy(), ta.numpy() * np.exp(bn) + an * np.exp(bn) * tb.numpy(), rtol=1e-12)


def test_unpack_dual_refuses_a_dual_changed_in_place_rather_than_give_a_stale_tangent():
    x = _t(3).requires_grad_() * 1
    with fwad.dual_level():
        dual = fwad.make_dual(x, _t(3))
        dual.mul_(3)
        y = dual.sin()
        with pytest.raises(RuntimeError, match=r"^unpack_dual\(\): a dual tensor \(or the tensor it was made from\) "
                                               r"was modified in place after make_dual"):
            fwad.unpack_dual(y)
        with pytest.raises(RuntimeError, match="was modified in place after make_dual"):
            fwad.unpack_dual(dual)


def test_in_place_changes_to_a_copy_of_a_dual_carry_the_tangent():
    x, t = _t(3), _t(3)
    with fwad.dual_level():
        dual = fwad.make_dual(x, t)
        y = dual.clone()
        y.mul_(3)
        y[1:].sin_()
        tangent = fwad.unpack_dual(y).tangent
    xn, tn = x.numpy(), t.numpy()
    expected = 3 * tn
    expected[1:] = np.cos(3 * xn[1:]) * 3 * tn[1:]
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-12)


def test_exiting_a_dual_level_that_was_never_entered():
    with pytest.raises(RuntimeError, match=r"^Dual level must be a positive number\.$"):
        fwad.exit_dual_level()


def test_vmap_refuses_an_in_place_change_to_an_unmapped_input():
    y = ag.zeros(2, dtype=ag.float64)

    def shift(x, y):
        y.add_(1)
        return x + y

    with pytest.raises(RuntimeError, match=r"^vmap\(shift, \.\.\.\): `shift` modified in place an input that is not "
                                           r"mapped over \(in_dims None\)"):
        func.vmap(shift, in_dims=(0, None))(_t(3, 2), y)
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0])  # changed once, by the first example, not three times


def test_vmap_still_allows_in_place_changes_to_mapped_inputs_and_fresh_tensors():
    x, y = _t(3, 2), _t(2)
    xn, yn = x.numpy().copy(), y.numpy().copy()

    def f(x, y):
        x.mul_(2)
        z = y.clone()
        z.add_(x)
        return z

    out = func.vmap(f, in_dims=(0, None))(x, y)
    np.testing.assert_allclose(out.numpy(), yn + 2 * xn, rtol=1e-12)
    np.testing.assert_allclose(x.numpy(), 2 * xn, rtol=1e-12)
    np.testing.assert_array_equal(y.numpy(), yn)


def test_vmap_over_a_batch_of_one_may_change_an_unmapped_input_once():
    y = ag.zeros(2, dtype=ag.float64)
    out = func.vmap(lambda x, y: x + y.add_(1), in_dims=(0, None))(ag.ones(1, 2, dtype=ag.float64), y)
    np.testing.assert_array_equal(out.numpy(), [[2.0, 2.0]])
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0])


@pytest.mark.gpu
def test_complex_and_integer_checks_on_cuda(cupy):
    z, t = _c(3), _c(3)
    tangent = _tangent(lambda d: d * d, z.cuda(), t.cuda())
    assert tangent.device.type == "cuda"
    np.testing.assert_allclose(tangent.cpu().numpy(), 2 * z.numpy() * t.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: int64"):
        func.jacfwd(lambda x: x * 2)(ag.arange(3, device="cuda"))
    y = ag.zeros(2, dtype=ag.float64, device="cuda")
    with pytest.raises(RuntimeError, match="modified in place an input that is not mapped over"):
        func.vmap(lambda x, y: x + y.add_(1), in_dims=(0, None))(_t(3, 2).cuda(), y)
