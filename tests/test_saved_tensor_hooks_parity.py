"""Saved-tensor hooks as PyTorch's: what each op hands to `pack` (its index tensors, no tensor for places it
rebuilds from sizes), each saved value unpacked once per backward of its node, `save_on_cpu(pin_memory=True)`
copying, and the grad mode `unpack` runs in."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck
from actorgrad.autograd.graph import save_on_cpu, saved_tensors_hooks

RNG = np.random.default_rng(7)


def leaf(*shape, positive=False, device="cpu"):
    a = RNG.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return ag.tensor(a, dtype=ag.float64, device=device, requires_grad=True)


class Counting:
    """Hooks that keep every packed tensor and count the unpacks of each."""

    def __init__(self):
        self.packed, self.unpacks = [], []
        self.hooks = saved_tensors_hooks(self.pack, self.unpack)

    def pack(self, t):
        self.packed.append(t)
        self.unpacks.append(0)
        return len(self.packed) - 1

    def unpack(self, k):
        self.unpacks[k] += 1
        return self.packed[k]


def single_use_hooks():
    """Hooks whose packed values can be unpacked once only (as a user's disk offload that deletes its file)."""
    store = {}

    def pack(t):
        key = object()
        store[key] = t
        return key

    return saved_tensors_hooks(pack, store.pop), store


SHARED = {  # ops whose formulas for both inputs share saved values, with the closed-form gradients of out.sum()
    "div": (lambda a, b: a / b, lambda a, b: (1 / b, -a / b**2)),
    "pow": (lambda a, b: a**b, lambda a, b: (b * a ** (b - 1), a**b * np.log(a))),
    "maximum": (ag.maximum, lambda a, b: ((a > b) * 1.0, (b > a) * 1.0)),
    "mse_loss": (lambda a, b: F.mse_loss(a, b, reduction="sum"), lambda a, b: (2 * (a - b), 2 * (b - a))),
    "hypot": (ag.hypot, lambda a, b: (a / np.hypot(a, b), b / np.hypot(a, b))),
    "atan2": (ag.atan2, lambda a, b: (b / (a**2 + b**2), -a / (a**2 + b**2))),
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_each_saved_value_is_unpacked_once_per_backward_of_its_node(name):
    op, expected = SHARED[name]
    a, b = leaf(3, 4, positive=True), leaf(3, 4, positive=True)
    counting = Counting()
    with counting.hooks:
        y = op(a, b).sum()
    assert counting.packed
    y.backward(retain_graph=True)
    assert counting.unpacks == [1] * len(counting.packed)
    y.backward()  # a second pass unpacks again, once
    assert counting.unpacks == [2] * len(counting.packed)
    for got, want in zip((a.grad, b.grad), expected(a.detach().numpy(), b.detach().numpy())):
        np.testing.assert_allclose(got.numpy(), 2 * want, rtol=1e-10)


def test_hooks_that_allow_one_unpack_serve_a_node_whose_formulas_share_values():
    a, b = leaf(5, positive=True), leaf(5, positive=True)
    hooks, store = single_use_hooks()
    with hooks:
        y = (ag.maximum(a, b) * ag.hypot(a, b) / b).sum()
    y.backward()
    assert not store
    x, z = a.detach().numpy(), b.detach().numpy()
    m, h = np.maximum(x, z), np.hypot(x, z)
    np.testing.assert_allclose(a.grad.numpy(), ((x > z) * h + m * x / h) / z, rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), ((z > x) * h + m * z / h) / z - m * h / z**2, rtol=1e-10)


def test_a_recorded_backward_unpacks_once_per_node_and_with_grad_mode():
    a, b = leaf(4, positive=True), leaf(4, positive=True)
    modes = []

    def unpack(t):
        modes.append(ag.is_grad_enabled())
        return t

    with saved_tensors_hooks(lambda t: t, unpack):
        y = (a / b).sum()
    ga, gb = ag.autograd.grad(y, (a, b), create_graph=True)
    assert modes == [True, True]
    (ggb,) = ag.autograd.grad(ga.sum(), b)  # d/db of sum(1/b)
    np.testing.assert_allclose(ggb.numpy(), -1 / b.detach().numpy() ** 2, rtol=1e-12)
    with saved_tensors_hooks(lambda t: t, unpack):
        z = a.exp().sum()
    z.backward()
    assert modes[2:] == [False]


def test_reading_a_saved_value_unpacks_only_it():
    a, b = leaf(3), leaf(3, positive=True)
    counting = Counting()
    with counting.hooks:
        y = a / b
    node = y.grad_fn
    reads = [node._saved_self, node._saved_self, node._saved_other]
    for got, want in zip(reads, (a, a, b)):
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    unpacks = {id(t): n for t, n in zip(counting.packed, counting.unpacks)}
    assert unpacks == {id(a): 2, id(b): 1}


def as_numpy_hooks():
    """Hooks that keep no tensor, only a numpy copy and its dtype: PyTorch lets `pack` return any object."""
    return saved_tensors_hooks(lambda t: ("copy", t.detach().numpy().copy()), lambda p: ag.tensor(p[1]))


INDEXED = {  # op, the index tensors PyTorch's node packs (as arrays), the gradient of out.sum() (4 x 5 input)
    "index_select": (lambda x: x.index_select(1, ag.tensor([0, 3, 3])), [[0, 3, 3]]),
    "getitem": (lambda x: x[ag.tensor([2, 0, 2])], [[2, 0, 2]]),
    "getitem_two": (lambda x: x[ag.tensor([1, 3]), ag.tensor([4, 4])], [[1, 3], [4, 4]]),
    "take": (lambda x: ag.take(x, ag.tensor([0, 7, 7])), [[0, 7, 7]]),
    "index_add": (lambda x: x.index_add(0, ag.tensor([1, 1]), ag.ones(2, 5, dtype=ag.float64, requires_grad=True)),
                  [[1, 1]]),
}


def counts_of(index_lists, shape, flat=False):
    """How often each element of an input of `shape` is read by an index (one index per dim from the first)."""
    counts = np.zeros(shape)
    if flat:
        np.add.at(counts.reshape(-1), np.array(index_lists[0]), 1)
    else:
        np.add.at(counts, tuple(np.array(i) for i in index_lists), 1)
    return counts


@pytest.mark.parametrize("name", sorted(INDEXED))
def test_index_ops_pack_their_index_tensors(name):
    op, indices = INDEXED[name]
    x = leaf(4, 5)
    counting = Counting()
    with counting.hooks:
        y = op(x)
    packed_ints = [t.numpy().tolist() for t in counting.packed if t.dtype == ag.int64]
    assert packed_ints == indices
    with as_numpy_hooks():
        y = op(x)
    y.sum().backward()
    if name == "index_select":
        want = np.zeros((4, 5))
        want[:, 0], want[:, 3] = 1, 2
    elif name == "index_add":
        want = np.ones((4, 5))
    else:
        want = counts_of(indices, (4, 5), flat=name == "take")
    np.testing.assert_allclose(x.grad.numpy(), want)


def view_write(x):
    c = x * 1
    c[:, 1].mul_(2.0)
    return c


def slice_write(x):
    c = x * 1
    c[1:3] = ag.ones(2, 5, dtype=ag.float64)
    return c


NOTHING_PACKED = {  # ops whose PyTorch nodes keep sizes and offsets but no tensor, with d(out.sum())/dx (4 x 5)
    "tril": (ag.tril, lambda: np.tril(np.ones((4, 5)))),
    "triu": (lambda x: ag.triu(x, 1), lambda: np.triu(np.ones((4, 5)), 1)),
    "diagonal": (ag.diagonal, lambda: np.eye(4, 5)),
    "trace": (ag.trace, lambda: np.eye(4, 5)),
    "diag_embed": (lambda x: ag.diag_embed(x), lambda: np.ones((4, 5))),
    "unfold": (lambda x: x.unfold(1, 2, 1), lambda: np.array([1, 2, 2, 2, 1.0]) * np.ones((4, 1))),
    "select_scatter": (lambda x: ag.select_scatter(x, ag.zeros(5, dtype=ag.float64), 0, 2),
                       lambda: np.ones((4, 5)) * (np.arange(4) != 2)[:, None]),
    "view_write": (view_write, lambda: np.ones((4, 5)) + (np.arange(5) == 1)),
    "slice_write": (slice_write, lambda: np.ones((4, 5)) * ~np.isin(np.arange(4), [1, 2])[:, None]),
}


@pytest.mark.parametrize("name", sorted(NOTHING_PACKED))
def test_ops_that_save_only_places_pack_nothing(name):
    op, want = NOTHING_PACKED[name]
    x = leaf(4, 5)
    counting = Counting()
    with counting.hooks:
        y = op(x)
    assert counting.packed == []
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want())


