"""Behaviour of nn.init and nn.utils that once differed from PyTorch's: trunc_normal_ on an interval holding
little of the normal's mass, integer tensors refused by the normal-drawing initialisers, the order of
kaiming's argument checks, weight_norm of a 1-D parameter along dim 0, skip_init given an instance, and
weight_norm's out-of-range dim message."""

import importlib.util

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn import init
from actorgrad.nn.utils import parametrizations, skip_init, weight_norm


def truncated_normal_moments(mean: float, std: float, a: float, b: float) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of N(mean, std^2) restricted to [a, b], by a midpoint sum."""
    edges = np.linspace(a, b, 400_001)
    x = (edges[1:] + edges[:-1]) / 2
    w = np.exp(-0.5 * ((x - mean) / std) ** 2)
    w /= w.sum()
    m = (x * w).sum()
    return m, ((x - m) ** 2 * w).sum(), ((x - m) ** 4 * w).sum()


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize(("mean", "std", "a", "b"), [
    (0.0, 1.0, 10.0, 11.0),  # far in the tail: redrawing normals until one lands inside would never end
    (0.0, 1.0, -0.1, 0.2),  # narrow
    (0.5, 2.0, -1.0, 3.0),  # wide
    (0.0, 1.0, -2.0, 2.0),  # the defaults
])
def test_trunc_normal_draws_lie_in_the_bounds_with_the_truncated_moments(mean, std, a, b):
    n = 20_000
    x = init.trunc_normal_(ag.empty(n, dtype=ag.float64), mean, std, a, b).numpy()
    m, v, mu4 = truncated_normal_moments(mean, std, a, b)
    assert a <= x.min() and x.max() <= b
    assert abs(x.mean() - m) < 6 * np.sqrt(v / n)
    assert abs(x.var() - v) < 6 * np.sqrt((mu4 - v**2) / n)


def test_trunc_normal_in_the_tail_repeats_with_a_seeded_generator_and_fills_the_tensor_itself():
    t = ag.empty(3, 4, requires_grad=True)
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        same = init.trunc_normal_(t, 0.0, 1.0, 5.0, 6.0, generator=ag.Generator().manual_seed(3))
        again = init.trunc_normal_(ag.empty(3, 4), 0.0, 1.0, 5.0, 6.0, generator=ag.Generator().manual_seed(3))
    assert same is t and t.grad_fn is None and t.dtype == ag.float32
    np.testing.assert_array_equal(t.detach().numpy(), again.numpy())


@pytest.mark.parametrize("fill", [
    lambda t: init.trunc_normal_(t), lambda t: init.orthogonal_(t), lambda t: init.sparse_(t, 0.5),
])
@pytest.mark.parametrize(("dtype", "name"), [(ag.int64, "Long"), (ag.int32, "Int"), (ag.bool, "Bool")])
def test_normal_drawing_initialisers_refuse_integer_tensors(fill, dtype, name):
    with pytest.raises(NotImplementedError, match=f"^\"normal_kernel_cpu\" not implemented for '{name}'$"):
        fill(ag.zeros(4, 5, dtype=dtype))
    assert fill(ag.zeros(0, 5, dtype=dtype)).shape == (0, 5)  # nothing to draw: no error


def test_kaiming_checks_the_mode_before_the_nonlinearity():
    with pytest.raises(ValueError, match=r"^Mode bad not supported, please use one of \['fan_in', 'fan_out'\]$"):
        init.kaiming_uniform_(ag.empty(4, 3), mode="bad", nonlinearity="bad")
    with pytest.raises(ValueError, match="^Unsupported nonlinearity bad$"):
        init.kaiming_normal_(ag.empty(4, 3), mode="fan_out", nonlinearity="bad")


BIAS = np.array([0.7, -1.3, 2.1, -0.4])


def linear_with_bias() -> ag.nn.Linear:
    m = ag.nn.Linear(3, 4).double()
    with ag.no_grad():
        m.bias.copy_(ag.tensor(BIAS))
    return m


def test_hook_weight_norm_of_a_1d_parameter_takes_each_elements_magnitude():
    with pytest.warns(FutureWarning):
        m = weight_norm(linear_with_bias(), name="bias", dim=0)
    np.testing.assert_allclose(m.bias_g.detach().numpy(), np.abs(BIAS))
    np.testing.assert_allclose(m.bias.detach().numpy(), BIAS)
    m(ag.ones(2, 3, dtype=ag.float64)).sum().backward()
    assert m.bias_g.grad.shape == (4,)


def test_parametrized_weight_norm_of_a_1d_parameter_takes_each_elements_magnitude():
    m = parametrizations.weight_norm(linear_with_bias(), name="bias", dim=0)
    g = m.parametrizations.bias.original0
    np.testing.assert_allclose(g.detach().numpy(), np.abs(BIAS))
    np.testing.assert_allclose(m.bias.detach().numpy(), BIAS)
    norm = m.parametrizations.bias[0]
    assert gradcheck(norm, (ag.tensor([0.5, -2.0, 1.5], dtype=ag.float64, requires_grad=True),
                            ag.tensor([1.2, 0.8, -0.6], dtype=ag.float64, requires_grad=True)))


def test_weight_norm_dim_out_of_range_has_pytorchs_comma_and_spectral_norm_has_none():
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got "
                                         r"5\)$"), pytest.warns(FutureWarning):
        weight_norm(ag.nn.Linear(3, 4), dim=5)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\] but got "
                                         r"2\)$"):
        parametrizations.spectral_norm(ag.nn.Linear(3, 4), dim=2)


def test_skip_init_given_a_module_instance_raises_a_type_error():
    with pytest.raises(TypeError):
        skip_init(ag.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match="^Expected a Module; got <class 'int'>$"):
        skip_init(int)


HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUPY, reason="needs CuPy (or its stand-in)")
@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
def test_trunc_normal_tail_and_1d_weight_norm_on_cuda():
    import cupy

    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    t = init.trunc_normal_(ag.empty(2000, dtype=ag.float64, device="cuda"), 0.0, 1.0, 4.0, 5.0)
    assert t.device.type == "cuda" and isinstance(t._data, cupy.ndarray)
    x = t.cpu().numpy()
    m, v, _ = truncated_normal_moments(0.0, 1.0, 4.0, 5.0)
    assert 4.0 <= x.min() and x.max() <= 5.0 and abs(x.mean() - m) < 6 * np.sqrt(v / x.size)
    lin = parametrizations.weight_norm(linear_with_bias().cuda(), name="bias", dim=0)
    g = lin.parametrizations.bias.original0
    assert isinstance(g._data, cupy.ndarray)
    np.testing.assert_allclose(g.detach().cpu().numpy(), np.abs(BIAS))
