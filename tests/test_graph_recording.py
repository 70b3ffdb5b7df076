"""What an op records: node names, edges, the shared AccumulateGrad, sequence and topological numbers,
requires_grad propagation, grad mode, dtypes, reprs and the errors for bad shapes and dims."""

from __future__ import annotations

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import grad


def leaf(*shape, requires_grad=True, low=0.5, high=2.0, seed=0):
    rng = np.random.default_rng(seed)
    return ag.tensor(rng.uniform(low, high, shape), requires_grad=requires_grad)


def _x():
    return leaf(2, 3)


def _y():
    return leaf(2, 3, seed=1)


# name, op on fresh leaves
NAMED_OPS = [
    ("AddBackward0", lambda: _x() + _y()),
    ("AddBackward0", lambda: _x() + 2.0),
    ("AddBackward0", lambda: ag.add(_x(), _y())),
    ("SubBackward0", lambda: _x() - _y()),
    ("SubBackward0", lambda: _x() - 1.0),
    ("MulBackward0", lambda: _x() * _y()),
    ("MulBackward0", lambda: 2 * _x()),
    ("DivBackward0", lambda: _x() / _y()),
    ("DivBackward0", lambda: _x() / 2.0),
    ("NegBackward0", lambda: -_x()),
    ("NegBackward0", lambda: ag.neg(_x())),
    ("PowBackward0", lambda: _x() ** 2),
    ("PowBackward0", lambda: _x() ** 0.5),
    ("PowBackward1", lambda: _x() ** _y()),
    ("PowBackward2", lambda: 2 ** _x()),
    ("RsubBackward1", lambda: 1 - _x()),
    ("ExpBackward0", lambda: _x().exp()),
    ("LogBackward0", lambda: _x().log()),
    ("TanhBackward0", lambda: _x().tanh()),
    ("SigmoidBackward0", lambda: _x().sigmoid()),
    ("ReluBackward0", lambda: _x().relu()),
    ("SumBackward0", lambda: _x().sum()),
    ("SumBackward1", lambda: _x().sum(0)),
    ("SumBackward1", lambda: _x().sum((0, 1))),
    ("SumBackward1", lambda: _x().sum(-1, keepdim=True)),
    ("MeanBackward0", lambda: _x().mean()),
    ("MeanBackward1", lambda: _x().mean(1)),
    ("AmaxBackward0", lambda: _x().amax(1)),
    ("AmaxBackward0", lambda: _x().amax()),
    ("LogSoftmaxBackward0", lambda: _x().log_softmax(1)),
    ("ViewBackward0", lambda: _x().reshape(3, 2)),
    ("ViewBackward0", lambda: _x().reshape(-1)),
    ("TransposeBackward0", lambda: _x().transpose(0, 1)),
    ("PermuteBackward0", lambda: _x().T),
    ("PermuteBackward0", lambda: _x().permute(1, 0)),
    ("ExpandBackward0", lambda: _x().broadcast_to((4, 2, 3))),
    ("DotBackward0", lambda: leaf(3) @ leaf(3)),
    ("MvBackward0", lambda: leaf(2, 3) @ leaf(3)),
    ("MmBackward0", lambda: leaf(2, 3) @ leaf(3, 4)),
    ("MmBackward0", lambda: ag.matmul(leaf(2, 3), leaf(3, 4))),
    ("BmmBackward0", lambda: leaf(2, 2, 3) @ leaf(2, 3, 4)),
    ("MatmulBackward0", lambda: leaf(3) @ leaf(3, 4)),
    ("MatmulBackward0", lambda: leaf(2, 2, 3) @ leaf(3)),
    ("MatmulBackward0", lambda: leaf(2, 2, 3) @ leaf(3, 4)),
    ("MatmulBackward0", lambda: leaf(2, 2, 3) @ leaf(1, 3, 4)),
    ("MatmulBackward0", lambda: leaf(2, 1, 3, 4) @ leaf(5, 4, 2)),
]
NAME_IDS = [f"{i}-{name}" for i, (name, _) in enumerate(NAMED_OPS)]


@pytest.mark.parametrize("name, make", NAMED_OPS, ids=NAME_IDS)
def test_node_name(name, make):
    out = make()
    assert out.grad_fn is not None
    assert out.grad_fn.name() == name
    assert f"grad_fn=<{name}>" in repr(out)