def test_index_put_packs_its_index_and_no_mask():
    x, v = leaf(4, 5), leaf(2, 5)
    counting = Counting()
    with counting.hooks:
        c = x * 1
        c[ag.tensor([3, 0])] = v
    put = [t for t in counting.packed if t.dtype != ag.float64 or t.shape != (4, 5)]
    assert [(t.dtype, t.numpy().tolist()) for t in put] == [(ag.int64, [3, 0])]
    (c * ag.arange(20, dtype=ag.float64).reshape(4, 5)).sum().backward()
    weights = np.arange(20.0).reshape(4, 5)
    np.testing.assert_allclose(x.grad.numpy(), weights * np.isin(np.arange(4), [1, 2])[:, None])
    np.testing.assert_allclose(v.grad.numpy(), weights[[3, 0]])


@pytest.mark.parametrize("pin_memory", [False, True])
def test_save_on_cpu_pin_memory_copies_cpu_tensors(pin_memory):
    a = leaf(3)
    x = a * 1
    with save_on_cpu(pin_memory=pin_memory):
        y = (x * x).sum()
    with ag.no_grad():
        x.mul_(10)  # a copy keeps the values saved; without one, the hooks hand back the tensor itself
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy() * (1 if pin_memory else 10), rtol=1e-12)


