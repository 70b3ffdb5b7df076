"""Four behaviours matched to PyTorch's: the in-place elu family (elu_, selu_, celu_, rrelu_) saves its result, not
its input, so a later change of that result is refused; saved-tensor hooks never see the numbers ops meet
(`x * 2`); a leaf reached in backward only by a None gradient still runs its post-accumulate-grad hooks; and
in-place writes and `out=` refuse a value lying partly in the written memory through a `.data` alias too."""

import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.autograd.function import Function
from actorgrad.autograd.graph import saved_tensors_hooks

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation: "
PARTLY_SHARED = re.escape(
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation."
)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
# Away from the kink at 0, both signs.
VALUES = np.array([-1.7, -0.6, -0.25, 0.3, 0.9, 1.8])


def leaf(values=VALUES, device=None):
    return ag.tensor(values, dtype=ag.float64, requires_grad=True, device=device)


def elu_slope(x, alpha, scale=1.0, input_scale=1.0):
    return scale if x > 0 else scale * alpha * input_scale * math.exp(x * input_scale)


# name -> (in-place call on a non-leaf, the derivative of one element, its node's name, the name in the error)
IN_PLACE = {
    "elu_": (lambda t: F.elu_(t, 2.0), lambda x: elu_slope(x, 2.0), "EluBackward1", "Elu1"),
    "elu_inplace": (lambda t: F.elu(t, 0.5, inplace=True), lambda x: elu_slope(x, 0.5), "EluBackward1", "Elu1"),
    "selu_": (F.selu_, lambda x: elu_slope(x, SELU_ALPHA, SELU_SCALE), "EluBackward1", "Elu1"),
    "celu_": (lambda t: F.celu_(t, 0.5), lambda x: elu_slope(x, 0.5, 1.0, 2.0), "CeluBackward1", "Celu1"),
    "rrelu_eval": (lambda t: F.rrelu_(t, 0.1, 0.3), lambda x: 1.0 if x > 0 else 0.2, "RreluWithNoiseBackward1",
                   "RreluWithNoise1"),
    "leaky_relu_": (lambda t: F.leaky_relu_(t, 0.1), lambda x: 1.0 if x > 0 else 0.1, "LeakyReluBackward1",
                    "LeakyRelu1"),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_activation_saves_its_result_and_its_gradient_is_the_derivative(name):
    apply, slope, node, _ = IN_PLACE[name]
    x = leaf()
    y = x * 1
    assert apply(y) is y
    fn = y.grad_fn
    assert fn.name() == node
    np.testing.assert_array_equal(fn._saved_result.detach().numpy(), y.detach().numpy())
    assert not hasattr(fn, "_saved_self")
    w = np.linspace(0.5, 1.5, VALUES.size)
    (y * ag.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [wi * slope(v) for v, wi in zip(VALUES, w)], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_a_change_of_the_saved_result_is_refused_at_backward(name):
    apply, _, _, shown = IN_PLACE[name]
    y = leaf() * 1
    apply(y)
    y.mul_(2)
    message = re.escape(f"{MODIFIED}[actorgrad.float64 [6]], which is output 0 of {shown}, is at version 2; "
                        "expected version 1 instead")
    with pytest.raises(RuntimeError, match=message):
        y.sum().backward()


def test_rrelu_in_training_saves_its_result_and_its_gradient_is_the_drawn_slope():
    ag.manual_seed(3)
    x = leaf()
    y = F.rrelu_(x * 1, 0.1, 0.3, training=True)
    assert y.grad_fn.name() == "RreluWithNoiseBackward1"
    y.sum().backward()
    slopes = np.where(VALUES > 0, 1.0, y.detach().numpy() / VALUES)  # the slope each element was given
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)
    assert np.all((slopes[VALUES < 0] >= 0.1) & (slopes[VALUES < 0] <= 0.3))
    y = F.rrelu_(leaf() * 1, training=True)
    y.add_(1)
    with pytest.raises(RuntimeError, match="output 0 of RreluWithNoise1, is at version 2; expected version 1"):
        y.sum().backward()


@pytest.mark.parametrize("fn", [lambda t: F.elu_(t * 1, 2.0), lambda t: F.selu_(t * 1), lambda t: F.celu_(t * 1, 0.5),
                                lambda t: F.elu(t * 1, 0.0, inplace=True), lambda t: F.rrelu_(t * 1, 0.1, 0.3)])
def test_in_place_activations_pass_gradcheck_and_gradgradcheck(fn):
    assert gradcheck(fn, (leaf(),))
    assert gradgradcheck(fn, (leaf(),))


def test_a_negative_alpha_or_mean_slope_is_refused_at_backward_as_pytorch_refuses_it():
    for apply in (lambda t: F.elu_(t, -1.0), lambda t: F.celu_(t, -1.0)):
        y = apply(leaf() * 1)
        with pytest.raises(RuntimeError, match="In-place elu backward calculation is triggered with a negative "
                                               "slope which is not supported"):
            y.sum().backward()
    y = F.rrelu_(leaf() * 1, -0.5, -0.2)
    with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation is triggered with a negative "
                                           "slope which is not supported"):
        y.sum().backward()
    x = leaf()  # slopes drawn in training need no sign: the gradient is the drawn slope
    F.rrelu_(x * 1, -0.5, -0.2, training=True).sum().backward()
    assert np.all((x.grad.numpy()[VALUES < 0] >= -0.5) & (x.grad.numpy()[VALUES < 0] <= -0.2))


