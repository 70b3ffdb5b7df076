"""Ops and tensor protocols that behave as PyTorch's: grad mode switched by a plain call, int()/index() of a
tensor, `//` and `%`, requires_grad_ on a non-leaf, and pow's gradients where the base or the exponent is 0.

Expected values are small closed forms that follow by hand (Python's own // and % for the integer cases); the
conventions at zeros, infs and NaNs were read off torch 2.13 (torch is not a test dependency). Gradients are also
checked against central finite differences in float64 where the function is smooth.
"""

import math

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import grad

FD = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}  # tighter than gradcheck's defaults, as in test_op_gradients.py


def _leaf(values) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=True)


def _values(t: ag.Tensor) -> list:
    return t.detach().numpy().tolist()


# -- grad mode -----------------------------------------------------------------------------------------------------
def test_set_grad_enabled_called_alone_switches_the_mode_until_switched_back():
    x = ag.tensor(1.0, requires_grad=True)
    try:
        ag.set_grad_enabled(False)
        assert not ag.is_grad_enabled()
        assert (x * 2).grad_fn is None
        with ag.set_grad_enabled(True):
            assert (x * 2).grad_fn is not None
        assert not ag.is_grad_enabled()  # the block gives back the mode from before it
    finally:
        ag.set_grad_enabled(True)
    assert (x * 2).grad_fn is not None

    @ag.set_grad_enabled(False)
    def recording() -> bool:
        return ag.is_grad_enabled()

    assert ag.is_grad_enabled()  # decorating switches nothing, only each call does
    assert not recording()
    assert ag.is_grad_enabled()


async def test_set_grad_enabled_called_alone_in_one_task_leaves_another_alone():
    switched = trio.Event()
    seen = {}

    async def quiet():
        ag.set_grad_enabled(False)
        seen["quiet"] = ag.is_grad_enabled()
        switched.set()

    async def recording():
        await switched.wait()
        seen["recording"] = ag.is_grad_enabled()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(quiet)
        nursery.start_soon(recording)
    assert seen == {"quiet": False, "recording": True}
    assert ag.is_grad_enabled()


# -- int() and index() ---------------------------------------------------------------------------------------------
def test_int_and_index_of_one_element_tensors():
    assert int(ag.tensor(3)) == 3
    assert int(ag.tensor(-3.7)) == -3  # truncates, as int() of a float
    assert int(ag.tensor([1.0, 5.0, 2.0]).argmax()) == 1
    assert [10, 20, 30][ag.tensor(1)] == 20
    assert [10, 20, 30][ag.tensor([2])] == 30
    assert [10, 20, 30][ag.tensor(True)] == 20
    assert "abcdef"[ag.tensor(1) : ag.tensor(3)] == "bc"
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(ag.ones(2))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(ag.ones(2))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ag.tensor(1.0)]
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ag.tensor([0, 1])]


