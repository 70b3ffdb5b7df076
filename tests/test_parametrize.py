"""actorgrad.nn.utils.parametrize and .parametrizations (weight_norm, spectral_norm): PyTorch's behaviour, names
and texts; values from the defining formulas in numpy (g v / ||v||, W / u.Wv after a power iteration, numpy's SVD)
and gradients from their central differences or closed forms."""

import copy
import pickle

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import gradcheck
from actorgrad.nn.utils import parametrizations, parametrize

W = [[0.5, -1.2, 0.3], [0.8, 0.1, -0.7], [-0.4, 0.9, 1.1], [0.2, -0.6, 0.75]]
X = [[1.0, -0.5, 2.0], [0.3, 0.7, -1.1]]
SQUARE = [[0.5, -1.2, 0.3], [0.8, 0.1, -0.7], [-0.4, 0.9, 1.1]]


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).T

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    """A parametrization without right_inverse."""

    def forward(self, x):
        return 2 * x


def f64(values, **kwargs):
    return ag.tensor(values, dtype=ag.float64, **kwargs)


def linear(weight, bias=True):
    """A float64 Linear holding `weight` and a zero bias."""
    weight = np.array(weight)
    m = nn.Linear(weight.shape[1], weight.shape[0], bias=bias).double()
    m.weight = nn.Parameter(f64(weight))
    if bias:
        m.bias = nn.Parameter(ag.zeros(weight.shape[0], dtype=ag.float64))
    return m


def symmetric_linear():
    m = linear(SQUARE)
    parametrize.register_parametrization(m, "weight", Symmetric())
    return m


def test_the_parametrized_weight_is_the_parametrization_of_the_original():
    m = symmetric_linear()
    upper = np.triu(SQUARE)
    # right_inverse at registration
    np.testing.assert_allclose(m.parametrizations.weight.original.detach().numpy(), upper)
    np.testing.assert_allclose(m.weight.detach().numpy(), upper + np.triu(upper, 1).T)
    assert isinstance(m.parametrizations.weight.original, nn.Parameter)
    assert "weight" not in m._parameters


def test_the_original_keeps_its_object_so_an_optimizer_holding_it_still_trains_it():
    m = linear(SQUARE)
    weight = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert m.parametrizations.weight.original is weight
    assert [id(p) for p in m.parameters()] == [id(m.bias), id(weight)]


def test_gradients_flow_to_the_original_through_the_parametrization():
    m = symmetric_linear()
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    m.weight.backward(f64(g))
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.detach().numpy(), np.triu(g) + np.triu(g.T, 1))


def test_gradcheck_through_a_parametrized_linear():
    m = symmetric_linear()
    holder = m.parametrizations.weight

    def forward(original, x):
        holder._parameters["original"] = original
        return m(x)

    original = f64(np.triu(SQUARE), requires_grad=True)
    assert gradcheck(forward, (original, f64(X[:1] * 2, requires_grad=True)))


def test_assigning_the_weight_stores_its_right_inverse():
    m = symmetric_linear()
    original = m.parametrizations.weight.original
    a = np.array(SQUARE) + np.array(SQUARE).T
    m.weight = f64(a)
    np.testing.assert_allclose(m.weight.detach().numpy(), a)
    np.testing.assert_allclose(original.detach().numpy(), np.triu(a))
    assert m.parametrizations.weight.original is original


def test_assigning_needs_every_parametrization_to_have_a_right_inverse():
    m = linear(SQUARE)
    parametrize.register_parametrization(m, "weight", Scale())
    with pytest.raises(RuntimeError, match="^parametrization Scale does not implement right_inverse.$"):
        m.weight = ag.zeros(3, 3, dtype=ag.float64)


def test_parametrizations_chain_in_registration_order():
    m = symmetric_linear()
    parametrize.register_parametrization(m, "weight", Scale())
    upper = np.triu(SQUARE)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * (upper + np.triu(upper, 1).T))
    assert len(m.parametrizations.weight) == 2


def test_remove_leaving_it_parametrized_keeps_the_value_as_a_plain_parameter():
    m = symmetric_linear()
    expected = m.weight.detach().numpy()
    original = m.parametrizations.weight.original
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is original and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), expected)
    assert list(m.state_dict()) == ["bias", "weight"]  # registered again, after the bias, as in PyTorch


def test_remove_without_leaving_it_parametrized_restores_the_original():
    m = symmetric_linear()
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear
    np.testing.assert_allclose(m.weight.detach().numpy(), np.triu(SQUARE))


