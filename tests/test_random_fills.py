"""Random in-place fills (normal_, uniform_, bernoulli_, exponential_, random_, geometric_, log_normal_, cauchy_):
their distributions, seeds, in-place behaviour and autograd, and PyTorch 2.13's errors."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn

N = 200_000
# Statistical checks allow SIGMAS standard errors: a correct sampler misses one with probability below 2e-9
# (|Z| > 6 for the sample moments, normal by the central limit theorem at N draws).
SIGMAS = 6


def filled(method, *args, dtype=ag.float64, n=N, **kwargs):
    return getattr(ag.empty(n, dtype=dtype), method)(*args, **kwargs).numpy()


def assert_moments(x, mean, var, fourth):
    """The sample mean and variance of `x` against a distribution's mean, variance and fourth central moment."""
    n = x.size
    assert abs(x.mean() - mean) <= SIGMAS * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) <= SIGMAS * math.sqrt((fourth - var**2) / n), (x.var(), var)


def discrete_moments(support, pmf):
    mean = (support * pmf).sum()
    return mean, ((support - mean) ** 2 * pmf).sum(), ((support - mean) ** 4 * pmf).sum()


# -- distributions ---------------------------------------------------------------------------------------------------
def test_normal_has_its_mean_and_variance():
    ag.manual_seed(0)
    assert_moments(filled("normal_", 1.5, 2.0), 1.5, 4.0, 3 * 2.0**4)
    assert_moments(filled("normal_"), 0.0, 1.0, 3.0)
    assert np.all(filled("normal_", 3.0, 0.0, n=5) == 3.0)


def test_uniform_stays_in_its_range_with_its_moments():
    ag.manual_seed(1)
    x = filled("uniform_", -2.0, 3.0)
    assert x.min() >= -2.0 and x.max() < 3.0
    assert_moments(x, 0.5, 25 / 12, 5.0**4 / 80)
    y = ag.empty(N).uniform_(**{"from": 4, "to": 5}).numpy()
    assert y.min() >= 4 and y.max() <= 5
    assert np.all(filled("uniform_", 1, 1, n=5) == 1)


def test_bernoulli_draws_zeros_and_ones_with_probability_p():
    ag.manual_seed(2)
    x = filled("bernoulli_", 0.3)
    assert set(np.unique(x)) == {0.0, 1.0}
    assert_moments(x, 0.3, 0.21, 0.21 * (1 - 3 * 0.3 + 3 * 0.3**2))
    assert np.all(filled("bernoulli_", 0, n=5) == 0) and np.all(filled("bernoulli_", 1, n=5) == 1)
    assert set(np.unique(filled("bernoulli_"))) == {0.0, 1.0}


