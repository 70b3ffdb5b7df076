"""In-place ops: their values, the history they rebase, what they refuse, and the version counters that let a
backward notice a saved tensor changed after it was saved."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

TOLERANCES = dict(eps=1e-6, atol=1e-7, rtol=1e-5)
CHECKS = settings(
    max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
rng = np.random.default_rng(0)


def leaf(shape, low=-1.0, high=1.0, requires_grad=True):
    return ag.tensor(rng.uniform(low, high, shape), dtype=ag.float64, requires_grad=requires_grad)


def floats(low, high):
    return st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)


def arrays(shape, low=-1.0, high=1.0):
    return hnp.arrays(np.float64, shape, elements=floats(low, high))


shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


# -- values --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "apply, expected",
    [
        (lambda t, o: t.add_(o), lambda a, b: a + b),
        (lambda t, o: t.add_(o, alpha=-2.5), lambda a, b: a - 2.5 * b),
        (lambda t, o: t.sub_(o), lambda a, b: a - b),
        (lambda t, o: t.sub_(o, alpha=3), lambda a, b: a - 3 * b),
        (lambda t, o: t.mul_(o), lambda a, b: a * b),
        (lambda t, o: t.div_(o), lambda a, b: a / b),
        (lambda t, o: t.clamp_(-0.5, 0.25), lambda a, b: np.clip(a, -0.5, 0.25)),
        (lambda t, o: t.clamp_(min=o), lambda a, b: np.maximum(a, b)),
        (lambda t, o: t.zero_(), lambda a, b: np.zeros_like(a)),
        (lambda t, o: t.fill_(1.5), lambda a, b: np.full_like(a, 1.5)),
        (lambda t, o: t.fill_(o[0, 1]), lambda a, b: np.full_like(a, b[0, 1])),
        (lambda t, o: t.copy_(o), lambda a, b: b),
        (lambda t, o: t.copy_(o[1]), lambda a, b: np.broadcast_to(b[1], a.shape)),
    ],
)
def test_values_match_numpy_and_the_op_returns_the_tensor_itself(apply, expected):
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(0.5, 1, (3, 4))
    t = ag.tensor(a)
    out = apply(t, ag.tensor(b))
    assert out is t
    np.testing.assert_allclose(t.numpy(), expected(a, b), rtol=1e-6)
    assert t._version == 1


def test_operators_are_in_place_and_return_the_same_object():
    a = rng.uniform(1, 2, (2, 3)).astype(np.float32)
    t = ag.tensor(a)
    before = t
    t += 1
    t -= ag.tensor(np.full(3, 0.5, np.float32))
    t *= 2
    t /= 4
    assert t is before and t._version == 4
    np.testing.assert_allclose(t.numpy(), ((a + 1 - 0.5) * 2) / 4, rtol=1e-6)
    i = ag.tensor([1, 2, 3])
    same = i
    i += 2
    i *= 3
    assert i is same and i.tolist() == [9, 12, 15] and i.dtype == ag.int64


def test_writes_are_seen_through_views():
    t = ag.tensor(np.arange(6.0).reshape(2, 3))
    row, flat = t[1], t.reshape(6)
    t.mul_(2)
    assert row.tolist() == [6.0, 8.0, 10.0] and flat.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    row.zero_()
    assert t.tolist() == [[0.0, 2.0, 4.0], [0.0, 0.0, 0.0]]
    t[0, 1].add_(5)  # one element is a 0-dim view too
    assert t.tolist() == [[0.0, 7.0, 4.0], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    "index",
    [0, -1, (1, 2), slice(1, 3), (slice(None), 1), (Ellipsis, 0), [0, 2], ([0, 2], [1, 3]), (1, [0, 3]), None],
)
def test_setitem_matches_numpy(index):
    a = rng.uniform(-1, 1, (3, 4))
    t = ag.tensor(a)
    target = a[index].shape
    value = rng.uniform(-1, 1, target[-1:] if target else ())
    t[index] = ag.tensor(value)
    expected = a.copy()
    expected[index] = value
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t._version == 1


def test_setitem_with_a_mask_a_number_and_a_cast():
    t = ag.tensor(np.arange(6.0).reshape(2, 3))
    t[t > 2.5] = -1.0
    assert t.tolist() == [[0.0, 1.0, 2.0], [-1.0, -1.0, -1.0]]
    i = ag.tensor([1, 2, 3])
    i[0] = 5.7  # setitem casts like copy_, as in PyTorch
    i[1:] = ag.tensor([7.9, 8.2])
    assert i.tolist() == [5, 7, 8] and i.dtype == ag.int64


def test_setitem_refuses_a_value_that_does_not_broadcast():
    t = ag.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match the existing size "
                                           r"\(2\) at non-singleton dimension 0"):  # PyTorch's copy_ into t[0]
        t[0] = ag.ones(2)
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[2\] cannot be broadcast to indexing result "
                                           r"of shape \[2, 4\]"):
        t[ag.tensor([0, 1])] = ag.ones(2)


def test_copy_and_fill_cast_into_the_tensor_dtype():
    i = ag.tensor([0, 0, 0])
    i.copy_(ag.tensor([1.7, 2.2, 3.9]))
    assert i.tolist() == [1, 2, 3] and i.dtype == ag.int64
    i.fill_(2.7)
    assert i.tolist() == [2, 2, 2]
    f = ag.zeros(2, 3)
    f.copy_(ag.tensor([1, 2, 3]))
    assert f.tolist() == [[1.0, 2.0, 3.0]] * 2 and f.dtype == ag.float32
    f += ag.ones(3, dtype=ag.float64)  # a float64 result is cast down into float32, as PyTorch allows
    assert f.dtype == ag.float32 and f.tolist() == [[2.0, 3.0, 4.0]] * 2


# -- refusals ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, apply, source, target",
    [
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.add_(1.5), "Float", "Long"),
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.mul_(ag.tensor(2.0)), "Float", "Long"),
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.div_(ag.ones(3, dtype=ag.int64)), "Float", "Long"),
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.clamp_(0.5, 2.5), "Float", "Long"),
        (lambda: ag.tensor([1, 2], dtype=ag.int32), lambda t: t.__iadd__(ag.ones(2, dtype=ag.float64)), "Double",
         "Int"),
        (lambda: ag.tensor([True, False]), lambda t: t.__iadd__(1), "Long", "Bool"),
    ],
)
def test_a_result_dtype_that_cannot_be_cast_into_the_tensor_is_refused(make, apply, source, target):
    t = make()
    before = t.tolist()
    with pytest.raises(RuntimeError, match=f"result type {source} can't be cast to the desired output type {target}"):
        apply(t)
    assert t._version == 0 and t.tolist() == before


def test_other_bad_input_is_refused():
    t = ag.zeros(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        t.add_(ag.ones(2, 3))
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        ag.tensor([1, 2]).add_(1, alpha=0.5)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1"):
        t.fill_(ag.ones(2))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        ag.ones(3).expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                       "non-singleton dimension 1"):
        ag.zeros(2, 3).copy_(ag.ones(2))


@pytest.mark.parametrize(
    "apply",
    [
        lambda t: t.add_(1), lambda t: t.sub_(1), lambda t: t.mul_(2), lambda t: t.div_(2), lambda t: t.zero_(),
        lambda t: t.fill_(1.0), lambda t: t.clamp_(0, 1), lambda t: t.copy_(ag.ones(3)),
        lambda t: t.__setitem__(0, 1.0), lambda t: t.__iadd__(1),
    ],
)
def test_a_leaf_that_requires_grad_is_refused_except_under_no_grad(apply):
    x = ag.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "):
        apply(x)
    assert x._version == 0
    with ag.no_grad():
        apply(x)
    assert x._version == 1 and x.is_leaf and x.requires_grad and x.grad_fn is None


def test_a_view_of_a_leaf_that_requires_grad_is_refused():
    x = ag.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used"):
        x[0].mul_(2)


def test_writing_through_a_view_rebases_the_base_and_every_live_view():
    a = leaf(3)
    b = a * 1
    c, other = b[0:2], b[1:]
    c.mul_(3)
    assert b.grad_fn.name() == "torch::autograd::CopySlices" and b._version == 1
    assert c.grad_fn.name() == "AsStridedBackward0" and other.grad_fn.name() == "AsStridedBackward0"
    assert c.grad_fn.next_functions == ((b.grad_fn, 0),)
    (g_other,) = ag.autograd.grad(other.sum(), a, retain_graph=True)
    np.testing.assert_array_equal(g_other.numpy(), [0.0, 3.0, 1.0])  # other = (3 a1, a2)
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0, 1.0])  # b = (3 a0, 3 a1, a2)


def test_a_view_made_before_its_base_changed_reads_the_new_history():
    x = leaf((2, 3))
    y = x * 1
    row = y[1]
    y.mul_(2)
    assert row.grad_fn.name() == "AsStridedBackward0" and row._version == 1
    row.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0] * 3, [2.0] * 3])


def test_a_view_of_a_tensor_without_history_gets_one():
    x = leaf(3)
    z = ag.zeros(2, 3, dtype=ag.float64)
    z[1].add_(x)
    assert z.grad_fn.name() == "torch::autograd::CopySlices" and z.grad_fn.next_functions[0] == (None, 0)
    (z * z).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_a_view_outside_its_base_memory_is_an_error_not_wrong_positions():
    y = leaf(4) * 1
    view = y[1:3]
    y._data = y._data.copy()  # as an optimizer's first step does to a parameter's shared array
    with pytest.raises(RuntimeError, match="a view no longer lies in its base's memory"):
        y.mul_(2)
    assert view._version == 1


@CHECKS
@given(st.data())
def test_gradients_through_writes_to_views(data):
    a = data.draw(arrays((3, 4)))
    w = data.draw(arrays((3,), 1, 2))

    def f(x, w):
        y = x * 1
        y[0] += w[0]  # a view's +=, then setitem writing it back
        y.transpose(0, 1)[1].mul_(w)  # column 1, through a transposed view
        flat = y.reshape(12)
        flat[::5] *= 2
        kept = y[2]
        y.div_(w.reshape(3, 1))
        return y * kept.sum()

    inputs = [ag.tensor(v, dtype=ag.float64, requires_grad=True) for v in (a, w)]
    assert gradcheck(f, inputs, **TOLERANCES)
    assert gradgradcheck(f, inputs, **TOLERANCES)


# -- rebasing ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "apply, name, operand_edge",
    [
        (lambda t, o: t.add_(o), "AddBackward0", True),
        (lambda t, o: t.add_(o, alpha=2), "AddBackward0", True),
        (lambda t, o: t.sub_(o), "SubBackward0", True),
        (lambda t, o: t.mul_(o), "MulBackward0", True),
        (lambda t, o: t.div_(o), "DivBackward0", True),
        (lambda t, o: t.__imul__(o), "MulBackward0", True),
        (lambda t, o: t.add_(1), "AddBackward0", False),
        (lambda t, o: t.clamp_(-1, 1), "ClampBackward1", None),
        (lambda t, o: t.zero_(), "ZeroBackward0", None),
        (lambda t, o: t.fill_(2.0), "FillBackward2", None),
        (lambda t, o: t.fill_(o[0]), "FillBackward3", True),
        (lambda t, o: t.copy_(o), "torch::autograd::CopyBackwards", True),
        (lambda t, o: t.__setitem__(0, o[0]), "torch::autograd::CopySlices", True),
        (lambda t, o: t.__setitem__(0, 5.0), "torch::autograd::CopySlices", False),
        (lambda t, o: t.__setitem__([0, 2], o[1]), "IndexPutBackward0", True),
    ],
)
def test_an_in_place_op_on_a_non_leaf_rebases_its_history(apply, name, operand_edge):
    x, other = leaf(3), leaf(3)
    y = x * 2
    before = y.grad_fn
    apply(y, other)
    assert y.grad_fn.name() == name and y._version == 1 and not y.is_leaf
    edges = y.grad_fn.next_functions
    assert edges[0] == (before, 0)
    if operand_edge is None:
        assert len(edges) == 1
    elif operand_edge:
        assert edges[1][0] is not None
    else:
        assert edges[1] == (None, 0)


def test_a_tensor_without_history_gets_one_from_an_operand_that_requires_grad():
    x = leaf(3)
    for apply, name in [
        (lambda z: z.add_(x), "AddBackward0"),
        (lambda z: z.copy_(x), "torch::autograd::CopyBackwards"),
        (lambda z: z.__setitem__(slice(0, 2), x[:2]), "torch::autograd::CopySlices"),
    ]:
        z = ag.zeros(3, dtype=ag.float64)
        apply(z)
        assert z.grad_fn.name() == name and z.grad_fn.next_functions[0] == (None, 0) and z.requires_grad


def test_a_retained_gradient_follows_the_rebased_history():
    x = leaf(3)
    y = x * 2
    y.retain_grad()
    y.add_(1)
    row = (x * 1)[0:2]
    row.retain_grad()
    row._base.mul_(2)
    (y.sum() + row.sum()).backward()
    assert y.retains_grad and row.retains_grad
    np.testing.assert_array_equal(y.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(row.grad.numpy(), np.ones(2))


# -- gradients -----------------------------------------------------------------------------------------------------
@CHECKS
@given(st.data())
def test_gradients_flow_through_a_chain_of_in_place_ops(data):
    shape = data.draw(shapes)
    a, z, w = (data.draw(arrays(shape, lo, hi)) for lo, hi in ((-1, 1), (-1, 1), (1, 2)))
    row = data.draw(arrays(shape[-1:], 1, 2))
    transposed = data.draw(st.booleans())

    def f(x, z, w, row):
        y = x * 2
        y.add_(z, alpha=0.5)
        y.mul_(w)
        y -= z
        y.div_(row)  # broadcasting
        y.mul_(y.tanh())  # the node keeps y's values from before the write
        return y

    layout = np.asfortranarray if transposed else np.ascontiguousarray  # non-contiguous leaves too
    inputs = [ag.tensor(layout(v), dtype=ag.float64, requires_grad=True) for v in (a, z, w, row)]
    assert gradcheck(f, inputs, **TOLERANCES)
    assert gradgradcheck(f, inputs, **TOLERANCES)


@CHECKS
@given(st.data())
def test_gradients_of_clamp_fill_copy_and_zero_in_place(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    # values at least 1e-3 from the clamp bounds (-0.5 and 0.5)
    a = data.draw(arrays(shape, -1, 1).filter(lambda v: np.all(np.abs(np.abs(v) - 0.5) > 1e-3)))
    src = data.draw(arrays(shape[-1:]))
    value = data.draw(arrays(()))

    def f(x, src, value):
        y = (x * 3).clamp_(-1.5, 1.5)
        z = (x * 1).copy_(src) * y
        u = (x * 1).fill_(value) * z
        v = (x * 1).zero_() + u
        return v * v

    inputs = [ag.tensor(v, dtype=ag.float64, requires_grad=True) for v in (a, src, value)]
    assert gradcheck(f, inputs, **TOLERANCES)
    assert gradgradcheck(f, inputs, **TOLERANCES)


@CHECKS
@given(st.data())
def test_gradients_of_setitem(data):
    a = data.draw(arrays((3, 4)))
    index = data.draw(st.sampled_from([0, (slice(1, 3), 2), [2, 0], (Ellipsis, [1, 3]), np.array([True, False, True])]))
    target = a[index].shape
    value_shape = data.draw(st.sampled_from([(), target[-1:]]))
    v = data.draw(arrays(value_shape))

    def f(x, v):
        y = x * x
        y[index] = v * 2
        return y * x

    inputs = [ag.tensor(arr, dtype=ag.float64, requires_grad=True) for arr in (a, v)]
    assert gradcheck(f, inputs, **TOLERANCES)
    assert gradgradcheck(f, inputs, **TOLERANCES)


def test_setitem_written_positions_get_no_gradient_from_the_base_path():
    x, v = leaf((3, 4)), leaf(4)
    y = x * 2
    y[1] = v
    y.sum().backward()
    expected = np.full((3, 4), 2.0)
    expected[1] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(v.grad.numpy(), np.ones(4))
    x.grad = None
    y = x * 2
    y[[0, 2, 0]] = v.detach()  # a repeated index: written once, no gradient there either
    y.sum().backward()
    expected = np.full((3, 4), 2.0)
    expected[[0, 2]] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_a_number_operand_with_mixed_dtypes_keeps_the_gradient_in_the_tensor_dtype():
    x = ag.ones(3, requires_grad=True)  # float32
    y = x * 1
    y.add_(ag.ones(3, dtype=ag.float64, requires_grad=True))
    y.sum().backward()
    assert x.grad.dtype == ag.float32 and x.grad.tolist() == [1.0, 1.0, 1.0]


# -- version counters ----------------------------------------------------------------------------------------------
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation: "


def test_a_modified_saved_output_names_the_node_that_saved_it():
    x = leaf((3, 4))
    y = x.tanh()
    y.add_(1)
    with pytest.raises(RuntimeError) as error:
        y.sum().backward()
    message = str(error.value)
    assert message.startswith(MODIFIED + "[actorgrad.float64 [3, 4]], which is output 0 of Tanh, is at version 1; "
                                         "expected version 0 instead. Hint:")


def test_a_modified_saved_input_names_its_current_grad_fn():
    x = leaf(3)
    a = x * 2
    b = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"\[actorgrad.float64 \[3\]\], which is output 0 of Add, is at version 1; "
                                           r"expected version 0 instead"):
        b.sum().backward()
    y = x * 2
    y.mul_(y)  # mul_ saved y itself as its operand, then changed it, as PyTorch refuses too
    with pytest.raises(RuntimeError, match="output 0 of Mul, is at version 1; expected version 0"):
        y.sum().backward()


def test_a_modified_saved_leaf_is_named_by_shape_alone_and_versions_count_every_change():
    x = leaf((2, 2))
    w = ag.ones(2, 2, dtype=ag.float64)
    out = x * w
    w.add_(1)
    w[0] = 3.0
    with pytest.raises(RuntimeError, match=r"\[actorgrad.float64 \[2, 2\]\] is at version 2; expected version 0 "):
        out.sum().backward()


def test_unmodified_saved_tensors_and_version_zero_pass():
    x = leaf(3)
    w = ag.ones(3, dtype=ag.float64)
    w.add_(1)  # changed before it was saved: fine
    out = (x * w).tanh()
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(2 * x.detach().numpy()) ** 2))


def test_views_share_the_version_counter_and_copies_do_not():
    t = ag.tensor(np.arange(12.0).reshape(3, 4))
    views = [t[0], t[:, 1:], t.reshape(12), t.transpose(0, 1), t.detach(), t[None], t.expand(2, 3, 4)]
    copies = [t[[0, 1]], t[t > 3], t.data, t + 0, t.clone(), t.flip(0)]  # flip copies in PyTorch too
    t.add_(1)
    assert [v._version for v in views] == [1] * len(views)
    assert [c._version for c in copies] == [0] * len(copies)
    assert copies[-1].tolist() == np.flip(np.arange(12.0).reshape(3, 4), 0).tolist()
    views[0].mul_(2)
    views[2][3] = 0.0
    assert t._version == 3 and all(v._version == 3 for v in views)
    assert views[0]._is_view() and views[2]._base is t and not views[4]._is_view() and not copies[0]._is_view()


def test_a_change_through_a_view_or_detach_is_caught_at_backward():
    x = leaf(4)
    y = x.exp()
    y.detach().zero_()
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 1"):
        y.sum().backward()
    w = ag.ones(2, 2, dtype=ag.float64)
    out = x.reshape(2, 2) * w
    w.reshape(4)[0] = 2.0
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.sum().backward()


def test_an_optimizer_step_bumps_the_version_of_its_parameters():
    p = leaf(3)
    opt = ag.optim.SGD([p], lr=0.1)
    saved = (p * p).sum()
    (p * 2).sum().backward()
    opt.step()
    assert p._version == 1
    with pytest.raises(RuntimeError, match=r"\[actorgrad.float64 \[3\]\] is at version 1; expected version 0"):
        saved.backward()


def test_grad_accumulation_is_in_place_and_bumps_the_grad_version():
    x = leaf(3)
    (x * 2).sum().backward()
    held = x.grad
    assert held._version == 0
    (x * 3).sum().backward()
    assert x.grad is held and held._version == 1 and held.tolist() == [5.0, 5.0, 5.0]
