"""The pieces of one split, chunk or unbind (and the rows of `for row in x`) are the outputs of one node, piece k
its output k, as PyTorch's SplitBackward0, SplitWithSizesBackward0 and UnbindBackward0; they stay views of the
input, and the node's backward joins their gradients once, so a backward through n pieces costs the input's size."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.ops.joining as joining
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.devices.array_ops import ArrayOps

MULTI_OUTPUT_TAIL = (
    "This view is the output of a function that returns multiple views. Such functions do not allow the output "
    "views to be modified inplace. You should replace the inplace operation by an out-of-place one."
)
X = np.random.default_rng(5).uniform(-1.5, 1.5, (5, 4))


def leaf(values: np.ndarray = X) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=True)


# the pieces, their node's name, and the same pieces cut by numpy
PIECES = [
    ("split 2", lambda t: t.split(2), "SplitBackward0", lambda a: np.split(a, [2, 4])),
    ("split 3 along 1", lambda t: ag.split(t, 3, 1), "SplitBackward0", lambda a: np.split(a, [3], 1)),
    ("split sizes", lambda t: t.split([1, 0, 4]), "SplitWithSizesBackward0", lambda a: np.split(a, [1, 1])),
    ("split_with_sizes", lambda t: ag.split_with_sizes(t, [3, 1], -1), "SplitWithSizesBackward0",
     lambda a: np.split(a, [3], 1)),
    ("chunk 3", lambda t: t.chunk(3), "SplitBackward0", lambda a: np.split(a, [2, 4])),
    ("chunk 2 along 1", lambda t: t.chunk(2, 1), "SplitBackward0", lambda a: np.split(a, [2], 1)),
    ("unbind", lambda t: t.unbind(), "UnbindBackward0", lambda a: list(a)),
    ("unbind along -1", lambda t: ag.unbind(t, -1), "UnbindBackward0", lambda a: list(a.T)),
    ("iteration", lambda t: tuple(t), "UnbindBackward0", lambda a: list(a)),
]
IDS = [case[0] for case in PIECES]


@pytest.mark.parametrize(("label", "cut", "name", "expected"), PIECES, ids=IDS)
def test_pieces_are_the_outputs_of_one_node_and_views_of_the_input(label: str, cut: Callable, name: str,
                                                                    expected: Callable) -> None:
    x = leaf() * 1
    pieces = cut(x)
    node = pieces[0].grad_fn
    assert node.name() == name
    assert all(p.grad_fn is node for p in pieces)
    assert [p.output_nr for p in pieces] == list(range(len(pieces)))
    assert [meta.shape for meta in node.input_metadata] == [p.shape for p in pieces]
    assert node.next_functions == ((x.grad_fn, 0),)
    for piece, want in zip(pieces, expected(X), strict=True):
        np.testing.assert_array_equal(piece.detach().numpy(), want)
        assert piece._base is x
        assert np.shares_memory(piece.detach().numpy(), x.detach().numpy()) or not piece.numel()


def test_the_node_saves_its_values_under_pytorchs_names() -> None:
    x = leaf()
    split = x.split(2, 1)[0].grad_fn
    assert (split._saved_self_sym_sizes, split._saved_dim, split._saved_split_size) == ((5, 4), 1, 2)
    assert x.split([2, 3])[0].grad_fn._saved_split_sizes == (2, 3)
    unbind = x.unbind(1)[0].grad_fn
    assert unbind._saved_dim == 1
    with pytest.raises(AttributeError):
        unbind._saved_self_sym_sizes  # noqa: B018 (PyTorch's UnbindBackward0 saves only its dim)


def test_empty_pieces_and_an_empty_unbind_are_as_pytorchs() -> None:
    empty = ag.zeros((0, 3), requires_grad=True)
    (only,) = empty.split(2)
    assert only.shape == (0, 3) and only.grad_fn.name() == "SplitBackward0"
    chunks = empty.chunk(3)
    assert [c.output_nr for c in chunks] == [0, 1, 2] and chunks[2].grad_fn.name() == "SplitWithSizesBackward0"
    assert empty.unbind(0) == ()


def test_tensor_split_keeps_a_slice_node_per_piece() -> None:
    pieces = leaf().tensor_split(3)
    assert [p.grad_fn.name() for p in pieces] == ["SliceBackward0"] * 3
    assert [p.output_nr for p in pieces] == [0, 0, 0] and pieces[0].grad_fn is not pieces[1].grad_fn


# -- gradients -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("label", "cut", "name", "expected"), PIECES, ids=IDS)
def test_gradients_through_some_pieces_check_against_finite_differences(label: str, cut: Callable, name: str,
                                                                       expected: Callable) -> None:
    def used(t: ag.Tensor) -> tuple:  # the middle pieces unused; the first one twice
        pieces = cut(t)
        return pieces[0] * pieces[0].sin(), pieces[-1].exp()

    assert gradcheck(used, (leaf(),))
    assert gradgradcheck(used, (leaf(),))


@pytest.mark.parametrize(("label", "cut", "name", "expected"), PIECES, ids=IDS)
def test_every_piece_as_an_output_checks_against_finite_differences(label: str, cut: Callable, name: str,
                                                                   expected: Callable) -> None:
    assert gradcheck(lambda t: cut(t), (leaf(),))
    assert gradgradcheck(lambda t: tuple(p * p for p in cut(t)), (leaf(),))


def test_unused_pieces_get_zeros_and_used_ones_their_gradient() -> None:
    x = leaf()
    first, _, last = x.split(2)
    (first * 3).sum().backward()
    expected = np.zeros((5, 4))
    expected[:2] = 3
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    x.grad = None
    (last.exp()).sum().backward()
    expected = np.zeros((5, 4))
    expected[4:] = np.exp(X[4:])
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)


# -- a backward through n pieces costs the input's size ---------------------------------------------------------------
def test_the_backward_joins_every_piece_once(monkeypatch: pytest.MonkeyPatch) -> None:
    joins, zeros = [], []
    join, zero = joining._joined, ArrayOps.zeros
    monkeypatch.setattr(joining, "_joined", lambda *args: joins.append(join(*args)) or joins[-1])
    monkeypatch.setattr(ArrayOps, "zeros", lambda self, shape, like: zeros.append(shape) or zero(self, shape, like))
    for rows in (10, 40):
        joins.clear()
        zeros.clear()
        x = ag.tensor(np.ones((rows, 3)), requires_grad=True)
        loss = sum(r.sum() for r in x.unbind(0)[1:])  # row 0 unused
        graph = set()
        todo = [loss.grad_fn]
        while todo:
            node = todo.pop()
            if node not in graph:
                graph.add(node)
                todo += [n for n, _ in node.next_functions if n is not None]
        assert sorted(n.name() for n in graph).count("UnbindBackward0") == 1
        assert len(graph) == 2 * rows  # a sum per used row, the rows - 2 adds, unbind's node, the accumulator
        loss.backward()
        assert [j.shape for j in joins] == [(rows, 3)]  # one join, of the input's size
        assert zeros == [(1, 3)]  # zeros only for the unused row
        expected = np.ones((rows, 3))
        expected[0] = 0
        np.testing.assert_array_equal(x.grad.numpy(), expected)


# -- PyTorch's graph semantics on pieces -----------------------------------------------------------------------------
def test_retain_grad_and_hooks_on_pieces() -> None:
    x = leaf()
    a, b, c = (x * 1).split(2)
    a.retain_grad()
    c.retain_grad()
    seen = []
    a.register_hook(lambda g: seen.append(("a", g.shape)) or g * 10)
    c.register_hook(lambda g: seen.append(("c", g)))  # an output of the node that got no gradient: PyTorch calls
    (a.sum() * 2 + b.sum()).backward()  # its hook with None
    assert seen == [("a", (2, 4)), ("c", None)]
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 4), 20.0))  # retained after the hooks, as PyTorch's
    assert c.grad is None
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([[20.0], [20.0], [1.0], [1.0], [0.0]], 4, 1))


def test_grad_with_respect_to_pieces() -> None:
    a, b, c = (leaf() * 1).split(2)
    loss = (a * 3).sum() + b.sum()
    grad_a, grad_c = ag.autograd.grad(loss, [a, c], retain_graph=True, allow_unused=True)
    np.testing.assert_array_equal(grad_a.numpy(), np.full((2, 4), 3.0))
    assert grad_c is None
    grad_b, grad_a = ag.autograd.grad(loss, [b, a])
    np.testing.assert_array_equal(grad_b.numpy(), np.ones((2, 4)))
    np.testing.assert_array_equal(grad_a.numpy(), np.full((2, 4), 3.0))


def test_a_piece_used_twice_sums_its_gradients() -> None:
    x = leaf()
    rows = list(x)
    ((rows[1] * rows[1]).sum() + rows[1].sum() + rows[3].sum()).backward()
    expected = np.zeros((5, 4))
    expected[1] = 2 * X[1] + 1
    expected[3] = 1
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)


@pytest.mark.parametrize(("cut", "name"), [(lambda t: t.split(2), "Split"), (lambda t: t.split([2, 2, 1]),
                                           "SplitWithSizes"), (lambda t: t.unbind(), "Unbind")])
def test_pieces_after_an_inplace_change_of_their_base(cut: Callable, name: str) -> None:
    x = leaf()
    base = x * 1
    pieces = cut(base)
    base.mul_(2)
    assert pieces[1]._version == base._version == 1
    with pytest.raises(RuntimeError) as error:
        pieces[1].sum().backward()
    assert str(error.value) == (
        f"Output 1 of {name} is a view and its base or another view of its base has been modified inplace. "
        f"{MULTI_OUTPUT_TAIL}"
    )
    with pytest.raises(RuntimeError) as error:
        pieces[2].add_(1)
    assert str(error.value) == f"Output 2 of {name} is a view and is being modified inplace. {MULTI_OUTPUT_TAIL}"
    base.sum().backward()  # the base itself still differentiates
    np.testing.assert_array_equal(x.grad.numpy(), np.full((5, 4), 2.0))


def test_inplace_on_a_piece_needs_no_graph() -> None:
    x = ag.tensor(X.copy())
    first, second = x.chunk(2, 1)
    second.add_(1)  # nothing requires grad: allowed, and written into the base
    np.testing.assert_array_equal(x.numpy()[:, 2:], X[:, 2:] + 1)
    assert first._version == x._version == 1


# -- on a device -----------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_pieces_on_cuda_share_one_node_and_match_the_cpu(cupy) -> None:
    x = ag.tensor(X, dtype=ag.float64, device="cuda", requires_grad=True)
    pieces = x.split([1, 3, 1])
    node = pieces[0].grad_fn
    assert all(p.grad_fn is node for p in pieces) and [p.output_nr for p in pieces] == [0, 1, 2]
    assert all(p.device == x.device and p._base is x for p in pieces)
    rows = list(x)
    (pieces[0].exp().sum() + (rows[4] * rows[4]).sum()).backward()
    grad = x.grad
    assert grad.device == x.device
    expected = np.zeros((5, 4))
    expected[0] = np.exp(X[0])
    expected[4] = 2 * X[4]
    np.testing.assert_allclose(grad.cpu().numpy(), expected, rtol=1e-14)
    assert gradgradcheck(lambda t: tuple(p * p for p in t.unbind(1)[1:]), (x.detach().requires_grad_(),))
