"""Random number generators: `actorgrad.Generator`, `actorgrad.manual_seed` and the default generator.

Every random op (rand, randn, randint, dropout, parameter initialisation) draws from a Generator, the default
one unless a `generator=` is passed, so one `manual_seed` makes a whole run repeatable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# PyTorch's default seed for a fresh generator.
DEFAULT_SEED = 67280421310721


class Generator:
    """A seeded stream of random numbers (numpy's PCG64 underneath)."""

    def __init__(self, device: Any = "cpu") -> None:
        if str(device) != "cpu":
            raise RuntimeError(f"Generator: device {device!r} is not supported here; only 'cpu' is")
        self.device = "cpu"
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

    def get_state(self) -> dict:
        """The generator's state (numpy's bit-generator state), for `set_state`."""
        return self.numpy.bit_generator.state

    def set_state(self, state: dict) -> Generator:
        self.numpy.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator with `int(seed)`, as PyTorch's does; returns it."""
    return default_generator.manual_seed(int(seed))


def initial_seed() -> int:
    return default_generator.initial_seed()


def numpy_generator(generator: Generator | None) -> np.random.Generator:
    """The numpy generator a random op draws from: `generator`'s, else the default one's."""
    if generator is None:
        return default_generator.numpy
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an actorgrad.Generator, got {type(generator).__name__}")
    return generator.numpy
