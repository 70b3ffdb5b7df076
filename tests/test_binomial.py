"""actorgrad.binomial: its draws follow Binomial(count, prob) (frequencies against the probability mass function,
moments within a few standard errors, seeded), its values at the edges of the parameters, its dtype and shape
rules, generators, PyTorch's errors, and no derivative, as in PyTorch."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag

N = 200_000


def draws(count, prob, size=N, seed=7, dtype=ag.float64):
    generator = ag.Generator().manual_seed(seed)
    return ag.binomial(ag.full((size,), count, dtype=dtype), ag.full((size,), prob, dtype=dtype),
                       generator=generator).numpy()


@pytest.mark.parametrize(("count", "prob"), [(20, 0.3), (5, 0.9), (1, 0.5)])
def test_frequencies_follow_the_probability_mass_function(count, prob):
    sample = draws(count, prob)
    assert np.array_equal(sample, np.round(sample)) and sample.min() >= 0 and sample.max() <= count
    frequencies = np.bincount(sample.astype(np.int64), minlength=count + 1) / N
    for k in range(count + 1):
        pmf = math.comb(count, k) * prob**k * (1 - prob) ** (count - k)
        assert abs(frequencies[k] - pmf) <= 5 * math.sqrt(pmf * (1 - pmf) / N) + 1e-9, k


@pytest.mark.parametrize(("count", "prob"), [(20.0, 0.3), (1000.0, 0.02), (1e6, 0.7)])
def test_mean_and_variance_are_binomials(count, prob):
    sample = draws(count, prob, dtype=ag.float32).astype(np.float64)
    mean, variance = count * prob, count * prob * (1 - prob)
    assert abs(sample.mean() - mean) <= 5 * math.sqrt(variance / N)
    # the sample variance's standard error: sqrt((mu4 - variance^2) / N), mu4 = v (1 + 3 (n - 2) p q) for Binomial
    mu4 = variance * (1 + 3 * (count - 2) * prob * (1 - prob))
    assert abs(sample.var() - variance) <= 5 * math.sqrt((mu4 - variance**2) / N)


def test_edges_of_the_parameters_give_pytorchs_values():
    nan, inf = float("nan"), float("inf")
    count = ag.tensor([0.0, 7.0, 7.0, -3.0, 2.5, 6.0, 6.0, 4.0, -1.0, 3.0, inf, nan, nan])
    prob = ag.tensor([0.5, 0.0, 1.0, 0.5, 1.0, 1.5, -0.5, nan, nan, 0.0, 1.0, 1.0, 0.0])
    expected = [0.0, 0.0, 7.0, 0.0, 2.5, 6.0, 0.0, nan, 0.0, 0.0, inf, nan, 0.0]
    np.testing.assert_array_equal(ag.binomial(count, prob).numpy(), np.array(expected, np.float32))


def test_a_non_integer_count_draws_its_whole_trials():
    sample = draws(2.9, 0.5, size=20_000)
    assert set(np.unique(sample)) == {0.0, 1.0, 2.0}


def test_a_generator_repeats_its_draws_and_the_default_one_follows_manual_seed():
    count, prob = ag.full((50,), 30.0), ag.full((50,), 0.4)
    first = ag.binomial(count, prob, ag.Generator().manual_seed(3)).numpy()
    again = ag.binomial(count, prob, generator=ag.Generator().manual_seed(3)).numpy()
    other = ag.binomial(count, prob, generator=ag.Generator().manual_seed(4)).numpy()
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    ag.manual_seed(11)
    a = ag.binomial(count, prob).numpy()
    ag.manual_seed(11)
    assert np.array_equal(a, ag.binomial(count, prob).numpy())


def test_dtype_and_broadcast_shape():
    for dtype in (ag.float32, ag.float64):
        assert ag.binomial(ag.ones(3, dtype=dtype) * 4, ag.tensor(0.5, dtype=dtype)).dtype == dtype
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ag.binomial(ag.full((2, 3), 4.0), ag.tensor([0.1, 0.5, 0.9])).shape == (2, 3)
    # as PyTorch's, the output starts in count's shape: prob broadcasting it further resizes it, with a warning
    with pytest.warns(UserWarning, match=r"had shape \[2, 1\], which does not match the required output shape "
                                         r"\[2, 3\]"):
        result = ag.binomial(ag.full((2, 1), 4.0), ag.tensor([0.0, 1.0, 1.0]))
    np.testing.assert_array_equal(result.numpy(), [[0, 4, 4], [0, 4, 4]])
    assert ag.binomial(ag.zeros(0), ag.zeros(0)).shape == (0,)


def _raises(error, text, fn):
    with pytest.raises(error) as caught:
        fn()
    assert str(caught.value) == text


def test_refusals_are_pytorchs():
    c, p = ag.tensor([10.0, 5.0]), ag.tensor([0.5, 0.2])
    _raises(ValueError, "binomial only supports floating-point dtypes for count, got: Long",
            lambda: ag.binomial(ag.tensor([10, 5]), p))
    _raises(ValueError, "binomial only supports floating-point dtypes for prob, got: Long",
            lambda: ag.binomial(c, ag.tensor([1, 0])))
    _raises(ValueError, "binomial only supports floating-point dtypes for count, got: ComplexFloat",
            lambda: ag.binomial(c.to(ag.complex64), p.to(ag.complex64)))
    _raises(RuntimeError, "Found dtype Double but expected Float", lambda: ag.binomial(c, p.double()))
    _raises(RuntimeError, "Found dtype Float but expected Half", lambda: ag.binomial(c.half(), p))
    _raises(NotImplementedError, "\"binomial_cpu\" not implemented for 'Half'",
            lambda: ag.binomial(c.half(), p.half()))
    _raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0",
            lambda: ag.binomial(ag.tensor([10.0, 7.0, 3.0]), p))
    _raises(TypeError, "binomial(): argument 'prob' (position 2) must be Tensor, not float",
            lambda: ag.binomial(c, 0.5))
    _raises(TypeError, "binomial(): argument 'generator' must be torch.Generator, not int",
            lambda: ag.binomial(c, p, generator=3))


def test_no_derivative_as_in_pytorch():
    count = ag.tensor([10.0, 7.0], requires_grad=True)
    prob = ag.tensor([0.5, 0.2], requires_grad=True)
    for result in (ag.binomial(count, prob), ag.binomial(count.detach(), prob)):
        assert result.requires_grad and result.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            result.sum().backward()
    assert not ag.binomial(count.detach(), prob.detach()).requires_grad


@pytest.mark.gpu
def test_binomial_on_cuda_draws_the_cpus_numbers(cupy):
    results = []
    for device in ("cpu", "cuda"):
        count = ag.tensor([[0.0, 3.0, 40.0, 8.0]], device=device)
        prob = ag.tensor([[0.5], [0.25], [1.0]], device=device)
        with pytest.warns(UserWarning, match="resized"):
            result = ag.binomial(count, prob, generator=ag.Generator().manual_seed(5))
        assert result.device is ag.device(device) and result.shape == (3, 4)
        results.append(result.cpu().numpy())
    np.testing.assert_array_equal(*results)
    np.testing.assert_array_equal(results[0][2], [0.0, 3.0, 40.0, 8.0])
