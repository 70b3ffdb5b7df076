"""Second derivatives through the singular vectors and eigenvectors of complex matrices (linalg.svd, eigh, eig),
for losses that do not depend on the vectors' phases: gradgradcheck in complex128, through the factors each
decomposition's node saved; and PyTorch's error for a factor changed in place before the backward."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(29)
LA = ag.linalg


def _c(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _t(values: np.ndarray) -> ag.Tensor:
    return ag.tensor(values, requires_grad=True)


def _hermitian(x: ag.Tensor) -> ag.Tensor:
    """A Hermitian positive-definite matrix made of x, so that gradcheck perturbs only such matrices."""
    return x @ x.mH + 3 * ag.eye(x.shape[-1], dtype=x.dtype)


def _both_checks(fn: Callable, *inputs: ag.Tensor) -> None:
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def _projector(vectors: ag.Tensor) -> ag.Tensor:
    """V V^H: the same for every choice of the columns' phases."""
    return vectors @ vectors.mH


@pytest.mark.parametrize(("shape", "full"), [((3, 2), True), ((2, 3), True), ((3, 3), False)])
def test_second_derivatives_through_complex_singular_vectors(shape: tuple, full: bool) -> None:
    k = min(shape)

    def f(a: ag.Tensor) -> tuple:
        u, s, vh = LA.svd(a, full_matrices=full)
        # only the first k singular vectors are defined (full_matrices completes them with any orthonormal basis)
        return _projector(u[..., :k]) * s[0], vh[:k].abs()

    _both_checks(f, _t(_c(*shape)))


def test_second_derivatives_through_complex_eigenvectors() -> None:
    _both_checks(lambda x: _projector(LA.eigh(_hermitian(x)).eigenvectors[..., :1]), _t(_c(3, 3)))
    _both_checks(lambda a: LA.eig(a).eigenvectors.abs(), _t(_c(2, 2)))


def test_a_factor_changed_in_place_is_named_at_backward() -> None:
    x = _t(_c(3, 3))
    u, s, vh = LA.svd(x)
    loss = u.abs().sum() + s.sum() + vh.abs().sum()
    with ag.no_grad():
        s.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[actorgrad.float64 \[3\]\], which is "
                                           r"output 1 of LinalgSvd,"):
        loss.backward()
