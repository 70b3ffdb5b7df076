"""as_strided and as_strided_ as PyTorch 2.13 has them: views of the input's storage (strides and offset in its
elements), overlapping windows whose gradients sum, the errors PyTorch raises, and the same on cuda:0.
Literal expectations are small integers that follow by hand (the comments say how for the gradients)."""

import numpy as np
import pytest

import actorgrad as ag

F64 = ag.float64
WINDOW_WEIGHTS = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def windows(x):
    """Three overlapping windows of two over a 1-D x of four: x[0:2], x[1:3], x[2:4]."""
    return x.as_strided((3, 2), (1, 1))


def test_sliding_windows_read_the_storage_and_are_views():
    x = ag.tensor([1.0, 2.0, 3.0, 4.0])
    y = windows(x)
    assert y.tolist() == [[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]
    assert y._base is x and y.stride() == (1, 1) and y.storage_offset() == 0
    x[2] = 30.0  # a write to the base shows in every window holding it, and counts for both
    assert y.tolist() == [[1.0, 2.0], [2.0, 30.0], [30.0, 4.0]]
    assert y._version == x._version == 1
    z = ag.as_strided(x, (2,), (2,), 1)
    z.mul_(10)  # a write through the view shows in the base
    assert x.tolist() == [1.0, 20.0, 30.0, 40.0]
    assert z._version == x._version == 2 and z.storage_offset() == 1


def test_offset_and_strides_count_the_storage_of_a_view_input():
    y = ag.arange(12.0).reshape(3, 4)[1:, 1:]
    assert (y.storage_offset(), y.stride()) == (5, (4, 1))
    assert y.as_strided((2, 2), (1, 1)).tolist() == [[5.0, 6.0], [6.0, 7.0]]  # default: the input's own offset
    z = y.as_strided((2, 2), (1, 1), 0)
    assert z.tolist() == [[0.0, 1.0], [1.0, 2.0]]  # reaches storage the input does not cover
    assert z._base is y._base and z.storage_offset() == 0
    assert z.as_strided((2,), (3,), 2).tolist() == [2.0, 5.0]  # a view of a view: the same storage


def test_a_write_through_the_view_of_a_non_leaf_joins_its_history():
    a = ag.arange(6.0, dtype=F64, requires_grad=True)
    c = a * 1
    c.as_strided((2,), (2,), 1).mul_(3)
    assert c.tolist() == [0.0, 3.0, 2.0, 9.0, 4.0, 5.0] and c.grad_fn.name() == "torch::autograd::CopySlices"
    c.backward(ag.ones(6, dtype=F64))
    assert a.grad.tolist() == [1.0, 3.0, 1.0, 3.0, 1.0, 1.0]  # elements 1 and 3 were tripled


def test_node_names():
    x = ag.arange(4.0, dtype=F64, requires_grad=True) * 1
    assert windows(x).grad_fn.name() == "AsStridedBackward0"
    x.as_strided_((2,), (2,))
    assert x.grad_fn.name() == "AsStridedBackward1"


def test_overlapping_windows_sum_their_gradients_to_second_order():
    x = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, requires_grad=True)
    w = ag.tensor(WINDOW_WEIGHTS, dtype=F64)
    (g,) = ag.autograd.grad((windows(x) * w).sum(), x)
    assert g.tolist() == [1.0, 5.0, 9.0, 6.0]  # the weights on each element: 1, 2 + 3, 4 + 5, 6 (call them c)
    (g,) = ag.autograd.grad((windows(x) ** 2 * w).sum(), x, create_graph=True)
    assert g.tolist() == [2.0, 20.0, 54.0, 48.0]  # 2 c x
    (gg,) = ag.autograd.grad((g * g).sum(), x)
    assert gg.tolist() == [8.0, 400.0, 1944.0, 1152.0]  # d/dx of sum (2 c x)^2 = 8 c^2 x