@pytest.mark.parametrize("name, make", NAMED_OPS, ids=NAME_IDS)
def test_no_grad_records_nothing(name, make):
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        out = make()
    assert ag.is_grad_enabled()
    assert out.grad_fn is None
    assert out.requires_grad == out._is_view()  # a view requires grad as its base does, as in PyTorch
    assert out.is_leaf
    assert make().grad_fn is not None  # and outside it, the same op records again


def test_no_grad_as_decorator_and_enable_grad_inside():
    x = _x()

    @ag.no_grad()
    def double(t):
        return t * 2

    assert double(x).grad_fn is None
    with ag.no_grad():
        with ag.enable_grad():
            inner = x * 2
        outer = x * 2
    assert inner.grad_fn is not None and inner.grad_fn.name() == "MulBackward0"
    assert outer.grad_fn is None
    with ag.set_grad_enabled(False):
        assert (x + 1).grad_fn is None


def test_mul_by_number_edges():
    x = _x()
    out = x * 2
    (acc, acc_nr), (other, other_nr) = out.grad_fn.next_functions
    assert len(out.grad_fn.next_functions) == 2
    assert type(acc) is ag.AccumulateGrad and acc.variable is x and acc_nr == 0
    assert (other, other_nr) == (None, 0)
    assert acc.next_functions == ()
    assert acc.name() == "torch::autograd::AccumulateGrad"  # PyTorch's name


def test_edges_of_two_leaves_and_a_constant():
    x, y = _x(), _y()
    c = leaf(2, 3, requires_grad=False)
    out = x + y
    (a, a_nr), (b, b_nr) = out.grad_fn.next_functions
    assert a.variable is x and b.variable is y and a_nr == b_nr == 0
    mixed = c * y
    assert mixed.grad_fn.next_functions[0] == (None, 0)
    assert mixed.grad_fn.next_functions[1][0].variable is y


def test_edges_chain_to_the_producing_node():
    x, y = _x(), _y()
    z = x.exp()
    w = z * y
    s = w.sum()
    assert s.grad_fn.next_functions == ((w.grad_fn, 0),)
    assert w.grad_fn.next_functions[0] == (z.grad_fn, 0)
    assert w.grad_fn.next_functions[1][0].variable is y
    assert z.grad_fn.next_functions[0][0].variable is x


@pytest.mark.parametrize(
    "make",
    [lambda x: x.exp(), lambda x: 1 - x, lambda x: x**2, lambda x: 2**x, lambda x: x.sum(0), lambda x: x.T,
     lambda x: x.reshape(-1), lambda x: x.amax(1), lambda x: x.log_softmax(0), lambda x: x.broadcast_to((2, 2, 3))],
)
def test_unary_ops_have_one_edge(make):
    x = _x()
    nf = make(x).grad_fn.next_functions
    assert len(nf) == 1
    assert nf[0][0].variable is x and nf[0][1] == 0


def test_matmul_edges():
    a, b = leaf(2, 3), leaf(3, 4)
    nf = (a @ b).grad_fn.next_functions
    assert [(n.variable, nr) for n, nr in nf] == [(a, 0), (b, 0)]


def test_accumulate_grad_is_shared_per_leaf():
    x, y = _x(), _y()
    outs = [x * 2, x.exp(), x + y, y * x, x * x, x.sum()]
    accs_x = [
        outs[0].grad_fn.next_functions[0][0],
        outs[1].grad_fn.next_functions[0][0],
        outs[2].grad_fn.next_functions[0][0],
        outs[3].grad_fn.next_functions[1][0],
        outs[4].grad_fn.next_functions[0][0],
        outs[4].grad_fn.next_functions[1][0],
        outs[5].grad_fn.next_functions[0][0],
    ]
    assert all(acc is accs_x[0] for acc in accs_x)
    assert accs_x[0].variable is x
    acc_y = outs[2].grad_fn.next_functions[1][0]
    assert acc_y is outs[3].grad_fn.next_functions[0][0]
    assert acc_y is not accs_x[0] and acc_y.variable is y


def test_sequence_nr_increases_with_op_order():
    x, y = _x(), _y()
    outs = [x * 2]
    outs.append(outs[-1].exp())
    outs.append(y + 1)
    outs.append(outs[1] @ outs[2].T)
    outs.append(outs[-1].sum())
    outs.append(x.tanh())
    seqs = [o.grad_fn.sequence_nr for o in outs]
    assert all(a < b for a, b in zip(seqs, seqs[1:])), seqs


