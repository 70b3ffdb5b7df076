"""mm, bmm, outer, matmul's strict forms and einsum: values against numpy, gradients and second derivatives
against finite differences (float64), node names, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
FEW = settings(max_examples=8, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SIDES = st.integers(1, 3)


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=True)


def check_all(f, arrays, want) -> None:
    np.testing.assert_allclose(f(*[ag.tensor(a) for a in arrays]).numpy(), want, rtol=1e-12, atol=1e-12)
    assert gradcheck(f, [leaf(a) for a in arrays], **TOL)
    assert gradgradcheck(f, [leaf(a) for a in arrays], **TOL)


@FEW
@given(SIDES, SIDES, SIDES, st.booleans(), st.integers(0, 2**32 - 1))
def test_mm(n, k, m, transposed, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(k, n)).T if transposed else rng.normal(size=(n, k))
    b = rng.normal(size=(k, m))
    check_all(ag.mm, [a, b], a @ b)
    assert ag.mm(leaf(a), leaf(b)).grad_fn.name() == "MmBackward0"


@FEW
@given(SIDES, SIDES, SIDES, SIDES, st.integers(0, 2**32 - 1))
def test_bmm(batch, n, k, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(batch, n, k)), rng.normal(size=(batch, k, m))
    check_all(ag.bmm, [a, b], a @ b)
    assert leaf(a).bmm(leaf(b)).grad_fn.name() == "BmmBackward0"


def test_outer():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=3), rng.normal(size=4)
    check_all(ag.outer, [a, b], np.outer(a, b))
    assert leaf(a).outer(leaf(b)).grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize("f, shapes, match", [
    (ag.mm, [(3,), (3, 3)], "self must be a matrix"),
    (ag.mm, [(2, 3), (3,)], "mat2 must be a matrix"),
    (ag.mm, [(2, 3), (4, 5)], r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (ag.bmm, [(2, 3), (4, 5)], "batch1 must be a 3D tensor"),
    (ag.bmm, [(2, 2, 3), (3, 4)], "batch2 must be a 3D tensor"),
    (ag.bmm, [(2, 2, 3), (3, 4, 5)], r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but "
                                     r"got: \[3, 4\]."),
    (ag.outer, [(2, 3), (3,)], "outer: Expected 1-D argument self, but got 2-D"),
])
def test_strict_forms_raise_pytorchs_errors(f, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        f(*[ag.tensor(np.ones(s)) for s in shapes])


EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->i", [(2, 3)]),
    ("i,i->", [(3,), (3,)]),
    ("ij,kl->ijkl", [(2, 1), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ijk,k->ki", [(2, 3, 2), (2,)]),
]


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_values_and_gradients(equation, shapes):
    rng = np.random.default_rng(len(equation))
    arrays = [rng.normal(size=s) for s in shapes]
    check_all(lambda *t: ag.einsum(equation, *t), arrays, np.einsum(equation, *arrays))


def test_einsum_accepts_a_list_of_operands_and_transposed_inputs():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(3, 2)).T, rng.normal(size=(3, 4))
    check_all(lambda x, y: ag.einsum("ij,jk->ik", [x, y]), [a, b], a @ b)


@pytest.mark.parametrize("equation, shapes, match", [
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("...ij->i", [(2,)], r"number of subscripts in the equation \(2\) is more than the number of dimensions \(1\)"),
    ("ij,jk->ik", [(2, 3), (4, 4)], "subscript j has size 4 for operand 1 which does not broadcast with previously "
                                    "seen size 3"),
    ("ij", [(2, 3), (3,)], "more operands were provided than specified in the equation"),
    ("ij->i", [(2, 3, 4)], r"number of subscripts in the equation \(2\) does not match the number of dimensions \(3\)"),
])
def test_einsum_refuses_what_it_does_not_support(equation, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        ag.einsum(equation, *[ag.tensor(np.ones(s)) for s in shapes])