def test_recorded_backward_is_differentiable_in_the_incoming_gradient():
    x = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, requires_grad=True)
    v = ag.tensor(WINDOW_WEIGHTS, dtype=F64, requires_grad=True)
    (g,) = ag.autograd.grad(windows(x), x, v, create_graph=True)
    assert g.tolist() == [1.0, 5.0, 9.0, 6.0]
    (gv,) = ag.autograd.grad((g * ag.tensor([1.0, 10.0, 100.0, 1000.0], dtype=F64)).sum(), v)
    assert gv.tolist() == [[1.0, 10.0], [10.0, 100.0], [100.0, 1000.0]]  # each weight's element's factor


def test_gradients_match_finite_differences():
    x = ag.tensor(np.linspace(-1.0, 2.0, 12).reshape(3, 4), dtype=F64, requires_grad=True)

    def f(t):
        return (t.as_strided((3, 2, 2), (2, 4, 1), 1) ** 3).sin()

    assert ag.autograd.gradcheck(f, (x,))
    assert ag.autograd.gradgradcheck(f, (x,))


def test_gradient_reaches_only_the_input_elements_of_the_storage():
    b = ag.arange(12.0, dtype=F64).requires_grad_()
    y = b[2:5].as_strided((4,), (2,), 0)  # storage 0, 2, 4, 6: only 2 and 4 belong to the input
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0]
    y.backward(ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64))
    assert b.grad.tolist() == [0.0, 0.0, 2.0, 0.0, 3.0] + [0.0] * 7
    b = ag.arange(12.0, dtype=F64).requires_grad_()
    b[2:8].view(2, 3).as_strided((2, 2), (3, 1)).backward(ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64))
    assert b.grad.tolist() == [0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 4.0] + [0.0] * 5


def test_an_expanded_input_splits_the_gradient_of_shared_memory():
    b = ag.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    b.expand(3, 2).as_strided((3, 2), (0, 1)).backward(ag.tensor([[10.0, 20.0], [1.0, 2.0], [3.0, 4.0]], dtype=F64))
    assert b.grad.tolist() == [14.0, 26.0]  # the three rows' gradients summed: 10 + 1 + 3, 20 + 2 + 4


def test_in_place_form_takes_the_geometry():
    x = ag.arange(6.0)
    assert x.as_strided_((2, 2), (2, 1), 1) is x
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert (x.stride(), x.storage_offset(), x._version, x._base) == ((2, 1), 1, 1, None)
    base = ag.arange(6.0)
    v = base[1:]
    v.as_strided_((2,), (2,))
    assert v.tolist() == [1.0, 3.0] and v._base is base and v.storage_offset() == 1
    a = ag.arange(6.0, requires_grad=True)
    c = a * 1
    ag.as_strided_(c, (2,), (2,), 1)
    c.backward(ag.tensor([1.0, 2.0]))
    assert a.grad.tolist() == [0.0, 1.0, 0.0, 2.0, 0.0, 0.0]


