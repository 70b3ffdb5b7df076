"""Shared test helpers (fixtures: tests run with --import-mode=importlib, so they cannot import each other)."""

import numpy as np
import pytest
import trio

import actorgrad as ag


@pytest.fixture
def concurrent_matches_sequential():
    """A check that backward passes run all at once add into a shared leaf exactly what they give one by one."""

    async def check(losses, leaf):
        expected = np.zeros(leaf.shape)
        for loss in losses:
            (g,) = await ag.grad(loss, leaf, retain_graph=True)
            expected += g.numpy()
        async with trio.open_nursery() as nursery:
            for loss in losses:
                nursery.start_soon(ag.backward, loss)
        np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-12)

    return check
