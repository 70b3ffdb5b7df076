"""The process settings PyTorch users reach for: thread counts (BLAS threads and actorgrad's workers), print
options as Tensor's repr shows them, the random state as a uint8 tensor, the determinism flags, and the default
device that creation functions follow."""

from __future__ import annotations

import re

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import actorgrad as ag


@pytest.fixture
def restored():
    """Put back what the tests change: BLAS threads, workers, print options, determinism, default device."""
    threads, workers = ag.get_num_threads(), ag.get_num_workers()
    yield
    ag.set_num_threads(threads)
    ag.set_num_workers(workers)
    ag.set_printoptions(profile="default")
    ag.use_deterministic_algorithms(False)
    ag.set_default_device(None)


def test_num_threads_is_the_blas_thread_count(restored) -> None:
    ag.set_num_threads(1)
    assert ag.get_num_threads() == 1
    assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
    ag.set_num_interop_threads(3)
    assert ag.get_num_interop_threads() == 3 == ag.get_num_workers()
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ag.set_num_threads(bad)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got float"):
        ag.set_num_threads(1.5)
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive integer"):
        ag.set_num_interop_threads(0)


@pytest.mark.parametrize(("options", "values", "expected"), [
    (dict(precision=2), [1.23456, 2.5], "tensor([1.23, 2.50])"),
    (dict(), [1.23456, 2.5], "tensor([1.2346, 2.5000])"),
    (dict(sci_mode=True), [1.23456, 2.5], "tensor([1.2346e+00, 2.5000e+00])"),
    (dict(sci_mode=True), [1.0, 2.0], "tensor([1.0000e+00, 2.0000e+00])"),
    (dict(sci_mode=False), [1e-9, 2.5e9], "tensor([         0.0000, 2500000000.0000])"),
    (dict(threshold=5, edgeitems=1), list(range(10)), "tensor([0.,  ..., 9.])"),
    (dict(linewidth=20), list(range(10)),
     "tensor([0., 1., 2.,\n        3., 4., 5.,\n        6., 7., 8.,\n        9.])"),
    (dict(profile="short"), [1 / 3, 2 / 3], "tensor([0.33, 0.67])"),
    (dict(profile="full"), list(range(1001)), None),
])
def test_print_options_shape_the_repr(restored, options: dict, values: list, expected: str | None) -> None:
    ag.set_printoptions(**options)
    text = repr(ag.tensor(values, dtype=ag.float32))
    if expected is None:  # 'full' never summarizes
        assert "..." not in text and "1000." in text
    else:
        assert text == expected
    ag.set_printoptions(profile="default")
    assert repr(ag.tensor([1.23456])) == "tensor([1.2346])"


def test_rng_state_round_trips_through_a_uint8_tensor() -> None:
    ag.manual_seed(11)
    state = ag.get_rng_state()
    assert state.dtype == ag.uint8 and state.shape == (45,)
    first = ag.rand(5).numpy()
    ag.set_rng_state(state)
    np.testing.assert_array_equal(ag.rand(5).numpy(), first)
    assert ag.initial_seed() == 11
    seed = ag.seed()
    assert ag.initial_seed() == seed
    ag.set_rng_state(state)
    assert ag.initial_seed() == 11
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        ag.set_rng_state([1, 2])
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        ag.set_rng_state(ag.zeros(45))
    with pytest.raises(RuntimeError, match=re.escape("but found the input RNG state size to be 10")):
        ag.set_rng_state(ag.zeros(10, dtype=ag.uint8))


def test_determinism_flags_read_back_as_pytorchs(restored) -> None:
    assert not ag.are_deterministic_algorithms_enabled() and ag.get_deterministic_debug_mode() == 0
    ag.use_deterministic_algorithms(True, warn_only=True)
    assert ag.is_deterministic_algorithms_warn_only_enabled() and ag.get_deterministic_debug_mode() == 1
    ag.use_deterministic_algorithms(True)
    assert ag.get_deterministic_debug_mode() == 2 and not ag.is_deterministic_algorithms_warn_only_enabled()
    ag.set_deterministic_debug_mode("warn")
    assert ag.are_deterministic_algorithms_enabled() and ag.is_deterministic_algorithms_warn_only_enabled()
    ag.set_deterministic_debug_mode(0)
    assert not ag.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, but got x"):
        ag.set_deterministic_debug_mode("x")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        ag.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool, not str"):
        ag.use_deterministic_algorithms("x")


def test_creation_functions_follow_the_default_device(restored) -> None:
    assert ag.get_default_device() == ag.device("cpu")
    ag.set_default_device("async_cpu:0")
    target = ag.device("async_cpu:0")
    assert ag.get_default_device() == target
    made = [ag.zeros(2), ag.ones(2), ag.empty(2), ag.full((2,), 1.0), ag.tensor([1.0]), ag.as_tensor([1.0]),
            ag.arange(3), ag.linspace(0, 1, 3), ag.eye(2), ag.randn(2), ag.rand(2), ag.randint(3, (2,)),
            ag.hann_window(4)]
    assert all(x.device == target for x in made)
    assert ag.zeros(2, device="cpu").device == ag.device("cpu")
    assert ag.from_numpy(np.ones(2)).device == ag.device("cpu")  # shares the array: stays on the cpu
    x = ag.zeros(2, device="cpu")
    assert (x + 1).device == ag.device("cpu") and ag.zeros_like(x).device == ag.device("cpu")
    ag.set_default_device(None)
    assert ag.zeros(1).device == ag.device("cpu")
