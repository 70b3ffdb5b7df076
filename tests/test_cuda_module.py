"""actorgrad.cuda, the part of torch.cuda that training scripts call: without CUDA it answers (no GPU, seeding
does nothing) rather than failing; with a CUDA device (or the CuPy stand-in) it names the device, seeds the
generator CUDA draws from and hands out streams."""

import importlib.util

import numpy as np
import pytest

import actorgrad as ag

NO_CUPY = importlib.util.find_spec("cupy") is None


@pytest.mark.skipif(not NO_CUPY, reason="CuPy is installed here")
def test_without_cupy_there_is_no_gpu_and_seeding_changes_nothing():
    assert ag.cuda.is_available() is False and ag.cuda.device_count() == 0
    ag.manual_seed(5)
    first = ag.rand(3).numpy()
    ag.manual_seed(5)
    ag.cuda.manual_seed_all(123)  # ignored without CUDA, as PyTorch's: the CPU's generator keeps its state
    ag.cuda.manual_seed(7)
    ag.cuda.seed_all()
    np.testing.assert_array_equal(ag.rand(3).numpy(), first)
    ag.cuda.empty_cache()
    for call in (ag.cuda.current_device, ag.cuda.synchronize, ag.cuda.get_device_name, ag.cuda.memory_allocated):
        with pytest.raises(RuntimeError, match="^Torch not compiled with CUDA enabled"):
            call()


def test_the_names_scripts_use_are_there():
    for name in ("is_available", "device_count", "current_device", "set_device", "synchronize", "manual_seed",
                 "manual_seed_all", "seed", "seed_all", "initial_seed", "Stream", "stream", "current_stream",
                 "default_stream", "get_device_name", "empty_cache", "memory_allocated", "memory_reserved"):
        assert callable(getattr(ag.cuda, name)), name


@pytest.mark.gpu
def test_with_cuda_the_device_seeds_and_streams(cupy):
    assert ag.cuda.is_available() and ag.cuda.device_count() >= 1
    assert ag.cuda.current_device() == 0 and isinstance(ag.cuda.get_device_name(0), str)
    ag.cuda.set_device(0)
    ag.cuda.manual_seed_all(11)  # the generator every device draws from
    first = ag.rand(4, device="cuda").cpu().numpy()
    ag.cuda.manual_seed(11)
    np.testing.assert_array_equal(ag.rand(4, device="cuda").cpu().numpy(), first)
    assert ag.cuda.initial_seed() == 11
    assert ag.cuda.current_stream() is ag.cuda.default_stream()
    side = ag.cuda.Stream()
    with ag.cuda.stream(side):
        assert ag.cuda.current_stream() is side
        y = ag.ones(3, device="cuda") * 2
    ag.cuda.synchronize()
    assert ag.cuda.current_stream() is ag.cuda.default_stream()
    np.testing.assert_array_equal(y.cpu().numpy(), [2.0, 2.0, 2.0])
    assert ag.cuda.memory_reserved() >= ag.cuda.memory_allocated() >= 0
    with pytest.raises(ValueError, match="^Expected a cuda device, but got: cpu$"):
        ag.cuda.synchronize("cpu")