def test_threshold_in_place_saves_a_copy_of_its_input_as_threshold_backward1():
    x = leaf()
    y = F.threshold_(x * 1, 0.0, 5.0)
    assert y.grad_fn.name() == "ThresholdBackward1"
    y.mul_(2)  # its own values are not what it saved: no refusal
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(VALUES > 0, 2.0, 0.0))


def test_a_saved_result_names_its_node_by_number_as_pytorch_does():
    y = ag.pow(2.0, leaf() * 1)  # PowBackward2 saves its result
    y.add_(1)
    with pytest.raises(RuntimeError, match="which is output 0 of Pow2, is at version 1; expected version 0"):
        y.sum().backward()


# -- saved-tensor hooks see tensors only -----------------------------------------------------------------------
def _packed_shapes(fn, *leaves):
    packed = []

    def pack(t):
        assert isinstance(t, ag.Tensor)
        packed.append(tuple(t.shape))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        out = fn(*leaves)
    return packed, out


@pytest.mark.parametrize("fn, shapes", [
    (lambda x: x * 2, []), (lambda x: 2 * x, []), (lambda x: x / 4, []), (lambda x: ag.mul(x, 3), []),
    (lambda x: x * 2.5 - 1, []), (lambda x: (x * 1).mul_(3), []), (lambda x: (x * 1).div_(2), []),
    (lambda x: 2 / x, [(6,)]), (lambda x: x * ag.tensor(2.0, dtype=ag.float64), [()]),
    (lambda x: x.float() * 2, []), (lambda x: x.half() * 2, []), (lambda x: x * x, [(6,), (6,)]),
])
def test_a_pack_hook_sees_the_tensors_an_op_saves_and_never_a_number_it_met(fn, shapes):
    packed, out = _packed_shapes(fn, leaf())
    assert packed == shapes


def test_a_number_an_op_saved_shows_as_a_plain_tensor():
    saved = (leaf() * 2).grad_fn._saved_other
    assert type(saved) is ag.Tensor and saved.item() == 2


def test_numbers_kept_out_of_packing_still_give_the_gradient():
    store = {}

    def pack(t):
        store[len(store)] = t.clone()
        return len(store) - 1

    x = leaf()
    with saved_tensors_hooks(pack, store.__getitem__):
        y = ((x * 3) / 2 * x).sum()
    (g,) = ag.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * VALUES, rtol=1e-12)  # d(1.5 x^2) = 3x
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(VALUES.size, 3.0), rtol=1e-12)
    assert all(t.shape == (6,) for t in store.values())


