"""actorgrad.nn.utils.parametrize and .parametrizations (weight_norm, spectral_norm), against PyTorch's behaviour;
the reference numbers were computed offline with torch 2.13 (float64)."""

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
# The magnitudes are scaled by linspace(0.5, 1.5) after registration, so that g is not just ||v||.
WEIGHT_NORM = {
    0: dict(
        g=[[0.6670832032063166], [0.8897565210026092], [1.7225626903605635], [1.4716062652761437]],
        weight=[[0.25, -0.6, 0.15], [0.6666666666666666, 0.08333333333333333, -0.5833333333333333],
                [-0.46666666666666673, 1.05, 1.2833333333333334], [0.3, -0.8999999999999998, 1.1249999999999998]],
        grad_g=[[2.945959350429334], [2.480235326703589], [3.65451946922826], [16.525488558882007]],
        grad_v=[[0.14497752808988762, 0.5428539325842698, 1.9297865168539328],
                [-2.0014132553606236, 1.3078094541910328, -2.1004995126705652],
                [4.258404689092763, -5.770299439347605, 6.269664882772683],
                [2.3469487012987016, 6.927153896103891, 4.9158701298701315]],
    ),
    1: dict(
        g=[[0.5220153254455275, 1.6186414056238645, 2.3006792475266953]],
        weight=[[0.25, -1.2, 0.44999999999999996], [0.4, 0.1, -1.0499999999999998], [-0.2, 0.9, 1.6500000000000001],
                [0.1, -0.6, 1.125]],
        grad_g=[[-1.66556412737106, 2.2138936935317233, 22.957029997458246]],
        grad_v=[[1.7708302752293577, -1.8727022900763366, 7.922599893730076],
                [-0.7083715596330272, 3.4962251908396937, 0.777433581296494],
                [1.9574357798165143, -5.623973282442748, -4.687967056323057],
                [2.3212821100917433, -4.107851145038168, 4.432249734325186]],
    ),
    None: dict(
        g=1.2311072252245132,
        weight=[[0.25, -0.6, 0.15], [0.4, 0.05, -0.35], [-0.2, 0.45, 0.55], [0.1, -0.3, 0.375]],
        grad_g=5.375658890145084,
        grad_v=[[0.1511845360824744, 0.5279571134020615, 1.9335107216494847],
                [-1.0363047422680411, 0.43133690721649487, -0.4798583505154642],
                [1.0066523711340207, -1.5649678350515464, 0.5342059793814438],
                [0.6039238144329897, -0.2597714432989692, 1.8330268041237114]],
    ),
}


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
    axes = None if dim is None else tuple(d for d in range(2) if d != dim)
    norms = np.sqrt((np.array(W) ** 2).sum(axis=axes, keepdims=dim is not None))
    np.testing.assert_allclose(g.detach().numpy(), norms)
    np.testing.assert_allclose(v.detach().numpy(), W)
    assert isinstance(g, nn.Parameter) and isinstance(v, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), W)  # g * v / ||v|| with g = ||v||
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_gives_pytorchs_values_and_gradients(dim):
    m = weight_normed(dim)
    expected = WEIGHT_NORM[dim]
    holder = m.parametrizations.weight
    np.testing.assert_allclose(holder.original0.detach().numpy(), expected["g"], rtol=1e-14)
    np.testing.assert_allclose(m.weight.detach().numpy(), expected["weight"], rtol=1e-13)
    (m(f64(X)) ** 2).sum().backward()
    np.testing.assert_allclose(holder.original0.grad.detach().numpy(), expected["grad_g"], rtol=1e-12)
    np.testing.assert_allclose(holder.original1.grad.detach().numpy(), expected["grad_v"], rtol=1e-12)


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
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\] but got 5\)"):
        parametrizations.weight_norm(linear(W), dim=5)


def test_weight_norm_cannot_be_left_unparametrized():
    m = parametrizations.weight_norm(linear(W))
    with pytest.raises(ValueError, match=r"^Cannot leave unparametrized \(`leave_parametrized=False`\) a tensor"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), W)


# -- spectral_norm -------------------------------------------------------------------------------------------------
U0 = [0.3077935056255462, -0.20519567041703082, 0.9233805168766387, 0.10259783520851541]
V0 = [0.502518907629606, 0.502518907629606, -0.7035264706814484]
TRAINING = dict(
    weight=[[0.32934954266354194, -0.7904389023925006, 0.19760972559812515],
            [0.5269592682616672, 0.0658699085327084, -0.46108935972895865],
            [-0.2634796341308336, 0.5928291767943755, 0.7245689938597923],
            [0.1317398170654168, -0.3952194511962503, 0.4940243139953129]],
    u=[-0.3966521970446672, 0.6658090450392629, -0.36831989725576236, -0.5135229336738995],
    v=[0.2496104019136979, 0.34198957869671126, -0.9059457904970519],
    grad=[[1.9587380387314859, -0.3308973732550857, 1.2053541375077175],
          [-1.540256985745319, -0.784648347169268, 2.4045181530037603],
          [1.684819856451635, -0.057964218206410845, 0.4866538342543696],
          [2.396821729286251, -0.2589000458374795, 1.0824708930913771]],
)
EVALUATION = dict(
    weight=[[-0.5408777426183363, 1.298106582284007, -0.32452664557100175],
            [-0.8654043881893381, -0.10817554852366726, 0.7572288396656708],
            [0.43270219409466903, -0.9735799367130054, -1.18993103376034],
            [-0.21635109704733452, 0.6490532911420035, -0.8113166139275044]],
    grad=[[8.445569614832564, 1.5226964099013198, 3.326950334854054],
          [-4.218344527881891, -0.9254159953131755, -0.9853615638049584],
          [18.217242891353393, 12.822644264792704, -13.647725018759626],
          [5.576459841055765, -2.554054531469975, 9.993493417270425]],
)


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


def test_spectral_norm_in_training_advances_u_and_v_as_pytorch():
    m, sn = spectral_normed()
    weight = m.weight
    np.testing.assert_allclose(weight.detach().numpy(), TRAINING["weight"], rtol=1e-13)
    np.testing.assert_allclose(sn._u.detach().numpy(), TRAINING["u"], rtol=1e-13)
    np.testing.assert_allclose(sn._v.detach().numpy(), TRAINING["v"], rtol=1e-13)
    sn._u.copy_(f64(U0))  # the forward below advances u and v from where PyTorch's did
    sn._v.copy_(f64(V0))
    (m(f64(X)) ** 2).sum().backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.detach().numpy(), TRAINING["grad"], rtol=1e-12)


def test_spectral_norm_in_eval_mode_leaves_u_and_v_alone():
    m, sn = spectral_normed()
    m.eval()
    assert not sn.training
    np.testing.assert_allclose(m.weight.detach().numpy(), EVALUATION["weight"], rtol=1e-13)
    np.testing.assert_allclose(sn._u.detach().numpy(), U0)
    np.testing.assert_allclose(sn._v.detach().numpy(), V0)
    (m(f64(X)) ** 2).sum().backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.detach().numpy(), EVALUATION["grad"], rtol=1e-12)


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