def test_remove_refuses_a_tensor_that_is_not_parametrized():
    m = linear(SQUARE)
    with pytest.raises(ValueError, match=r"^Module Linear\(in_features=3, out_features=3, bias=True\) does not have "
                                         "a parametrization on weight$"):
        parametrize.remove_parametrizations(m, "weight")


def test_cached_computes_the_parametrized_tensor_once_per_block():
    calls = []

    class Counting(Symmetric):
        def forward(self, x):
            calls.append(1)
            return super().forward(x)

    m = linear(SQUARE)
    parametrize.register_parametrization(m, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        first = m.weight
        with parametrize.cached():
            assert m.weight is first
        assert m.weight is first
    assert len(calls) == 1
    assert m.weight is not first and len(calls) == 2


def test_state_dict_keys_and_class_are_pytorchs():
    m = symmetric_linear()
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert type(m).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert type(linear(SQUARE)) is nn.Linear  # the property lives on this module's own class only


def test_a_state_dict_loads_into_a_parametrized_module():
    source, target = symmetric_linear(), linear(np.zeros((3, 3)))
    parametrize.register_parametrization(target, "weight", Symmetric())
    target.load_state_dict(source.state_dict())
    np.testing.assert_allclose(target.weight.detach().numpy(), source.weight.detach().numpy())


def test_a_parametrized_module_deepcopies_but_refuses_pickling():
    m = symmetric_linear()
    replica = copy.deepcopy(m)
    assert type(replica).__name__ == "ParametrizedLinear"
    np.testing.assert_allclose(replica.weight.detach().numpy(), m.weight.detach().numpy())
    assert replica.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="^Serialization of parametrized modules is only supported through"):
        pickle.dumps(m)


def test_a_buffer_can_be_parametrized():
    m = nn.Module()
    m.register_buffer("mask", ag.tensor(SQUARE))
    parametrize.register_parametrization(m, "mask", Symmetric())
    assert list(m.state_dict()) == ["parametrizations.mask.original"]
    assert not list(m.parameters())


def test_registering_on_a_missing_name_is_refused():
    with pytest.raises(ValueError, match=r"^Module 'Linear\(in_features=3, out_features=3, bias=True\)' does not "
                                         "have a parameter, a buffer, or a parametrized element with name 'foo'$"):
        parametrize.register_parametrization(linear(SQUARE), "foo", Symmetric())


def test_a_safe_parametrization_may_not_change_the_shape():
    class Transpose(nn.Module):
        def forward(self, x):
            return x.T

    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless `unsafe` flag is enabled"):
        parametrize.register_parametrization(linear(W), "weight", Transpose())
    m = linear(W)
    parametrize.register_parametrization(m, "weight", Transpose(), unsafe=True)
    assert m.weight.shape == (3, 4)


