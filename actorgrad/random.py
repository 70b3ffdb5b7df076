"""Random number generators: `actorgrad.Generator`, `actorgrad.manual_seed` and the default generator.

Every random op (rand, randn, randint, dropout, parameter initialisation) draws from a Generator, the default
one unless a `generator=` is passed, so one `manual_seed` makes a whole run repeatable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from actorgrad.devices import cpu

# PyTorch's default seed for a fresh generator.
DEFAULT_SEED = 67280421310721
STATE_BYTES = 45  # the length of a generator's state tensor: see Generator.get_state


class Generator:
    """A seeded stream of random numbers (numpy's PCG64 underneath)."""

    def __init__(self, device: Any = "cpu") -> None:
        if str(device) != "cpu":
            raise RuntimeError(f"Generator: device {device!r} is not supported here; only 'cpu' is")
        self.device = cpu  # a device, as PyTorch's generator.device
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from `seed`; returns the generator, as PyTorch's does. As there, the seed is kept
        as a uint64 (-1 is 2**64 - 1)."""
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        if not -(1 << 63) <= seed < 1 << 64:
            raise ValueError("Overflow when unpacking long long")
        self._initial_seed = int(seed) & (2**64 - 1)
        self.numpy = np.random.Generator(np.random.PCG64(self._initial_seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy and return the new seed."""
        seed = int(np.random.SeedSequence().entropy) & (2**63 - 1)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._initial_seed

    def clone_state(self) -> Generator:
        """A new generator at this one's state, drawing the same stream from here on."""
        return Generator().set_state(self.get_state())

    def get_state(self) -> Any:
        """The generator's state as a uint8 tensor, as PyTorch's (our own layout: PCG64's state and increment, its
        buffered half-word and the initial seed, STATE_BYTES in all), for `set_state`."""
        from actorgrad.tensor import Tensor

        bits = self.numpy.bit_generator.state
        packed = (bits["state"]["state"].to_bytes(16, "little") + bits["state"]["inc"].to_bytes(16, "little")
                  + bytes([bits["has_uint32"]]) + bits["uinteger"].to_bytes(4, "little")
                  + self._initial_seed.to_bytes(8, "little"))
        return Tensor(np.frombuffer(packed, np.uint8).copy())

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state `get_state` returned."""
        from actorgrad.tensor import Tensor

        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG "
                               f"state size to be {new_state.numel()}")
        packed = bytes(np.asarray(new_state.detach().cpu().numpy(), np.uint8).ravel())
        self.numpy.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(packed[:16], "little"), "inc": int.from_bytes(packed[16:32], "little")},
            "has_uint32": packed[32], "uinteger": int.from_bytes(packed[33:37], "little"),
        }
        self._initial_seed = int.from_bytes(packed[37:45], "little")
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator with `int(seed)`, as PyTorch's does; returns it."""
    return default_generator.manual_seed(int(seed))


def initial_seed() -> int:
    return default_generator.initial_seed()


def seed() -> int:
    """Reseed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def get_rng_state() -> Any:
    """The default generator's state, a uint8 tensor for `set_rng_state`."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the default generator to a state `get_rng_state` returned."""
    default_generator.set_state(new_state)


@contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, device_type: str = "cuda") -> Iterator[None]:
    """Restore the default generator's state on exit, so draws inside leave the stream outside as it was. Every
    device draws from the default generator here, so `devices` and `device_type` need no forking of their own."""
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)


def numpy_generator(generator: Generator | None) -> np.random.Generator:
    """The numpy generator a random op draws from: `generator`'s, else the default one's."""
    if generator is None:
        return default_generator.numpy
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an actorgrad.Generator, got {type(generator).__name__}")
    return generator.numpy