# -- post-accumulate-grad hooks of a leaf reached only by None ------------------------------------------------------
class NoGradForFirst(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2 + b

    @staticmethod
    def backward(ctx, g):
        return None, g


def test_a_leaf_reached_only_by_none_runs_its_post_accumulate_hooks_and_keeps_no_grad():
    a, b = leaf(), leaf()
    log = []
    for name, t in (("a", a), ("b", b)):
        t.register_post_accumulate_grad_hook(lambda p, name=name: log.append((name, p.grad is None)))
        t.register_hook(lambda g, name=name: log.append((name + " hook", g is None)))
    NoGradForFirst.apply(a * 1, b).sum().backward()
    assert sorted(log) == [("a", True), ("a hook", True), ("b", False), ("b hook", False)]
    assert a.grad is None and np.array_equal(b.grad.numpy(), np.ones(VALUES.size))
    log.clear()
    ag.autograd.grad(NoGradForFirst.apply(a, b).sum(), (a, b), allow_unused=True)  # grad() accumulates nothing
    assert sorted(log) == [("a hook", True), ("b hook", False)]


def test_a_leaf_reached_by_none_in_a_nested_backward_runs_its_hooks_when_the_outer_pass_commits():
    a, b = leaf(), leaf()
    log = []
    a.register_post_accumulate_grad_hook(lambda p: log.append(p.grad))

    def nested(g):
        with ag.enable_grad():
            NoGradForFirst.apply(a, b).sum().backward()
        assert log == []  # not yet: the outer pass commits the nest
        return g

    c = b * 1
    c.register_hook(nested)
    c.sum().backward()
    assert log == [None] and a.grad is None


# -- .data aliases and out= ---------------------------------------------------------------------------------------
def _grid():
    return ag.arange(1.0, 25.0, dtype=ag.float64).reshape(6, 4)


@pytest.mark.parametrize("write", [
    lambda x: x.add_(x.data[0]),
    lambda x: x.data.add_(x[0]),
    lambda x: x[:2].add_(x.data[1:3]),
    lambda x: x.data[1:].add_(x[:5]),
    lambda x: x[:3].lerp_(x.data[1:4], 0.5),
    lambda x: x[:3].clamp_(min=x.data[1:4]),
    lambda x: x.index_add_(0, ag.tensor([0]), x.data[:1]),
    lambda x: x[:4].data.copy_(x.data[2:]),
    lambda x: x.__setitem__(slice(1, None), x.data[:-1]),
    lambda x: x.data.__setitem__(slice(2, None), x[:-2]),
])
def test_an_in_place_write_refuses_a_value_partly_in_its_memory_through_a_data_alias(write):
    x = _grid()
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        write(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(1.0, 25.0).reshape(6, 4))  # nothing written


def test_a_square_copied_from_its_own_transpose_through_data_is_refused():
    s = ag.arange(9.0).reshape(3, 3)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        s.data.copy_(s.t())
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        s.copy_(s.data.t())


def test_a_data_alias_of_the_very_same_memory_is_written_as_pytorch_writes_it():
    x = _grid()
    x.mul_(x.data)
    np.testing.assert_array_equal(x.numpy(), (np.arange(1.0, 25.0) ** 2).reshape(6, 4))
    a = np.arange(6.0)
    t, u = ag.from_numpy(a), ag.from_numpy(a[3:])
    t[:3].add_(u)  # the same array's memory, not overlapping
    np.testing.assert_array_equal(a, [3.0, 5.0, 7.0, 3.0, 4.0, 5.0])


@pytest.mark.parametrize("call", [
    lambda b, out: ag.add(b[:3], 1, out=out),
    lambda b, out: ag.mul(b[3:], b[:3], out=out),
    lambda b, out: ag.exp(b[:3], out=out),
    lambda b, out: ag.clamp(b[:3], 0, 5, out=out),
    lambda b, out: ag.where(b[:3] > 3, b[:3], b[3:], out=out),
    lambda b, out: ag.cat([b[:1], b[1:3]], out=out),
])
def test_out_lying_partly_in_an_input_is_refused_through_a_view_or_a_data_alias(call):
    for pick in (lambda b: b[1:4], lambda b: b.data[1:4]):
        b = _grid()
        with pytest.raises(RuntimeError, match=PARTLY_SHARED):
            call(b, pick(b))
        np.testing.assert_array_equal(b.numpy(), np.arange(1.0, 25.0).reshape(6, 4))


def test_out_on_the_very_same_memory_as_its_input_is_written():
    b = _grid()
    ag.add(b[:3], 1, out=b.data[:3])
    np.testing.assert_array_equal(b.numpy()[:3], np.arange(2.0, 14.0).reshape(3, 4))
    ag.mm(b[:4], ag.eye(4, dtype=ag.float64), out=b[1:5])  # matrix products may overlap, as PyTorch's
    assert b.shape == (6, 4)


# -- on a device ----------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_the_saved_result_numbers_and_data_aliases_behave_as_on_the_cpu(cupy):
    x = leaf(device="cuda:0")
    y = F.elu_(x * 1, 2.0)
    assert y.grad_fn.name() == "EluBackward1"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [elu_slope(v, 2.0) for v in VALUES], rtol=1e-12)
    y = F.selu_(leaf(device="cuda:0") * 1)
    y.add_(1)
    with pytest.raises(RuntimeError, match="output 0 of Elu1, is at version 2; expected version 1"):
        y.sum().backward()
    packed, out = _packed_shapes(lambda t: t * 2 / 3, leaf(device="cuda:0"))
    assert packed == []
    b = ag.arange(1.0, 25.0, dtype=ag.float64, device="cuda:0").reshape(6, 4)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        b.add_(b.data[0])
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        ag.add(b[:3], 1, out=b.data[1:4])
