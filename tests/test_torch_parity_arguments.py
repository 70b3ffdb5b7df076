"""Arguments PyTorch refuses or warns about, refused and warned about as PyTorch does: `.T` and `.mT` off
matrices, bool tensors in abs, floor_divide and remainder, deepcopy of a tensor with a history, and operands whose
shapes don't broadcast.

Expected texts and values were read off torch 2.13 and are written out here (torch is not a test dependency).
"""

import copy
import operator
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings

T_NOT_2D = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will throw an "
    "error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor."
)


def _warnings(fn) -> tuple:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize(("shape", "reversed_shape"), [((3,), (3,)), ((2, 3, 4), (4, 3, 2))])
def test_T_off_a_matrix_warns_that_it_is_deprecated(shape, reversed_shape, monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch warns once per process
    x = ag.zeros(*shape, requires_grad=True)
    out, caught = _warnings(lambda: x.T)
    assert caught == [(UserWarning, T_NOT_2D)]
    assert out.shape == reversed_shape and out.grad_fn.name() == "PermuteBackward0"


def test_T_and_mT_of_a_matrix_do_not_warn():
    x = ag.zeros(2, 3)
    assert _warnings(lambda: (x.T.shape, x.mT.shape)) == (((3, 2), (3, 2)), [])


def test_T_of_a_0d_tensor_warns_and_is_a_view(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = ag.tensor(1.0, requires_grad=True)
    out, caught = _warnings(lambda: x.T)
    assert caught == [(UserWarning, "Tensor.T is deprecated on 0-D tensors. This function is the identity in these "
                                    "cases.")]
    assert out is not x and out.grad_fn.name() == "PermuteBackward0"


def test_mT_of_a_0d_tensor_warns_and_is_the_tensor_itself(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = ag.tensor(1.0, requires_grad=True)
    out, caught = _warnings(lambda: x.mT)
    assert caught == [(UserWarning, "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these "
                                    "cases.")]
    assert out is x


def test_mT_of_a_vector_is_refused():
    with pytest.raises(RuntimeError, match=r"^tensor\.mT is only supported on matrices or batches of matrices\. "
                                           r"Got 1-D tensor\.$"):
        _ = ag.zeros(3).mT


# -- bool tensors -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "message"), [
    (lambda b: abs(b), "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda b: ag.abs(b), "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda b: b.abs(), "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda b: b // b, "\"div_floor_cpu\" not implemented for 'Bool'"),
    (lambda b: ag.floor_divide(b, b), "\"div_floor_cpu\" not implemented for 'Bool'"),
    (lambda b: b % b, "\"remainder_cpu\" not implemented for 'Bool'"),
    (lambda b: ag.remainder(b, True), "\"remainder_cpu\" not implemented for 'Bool'"),
])
def test_bool_tensors_are_refused_with_pytorchs_kernel_error(call, message):
    with pytest.raises(NotImplementedError, match="^" + re.escape(message) + "$"):
        call(ag.tensor([True, False]))


def test_negating_a_bool_tensor_points_to_logical_not():
    message = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
               "the `~` or `logical_not()` operator instead.")
    for negate in (operator.neg, ag.neg, ag.Tensor.neg):
        with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
            negate(ag.tensor([True]))


# -- deepcopy -----------------------------------------------------------------------------------------------------
def test_deepcopy_of_a_tensor_with_a_history_is_refused():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    message = ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
               "moment.  If you were attempting to deepcopy a module, this may be because of a "
               "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
    with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
        copy.deepcopy(x * 2)


def test_deepcopy_of_a_leaf_copies_data_flag_and_grad_and_shares_nothing():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.register_hook(lambda g: g * 100)
    y = copy.deepcopy(x)
    assert y.is_leaf and y.requires_grad and y.tolist() == [1.0, 2.0] and y.grad.tolist() == [3.0, 3.0]
    assert y.grad is not x.grad
    y.grad = None
    (y * 1).sum().backward()  # neither x's hook nor x's gradient accumulator comes along
    assert y.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [3.0, 3.0]
    with ag.no_grad():
        y.mul_(10)
    assert x.tolist() == [1.0, 2.0] and x._version == 0


def test_deepcopy_keeps_type_subclass_attributes_and_shared_tensors():
    class Tagged(ag.Tensor):
        pass

    t = Tagged(np.zeros(2))
    t.tag = [1]
    copied = copy.deepcopy(t)
    assert type(copied) is Tagged and copied.tag == [1] and copied.tag is not t.tag
    p = ag.nn.Parameter(ag.zeros(2))
    a, b = copy.deepcopy([p, p])
    assert type(a) is ag.nn.Parameter and a is b and a is not p and a.requires_grad
    base = ag.zeros(3)
    view = copy.deepcopy(base[1:])
    assert view._base is None and not view.requires_grad


# -- operands that don't broadcast --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge, ag.eq, ag.ne, ag.lt, ag.le, ag.gt,
    ag.ge, operator.add, operator.mul, ag.maximum, ag.logical_and,
])
def test_operands_that_do_not_broadcast_raise_pytorchs_text(op):
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 0$"):
        op(ag.zeros(2), ag.zeros(3))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 0$"):
        op(ag.zeros(2, 3), ag.zeros(4, 3))
