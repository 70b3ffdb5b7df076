"""Fixes from a differential review of the random APIs against PyTorch 2.13: half-open ranges in float16, complex
normal_ and uniform_, the complex refusals of the other fills, fork_rng, default_generator, clone_state and
multinomial's argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag

N = 200_000
# Statistical checks allow SIGMAS standard errors: a correct sampler misses one with probability below 2e-9.
SIGMAS = 6


# -- half-open ranges -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("draw", [
    lambda: ag.rand(N, dtype=ag.float16),
    lambda: ag.rand_like(ag.zeros(N, dtype=ag.float16)),
    lambda: ag.empty(N, dtype=ag.float16).uniform_(),
])
def test_float16_uniform_draws_never_reach_one(draw):
    ag.manual_seed(0)
    x = draw().numpy().astype(np.float64)
    assert x.max() < 1.0 and x.min() >= 0.0
    assert x.max() == 1.0 - 2.0**-11  # the top of float16's grid below 1 is still drawn
    assert abs(x.mean() - 0.5) <= SIGMAS * math.sqrt(1 / 12 / N)


def test_float16_rand_draws_on_the_grid_of_its_mantissa():
    ag.manual_seed(1)
    x = ag.rand(N, dtype=ag.float16).numpy().astype(np.float64) * 2**11
    np.testing.assert_array_equal(x, np.floor(x))


def test_uniform_keeps_to_out_of_a_float16_range():
    ag.manual_seed(2)
    x = ag.empty(N, dtype=ag.float16).uniform_(2, 5).numpy()
    assert x.max() == np.nextafter(np.float16(5), np.float16(0)) and x.min() >= 2


def test_uniform_with_equal_bounds_still_fills_the_bound():
    np.testing.assert_array_equal(ag.empty(5, dtype=ag.float16).uniform_(3, 3).numpy(), np.full(5, 3, np.float16))


# -- complex normal_ and uniform_ -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ag.complex64, ag.complex128])
def test_complex_normal_draws_each_part_with_half_the_variance(dtype):
    ag.manual_seed(3)
    x = ag.empty(N, dtype=dtype).normal_(1.5, 2.0)
    assert x.dtype == dtype
    values = x.numpy()
    part_var = 2.0**2 / 2
    for part in (values.real.astype(np.float64), values.imag.astype(np.float64)):
        assert abs(part.mean() - 1.5) <= SIGMAS * math.sqrt(part_var / N)
        assert abs(part.var() - part_var) <= SIGMAS * part_var * math.sqrt(2 / N)
    assert abs(np.corrcoef(values.real, values.imag)[0, 1]) <= SIGMAS / math.sqrt(N)


def test_complex_uniform_draws_each_part_from_the_range():
    ag.manual_seed(4)
    values = ag.empty(N, dtype=ag.complex64).uniform_(-1, 3).numpy()
    for part in (values.real.astype(np.float64), values.imag.astype(np.float64)):
        assert part.min() >= -1 and part.max() < 3
        assert abs(part.mean() - 1) <= SIGMAS * math.sqrt(16 / 12 / N)


def test_complex_fills_repeat_after_a_seed_and_keep_their_checks():
    draws = []
    for _ in range(2):
        ag.manual_seed(7)
        draws.append(ag.empty(4, dtype=ag.complex128).normal_().numpy())
    np.testing.assert_array_equal(*draws)
    with pytest.raises(RuntimeError, match=r"normal expects std >= 0.0, but found std -1"):
        ag.empty(3, dtype=ag.complex64).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        ag.empty(3, dtype=ag.complex64).uniform_(2, 1)


@pytest.mark.parametrize("draw", [
    lambda: ag.normal(ag.full((N,), 1 + 2j, dtype=ag.complex64), 2.0),
    lambda: ag.normal(ag.full((N,), 1 + 2j, dtype=ag.complex128), ag.full((N,), 2.0, dtype=ag.float64)),
    lambda: ag.normal(0.0, 2.0, (N,), dtype=ag.complex64) + (1 + 2j),
])
def test_normal_with_a_complex_mean_or_dtype_splits_the_variance_between_the_parts(draw):
    ag.manual_seed(5)
    values = draw()
    assert values.is_complex()
    values = values.numpy()
    for part, mean in ((values.real.astype(np.float64), 1.0), (values.imag.astype(np.float64), 2.0)):
        assert abs(part.mean() - mean) <= SIGMAS * math.sqrt(2.0 / N)
        assert abs(part.var() - 2.0) <= SIGMAS * 2.0 * math.sqrt(2 / N)


@pytest.mark.parametrize("mean, std", [
    (0.0, ag.ones(3, dtype=ag.complex64)),
    (ag.zeros(3), ag.ones(3, dtype=ag.complex64)),
    (ag.zeros(3, dtype=ag.complex64), ag.ones(3, dtype=ag.complex64)),
])
def test_normal_refuses_a_complex_std(mean, std):
    with pytest.raises(RuntimeError, match="normal expects standard deviation to be non-complex"):
        ag.normal(mean, std)


def test_normal_with_a_complex_mean_records_zero_gradients():
    mean = ag.zeros(3, dtype=ag.complex128, requires_grad=True)
    std = ag.ones(3, dtype=ag.float64, requires_grad=True)
    out = ag.normal(mean, std)
    assert out.grad_fn.name() == "NormalBackward3"
    (out * (1 + 1j)).abs().sum().backward()
    np.testing.assert_array_equal(mean.grad.numpy(), np.zeros(3, np.complex128))
    np.testing.assert_array_equal(std.grad.numpy(), np.zeros(3))


@pytest.mark.parametrize("call, error, text", [
    (lambda x: x.random_(0, 10), RuntimeError, "check_random_bounds handles only integral, floating-point and boolean"),
    (lambda x: x.random_(10), RuntimeError, "check_random_bounds handles only integral, floating-point and boolean"),
    (lambda x: x.random_(), NotImplementedError, "\"random_kernel_cpu\" not implemented for 'ComplexFloat'"),
    (lambda x: x.cauchy_(), RuntimeError, "dtype must be a floating point but you specified c10::complex<float>"),
    (lambda x: x.bernoulli_(0.5), NotImplementedError, "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"),
    (lambda x: x.bernoulli_(ag.full((3,), 0.5)), NotImplementedError,
     "\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'"),
    (lambda x: x.geometric_(0.5), NotImplementedError, "\"geometric_cpu\" not implemented for 'ComplexFloat'"),
])
def test_the_other_fills_refuse_complex_tensors_as_pytorch(call, error, text):
    with pytest.raises(error) as caught:
        call(ag.zeros(3, dtype=ag.complex64))
    assert text in str(caught.value)


def test_fills_that_check_complex_only_with_elements_accept_an_empty_one():
    for call in (lambda x: x.random_(), lambda x: x.bernoulli_(0.5), lambda x: x.geometric_(0.5)):
        assert call(ag.zeros(0, dtype=ag.complex64)).shape == (0,)


# -- generators -------------------------------------------------------------------------------------------------------
def test_fork_rng_restores_the_default_stream_on_exit():
    ag.manual_seed(11)
    expected = ag.rand(4).numpy()
    ag.manual_seed(11)
    with ag.random.fork_rng():
        ag.rand(10)
    np.testing.assert_array_equal(ag.rand(4).numpy(), expected)


def test_fork_rng_restores_the_stream_when_the_block_raises():
    ag.manual_seed(12)
    expected = ag.rand(3).numpy()
    ag.manual_seed(12)
    with pytest.raises(KeyError), ag.random.fork_rng(devices=[]):
        ag.rand(5)
        raise KeyError("out")
    np.testing.assert_array_equal(ag.rand(3).numpy(), expected)


def test_fork_rng_disabled_leaves_the_draws_consumed():
    ag.manual_seed(13)
    ag.rand(10)
    expected = ag.rand(4).numpy()
    ag.manual_seed(13)
    with ag.random.fork_rng(enabled=False):
        ag.rand(10)
    np.testing.assert_array_equal(ag.rand(4).numpy(), expected)


def test_default_generator_is_the_one_manual_seed_seeds():
    assert ag.default_generator is ag.random.default_generator
    ag.default_generator.manual_seed(21)
    first = ag.rand(3).numpy()
    ag.manual_seed(21)
    np.testing.assert_array_equal(ag.rand(3).numpy(), first)
    assert ag.initial_seed() == 21


def test_clone_state_gives_a_generator_drawing_the_same_stream():
    g = ag.Generator().manual_seed(31)
    ag.rand(7, generator=g)
    clone = g.clone_state()
    assert isinstance(clone, ag.Generator) and clone is not g and clone.initial_seed() == 31
    np.testing.assert_array_equal(ag.rand(5, generator=clone).numpy(), ag.rand(5, generator=g).numpy())


def test_a_generators_device_is_a_device():
    assert ag.Generator().device == ag.device("cpu") and ag.Generator("cpu").device.type == "cpu"


# -- int arguments, std checks ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("draw, low, high", [
    (lambda: ag.randint(ag.tensor(10), (N,)), 0, 10),
    (lambda: ag.randint(ag.tensor([3]), ag.tensor(7, dtype=ag.int32), (N,)), 3, 7),
    (lambda: ag.randint_like(ag.zeros(N), ag.tensor(2), ag.tensor([6])), 2, 6),
])
def test_randint_takes_one_element_integer_tensors_as_bounds(draw, low, high):
    ag.manual_seed(8)
    values = draw().numpy()
    np.testing.assert_array_equal(np.unique(values), np.arange(low, high))


def test_randint_still_refuses_a_float_tensor_bound():
    with pytest.raises(TypeError, match=r"randint\(\): argument 'high' \(position 1\) must be int, not Tensor"):
        ag.randint(ag.tensor(10.0), (3,))


def test_randperm_takes_a_one_element_integer_tensor():
    ag.manual_seed(9)
    np.testing.assert_array_equal(np.sort(ag.randperm(ag.tensor([6])).numpy()), np.arange(6))


def test_randperm_names_float32s_limit_as_pytorch():
    with pytest.raises(RuntimeError, match=r"n cannot be greater than 2\^24\+1 for Float type\."):
        ag.randperm(2**24 + 2, dtype=ag.float32)


def test_normal_refuses_a_nan_std_element():
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ag.normal(ag.zeros(3), ag.tensor([1.0, float("nan"), 1.0]))


@pytest.mark.parametrize("p", [ag.tensor(0.25), ag.tensor(0.25, dtype=ag.float64)])
def test_bernoulli_reads_a_0d_tensor_p_as_a_float(p):
    ag.manual_seed(10)
    values = ag.bernoulli(ag.zeros(N), p=p).numpy()
    assert set(np.unique(values)) == {0.0, 1.0}
    assert abs(values.mean() - 0.25) <= SIGMAS * math.sqrt(0.25 * 0.75 / N)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=2"):
        ag.bernoulli(ag.zeros(3), ag.tensor(2.0))


# -- multinomial ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_samples, name", [(2.0, "float"), (True, "bool")])
def test_multinomial_needs_an_int_number_of_samples(num_samples, name):
    expected = rf"multinomial\(\): argument 'num_samples' \(position 2\) must be int, not {name}"
    with pytest.raises(TypeError, match=expected):
        ag.multinomial(ag.ones(4), num_samples)


def test_multinomial_refuses_more_than_2_to_the_24_categories():
    with pytest.raises(RuntimeError, match=r"number of categories cannot exceed 2\^24"):
        ag.multinomial(ag.ones(1).expand(2**24 + 1), 1)


# -- cuda -------------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_float16_and_complex_fills_give_the_cpus_draws(cupy):
    results = []
    for device in ("cpu", "cuda:0"):
        ag.manual_seed(41)
        half = ag.empty(1000, dtype=ag.float16, device=device).uniform_(2, 5)
        complex_ = ag.empty(6, dtype=ag.complex64, device=device).normal_(1, 2)
        assert half.device == complex_.device == ag.device(device)
        results.append((half.cpu().numpy(), complex_.cpu().numpy()))
    for cpu_values, cuda_values in zip(*results):
        np.testing.assert_array_equal(cuda_values, cpu_values)
    assert results[0][0].max() < 5