def _all_nodes(root):
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return list(seen.values())


def test_topological_nr():
    x, y = _x(), _y()
    c = leaf(2, 3, requires_grad=False)
    a = x * 2
    b = a.exp()
    d = b + y
    assert a.grad_fn.topological_nr == 1
    assert b.grad_fn.topological_nr == 2
    assert d.grad_fn.topological_nr == 3
    assert (y + c).grad_fn.topological_nr == 1
    loss = ((d @ (c * x).T).log_softmax(0) + (x * y).sum()).amax()
    nodes = _all_nodes(loss.grad_fn)
    assert len(nodes) > 8
    for node in nodes:
        children = [n.topological_nr for n, _ in node.next_functions if n is not None]
        if isinstance(node, ag.AccumulateGrad):
            assert node.topological_nr == 0 and not children
        else:
            assert node.topological_nr == 1 + max(children), node


def test_requires_grad_and_is_leaf_propagation():
    x = _x()
    c = leaf(2, 3, requires_grad=False)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    plain = c * 2 + c.exp()
    assert plain.is_leaf and not plain.requires_grad and plain.grad_fn is None
    mixed = c + x
    assert not mixed.is_leaf and mixed.requires_grad
    deeper = mixed.sum()
    assert not deeper.is_leaf and deeper.requires_grad
    detached = deeper.detach()
    assert detached.is_leaf and not detached.requires_grad and detached.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf"):
        mixed.requires_grad = False
    c.requires_grad_()
    assert c.requires_grad and c.is_leaf
    assert (c * 2).grad_fn is not None


@pytest.mark.parametrize(
    "data", [[1, 2, 3], np.arange(3, dtype=np.int32), [True, False]], ids=["int64", "int32", "bool"]
)
def test_integer_tensors_cannot_require_grad(data):
    with pytest.raises(RuntimeError, match="floating point"):
        ag.tensor(data, requires_grad=True)
    t = ag.tensor(data)
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad_()
    assert not t.requires_grad


def test_default_dtypes():
    assert ag.tensor(1.5).dtype == ag.float32
    assert ag.tensor([1.0, 2.0]).dtype == ag.float32
    assert ag.tensor([[1.0], [2.0]]).dtype == ag.float32
    assert ag.tensor(np.array([1.0, 2.0])).dtype == ag.float64
    assert ag.tensor(np.float64(1.0)).dtype == ag.float64
    assert ag.tensor(np.array([1.0], dtype=np.float32)).dtype == ag.float32
    assert ag.tensor([1, 2]).dtype == ag.int64
    assert ag.tensor([1.0, 2.0], dtype=ag.float64).dtype == ag.float64


def _every_op(x, y, m):
    """One of each op, with Python numbers mixed in; returns every intermediate."""
    outs = [x + y, x - 2.0, 1 - x, 2 * x, x / y, 3.0 / y, -x, x**2, x**2.5, x**y, 2**x, x.exp(), x.log(),
            x.tanh(), x.sigmoid(), x.relu(), x.sum(), x.sum(0), x.mean(), x.mean(1, keepdim=True), x.amax(1),
            x.log_softmax(1), x.reshape(-1), x.transpose(0, 1), x.T, x.permute(1, 0), x.broadcast_to((2, 2, 3)),
            x @ m, x.sum(0) @ m]
    total = outs[0].sum()
    for o in outs[1:]:
        total = total + o.sum()
    return outs, total


@pytest.mark.parametrize("dtype", [ag.float64, ag.float32], ids=str)
def test_graph_keeps_its_float_dtype(dtype):
    x = ag.tensor(np.array([[0.5, 1.0, 1.5], [2.0, 0.7, 1.2]]), dtype=dtype, requires_grad=True)
    y = ag.tensor(np.array([[1.5, 0.8, 1.1], [0.9, 1.3, 0.6]]), dtype=dtype, requires_grad=True)
    m = ag.tensor(np.ones((3, 2)), dtype=dtype, requires_grad=True)
    outs, total = _every_op(x, y, m)
    for i, o in enumerate(outs):
        assert o.dtype == dtype, f"op {i} gave {o.dtype}"
    assert total.dtype == dtype
    grads = grad(total, (x, y, m), create_graph=True)
    assert [g.dtype for g in grads] == [dtype] * 3
    assert [g.shape for g in grads] == [(2, 3), (2, 3), (3, 2)]
    (g2,) = grad(grads[0].sum(), x, retain_graph=True)
    assert g2.dtype == dtype
    total.backward()
    assert x.grad.dtype == y.grad.dtype == m.grad.dtype == dtype