def test_bernoulli_with_a_tensor_of_probabilities_broadcasts_it():
    ag.manual_seed(3)
    p = ag.tensor([0.0, 1.0, 0.25], dtype=ag.float16)
    x = ag.empty(N // 3, 3).bernoulli_(p).numpy()
    assert np.all(x[:, 0] == 0) and np.all(x[:, 1] == 1)
    assert_moments(x[:, 2], 0.25, 0.1875, 0.1875 * (1 - 0.75 + 3 / 16))
    assert np.all(ag.empty(4).bernoulli_(ag.tensor(1.0)).numpy() == 1)


@pytest.mark.parametrize("dtype", [ag.bool, ag.uint8, ag.int8, ag.int64, ag.float16])
def test_bernoulli_fills_any_dtype(dtype):
    x = ag.empty(1000, dtype=dtype)
    assert x.bernoulli_(0.5).dtype == dtype and set(np.unique(x.numpy()).tolist()) == {0, 1}
    assert set(np.unique(x.bernoulli_(ag.full((1000,), 0.5)).numpy()).tolist()) == {0, 1}


def test_exponential_has_mean_and_variance_of_rate_lambd():
    ag.manual_seed(4)
    x = filled("exponential_", 2.0)
    assert x.min() >= 0
    assert_moments(x, 0.5, 0.25, 9 / 2.0**4)
    assert_moments(filled("exponential_", lambd=1), 1.0, 1.0, 9.0)


def test_geometric_counts_trials_to_the_first_success():
    ag.manual_seed(5)
    x = filled("geometric_", 0.3)
    assert x.min() == 1 and np.all(x == np.round(x))
    support = np.arange(1, 400, dtype=np.float64)
    assert_moments(x, *discrete_moments(support, 0.3 * 0.7 ** (support - 1)))
    assert filled("geometric_", p=0.5, dtype=ag.int32, n=5).dtype == np.int32


def test_log_normal_is_exp_of_a_normal():
    ag.manual_seed(6)
    x = filled("log_normal_", 0.5, 0.75)
    assert x.min() > 0
    assert_moments(np.log(x), 0.5, 0.75**2, 3 * 0.75**4)
    assert_moments(np.log(filled("log_normal_")), 1.0, 4.0, 3 * 16.0)


def test_cauchy_has_half_its_mass_within_sigma_of_the_median():
    ag.manual_seed(7)
    for median, sigma in ((0.0, 1.0), (2.0, 0.5)):
        x = filled("cauchy_", median, sigma)
        inside = np.abs(x - median) < sigma  # P = 1/2 for Cauchy(median, sigma)
        assert abs(inside.mean() - 0.5) <= SIGMAS * math.sqrt(0.25 / N)
        assert abs((x < median).mean() - 0.5) <= SIGMAS * math.sqrt(0.25 / N)


def test_random_draws_from_to_and_to_ranges_uniformly():
    ag.manual_seed(8)
    x = filled("random_", -3, 5, dtype=ag.int64)
    assert x.dtype == np.int64 and set(np.unique(x).tolist()) == set(range(-3, 5))
    assert_moments(x.astype(np.float64), *discrete_moments(np.arange(-3, 5.0), np.full(8, 1 / 8)))
    y = filled("random_", 7)
    assert set(np.unique(y).tolist()) == set(range(7))
    assert set(np.unique(ag.empty(1000).random_(to=2).numpy()).tolist()) == {0, 1}
    assert set(np.unique(ag.empty(1000).random_(**{"from": 2, "to": 4}).numpy()).tolist()) == {2, 3}


@pytest.mark.parametrize("dtype, top", [
    (ag.bool, 1), (ag.uint8, 255), (ag.int8, 127), (ag.int16, 32767), (ag.float16, 2048),
])
def test_random_without_to_covers_the_dtypes_default_range(dtype, top):
    ag.manual_seed(9)
    x = filled("random_", dtype=dtype).astype(np.int64)
    assert x.min() == 0 and x.max() == top  # each end missed with probability below (1 - 1/2049)**N
    y = filled("random_", 1, None, dtype=dtype).astype(np.int64)
    assert y.min() == min(1, top) and y.max() == top


@pytest.mark.parametrize("dtype, top", [
    (ag.int32, 2**31 - 1), (ag.int64, 2**63 - 1), (ag.float32, 2**24), (ag.float64, 2**53),
])
def test_random_without_to_reaches_the_top_of_wide_dtypes(dtype, top):
    x = [int(v) for v in filled("random_", dtype=dtype, n=20_000)]
    assert min(x) >= 0 and max(x) <= top and max(x) > 0.99 * top  # P(all below) = 0.99**20000 < 1e-87
    assert all(v == int(v) for v in filled("random_", dtype=dtype, n=100))


def test_random_from_int64_min_without_to_covers_all_of_int64():
    x = filled("random_", -(2**63), None, dtype=ag.int64, n=1000)
    assert x.min() < -(2**61) and x.max() > 2**61  # each missed with probability 0.625**1000


@pytest.mark.parametrize("method, args", [
    ("normal_", ()), ("uniform_", ()), ("exponential_", ()), ("log_normal_", ()), ("cauchy_", ()),
    ("bernoulli_", ()), ("random_", (10,)), ("geometric_", (0.5,)),
])
@pytest.mark.parametrize("dtype", [ag.float16, ag.float32, ag.float64])
def test_each_fill_keeps_dtype_and_shape_and_returns_self(method, args, dtype):
    x = ag.zeros(2, 3, 4, dtype=dtype)
    data = x._data
    assert getattr(x, method)(*args) is x
    assert x.dtype == dtype and x.shape == (2, 3, 4) and x._data is data
    assert np.isfinite(x.numpy()).all() and len(np.unique(x.numpy())) > 1


# -- seeds -----------------------------------------------------------------------------------------------------------
CALLS = {
    "normal_": (1.0, 2.0), "uniform_": (-1.0, 1.0), "bernoulli_": (0.4,), "exponential_": (3.0,),
    "random_": (0, 1000), "geometric_": (0.2,), "log_normal_": (), "cauchy_": (),
}


@pytest.mark.parametrize("method", CALLS)
def test_manual_seed_and_a_generator_repeat_the_draws(method):
    def draw(**kwargs):
        return getattr(ag.empty(50), method)(*CALLS[method], **kwargs).numpy()

    ag.manual_seed(11)
    first = draw()
    ag.manual_seed(11)
    np.testing.assert_array_equal(draw(), first)
    assert not np.array_equal(draw(), first)
    by_generator = draw(generator=ag.Generator().manual_seed(11))
    np.testing.assert_array_equal(by_generator, first)  # the default generator is one Generator like any
    g = ag.Generator().manual_seed(12)
    ag.manual_seed(0)
    mine = draw(generator=g)
    default_after = draw()
    ag.manual_seed(0)
    np.testing.assert_array_equal(draw(), default_after)  # g's draws took nothing from the default stream
    np.testing.assert_array_equal(draw(generator=ag.Generator().manual_seed(12)), mine)


def test_nn_init_draws_what_the_tensor_methods_draw():
    for init, method, args in ((nn.init.normal_, "normal_", (0.5, 3.0)), (nn.init.uniform_, "uniform_", (-2, 5))):
        g, h = ag.Generator().manual_seed(4), ag.Generator().manual_seed(4)
        w = nn.Parameter(ag.empty(3, 5))
        assert init(w, *args, generator=g) is w and w.grad_fn is None and w.requires_grad
        np.testing.assert_array_equal(w.detach().numpy(), getattr(ag.empty(3, 5), method)(*args, generator=h).numpy())


# -- in place --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", CALLS)
def test_a_fill_through_a_view_is_seen_by_the_base_and_bumps_the_shared_version(method):
    base = ag.full((4, 3), 7.0)
    view = base[1]
    before = base._version
    getattr(view, method)(*CALLS[method])
    assert base._version == view._version == before + 1
    np.testing.assert_array_equal(base.numpy()[1], view.numpy())
    assert np.all(np.delete(base.numpy(), 1, axis=0) == 7.0)
    getattr(base, method)(*CALLS[method])
    assert view._version == before + 2
    np.testing.assert_array_equal(base.numpy()[1], view.numpy())


def test_a_fill_after_a_save_fails_the_savers_backward():
    x = ag.ones(3, requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    y.normal_()
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        z.backward()


@pytest.mark.parametrize("method", CALLS)
def test_a_leaf_that_requires_grad_is_refused_unless_grad_mode_is_off(method):
    w = ag.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place "
                                           r"operation\.$"):
        getattr(w, method)(*CALLS[method])
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           r"in-place operation\.$"):
        getattr(w[:2], method)(*CALLS[method])
    assert w._version == 0 and np.all(w.detach().numpy() == 1)
    with ag.no_grad():
        assert getattr(w, method)(*CALLS[method]) is w
    assert w._version == 1 and w.requires_grad and w.grad_fn is None and not np.all(w.detach().numpy() == 1)