def test_in_place_form_refuses_a_leaf_and_its_views():
    a = ag.arange(6.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        a.as_strided_((2,), (1,))
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        a[1:].as_strided_((2,), (2,))
    assert a.shape == (6,)


def test_empty_views_need_no_storage():
    x = ag.arange(3.0)
    assert ag.as_strided(x, (0,), (1,), 5).shape == (0,)
    assert ag.as_strided(x, (), (), 2).item() == 2.0


ERRORS = [
    ((4,), (1,), None, "setStorage: sizes [4], strides [1], storage offset 0, and itemsize 4 requiring a storage size "
                       "of 16 are out of bounds for storage of size 12"),
    ((2,), (1,), 2, "setStorage: sizes [2], strides [1], storage offset 2, and itemsize 4 requiring a storage size of "
                    "16 are out of bounds for storage of size 12"),
    ((), (), 3, "setStorage: sizes [], strides [], storage offset 3, and itemsize 4 requiring a storage size of 16 "
                "are out of bounds for storage of size 12"),
    ((2,), (-1,), None, "as_strided: Negative strides are not supported at the moment, got strides: [-1]"),
    ((2,), (-1,), -1, "as_strided: Negative strides are not supported at the moment, got strides: [-1]"),
    ((2, 3), (-1,), None, "mismatch in length of strides and shape"),
    ((2,), (1,), -1, "Tensor: invalid storage offset -1"),
    ((-1,), (1,), -1, "Tensor: invalid storage offset -1"),
    ((3, -1), (1, 1), 0, "Storage size calculation overflowed with sizes=[3, -1] and strides=[1, 1]"),
]


@pytest.mark.parametrize("size, stride, offset, message", ERRORS)
def test_errors_are_pytorchs(size, stride, offset, message):
    with pytest.raises(RuntimeError) as info:
        ag.as_strided(ag.arange(3.0), size, stride, offset)
    assert str(info.value) == message


def test_bounds_count_bytes_of_the_dtype():
    with pytest.raises(RuntimeError) as info:
        ag.arange(3.0, dtype=F64).as_strided((4,), (1,))
    assert str(info.value) == (
        "setStorage: sizes [4], strides [1], storage offset 0, and itemsize 8 requiring a storage size of 32 are out "
        "of bounds for storage of size 24"
    )


@pytest.mark.parametrize("call, message", [
    (lambda x: ag.as_strided(x, 2, (1,)), "as_strided(): argument 'size' (position 2) must be tuple of ints, not int"),
    (lambda x: x.as_strided((2,), 1), "as_strided(): argument 'stride' (position 2) must be tuple of ints, not int"),
    (lambda x: x.as_strided((2.0,), (1,)),
     "as_strided(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    (lambda x: ag.as_strided(x, (2,), [True]),
     "as_strided(): argument 'stride' (position 3) must be tuple of ints, but found element of type bool at pos 0"),
    (lambda x: x.as_strided((2,), (1,), 1.0),
     "as_strided(): argument 'storage_offset' (position 3) must be int, not float"),
])
def test_argument_types_are_checked(call, message):
    with pytest.raises(TypeError) as info:
        call(ag.arange(3.0))
    assert str(info.value) == message


def test_memory_of_another_dtype_is_refused():
    x = ag.from_numpy(np.arange(4.0).view(np.float32))  # float32 elements in float64 memory
    with pytest.raises(RuntimeError, match="not one contiguous block of float32 elements"):
        x.as_strided((2,), (1,))


@pytest.mark.gpu
@pytest.mark.usefixtures("cupy")
class TestOnCuda:
    def test_windows_are_views_with_summed_gradients_to_second_order(self):
        x = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, device="cuda:0", requires_grad=True)
        y = windows(x)
        assert y.device is ag.device("cuda:0") and y._base is x
        assert y.cpu().tolist() == [[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]
        w = ag.tensor(WINDOW_WEIGHTS, dtype=F64, device="cuda:0")
        (g,) = ag.autograd.grad((y ** 2 * w).sum(), x, create_graph=True)
        # A GPU adds the overlapping windows' gradients in its own order (54 came back as 53.99999999999999).
        assert g.device is x.device and g.cpu().tolist() == pytest.approx([2.0, 20.0, 54.0, 48.0], rel=1e-12)
        (gg,) = ag.autograd.grad((g * g).sum(), x)
        assert gg.cpu().tolist() == pytest.approx([8.0, 400.0, 1944.0, 1152.0], rel=1e-12)

    def test_a_view_of_a_view_reads_the_base_storage(self):
        b = ag.arange(12.0, dtype=F64, device="cuda:0").requires_grad_()
        z = b[2:5].as_strided((4,), (2,), 0)
        assert z.cpu().tolist() == [0.0, 2.0, 4.0, 6.0] and z._base is b
        assert b.as_strided((2,), (1,), 3).storage_offset() == 3  # CuPy's strided arrays name no base
        assert z.as_strided((2,), (1,), 3).cpu().tolist() == [3.0, 4.0]
        z.backward(ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, device="cuda:0"))
        assert b.grad.cpu().tolist() == [0.0, 0.0, 2.0, 0.0, 3.0] + [0.0] * 7
