"""vmap's fuzz-differential fixes: an in-place change to a tensor the function captures (a closure, a global, a
keyword or partial argument), which running once per example would repeat per example, is refused as the same
change to an unmapped input is; reading such tensors, and changing the mapped inputs, stays allowed."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func

RNG = np.random.default_rng(5)
X = RNG.uniform(-1.0, 1.0, (3, 4))
COUNTER = ag.zeros(4, dtype=ag.float64)


def _captured_change_refused(call, changed: ag.Tensor, before: np.ndarray, after_once: np.ndarray) -> None:
    with pytest.raises(RuntimeError, match="modified in place a tensor it captures"):
        call()
    # the change was made by the first example only (PyTorch makes it once), never once per example
    np.testing.assert_array_equal(changed.numpy(), after_once)
    assert not np.array_equal(after_once, before)


def test_in_place_change_to_a_closure_tensor_is_refused_not_repeated_per_example():
    c = ag.zeros(4, dtype=ag.float64)

    def f(z):
        c.add_(1)
        return z * 2

    _captured_change_refused(lambda: func.vmap(f)(ag.tensor(X)), c, np.zeros(4), np.ones(4))


def test_in_place_change_to_a_global_tensor_is_refused():
    def f(z):
        COUNTER.add_(z)
        return z

    before = COUNTER.numpy().copy()
    _captured_change_refused(lambda: func.vmap(f)(ag.tensor(X)), COUNTER, before, before + X[0])


def test_in_place_change_to_a_keyword_or_partial_argument_is_refused():
    def f(z, acc):
        acc.copy_(z)
        return z.sum()

    acc = ag.zeros(4, dtype=ag.float64)
    _captured_change_refused(lambda: func.vmap(f)(ag.tensor(X), acc=acc), acc, np.zeros(4), X[0])
    bound = ag.zeros(4, dtype=ag.float64)
    _captured_change_refused(lambda: func.vmap(functools.partial(f, acc=bound))(ag.tensor(X)), bound,
                             np.zeros(4), X[0])


def test_a_captured_change_inside_a_nested_vmap_is_refused_by_the_outer_one():
    c = ag.zeros((), dtype=ag.float64)

    def f(z):
        c.add_(1)
        return z

    x = ag.tensor(RNG.uniform(-1.0, 1.0, (2, 1, 3)))  # the inner batch of size 1 makes one change per outer example
    _captured_change_refused(lambda: func.vmap(func.vmap(f))(x), c, np.zeros(()), np.ones(()))


def test_reading_captured_tensors_and_changing_the_mapped_input_still_work():
    w = ag.tensor(RNG.uniform(-1.0, 1.0, 4))
    x = ag.tensor(X.copy())

    def f(z):
        z.mul_(2)  # a slice of the mapped input, which also is captured here
        return (z * w).sum() + x.sum() * 0

    got = func.vmap(f)(x)
    expected = np.array([(2 * row * w.numpy()).sum() for row in X])
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    np.testing.assert_array_equal(x.numpy(), 2 * X)


def test_gradients_through_a_vmap_that_reads_a_captured_tensor_match_a_loop():
    w = ag.tensor(RNG.uniform(0.5, 1.5, 4), requires_grad=True)
    x = ag.tensor(X, requires_grad=True)
    out = func.vmap(lambda z: (z.sin() * w).sum())(x)
    gx, gw = ag.autograd.grad(out.sum(), [x, w])
    np.testing.assert_allclose(gx.numpy(), np.cos(X) * w.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), np.sin(X).sum(0), rtol=1e-12)
    assert ag.autograd.gradcheck(lambda a, b: func.vmap(lambda z: (z.sin() * b).sum())(a), (x, w))