def test_the_leaf_check_comes_before_the_argument_values():
    with pytest.raises(RuntimeError, match="^a leaf Variable"):
        ag.ones(3, requires_grad=True).normal_(0, -1)
    with pytest.raises(RuntimeError, match="^a leaf Variable"):
        ag.ones(3, requires_grad=True).random_(0)


NODES = {
    "normal_": "NormalBackward0", "uniform_": "UniformBackward0", "bernoulli_": "BernoulliBackward2",
    "exponential_": "ExponentialBackward0", "random_": "RandomBackward0", "geometric_": "GeometricBackward0",
    "log_normal_": "LogNormalBackward0", "cauchy_": "CauchyBackward0",
}


@pytest.mark.parametrize("method", CALLS)
def test_a_non_leaf_gets_pytorchs_node_and_zero_gradients(method):
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    y = x * 2
    mul = y.grad_fn
    getattr(y, method)(*CALLS[method])
    assert y.grad_fn.name() == NODES[method] and y.grad_fn.next_functions == ((mul, 0),)
    (y * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("args, node", [((), "RandomBackward2"), ((9,), "RandomBackward1"), ((1, 9), "RandomBackward0"),
                                        ((1, None), "RandomBackward0")])
def test_each_random_overload_names_its_node(args, node):
    y = ag.ones(2, requires_grad=True) * 1
    assert y.random_(*args).grad_fn.name() == node


def test_a_tensor_p_that_requires_grad_gets_bernoulli_backward1_and_zeros():
    x = ag.ones(3, requires_grad=True)
    y = x * 2
    p = ag.full((3,), 0.5, requires_grad=True)
    y.bernoulli_(p)
    assert y.grad_fn.name() == "BernoulliBackward1" and y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    scalar = ag.tensor(0.5, requires_grad=True)
    z = ag.ones(3).bernoulli_(scalar)
    assert z.requires_grad and z.grad_fn.name() == "BernoulliBackward1" and z.grad_fn.next_functions[0][0] is None
    z.sum().backward()
    assert scalar.grad.shape == () and scalar.grad.item() == 0


def test_nn_init_fills_a_parameter_in_grad_mode_and_refuses_what_pytorch_refuses():
    w = nn.Parameter(ag.zeros(2, 3))
    nn.init.normal_(w)
    assert w._version == 1 and w.grad_fn is None
    assert nn.init.normal_(ag.empty(0, dtype=ag.int64)).shape == (0,)  # the kernel never runs on no elements
    with pytest.raises(RuntimeError, match="^unsupported operation: more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        nn.init.uniform_(ag.ones(3).expand(2, 3))
    with pytest.raises(RuntimeError, match="^to is out of bounds for float$"):
        nn.init.uniform_(ag.empty(3), 0, math.inf)


# -- errors (PyTorch 2.13's texts) -----------------------------------------------------------------------------------
E3, I64 = (lambda: ag.empty(3)), (lambda: ag.empty(3, dtype=ag.int64))
RANDOM_EXPECTED = (
    "but expected one of:\n * (*, actorgrad.Generator generator = None)\n * (int from, int to, *, actorgrad.Generator "
    "generator = None)\n * (int to, *, actorgrad.Generator generator = None)\n"
)
ERRORS = [
    # normal_
    (lambda: ag.empty(3, dtype=ag.int32).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    (lambda: ag.empty(3, dtype=ag.bool).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Bool'"),
    (lambda: E3().normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: E3().normal_(0, -0.123456789), RuntimeError, "normal expects std >= 0.0, but found std -0.123457"),
    (lambda: E3().normal_(0, -1e-7), RuntimeError, "normal expects std >= 0.0, but found std -1e-07"),
    (lambda: E3().normal_(0, math.nan), RuntimeError, "normal expects std >= 0.0, but found std nan"),
    (lambda: I64().normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: ag.empty(0).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: E3().normal_("a", 1), TypeError, "normal_(): argument 'mean' (position 1) must be float, not str"),
    (lambda: E3().normal_(1 + 2j), TypeError, "normal_(): argument 'mean' (position 1) must be float, not complex"),
    # uniform_
    (lambda: I64().uniform_(), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: ag.empty(0, dtype=ag.int64).uniform_(), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: I64().uniform_(2, 1), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: E3().uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda: E3().uniform_(2.5, 1.5), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2.5 > to=1.5"),
    (lambda: E3().uniform_(-math.inf, 1), RuntimeError, "from is out of bounds for float"),
    (lambda: E3().uniform_(math.inf, 1), RuntimeError, "from is out of bounds for float"),
    (lambda: E3().uniform_(0, math.nan), RuntimeError, "to is out of bounds for float"),
    (lambda: E3().uniform_(0, 1e300), RuntimeError, "to is out of bounds for float"),
    (lambda: ag.empty(3, dtype=ag.float16).uniform_(0, 1e5), RuntimeError, "to is out of bounds for c10::Half"),
    (lambda: ag.empty(3, dtype=ag.float16).uniform_(-6e4, 6e4), RuntimeError,
     "uniform_ expects to-from <= std::numeric_limits<Half>::max(), but found to=60000 and from=-60000 which result "
     "in to-from to exceed the limit"),
    (lambda: E3().uniform_(-3e38, 3e38), RuntimeError,
     "uniform_ expects to-from <= std::numeric_limits<Float>::max(), but found to=3e+38 and from=-3e+38 which result "
     "in to-from to exceed the limit"),
    (lambda: ag.empty(3, dtype=ag.float64).uniform_(-1e308, 1e308), RuntimeError,
     "uniform_ expects to-from <= std::numeric_limits<Double>::max(), but found to=1e+308 and from=-1e+308 which "
     "result in to-from to exceed the limit"),
    (lambda: E3().uniform_(0, 2.0, 1), TypeError, "uniform_() takes from 0 to 2 positional arguments but 3 were given"),
    (lambda: E3().uniform_(1, **{"from": 2}), TypeError, "uniform_() got multiple values for argument 'from'"),
    (lambda: E3().uniform_(x=2), TypeError, "uniform_() got an unexpected keyword argument 'x'"),
    (lambda: E3().uniform_(0, "b"), TypeError, "uniform_(): argument 'to' (position 2) must be float, not str"),
    (lambda: E3().uniform_(to="b"), TypeError, "uniform_(): argument 'to' must be float, not str"),
    (lambda: E3().uniform_(ag.tensor([1.0, 2.0])), TypeError,
     "uniform_(): argument 'from' (position 1) must be float, not Tensor"),
    # bernoulli_
    (lambda: E3().bernoulli_(-0.1), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=-0.1"),
    (lambda: E3().bernoulli_(1.1), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.1"),
    (lambda: E3().bernoulli_(math.nan), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=nan"),
    (lambda: ag.empty(0).bernoulli_(2.0), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=2"),
    (lambda: E3().bernoulli_(ag.tensor([0.1, 0.5, 2.0])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, "
     "please report an enhancement request to PyTorch.)"),
    (lambda: E3().bernoulli_(ag.tensor([math.nan, 0.0, 1.0])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, "
     "please report an enhancement request to PyTorch.)"),
    (lambda: E3().bernoulli_(ag.tensor([0, 1, 1])), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda: E3().bernoulli_(ag.tensor([True, False, True])), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Bool'"),
    (lambda: E3().bernoulli_(ag.tensor([0.0, 1.0])), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0.  Target "
     "sizes: [3].  Tensor sizes: [2]"),
    (lambda: E3().bernoulli_("a"), TypeError,
     "bernoulli_() received an invalid combination of arguments - got (str), but expected one of:\n * (Tensor p, *, "
     "actorgrad.Generator generator = None)\n * (float p = 0.5, *, actorgrad.Generator generator = None)\n"),
    # exponential_
    (lambda: E3().exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: E3().exponential_(-1), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda: E3().exponential_(math.nan), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=nan"),
    (lambda: ag.empty(3, dtype=ag.int32).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Int"),
    (lambda: ag.empty(3, dtype=ag.bool).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Bool"),
    (lambda: E3().exponential_("a"), TypeError, "exponential_(): argument 'lambd' (position 1) must be float, not str"),
    # geometric_
    (lambda: E3().geometric_(0), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda: E3().geometric_(1), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=1"),
    (lambda: E3().geometric_(1.5), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=1.5"),
    (lambda: E3().geometric_(-0.5), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=-0.5"),
    (lambda: ag.empty(3, dtype=ag.bool).geometric_(2), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=2"),
    (lambda: ag.empty(3, dtype=ag.bool).geometric_(0.5), NotImplementedError,
     "\"geometric_cpu\" not implemented for 'Bool'"),
    (lambda: E3().geometric_("a"), TypeError, "geometric_(): argument 'p' (position 1) must be float, not str"),
    # log_normal_
    (lambda: E3().log_normal_(0, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda: E3().log_normal_(0, -1), RuntimeError, "log_normal_ expects std > 0.0, but found std=-1"),
    (lambda: E3().log_normal_(0, math.nan), RuntimeError, "log_normal_ expects std > 0.0, but found std=nan"),
    (lambda: I64().log_normal_(), NotImplementedError, "\"log_normal_cpu\" not implemented for 'Long'"),
    (lambda: I64().log_normal_(0, -1), RuntimeError, "log_normal_ expects std > 0.0, but found std=-1"),
    # cauchy_
    (lambda: E3().cauchy_(0, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: E3().cauchy_(0, -1), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda: I64().cauchy_(0, -1), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    *[(lambda n=n, dtype=dtype: ag.empty(n, dtype=dtype).cauchy_(), RuntimeError,
       f"Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you "
       f"specified {name}")
      for n, dtype, name in ((3, ag.int64, "long int"), (0, ag.int64, "long int"), (3, ag.int32, "int"),
                             (3, ag.int16, "short int"), (3, ag.int8, "signed char"), (3, ag.uint8, "unsigned char"),
                             (3, ag.bool, "bool"))],
    # random_
    (lambda: E3().random_(0), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=0 >= to=0"),
    (lambda: E3().random_(6, 5), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=6 >= to=5"),
    (lambda: ag.empty(3, dtype=ag.uint8).random_(300, 5), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=300 >= to=5"),
    (lambda: ag.empty(3, dtype=ag.uint8).random_(-3, 5), RuntimeError, "from is out of bounds for unsigned char"),
    (lambda: ag.empty(3, dtype=ag.uint8).random_(-3, None), RuntimeError, "from is out of bounds for unsigned char"),
    (lambda: ag.empty(3, dtype=ag.uint8).random_(3, 500), RuntimeError, "to - 1 is out of bounds for unsigned char"),
    (lambda: ag.empty(3, dtype=ag.int32).random_(2**40), RuntimeError, "to - 1 is out of bounds for int"),
    (lambda: ag.empty(3, dtype=ag.int16).random_(0, 2**53 + 2), RuntimeError, "to - 1 is out of bounds for short int"),
    (lambda: ag.empty(3, dtype=ag.int8).random_(2**24, 2**24 + 2), RuntimeError,
     "from is out of bounds for signed char"),
    (lambda: ag.empty(3, dtype=ag.bool).random_(5), RuntimeError, "to - 1 is out of bounds for bool"),
    (lambda: ag.empty(3, dtype=ag.bool).random_(3, None), RuntimeError, "from is out of bounds for bool"),
    (lambda: ag.empty(3, dtype=ag.float16).random_(2**40), RuntimeError, "to - 1 is out of bounds for c10::Half"),
    (lambda: ag.empty(3, dtype=ag.float16).random_(-70000, 5), RuntimeError, "from is out of bounds for c10::Half"),
    (lambda: E3().random_(2**25, None), RuntimeError,
     "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got "
     "from=33554432 > to_inc=16777216"),
    (lambda: ag.empty(3, dtype=ag.int32).random_(-(2**63), None), RuntimeError,
     "random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16"),
    (lambda: ag.empty(3, dtype=ag.bool).random_(-(2**63), None), NotImplementedError,
     "\"random_full_64_bits_range_kernel_cpu\" not implemented for 'Bool'"),
    (lambda: E3().random_(1, 2, 3), TypeError, "random_() takes 2 positional arguments but 3 were given"),
    (lambda: E3().random_(2**64), ValueError, "Overflow when unpacking long long"),
    (lambda: E3().random_("a"), TypeError, f"random_() received an invalid combination of arguments - got (str), "
                                           f"{RANDOM_EXPECTED}"),
    (lambda: E3().random_(1.5), TypeError, f"random_() received an invalid combination of arguments - got (float), "
                                           f"{RANDOM_EXPECTED}"),
    (lambda: E3().random_(True), TypeError, f"random_() received an invalid combination of arguments - got (bool), "
                                            f"{RANDOM_EXPECTED}"),
    (lambda: E3().random_(None), TypeError, f"random_() received an invalid combination of arguments - got "
                                            f"(NoneType), {RANDOM_EXPECTED}"),
    (lambda: E3().random_(to=None), TypeError, f"random_() received an invalid combination of arguments - got "
                                               f"(to=NoneType, ), {RANDOM_EXPECTED}"),
    (lambda: E3().random_(**{"from": 2}), TypeError, f"random_() received an invalid combination of arguments - got "
                                                     f"(from=int, ), {RANDOM_EXPECTED}"),
    # in place
    (lambda: ag.ones(3).expand(2, 3).normal_(), RuntimeError,
     "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
     "Please clone() the tensor before performing the operation."),
]


@pytest.mark.parametrize("call, error, text", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_are_pytorchs(call, error, text):
    with pytest.raises(error, match=f"^{re.escape(text)}$"):
        call()


@pytest.mark.parametrize("call", [
    lambda: ag.empty(0, dtype=ag.int64).normal_(), lambda: ag.empty(0, dtype=ag.int64).exponential_(),
    lambda: ag.empty(0, dtype=ag.int64).log_normal_(), lambda: ag.empty(0, dtype=ag.bool).geometric_(0.5),
    lambda: ag.empty(0).bernoulli_(ag.tensor([2.0])),
])
def test_dtype_and_probability_kernels_do_not_run_on_no_elements(call):
    assert call().numel() == 0


def test_random_warns_outside_a_float_dtypes_exact_integers():
    message = ("{} is out of bounds [-(2^24), 2^24]. Due to precision limitations float can support discrete uniform "
               "distribution only within this range. This warning will become an error in version 1.7 release, please "
               "fix the code in advance")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = ag.empty(3).random_(-(2**40), 2**40)
    assert [str(w.message) for w in caught] == [message.format("from"), message.format("to - 1")]
    assert caught[0].filename == __file__ and np.abs(x.numpy()).max() <= 2**40
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.empty(3).random_(-(2**24), 2**24 + 1)
        ag.empty(3, dtype=ag.float64).random_(-(2**40), 2**40)


# -- cuda ------------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("method", CALLS)
def test_on_cuda_a_seed_gives_the_cpus_draws_in_the_tensors_own_array(method, cupy):
    results = []
    for device in ("cpu", "cuda:0"):
        ag.manual_seed(5)
        x = ag.zeros(4, 6, dtype=ag.float32, device=device)
        data = x._data
        assert getattr(x, method)(*CALLS[method]) is x and x._data is data and x.device == ag.device(device)
        p = ag.full((6,), 0.5, device=device)
        results.append((x.cpu().numpy().copy(), x.bernoulli_(p).cpu().numpy()))
    for cpu_values, cuda_values in zip(*results):
        np.testing.assert_array_equal(cuda_values, cpu_values)