def test_saved_tensors_hooks_takes_its_hooks_from_its_attributes_when_entered():
    hooks = saved_tensors_hooks(lambda t: 0, lambda p: 0)
    seen = []
    hooks.pack_hook = lambda t: (seen.append("pack"), t)[1]
    hooks.unpack_hook = lambda t: (seen.append("unpack"), t)[1]
    a = leaf(2)
    with hooks:
        y = a.exp().sum()
    y.backward()
    assert seen == ["pack", "unpack"]
    np.testing.assert_allclose(a.grad.numpy(), np.exp(a.detach().numpy()), rtol=1e-12)


def test_decompositions_pack_their_factors_and_keep_their_gradients():
    a = leaf(4, 4)
    counting = Counting()
    with counting.hooks:
        u, s, vh = ag.linalg.svd(a)
    shapes = [tuple(t.shape) for t in counting.packed]
    assert shapes.count((4,)) == 1 and shapes.count((4, 4)) >= 2
    np.testing.assert_allclose(counting.packed[shapes.index((4,))].numpy(), s.detach().numpy())

    hooks, store = single_use_hooks()
    with hooks:
        values, vectors = ag.linalg.eigh(a + a.mT)
    (values.sum() + (vectors[:, 0] ** 2).sum()).backward()  # each packed value unpacked once, by its node
    assert not store
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.eye(4), atol=1e-10)  # d(trace)/da; |v|^2 is constant

    def spectral(x):
        with save_on_cpu(pin_memory=True):
            values, vectors = ag.linalg.eigh(x + x.mT)
            return values, (vectors[:, :1] * vectors[:, :1]), ag.linalg.svdvals(x)

    assert gradcheck(spectral, (a,))


@pytest.mark.gpu
def test_save_on_cpu_serves_a_device_node_once_per_backward(cupy):
    a, b = leaf(3, 4, positive=True, device="cuda:0"), leaf(3, 4, positive=True, device="cuda:0")
    copies = []

    def pack(t):
        copies.append(t.device)
        return t.cpu()

    with saved_tensors_hooks(pack, lambda t: (copies.append("back"), t.to("cuda:0"))[1]):
        y = (a / b).index_select(1, ag.tensor([0, 2], device="cuda:0")).sum()
    y.backward()
    assert copies.count("back") == len(copies) - copies.count("back") == 3  # b, a and the index
    want = np.zeros((3, 4))
    want[:, [0, 2]] = 1
    x, z = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    assert a.grad.device == ag.device("cuda:0")
    np.testing.assert_allclose(a.grad.cpu().numpy(), want / z, rtol=1e-12)
    np.testing.assert_allclose(b.grad.cpu().numpy(), -want * x / z**2, rtol=1e-12)