def test_backward_gives_each_leaf_a_grad_of_its_own_dtype():
    x32 = ag.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y64 = ag.tensor(np.array([3.0, 4.0]), requires_grad=True)
    out = (x32 * y64).sum()
    assert out.dtype == ag.float64  # numpy promotion
    out.backward()
    assert x32.grad.dtype == ag.float32 and y64.grad.dtype == ag.float64
    np.testing.assert_allclose(x32.grad.numpy(), [3.0, 4.0])


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_gives_each_input_a_grad_of_its_own_dtype(create_graph):
    x32 = ag.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y64 = ag.tensor(np.array([3.0, 4.0]), requires_grad=True)
    z32 = x32.exp()  # a float32 node downstream of the promoting op
    gx, gy, gz = grad((z32 * y64).sum() + (x32 * 2.0).sum(), (x32, y64, z32), create_graph=create_graph)
    assert (gx.dtype, gy.dtype, gz.dtype) == (ag.float32, ag.float64, ag.float32)
    np.testing.assert_allclose(gx.detach().numpy(), np.exp([1.0, 2.0]) * [3.0, 4.0] + 2.0, rtol=1e-6)
    np.testing.assert_allclose(gy.detach().numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_repr():
    assert repr(ag.tensor([3.0], requires_grad=True)) == "tensor([3.], requires_grad=True)"
    assert repr(ag.tensor([2.0, 3.0], requires_grad=True).sum()) == "tensor(5., grad_fn=<SumBackward0>)"
    assert repr(ag.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ag.tensor(np.array([1.5]))) == "tensor([1.5000], dtype=actorgrad.float64)"
    x = ag.tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], dtype=actorgrad.float64, grad_fn=<MulBackward0>)"
    with ag.no_grad():
        assert repr(x * 2) == "tensor([2., 4.], dtype=actorgrad.float64)"


def _assert_names_shapes(excinfo, *shapes):
    message = str(excinfo.value)
    for shape in shapes:
        assert str(shape) in message, f"{shape} not named in {message!r}"


def test_matmul_bad_shapes():
    # PyTorch's words for the kernel the shapes lead to: mm's names both shapes, a batched product its clashing dim
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")):
        ag.tensor(np.ones((2, 3))) @ ag.tensor(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")):
        leaf(2, 3) @ leaf(4, 5)
    with pytest.raises(RuntimeError, match=re.escape(
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    )):
        leaf(2, 2, 3) @ leaf(3, 3, 4)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but they are 1D and 0D"):
        leaf(3) @ ag.tensor(np.array(2.0))


@pytest.mark.parametrize("op", [ag.add, ag.sub, ag.mul, ag.div, ag.pow])
def test_binary_bad_shapes(op):
    # PyTorch's words: the clashing sizes and their dim, not the shapes
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1$"):
        op(leaf(2, 3), leaf(4))


def test_broadcast_to_and_reshape_bad_shapes():
    with pytest.raises(RuntimeError) as excinfo:
        leaf(2, 3).broadcast_to((2, 4))
    _assert_names_shapes(excinfo, [2, 3], [2, 4])  # as lists, as PyTorch's expand names them
    with pytest.raises(RuntimeError, match="6"):
        leaf(2, 3).reshape(4, 2)


@pytest.mark.parametrize(
    "call",
    [lambda x: x.sum(2), lambda x: x.sum(-3), lambda x: x.sum((0, 2)), lambda x: x.mean(5), lambda x: x.mean(-3),
     lambda x: x.amax(2), lambda x: x.amax((0, -3)), lambda x: x.log_softmax(2), lambda x: x.log_softmax(-3),
     lambda x: x.transpose(0, 2), lambda x: x.transpose(-3, 1), lambda x: x.permute(0, 2)],
)
def test_dim_out_of_range(call):
    with pytest.raises(IndexError, match="out of range"):
        call(_x())
