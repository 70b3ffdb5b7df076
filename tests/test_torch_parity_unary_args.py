"""Unary forms PyTorch has (`+t`, positive, negative, sgn, signbit, absolute and the in-place abs_, neg_, sign_,
sgn_ ...), PyTorch's argument errors of the list-taking and creation functions (cat, stack and their kin,
atleast_*, split, chunk, unbind, one_hot, `new_*`), and deepcopy keeping shared memory shared.

Expected texts were read off torch 2.13 (torch is not a test dependency); expected values are small closed forms
(the comments say how they follow).
"""

import copy
import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

EPS, ATOL, RTOL = 1e-6, 1e-7, 1e-5
NAN = math.nan


def _raises(kind, text):
    return pytest.raises(kind, match="^" + re.escape(text) + "$")


# -- positive -------------------------------------------------------------------------------------------------------
def test_positive_returns_the_tensor_itself_with_its_history():
    x = ag.tensor([1.0, -2.0], requires_grad=True)
    y = x * 2
    assert (+x) is x and ag.positive(x) is x and x.positive() is x and (+x).grad_fn is None
    assert (+y) is y and (+y).grad_fn.name() == "MulBackward0"
    i = ag.tensor([1, 2])
    assert (+i) is i


@pytest.mark.parametrize("fn", [lambda t: +t, lambda t: ag.positive(t), lambda t: t.positive()])
def test_positive_of_a_bool_tensor_is_refused(fn):
    with _raises(RuntimeError, "The `+` operator, on a bool tensor is not supported."):
        fn(ag.tensor([True, False]))


# -- negative, absolute, sgn, signbit -------------------------------------------------------------------------------
@pytest.mark.parametrize(("fn", "node"), [
    (lambda t: ag.negative(t), "NegBackward0"), (lambda t: t.negative(), "NegBackward0"),
    (lambda t: ag.absolute(t), "AbsBackward0"), (lambda t: t.absolute(), "AbsBackward0"),
    (lambda t: ag.sgn(t), "SgnBackward0"), (lambda t: t.sgn(), "SgnBackward0"),
])
def test_aliases_record_pytorchs_node_and_differentiate_twice(fn, node):
    x = ag.tensor([1.5, -2.0, 0.5], dtype=ag.float64, requires_grad=True)  # away from kinks
    assert fn(x).grad_fn.name() == node
    assert ag.autograd.gradcheck(fn, [x], eps=EPS, atol=ATOL, rtol=RTOL)
    assert ag.autograd.gradgradcheck(fn, [x], eps=EPS, atol=ATOL, rtol=RTOL)


def test_negative_and_absolute_values_and_bool_errors():
    x = ag.tensor([1.0, -2.0, 0.0])
    assert ag.negative(x).tolist() == [-1.0, 2.0, -0.0] and ag.absolute(x).tolist() == [1.0, 2.0, 0.0]
    b = ag.tensor([True, False])
    with pytest.raises(RuntimeError, match="^Negation, the `-` operator, on a bool tensor is not supported"):
        ag.negative(b)
    with _raises(NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"):
        ag.absolute(b)


def test_sgn_is_sign_for_real_tensors():
    out = ag.sgn(ag.tensor([2.0, -3.0, 0.0, NAN]))
    assert out.tolist() == [1.0, -1.0, 0.0, 0.0]
    ints = ag.sgn(ag.tensor([5, -2, 0]))
    assert ints.dtype == ag.int64 and ints.tolist() == [1, -1, 0]
    bools = ag.sgn(ag.tensor([True, False]))
    assert bools.dtype == ag.bool and bools.tolist() == [True, False]
    x = ag.tensor([1.0, -2.0], requires_grad=True)
    (g,) = ag.autograd.grad(ag.sgn(x).sum(), x)
    assert g.tolist() == [0.0, 0.0]


def test_signbit_reads_the_sign_bit_and_has_no_gradient():
    x = ag.tensor([-0.0, 0.0, NAN, -NAN, -math.inf, 3.0], dtype=ag.float16, requires_grad=True)
    out = ag.signbit(x)
    assert out.dtype == ag.bool and out.tolist() == [True, False, False, True, True, False]
    assert not out.requires_grad and out.grad_fn is None and x.signbit().tolist() == out.tolist()
    assert ag.signbit(ag.tensor([1, -1, 0])).tolist() == [False, True, False]
    assert ag.signbit(ag.tensor([True, False])).tolist() == [False, False]
    assert ag.signbit(ag.tensor([1, 255], dtype=ag.uint8)).tolist() == [False, False]
    zero_d = ag.signbit(ag.tensor(-2.0))  # an array, not a numpy scalar: in-place ops write it
    assert zero_d.logical_not_().tolist() is False


# -- in-place forms -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "node", "values", "grad"), [
    ("abs_", "AbsBackward0", [1.5, 2.0, 0.5], [3.0, -4.0, 1.0]),
    ("absolute_", "AbsBackward0", [1.5, 2.0, 0.5], [3.0, -4.0, 1.0]),
    ("neg_", "NegBackward0", [-1.5, 2.0, -0.5], [3.0, -4.0, 1.0]),
    ("negative_", "NegBackward0", [-1.5, 2.0, -0.5], [3.0, -4.0, 1.0]),
    ("sign_", "SignBackward0", [1.0, -1.0, 1.0], [0.0, 0.0, 0.0]),
    ("sgn_", "SgnBackward0", [1.0, -1.0, 1.0], [0.0, 0.0, 0.0]),
])
def test_in_place_unary_forms_record_pytorchs_node(name, node, values, grad):
    x = ag.tensor([1.5, -2.0, 0.5], dtype=ag.float64, requires_grad=True)
    y = x * 1
    assert getattr(y, name)() is y
    assert y.grad_fn.name() == node and y.tolist() == values
    (g,) = ag.autograd.grad((y * y).sum(), x)
    assert g.tolist() == grad  # d f(x)^2 = 2 f(x) f'(x): 2 x for abs and neg, 0 for sign
    fn = lambda t: getattr(t * 1, name)()  # noqa: E731
    assert ag.autograd.gradcheck(fn, [x], eps=EPS, atol=ATOL, rtol=RTOL)
    assert ag.autograd.gradgradcheck(fn, [x], eps=EPS, atol=ATOL, rtol=RTOL)


