"""In-place ops and views where a fuzzer of random short programs (views, in-place writes, no_grad blocks) run
against PyTorch found actorgrad behaving differently: a view made with grad mode on before its base required grad,
views made in no_grad mode of a tensor that did not require grad, pieces of split made without a history, views of
a leaf as another dtype, the result an in-place op's node saves (sigmoid_, exp_ ...) changed again before backward,
operands lying in the memory an in-place op writes, and the node of `x[...] = value` with a zero-dim value."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden."
)
NO_GRAD_VIEW_OF_VIEW = "Output 0 of Slice is a view of a view which was created in no_grad mode"
PARTLY_SHARED = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single"
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _values(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


# -- a view made with grad mode on, before its base required grad ---------------------------------------------------
def test_a_write_through_a_view_made_before_its_base_required_grad_takes_the_base_history():
    c = _values(3, 1)
    w = ag.tensor(_values(2), requires_grad=True)
    b = ag.zeros(3, dtype=ag.float64)
    v = b[:2]  # grad mode on, but b does not require grad yet: no history
    v.add_(w)
    assert b.grad_fn.name() == "torch::autograd::CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    v.sigmoid_()  # was refused as a change of a view made in no_grad mode
    (b * ag.tensor(c)).sum().backward()
    s = 1 / (1 + np.exp(-w.detach().numpy()))
    np.testing.assert_allclose(w.grad.numpy(), c[:2] * s * (1 - s), rtol=1e-12)


def test_a_view_made_before_its_base_changed_in_place_with_a_gradient_reads_its_history_from_the_base():
    c = _values(3, 1)
    w = ag.tensor(_values(3), requires_grad=True)
    b = ag.zeros(3, dtype=ag.float64)
    v = b[1:]
    b.add_(w)
    assert v.grad_fn.name() == "AsStridedBackward0"  # was an error node
    v.exp_()
    (b * ag.tensor(c)).sum().backward()
    x = w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), c * np.array([1, np.exp(x[1]), np.exp(x[2])]), rtol=1e-12)

    def program(w):
        b = ag.zeros(2, 3, dtype=ag.float64)
        v = b.t()
        b.add_(w)
        v.exp_()
        return b

    assert gradcheck(program, [ag.tensor(_values((2, 3)), requires_grad=True)])


# -- views made in no_grad mode of a tensor that does not require grad -----------------------------------------------
def test_a_no_grad_view_of_a_tensor_without_grad_refuses_a_write_that_needs_a_gradient():
    b = ag.ones(2, 3, dtype=ag.float64)
    with ag.no_grad():
        v = b[0]
    v2 = v[1:]  # a view of it made with grad mode on is one too, as in PyTorch
    w = ag.tensor(_values(3), requires_grad=True)
    for view, value in ((v, w), (v2, w[1:])):
        with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
            view.add_(value)
    v.add_(2.0)  # a write that needs no gradient goes through
    np.testing.assert_array_equal(b.numpy(), [[3, 3, 3], [1, 1, 1]])
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):  # `v[0:2] = w` writes through a view of v, unrecorded
        v[0:2] = w[:2]


def test_a_write_through_an_index_of_a_no_grad_view_names_a_view_of_a_view_only_when_it_has_a_history():
    for requires_grad, message in ((False, NO_GRAD_VIEW), (True, NO_GRAD_VIEW_OF_VIEW)):
        b = ag.ones(3, 2, dtype=ag.float64, requires_grad=requires_grad) * 1
        with ag.no_grad():
            v = b.t()
        with pytest.raises(RuntimeError, match=message):
            v[0:1] = ag.ones(3, dtype=ag.float64, requires_grad=True)


def test_a_piece_of_split_made_without_a_history_refuses_a_write_that_needs_a_gradient():
    multi_output = "This view is the output of a function that returns multiple views."
    w = ag.tensor(_values(3), requires_grad=True)
    for pieces in (lambda b: b.split(2), lambda b: b.chunk(2), lambda b: b.unbind(0)):
        b = ag.ones(4, 3, dtype=ag.float64)
        piece = pieces(b)[0]
        for view in (piece, piece[None]):  # a view of the piece takes its creation mode
            with pytest.raises(RuntimeError, match=f"is being modified inplace with grad mode enabled. {multi_output}"):
                view.add_(w)
        piece.add_(1.0)  # a write that needs no gradient goes through
        assert b.numpy()[0, 0] == 2
        b.mul_(w)  # its base takes a history: the piece's, refused
        with pytest.raises(RuntimeError, match=f"its base or another view of its base has been modified inplace with "
                                               f"grad mode enabled. {multi_output}"):
            (piece * 1).sum().backward()


# -- views of another dtype ----------------------------------------------------------------------------------------
def test_a_view_of_a_leaf_as_another_dtype_is_refused_as_a_view_of_a_leaf():
    z = ag.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    for part in (z.real, z.imag, ag.view_as_real(z)):
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used"):
            part.exp_()


# -- an in-place op's saved result ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, node", [("sigmoid_", "Sigmoid"), ("exp_", "Exp"), ("tanh_", "Tanh"),
                                        ("relu_", "Relu"), ("sqrt_", "Sqrt"), ("reciprocal_", "Reciprocal")])
def test_a_change_of_the_result_an_in_place_op_saved_is_refused_at_backward(name, node):
    message = (f"{MODIFIED}: \\[actorgrad.float64 \\[3\\]\\], which is output 0 of {node}, is at version 2; "
               "expected version 1")
    for change in (lambda y: y.add_(1), lambda y: y[1:].mul_(2), lambda y: y.detach().zero_()):
        x = ag.tensor(_values(3), requires_grad=True)
        y = x * 1
        getattr(y, name)()
        change(y)
        with pytest.raises(RuntimeError, match=message):
            y.sum().backward()
    x = ag.tensor(_values(3), requires_grad=True)
    assert gradcheck(lambda x: getattr(x * 1, name)(), [x])


def test_a_result_saved_for_two_inputs_keeps_its_double_backward():
    x = ag.tensor(_values(3), requires_grad=True)
    o = ag.tensor(_values(3, 1), requires_grad=True)
    assert gradgradcheck(lambda x, o: (x * 1).hypot_(o), [x, o])
    y = x * 1
    y.hypot_(o)
    y.add_(1)
    with pytest.raises(RuntimeError, match="output 0 of Hypot, is at version 2; expected version 1"):
        y.sum().backward()


# -- the node of a whole write ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [slice(None), Ellipsis, (slice(None), slice(None))], ids=repr)
def test_a_whole_write_of_a_zero_dim_value_records_a_fill(index):
    x = ag.tensor(_values((2, 3)), requires_grad=True)
    value = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    y = x * 1
    y[index] = value
    assert y.grad_fn.name() == "FillBackward3"  # PyTorch fills with a zero-dim value (or a number)
    c = _values((2, 3), 2)
    (y * ag.tensor(c)).sum().backward()
    np.testing.assert_allclose(value.grad.numpy(), c.sum(), rtol=1e-12)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    y = x * 1
    y[index] = 2.0
    assert y.grad_fn.name() == "FillBackward3"
    y[index] = ag.ones(3, dtype=ag.float64, requires_grad=True)  # a value of dims: a copy
    assert y.grad_fn.name() == "torch::autograd::CopyBackwards"
    scalar = ag.tensor(1.0, dtype=ag.float64, requires_grad=True) * 1
    scalar[...] = value  # a zero-dim tensor: a copy too
    assert scalar.grad_fn.name() == "torch::autograd::CopyBackwards"


# -- operands in the memory written ---------------------------------------------------------------------------------
@pytest.mark.parametrize("write", [
    lambda x: x.__iadd__(x[3]),
    lambda x: x.add_(x[0, 0]),
    lambda x: x[:3, :3].add_(x[:3, :3].t()),
    lambda x: x.clamp_(min=x[0]),
    lambda x: x.scatter_(1, ag.zeros(4, 1, dtype=ag.int64), x),
    lambda x: x.index_add_(0, ag.tensor([0, 1, 2, 3]), x),
    lambda x: x.index_copy_(0, ag.tensor([0, 1, 2, 3]), x),
    lambda x: x.__setitem__(ag.tensor([0, 1]), x[1, 1]),
], ids=["iadd_row", "add_0d", "add_transposed", "clamp_row", "scatter_self", "index_add_self", "index_copy_self",
        "index_put_0d"])
def test_an_operand_in_the_memory_written_is_refused(write):
    x = ag.tensor(_values((4, 3)))
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        write(x)
    np.testing.assert_array_equal(x.numpy(), _values((4, 3)))  # nothing written


def test_operands_read_whole_or_as_numbers_from_the_memory_written_are_taken():
    v = _values((4, 3))
    cases = [
        (lambda x: x.mul_(x), v * v),
        (lambda x: x.fill_(x[1, 2]), np.full((4, 3), v[1, 2])),
        (lambda x: x.masked_fill_(ag.tensor(v > 1), x[0, 1]), np.where(v > 1, v[0, 1], v)),
        (lambda x: x.index_fill_(0, ag.tensor([2]), x[0, 0]), np.concatenate([v[:2], np.full((1, 3), v[0, 0]), v[3:]])),
        (lambda x: x.__setitem__(slice(0, 2), x[1, 1]), np.concatenate([np.full((2, 3), v[1, 1]), v[2:]])),
        (lambda x: x.__setitem__(ag.tensor(v > 1), x[2, 0]), np.where(v > 1, v[2, 0], v)),
        (lambda x: x[0].__setitem__((Ellipsis, None, slice(None)), x[0].reshape(1, 3)), v),  # the same memory
    ]
    for write, expected in cases:
        x = ag.tensor(v)
        write(x)
        np.testing.assert_array_equal(x.numpy(), expected)


# -- on CUDA --------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda(cupy):
    w = ag.tensor(_values(2), device="cuda", requires_grad=True)
    b = ag.zeros(3, dtype=ag.float64, device="cuda")
    v = b[:2]
    v.add_(w)
    v.sigmoid_()
    b.sum().backward()
    s = 1 / (1 + np.exp(-_values(2)))
    np.testing.assert_allclose(w.grad.cpu().numpy(), s * (1 - s), rtol=1e-12)
    y = w * 1
    y.exp_()
    y.add_(1)
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 2; expected version 1"):
        y.sum().backward()
    x = ag.tensor(_values((4, 3)), device="cuda")
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        x += x[3]
