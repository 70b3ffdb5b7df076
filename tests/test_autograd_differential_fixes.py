"""Autograd behaviour that differed from PyTorch's, found by running the same scenarios in both: grad mode inside
inference mode, custom Functions (mark_dirty, next_functions, saved-tensor hooks, saved outputs' errors), leaves
frozen after the graph was made, complex losses without a gradient, and backward(create_graph=True)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import Function, gradcheck


def leaf(values=(1.0, 2.0, 3.0)):
    return ag.tensor(list(values), dtype=ag.float64, requires_grad=True)


def values(t):
    return t.detach().numpy()


class Cube(Function):
    """x**3, saving its input and its output; the gradient 3 * y / x reads both."""

    forward_calls = 0

    @staticmethod
    def forward(ctx, x):
        Cube.forward_calls += 1
        y = x * x * x
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * 3 * y / x


# grad mode inside inference mode


def test_enable_grad_inside_inference_mode_reports_grad_mode_but_records_nothing():
    x = leaf()
    with ag.inference_mode():
        assert not ag.is_grad_enabled()
        with ag.enable_grad():
            assert ag.is_grad_enabled()
            y = x.exp()
            assert not y.requires_grad and y.grad_fn is None and y.is_inference()
            with ag.no_grad():
                assert not ag.is_grad_enabled()
            with ag.inference_mode(False):  # leaving inference mode records again
                z = x * 2
                assert z.requires_grad and not z.is_inference()
            assert ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled() and (x * 2).requires_grad


def test_set_grad_enabled_inside_inference_mode_records_nothing_and_is_undone_on_exit():
    x = leaf()
    with ag.inference_mode():
        ag.set_grad_enabled(True)
        assert ag.is_grad_enabled() and not (x * 2).requires_grad
        with ag.set_grad_enabled(False):
            assert not ag.is_grad_enabled()
        assert ag.is_grad_enabled()

    @ag.enable_grad()
    def doubled(t):
        return t * 2

    with ag.inference_mode():
        assert not doubled(x).requires_grad
    assert ag.is_grad_enabled() and doubled(x).requires_grad


# custom Functions: mark_dirty


def test_mark_dirty_counts_one_more_version_as_pytorch(doubled):
    x = leaf()
    h = x * 1
    y = doubled.apply(h)
    assert y is h and h._version == 2  # mul_ once, then mark_dirty once more
    free = ag.tensor([1.0, 2.0])
    doubled.apply(free)
    assert free._version == 2 and np.array_equal(values(free), [2.0, 4.0])


def test_a_tensor_saved_before_mark_dirty_reports_both_versions_and_the_function(doubled):
    x = leaf()
    h = x * 1
    z = h * h
    doubled.apply(h)
    message = "which is output 0 of Doubled, is at version 2; expected version 0 instead"
    with pytest.raises(RuntimeError, match=message):
        z.sum().backward()


def test_mark_dirty_of_an_input_not_returned_is_refused():
    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method were not "
                                           "returned as output"):
        NotReturned.apply(leaf() * 1)
    with pytest.raises(RuntimeError, match="marked as dirty"):  # also with no graph to record
        NotReturned.apply(ag.tensor([1.0]))


def test_mark_dirty_of_a_tensor_that_is_not_an_input_warns():
    class NewTensorDirty(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf()
    with pytest.warns(UserWarning, match=r"ctx.mark_dirty\(\) received a tensor that was not an input"):
        y = NewTensorDirty.apply(x)
    y.sum().backward()
    assert np.array_equal(values(x.grad), [2.0, 2.0, 2.0])


def test_retain_grad_follows_a_tensor_marked_dirty(doubled):
    x = leaf()
    h = x * 1
    h.retain_grad()
    y = doubled.apply(h)
    assert h.retains_grad
    (y * 3).sum().backward()
    assert np.array_equal(values(h.grad), [3.0, 3.0, 3.0])  # d(3y)/dy: h is y now
    assert np.array_equal(values(x.grad), [6.0, 6.0, 6.0])  # 3 * 2


# custom Functions: edges, saved outputs, saved-tensor hooks


def test_next_functions_has_one_edge_per_tensor_input():
    class Scaled(Function):
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.k, None, g * x * ctx.k

    x, w = leaf(), leaf((4.0, 5.0, 6.0))
    y = Scaled.apply(x * 2, 3.0, w)
    assert [(f.name(), nr) for f, nr in y.grad_fn.next_functions] == [
        ("MulBackward0", 0), ("torch::autograd::AccumulateGrad", 0)]
    seen = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
    y.sum().backward()
    assert seen == [2]
    assert np.array_equal(values(x.grad), [24.0, 30.0, 36.0])  # 2 * 3 * w
    assert np.array_equal(values(w.grad), [6.0, 12.0, 18.0])  # 2x * 3
    t = ag.tensor(np.array([0.7, 1.3]), dtype=ag.float64, requires_grad=True)
    assert gradcheck(lambda a: Scaled.apply(a, 2.5, a * a), (t,))


def test_a_changed_saved_output_names_the_function_and_which_output():
    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            b = x.exp()
            ctx.save_for_backward(b)
            return x * 2, b

        @staticmethod
        def backward(ctx, ga, gb):
            (b,) = ctx.saved_tensors
            return ga * 2 + gb * b

    a, b = TwoOutputs.apply(leaf())
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"\[actorgrad.float64 \[3\]\], which is output 1 of TwoOutputs, is at "
                                           r"version 1; expected version 0 instead"):
        (a + b).sum().backward()


def test_saved_tensor_hooks_pack_what_a_function_saves():
    log = []

    def pack(t):
        log.append(("pack", values(t).tolist()))
        return t.detach().clone()

    def unpack(t):
        log.append("unpack")
        return t

    x = leaf()
    h = x * 1
    with ag.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Cube.apply(h)
    assert log == [("pack", [1.0, 2.0, 3.0]), ("pack", [1.0, 8.0, 27.0])]
    with ag.no_grad():
        h.mul_(100)  # the packed copies are what backward uses: no version check, as in PyTorch
    y.sum().backward()
    assert log[2:] == ["unpack", "unpack"]
    assert np.allclose(values(x.grad), [3.0, 12.0, 27.0])  # 3x**2
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_packed_function_values_keep_their_history_for_double_backward():
    x = leaf()
    unpacked = []
    with ag.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(t) or t):
        y = Cube.apply(x * 2)
    (g,) = ag.autograd.grad(y.sum(), x, create_graph=True)
    seen = [values(t).tolist() for t in unpacked]
    assert [2.0, 4.0, 6.0] in seen and [8.0, 64.0, 216.0] in seen  # Cube's input and output
    assert np.allclose(values(g), 24 * np.array([1.0, 4.0, 9.0]))  # d/dx (2x)**3 = 24x**2
    g.sum().backward()
    assert np.allclose(values(x.grad), 48 * np.array([1.0, 2.0, 3.0]))


def test_non_reentrant_checkpoint_drops_and_recomputes_a_functions_saved_values():
    x = leaf((1.0, 2.0))
    Cube.forward_calls = 0
    y = ag.utils.checkpoint.checkpoint(lambda a: Cube.apply(a * 2), x, use_reentrant=False)
    assert Cube.forward_calls == 1
    y.sum().backward()
    assert Cube.forward_calls == 2  # rerun for the values its pack dropped
    assert np.allclose(values(x.grad), [24.0, 96.0])


# leaves, seeds, create_graph


def test_a_leaf_frozen_after_the_graph_was_made_gets_no_gradient():
    w, b = leaf(), leaf((4.0, 5.0, 6.0))
    after = []
    b.register_post_accumulate_grad_hook(after.append)
    y = (w * b).sum()
    b.requires_grad_(False)
    y.backward()
    assert b.grad is None and after == []
    assert np.array_equal(values(w.grad), [4.0, 5.0, 6.0])


def test_a_complex_loss_needs_its_gradient_given():
    z = ag.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    loss = (z * z).sum()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs but got "
                                           "actorgrad.complex64"):
        loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        ag.autograd.grad(loss, z, retain_graph=True)
    loss.backward(ag.tensor(1 + 0j))
    assert np.allclose(values(z.grad), [2 - 2j, 4 + 2j])  # conj(dL/dz) = conj(2z)


def test_backward_with_create_graph_warns_once_about_the_reference_cycle(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = leaf()
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True will create a reference cycle"):
        (x * x).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * x).sum().backward(create_graph=True)
        ag.autograd.grad((x * x).sum(), x, create_graph=True)


def test_a_plain_backward_adds_into_a_create_graph_gradient_in_place():
    x = leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x**3).sum().backward(create_graph=True)
    grad = x.grad
    assert grad.requires_grad and grad.grad_fn is not None
    version = grad._version
    (x * 2).sum().backward()
    assert x.grad is grad and grad.requires_grad and grad._version == version + 1
    assert np.allclose(values(grad), 3 * np.array([1.0, 4.0, 9.0]) + 2)


def test_a_backward_returning_a_list_returns_one_gradient():
    class ListGrads(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return [g, g]

    with pytest.raises(RuntimeError, match=r"ListGradsBackward returned an incorrect number of gradients \(expected "
                                           r"2, got 1\)"):
        ListGrads.apply(leaf(), leaf()).sum().backward()


# anomaly mode


def test_anomaly_mode_reports_a_failing_node_only_when_on_during_backward():
    x = leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ag.autograd.detect_anomaly():
            y = x.exp()
            w = y.exp()
    y.mul_(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as error:
            w.sum().backward(retain_graph=True)
    assert not [w for w in caught if "Error detected" in str(w.message)]
    assert not any("Traceback of forward call" in note for note in error.value.__notes__)

    plain = leaf()
    h = plain.exp()
    out = h.exp()
    h.mul_(2)
    with pytest.warns(UserWarning, match="Error detected in ExpBackward0. No forward pass information available. "
                                         "Enable detect anomaly during forward pass for more information."):
        with ag.autograd.set_detect_anomaly(True):
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                ag.autograd.grad(out.sum(), plain)