def test_abs_in_place_differentiates_through_the_values_it_overwrote():
    x = ag.tensor([1.5, -2.0, 0.5], dtype=ag.float64, requires_grad=True)
    y = x * 2
    y.abs_()
    (g,) = ag.autograd.grad((y ** 3).sum(), x, create_graph=True)  # |2 x|^3 = 8 |x|^3: 24 x |x|, then 48 |x|
    assert g.grad_fn.name() == "MulBackward0" and g.tolist() == [54.0, -96.0, 6.0]
    (g2,) = ag.autograd.grad(g.sum(), x)
    assert g2.tolist() == [72.0, 96.0, 24.0]
    y = x * 1
    y[1:].abs_()  # through a view: the base's history becomes CopySlices
    assert y.grad_fn.name() == "torch::autograd::CopySlices" and y.tolist() == [1.5, 2.0, 0.5]
    (g,) = ag.autograd.grad((y * y).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, -4.0, 1.0]
    assert ag.autograd.grad(g.sum(), x)[0].tolist() == [2.0, 2.0, 2.0]


def test_in_place_unary_forms_refuse_what_pytorch_refuses():
    leaf = ag.tensor([1.0, -2.0], requires_grad=True)
    with _raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation."):
        leaf.abs_()
    b = ag.tensor([True, False])
    with pytest.raises(RuntimeError, match="^Negation, the `-` operator, on a bool tensor is not supported"):
        b.neg_()
    with _raises(NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"):
        b.abs_()
    assert b.sgn_().tolist() == [True, False] and b.sign_().tolist() == [True, False]
    i = ag.tensor([3, -4])
    assert i.sign_().tolist() == [1, -1] and i.dtype == ag.int64


# -- argument errors ------------------------------------------------------------------------------------------------
T = ag.tensor([1.0, 2.0])


@pytest.mark.parametrize(("fn", "kind", "text"), [
    (lambda: F.one_hot(1.0), TypeError, "one_hot(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.one_hot([1]), TypeError, "one_hot(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ag.cat([1.0]), TypeError, "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.cat((T, None)), TypeError, "expected Tensor as element 1 in argument 0, but got NoneType"),
    (lambda: ag.cat(1.0), TypeError, "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not float"),
    (lambda: ag.cat(T), TypeError, "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: ag.cat(t for t in (T, T)), TypeError,
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not generator"),
    (lambda: ag.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: ag.concat(1.0), TypeError,
     "concat(): argument 'tensors' (position 1) must be tuple of Tensors, not float"),
    (lambda: ag.concatenate(None), TypeError,
     "concatenate(): argument 'tensors' (position 1) must be tuple of Tensors, not NoneType"),
    (lambda: ag.concatenate([1.0]), TypeError, "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.stack(1.0), TypeError,
     "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not float"),
    (lambda: ag.stack(T), TypeError,
     "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: ag.stack([T, 1]), TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    (lambda: ag.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: ag.hstack(1.0), TypeError,
     "hstack(): argument 'tensors' (position 1) must be tuple of Tensors, not float"),
    (lambda: ag.hstack([1.0]), TypeError, "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.vstack([T, 1.0]), TypeError, "expected Tensor as element 1 in argument 0, but got float"),
    (lambda: ag.dstack([1.0]), TypeError, "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.column_stack("ab"), TypeError,
     "column_stack(): argument 'tensors' (position 1) must be tuple of Tensors, not str"),
    (lambda: ag.row_stack(1.0), TypeError,
     "row_stack(): argument 'tensors' (position 1) must be tuple of Tensors, not float"),
    (lambda: ag.row_stack([]), RuntimeError, "vstack expects a non-empty TensorList"),
    (lambda: ag.atleast_1d([1.0]), TypeError, "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.atleast_2d(T, 1.0), TypeError, "expected Tensor as element 1 in argument 0, but got float"),
    (lambda: ag.atleast_3d((T, [T])), TypeError, "expected Tensor as element 1 in argument 0, but got list"),
    (lambda: ag.atleast_1d(1.0), TypeError,
     "atleast_1d() received an invalid combination of arguments - got (float), but expected one of:\n"
     " * (Tensor input)\n      didn't match because some of the arguments have invalid types: (!float!)\n"
     " * (tuple of Tensors tensors)\n      didn't match because some of the arguments have invalid types: (!float!)\n"),
    # torch's Python split meets an AttributeError ('float' object has no attribute 'split'); this names it
    (lambda: ag.split(1.0, 1), TypeError, "split(): argument 'tensor' (position 1) must be Tensor, not float"),
    (lambda: ag.chunk(1.0, 0), TypeError, "chunk(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.unbind([1.0]), TypeError, "unbind(): argument 'input' (position 1) must be Tensor, not list"),
])
def test_arguments_of_the_wrong_kind_get_pytorchs_errors(fn, kind, text):
    with _raises(kind, text):
        fn()


def test_lists_and_tuples_of_tensors_still_join():
    assert ag.cat((T, T)).tolist() == [1.0, 2.0, 1.0, 2.0] and ag.concat([T]).tolist() == [1.0, 2.0]
    assert ag.stack([T, T]).shape == (2, 2) and ag.row_stack((T, T)).shape == (2, 2)
    one, two = ag.atleast_2d([T, T])
    assert one.shape == two.shape == (1, 2) and ag.atleast_1d() == ()


@pytest.mark.parametrize(("fn", "text"), [
    (lambda: T.new_full(2, 1.0), "new_full(): argument 'size' (position 1) must be tuple of ints, not int"),
    (lambda: T.new_full([2], "a"), "new_full(): argument 'fill_value' (position 2) must be Number, not str"),
    (lambda: T.new_zeros(None), "new_zeros(): argument 'size' (position 1) must be tuple of ints, not NoneType"),
    (lambda: T.new_zeros(size=3), "new_zeros(): argument 'size' must be tuple of ints, not int"),
    (lambda: T.new_ones(), "new_ones() missing 1 required positional arguments: \"size\""),
    (lambda: T.new_empty(2, size=(2,)), "new_empty() got multiple values for argument 'size'"),
])
def test_new_methods_name_themselves_in_errors(fn, text):
    with _raises(TypeError, text):
        fn()


# -- deepcopy -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("view_first", [False, True])
def test_deepcopy_keeps_a_view_on_the_copy_of_its_base(view_first):
    base = ag.zeros(3)
    pair = [base[1:], base] if view_first else [base, base[1:]]
    copied = copy.deepcopy(pair)
    new_view, new_base = copied if view_first else copied[::-1]
    new_base[1] = 5
    assert new_view.tolist() == [5.0, 0.0] and base.tolist() == [0.0, 0.0, 0.0]
    assert new_view._base is None and new_view.storage_offset() == 1  # a plain tensor on shared memory, as torch's


def test_deepcopy_shares_memory_among_views_detach_and_transposes():
    base = ag.zeros(2, 3)
    first, second, detached, turned = copy.deepcopy([base[0], base[:, 1], base.detach(), base.t()])
    first[1] = 7
    assert second.tolist() == [7.0, 0.0] and detached.tolist() == [[0.0, 7.0, 0.0], [0.0, 0.0, 0.0]]
    assert turned.stride() == (1, 3) and turned.tolist() == [[0.0, 0.0], [7.0, 0.0], [0.0, 0.0]]


def test_deepcopy_of_a_view_alone_copies_its_storage_and_keeps_its_flags():
    base = ag.zeros(3, requires_grad=True)
    with ag.no_grad():
        view = base[1:]
    copied = copy.deepcopy(view)
    assert copied.is_leaf and copied.requires_grad and copied.storage_offset() == 1
    expanded = copy.deepcopy(ag.zeros(3).expand(2, 3))
    assert expanded.stride() == (0, 1)
    with _raises(RuntimeError, "unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation."):
        expanded.add_(1)
    array = np.zeros(4)
    array.flags.writeable = False
    with pytest.warns(UserWarning):
        from_read_only = ag.from_numpy(array)
    writable = copy.deepcopy(from_read_only[1:])
    assert writable.add_(1).tolist() == [1.0, 1.0, 1.0]


def test_cdist_names_the_argument_that_is_not_a_tensor():
    t = ag.ones(2, 3)
    with pytest.raises(TypeError, match=r"^cdist\(\): argument 'x1' \(position 1\) must be Tensor, not float$"):
        ag.cdist(1.0, t)
    with pytest.raises(TypeError, match=r"^cdist\(\): argument 'x2' \(position 2\) must be Tensor, not float$"):
        ag.cdist(ag.ones(3), 1.0)
