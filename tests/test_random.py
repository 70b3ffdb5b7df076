"""Generators: a seed fixes the stream; separate generators do not disturb each other."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.random import numpy_generator


def draw(generator=None, n=4):
    return numpy_generator(generator).standard_normal(n)


def test_manual_seed_repeats_the_default_stream():
    ag.manual_seed(3)
    first = draw()
    ag.manual_seed(3)
    np.testing.assert_array_equal(draw(), first)
    assert ag.initial_seed() == 3


def test_a_generator_is_independent_of_the_default_one():
    g = ag.Generator().manual_seed(5)
    expected = draw(ag.Generator().manual_seed(5))
    ag.manual_seed(1)
    draw()
    np.testing.assert_array_equal(draw(g), expected)


def test_state_round_trips():
    g = ag.Generator().manual_seed(9)
    state = g.get_state()
    first = draw(g)
    g.set_state(state)
    np.testing.assert_array_equal(draw(g), first)


def test_bad_seeds_and_generators_are_refused():
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        ag.Generator().manual_seed(1.5)
    with pytest.raises(TypeError, match="generator must be an actorgrad.Generator"):
        numpy_generator(np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="only 'cpu'"):
        ag.Generator("cuda:0")