# -- // and % ------------------------------------------------------------------------------------------------------
def test_floor_divide_and_remainder_values_and_dtypes():
    a, b = ag.tensor([7, -7, 7, -7]), ag.tensor([2, 2, -2, -2])
    cases = [
        (a // b, ag.int64, [3, -4, -4, 3]),
        (a % b, ag.int64, [1, 1, -1, -1]),  # takes the divisor's sign, as Python's %
        (ag.tensor([7.5, -7.0]) // ag.tensor([2.0, -2.0]), ag.float32, [3.0, 3.0]),
        (ag.tensor([7.5, -7.5]) % 2, ag.float32, [1.5, 0.5]),
        (ag.tensor([7, -7]) // 2.5, ag.float32, [2.0, -3.0]),
        (ag.tensor([7, -7]) % 2.5, ag.float32, [2.0, 0.5]),
        (7 // ag.tensor([2, -3]), ag.int64, [3, -3]),
        (7 % ag.tensor([2, -3]), ag.int64, [1, -2]),
        (7.5 % ag.tensor([2, -3]), ag.float32, [1.5, -1.5]),
        (ag.tensor([5, -5], dtype=ag.int32) // ag.tensor(2), ag.int32, [2, -3]),
        (ag.tensor([5.5, -5.5], dtype=ag.float64) % ag.tensor(2.0), ag.float64, [1.5, 0.5]),
        (ag.tensor([True, False]) // 2, ag.int64, [0, 0]),
        (ag.tensor([5.0, -5.0]) % math.inf, ag.float32, [5.0, math.inf]),
        (ag.tensor([5.0, -5.0]) // math.inf, ag.float32, [0.0, -1.0]),
        (ag.floor_divide(ag.tensor([5.0, 6.0]), ag.tensor([2.0, 3.0])), ag.float32, [2.0, 2.0]),
        (ag.remainder(5, ag.tensor([3.0])), ag.float32, [2.0]),
        (ag.tensor([5, -5]).remainder(3), ag.int64, [2, 1]),
        (ag.tensor([5, -5]).floor_divide(ag.tensor([3])), ag.int64, [1, -2]),
        (ag.tensor([[5.0], [-5.0]]) % ag.tensor([3.0, -3.0, 4.0]), ag.float32, [[2.0, -1.0, 1.0], [1.0, -2.0, 3.0]]),
    ]
    for out, dtype, expected in cases:
        assert out.dtype == dtype and out.tolist() == expected, (out, expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((ag.tensor([1.0, -1.0, 0.0]) // 0).numpy(), [math.inf, -math.inf, math.nan])
        np.testing.assert_array_equal((ag.tensor([1.0, -1.0]) % 0).numpy(), [math.nan, math.nan])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ag.tensor([1, 2]) // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ag.tensor([1, 2]) % ag.tensor([0, 1])
    with pytest.raises(NotImplementedError, match="^\"div_floor_cpu\" not implemented for 'Bool'$"):
        ag.tensor([True, False]) // ag.tensor([True, True])


def test_remainder_gradients_match_pytorch_and_finite_differences():
    x, y = _leaf([5.5, -3.2, 4.0]), _leaf([2.0, 1.5, -1.5])
    out = x % y
    assert out.grad_fn.name() == "RemainderBackward1"
    gx, gy = grad(out.sum(), (x, y), create_graph=True)
    assert _values(gx) == [1.0, 1.0, 1.0]
    assert _values(gy) == [-2.0, 3.0, 3.0]  # -floor(x / y)
    assert _values(grad(gy.sum(), (x, y))[0]) == [0.0, 0.0, 0.0]  # floor's gradient is zero, as in PyTorch
    assert (x % 2).grad_fn.name() == "RemainderBackward0"
    assert ag.autograd.gradcheck(lambda a, b: a % b, (x, y), **FD)
    assert ag.autograd.gradgradcheck(lambda a, b: a % b, (x, y), **FD)
    assert ag.autograd.gradcheck(lambda a: a % 2.5, (x,), **FD)


def test_floor_divide_and_number_remainder_have_no_derivative_as_in_pytorch():
    x, y = _leaf([5.5, -3.2]), _leaf([2.0, 1.5])
    for out, op in ((x // y, "floor_divide"), (x // 2, "floor_divide"), (7 % y, "remainder")):
        assert out.requires_grad and out.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
            out.sum().backward()


# -- requires_grad_ ------------------------------------------------------------------------------------------------
def test_requires_grad_true_on_a_non_leaf_is_a_no_op():
    y = ag.tensor(2.0, requires_grad=True) * 2
    node = y.grad_fn
    assert y.requires_grad_(True) is y
    assert y.requires_grad_() is y
    assert y.requires_grad and y.grad_fn is node
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


# -- pow at zero ---------------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's log(0) and 0 * inf in the branches masked away
def test_pow_gradients_where_base_or_exponent_is_zero():
    x, y = ag.tensor([0.0], requires_grad=True), ag.tensor([0.0], requires_grad=True)
    (x**y).backward()
    assert x.grad.tolist() == [0.0] and y.grad.tolist() == [0.0]

    # PyTorch's values; with x ** 0 constant in x, finite differences agree on the base's gradient
    x, y = _leaf([0.0, 0.0, 2.0, 0.0]), _leaf([0.0, 2.0, 0.0, 1.0])
    gx, gy = grad((x**y).sum(), (x, y))
    assert _values(gx) == [0.0, 0.0, 0.0, 1.0]
    assert _values(gy) == [0.0, 0.0, math.log(2.0), 0.0]
    assert ag.autograd.gradcheck(lambda a: a ** y.detach(), (x,), **FD)

    y = _leaf([0.0, 1.0, -1.0])
    assert _values(grad((0 ** y).sum(), y)[0]) == [0.0, 0.0, -math.inf]
    assert np.isnan(_values(grad(((-2.0) ** y).sum(), y)[0])).all()
    base, exponent = _leaf([-1.5, -2.0]), _leaf([2.0, 3.0])
    gx, gy = grad((base**exponent).sum(), (base, exponent))
    assert _values(gx) == [-3.0, 12.0] and np.isnan(_values(gy)).all()  # log of a negative base

    assert ag.autograd.gradcheck(lambda e: 0**e, (_leaf([0.5, 1.0, 2.5]),), **FD)
    assert ag.autograd.gradgradcheck(lambda e: 2.5**e, (_leaf([-1.0, 0.5, 2.0]),), **FD)
    assert ag.autograd.gradgradcheck(lambda a, b: a**b, (_leaf([0.5, 1.5, 2.0]), _leaf([0.7, 2.0, -1.3])), **FD)


def test_python_protocols_on_tensors_as_in_pytorch():
    t = ag.tensor([[1, 2], [3, 4]])
    assert 2 in t and 7 not in t
    assert [row.tolist() for row in t] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(ag.tensor(1.0))
    assert f"{ag.tensor(1.2345):.2f}" == "1.23" and f"{ag.tensor(3)}" == "3"
    assert f"{t}" == repr(t)


def test_tensor_of_a_list_of_tensors_and_randint_with_size_by_keyword():
    assert ag.tensor([ag.tensor(1.0), ag.tensor(2.0)]).tolist() == [1.0, 2.0]
    mixed = ag.tensor([ag.tensor(1), 2])
    assert mixed.tolist() == [1, 2] and mixed.dtype == ag.int64
    assert ag.tensor([ag.tensor(1.5, dtype=ag.float64)]).dtype == ag.float64
    with pytest.raises(ValueError, match="only one element tensors"):
        ag.tensor([ag.ones(2)])
    assert ag.randint(10, size=(3,)).shape == (3,)