def test_right_inverse_may_not_change_the_dtype_of_one_tensor():
    class ToFloat32(nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x.float()

    with pytest.raises(ValueError, match="^When `right_inverse` outputs one tensor, it may not change the dtype."):
        parametrize.register_parametrization(linear(W), "weight", ToFloat32())


def test_a_module_is_needed():
    with pytest.raises(ValueError, match="^ParametrizationList requires one or more modules.$"):
        parametrize.ParametrizationList([], ag.zeros(2))


# -- weight_norm ---------------------------------------------------------------------------------------------------
def norms_except(v, dim):
    """||v|| over every axis but `dim` (over all, for dim None), kept broadcastable to v."""
    axes = None if dim is None else tuple(d for d in range(v.ndim) if d != dim)
    return np.sqrt((v**2).sum(axis=axes, keepdims=dim is not None))


def linear_loss(weight):
    """The numpy value of (m(X) ** 2).sum() for a Linear with this weight and a zero bias."""
    return ((np.array(X) @ weight.T) ** 2).sum()


def weight_normed(dim):
    m = parametrizations.weight_norm(linear(W), dim=dim)
    g = m.parametrizations.weight.original0
    with ag.no_grad():
        g.mul_(ag.linspace(0.5, 1.5, g.numel(), dtype=ag.float64).reshape(g.shape))
    return m


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_registers_g_and_v(dim):
    m = parametrizations.weight_norm(linear(W), dim=dim)
    g, v = m.parametrizations.weight.original0, m.parametrizations.weight.original1
    np.testing.assert_allclose(g.detach().numpy(), norms_except(np.array(W), dim))
    np.testing.assert_allclose(v.detach().numpy(), W)
    assert isinstance(g, nn.Parameter) and isinstance(v, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), W)  # g * v / ||v|| with g = ||v||
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_values_and_gradients_follow_g_times_v_over_its_norm(dim, numpy_gradient):
    """g is ||v|| scaled by linspace(0.5, 1.5) (so the weight is not just v); the weight g v / ||v|| and the
    gradients of (m(X) ** 2).sum() for g and v against numpy's formula and its central differences."""
    m = weight_normed(dim)
    holder = m.parametrizations.weight
    v = np.array(W)
    norms = norms_except(v, dim)
    g = norms * np.linspace(0.5, 1.5, norms.size).reshape(norms.shape)
    np.testing.assert_allclose(holder.original0.detach().numpy(), g, rtol=1e-14)
    np.testing.assert_allclose(m.weight.detach().numpy(), g * v / norms, rtol=1e-13)
    (m(f64(X)) ** 2).sum().backward()
    grad_g = numpy_gradient(lambda g: linear_loss(g * v / norms_except(v, dim)), g)
    grad_v = numpy_gradient(lambda v: linear_loss(g * v / norms_except(v, dim)), v)
    np.testing.assert_allclose(holder.original0.grad.detach().numpy(), grad_g, rtol=1e-7)
    np.testing.assert_allclose(holder.original1.grad.detach().numpy(), grad_v, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_gradcheck(dim):
    m = weight_normed(dim)
    holder = m.parametrizations.weight

    def forward(g, v):
        holder._parameters["original0"], holder._parameters["original1"] = g, v
        return m.weight

    g = holder.original0.detach().requires_grad_()
    assert gradcheck(forward, (g, f64(W, requires_grad=True)))


def test_weight_norm_with_a_negative_dim_counts_from_the_end():
    m = parametrizations.weight_norm(linear(W), dim=-2)
    assert m.parametrizations.weight.original0.shape == (4, 1)
    with pytest.raises(IndexError,
                       match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        parametrizations.weight_norm(linear(W), dim=5)


def test_weight_norm_cannot_be_left_unparametrized():
    m = parametrizations.weight_norm(linear(W))
    with pytest.raises(ValueError, match=r"^Cannot leave unparametrized \(`leave_parametrized=False`\) a tensor"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), W)


# -- spectral_norm -------------------------------------------------------------------------------------------------
def unit(values) -> np.ndarray:
    return np.array(values) / np.linalg.norm(values)


U0 = unit([0.3, -0.2, 0.9, 0.1])  # away from W's singular vectors, so one power iteration visibly moves them
V0 = unit([0.5, 0.5, -0.7])


def spectral_expected(u, v, numpy_gradient):
    """W / sigma with sigma = u . W v, and the central differences of the numpy (m(X) ** 2).sum() for W, u and v
    held constant (they are buffers, advanced without a graph)."""
    w = np.array(W)
    return w / (u @ w @ v), numpy_gradient(lambda w: linear_loss(w / (u @ w @ v)), w)


def spectral_normed(device=None):
    m = parametrizations.spectral_norm(linear(W))
    if device is not None:
        m.to(device)
    sn = m.parametrizations.weight[0]
    with ag.no_grad():
        sn._u.copy_(f64(U0))
        sn._v.copy_(f64(V0))
    return m, sn


def test_spectral_norm_registers_unit_buffers_near_the_singular_vectors():
    ag.manual_seed(0)  # u and v start random: how near 15 iterations bring them depends on where they start
    m = parametrizations.spectral_norm(linear(W))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    sn = m.parametrizations.weight[0]
    u, s, vh = np.linalg.svd(np.array(W))
    # 15 power iterations at registration: cosines of 1 - 3e-5 with the singular vectors from random ones
    assert abs(sn._u.detach().numpy() @ u[:, 0]) > 1 - 1e-4 and abs(sn._v.detach().numpy() @ vh[0]) > 1 - 1e-4
    np.testing.assert_allclose(np.linalg.norm(m.weight.detach().numpy(), 2), 1, rtol=1e-4)


def test_spectral_norm_in_training_advances_u_and_v_by_one_power_iteration(numpy_gradient):
    m, sn = spectral_normed()
    weight = m.weight
    w = np.array(W)
    u = unit(w @ V0)  # PyTorch's order: u from the old v, then v from the new u
    v = unit(w.T @ u)
    expected_weight, expected_grad = spectral_expected(u, v, numpy_gradient)
    np.testing.assert_allclose(weight.detach().numpy(), expected_weight, rtol=1e-13)
    np.testing.assert_allclose(sn._u.detach().numpy(), u, rtol=1e-13)
    np.testing.assert_allclose(sn._v.detach().numpy(), v, rtol=1e-13)
    sn._u.copy_(f64(U0))  # the forward below advances u and v from the same start
    sn._v.copy_(f64(V0))
    (m(f64(X)) ** 2).sum().backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.detach().numpy(), expected_grad, rtol=1e-7)


