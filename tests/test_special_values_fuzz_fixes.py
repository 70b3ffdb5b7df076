"""Special-value regressions found by the special-value fuzz: IEEE results where PyTorch's CPU kernels lose them."""

import math

import numpy as np

import actorgrad as ag


def test_fmod_and_remainder_by_denormal_divisor_are_exact_zero() -> None:
    """1.0 and -2.5 are exact multiples of the smallest denormal, so IEEE fmod gives a zero signed like x."""
    tiny = math.ulp(0.0)
    x = ag.tensor([1.0, -2.5], dtype=ag.float64)
    d = ag.tensor([tiny, tiny], dtype=ag.float64)
    for out in (ag.fmod(x, d).numpy(), ag.remainder(x, d).numpy()):
        assert out.tolist() == [0.0, 0.0]
    assert np.signbit(ag.fmod(x, d).numpy()).tolist() == [False, True]


def test_log1p_keeps_denormal_input() -> None:
    """log1p(x) = x - x**2/2 + ... equals x exactly for a denormal x."""
    tiny = math.ulp(0.0)
    assert ag.log1p(ag.tensor([tiny], dtype=ag.float64)).numpy().tolist() == [tiny]