def test_spectral_norm_in_eval_mode_leaves_u_and_v_alone(numpy_gradient):
    m, sn = spectral_normed()
    m.eval()
    assert not sn.training
    expected_weight, expected_grad = spectral_expected(U0, V0, numpy_gradient)
    np.testing.assert_allclose(m.weight.detach().numpy(), expected_weight, rtol=1e-13)
    np.testing.assert_allclose(sn._u.detach().numpy(), U0)
    np.testing.assert_allclose(sn._v.detach().numpy(), V0)
    (m(f64(X)) ** 2).sum().backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.detach().numpy(), expected_grad, rtol=1e-7)


def test_spectral_norm_in_training_converges_to_the_largest_singular_value():
    """Each training forward is one power iteration: after many, sigma is numpy's largest singular value, u and v
    its singular vectors, and the weight has spectral norm 1."""
    m, sn = spectral_normed()
    for _ in range(60):
        weight = m.weight
    u, s, vh = np.linalg.svd(np.array(W))
    np.testing.assert_allclose(np.array(W) / weight.detach().numpy(), s[0], rtol=1e-10)
    np.testing.assert_allclose(abs(sn._u.detach().numpy() @ u[:, 0]), 1, rtol=1e-10)
    np.testing.assert_allclose(abs(sn._v.detach().numpy() @ vh[0]), 1, rtol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(weight.detach().numpy(), 2), 1, rtol=1e-10)


def test_spectral_norm_gradcheck_in_eval_mode():
    m, _ = spectral_normed()
    m.eval()
    holder = m.parametrizations.weight

    def forward(original, x):
        holder._parameters["original"] = original
        return m(x)

    assert gradcheck(forward, (f64(W, requires_grad=True), f64(X, requires_grad=True)))


def test_spectral_norm_draws_u_and_v_from_actorgrads_generator():
    ag.manual_seed(3)
    first = parametrizations.spectral_norm(linear(W)).state_dict()
    ag.manual_seed(3)
    second = parametrizations.spectral_norm(linear(W)).state_dict()
    third = parametrizations.spectral_norm(linear(W)).state_dict()
    key = "parametrizations.weight.0._u"
    np.testing.assert_array_equal(first[key].detach().numpy(), second[key].detach().numpy())
    assert not np.array_equal(first[key].detach().numpy(), third[key].detach().numpy())


def test_spectral_norm_of_a_vector_divides_by_its_norm():
    m = nn.Module()
    m.weight = nn.Parameter(f64([3.0, 4.0]))
    parametrizations.spectral_norm(m)
    np.testing.assert_allclose(m.weight.detach().numpy(), [0.6, 0.8])
    assert list(m.state_dict()) == ["parametrizations.weight.original"]


def test_spectral_norm_of_a_transposed_convolution_takes_dim_1():
    m = parametrizations.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert m.parametrizations.weight[0]._u.shape == (3,)


def test_spectral_norm_errors_are_pytorchs():
    with pytest.raises(ValueError, match=r"^Module 'Linear\(in_features=3, out_features=4, bias=True\)' has no "
                                         "parameter or buffer with name 'foo'$"):
        parametrizations.spectral_norm(linear(W), name="foo")
    with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got n_power_iterations=0$"):
        parametrizations.spectral_norm(linear(W), n_power_iterations=0)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        parametrizations.spectral_norm(linear(W), dim=2)


@pytest.mark.gpu
def test_weight_norm_and_spectral_norm_give_the_cpus_values_and_gradients_on_cuda():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    results = []
    for device in (None, cuda):
        wn = weight_normed(0)
        if device is not None:
            wn.to(device)
        sn, _ = spectral_normed(device)
        x = f64(X, device=device)
        ((wn(x) ** 2).sum() + (sn(x) ** 2).sum()).backward()
        grads = [wn.parametrizations.weight.original0.grad, wn.parametrizations.weight.original1.grad,
                 sn.parametrizations.weight.original.grad]
        assert all(g.device == x.device for g in grads)
        u = sn.parametrizations.weight[0]._u
        results.append([t.detach().cpu().numpy() for t in [*grads, u]])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-14)


def test_a_parametrized_module_prints_as_pytorchs():
    assert repr(parametrizations.weight_norm(nn.Linear(3, 2))) == (
        "ParametrizedLinear(\n"
        "  in_features=3, out_features=2, bias=True\n"
        "  (parametrizations): ModuleDict(\n"
        "    (weight): ParametrizationList(\n"
        "      (0): _WeightNorm()\n"
        "    )\n"
        "  )\n"
        ")"
    )
