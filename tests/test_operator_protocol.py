"""Tensor operators follow Python's binary-operator protocol: an operand they cannot take gets NotImplemented, so
Python asks the other operand (its reflected method) and otherwise raises its own "unsupported operand" error, as
PyTorch's operators do. The function forms (`actorgrad.add(t, x)`) still raise with the operand named."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest

import actorgrad as ag

BINARY = {
    "add": ("+", "__radd__"), "sub": ("-", "__rsub__"), "mul": ("*", "__rmul__"), "truediv": ("/", "__rtruediv__"),
    "floordiv": ("//", "__rfloordiv__"), "mod": ("%", "__rmod__"), "pow": ("** or pow()", "__rpow__"),
    "matmul": ("@", "__rmatmul__"),
}


def _answer(name: str):
    return lambda self, other: (name, other)


# An operand type of its own that answers every reflected operator with the operator's name.
Reflecting = type("Reflecting", (), {name: _answer(name) for name in (
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__", "__rmatmul__",
    "__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__")})


@pytest.mark.parametrize("op", sorted(BINARY))
def test_an_unknown_operand_is_asked_for_its_reflected_operator(op):
    t = ag.ones(2)
    name, received = getattr(operator, op)(t, Reflecting())
    assert name == BINARY[op][1]
    assert received is t


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("other", [None, object(), "text"], ids=["None", "object", "str"])
def test_an_operand_nobody_takes_gets_pythons_error(op, other):
    if op == "mul" and isinstance(other, str):
        pytest.skip("str * tensor is string repetition, which asks the tensor for an index")
    symbol = re.escape(BINARY[op][0])
    with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {symbol}: 'Tensor' and"):
        getattr(operator, op)(ag.ones(2), other)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"])
def test_a_reflected_operator_gives_way_to_pythons_error(op):
    symbol = re.escape(BINARY[op][0])
    with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {symbol}: 'NoneType' and 'Tensor'"):
        getattr(operator, op)(None, ag.ones(2))


@pytest.mark.parametrize("op, reflected", [("iadd", "__radd__"), ("isub", "__rsub__"), ("imul", "__rmul__"),
                                           ("itruediv", "__rtruediv__"), ("ipow", "__rpow__")])
def test_an_augmented_assignment_falls_back_to_the_reflected_operator(op, reflected):
    t = ag.ones(2)
    version = t._version
    assert getattr(operator, op)(t, Reflecting())[0] == reflected
    assert t._version == version  # the tensor was not written


@pytest.mark.parametrize("op, symbol", [("iand", "&="), ("ilshift", "<<="), ("iadd", r"\+=")])
def test_an_augmented_assignment_nobody_takes_gets_pythons_error(op, symbol):
    with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {symbol}: 'Tensor' and 'NoneType'"):
        getattr(operator, op)(ag.ones(2, dtype=ag.int64), None)


def test_bitwise_operators_ask_the_other_operand_too():
    t = ag.ones(2, dtype=ag.int64)
    assert (t & Reflecting())[0] == "__rand__"
    assert (t << Reflecting())[0] == "__rlshift__"


def test_the_function_forms_still_name_the_operand():
    with pytest.raises(TypeError, match="expected a Tensor or a Python number as an operand, got NoneType"):
        ag.add(ag.ones(2), None)
    with pytest.raises(TypeError, match="got Reflecting"):
        ag.mul(ag.ones(2), Reflecting())


def test_operators_still_take_numbers_and_arrays_and_record_the_tensor_first():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert np.allclose((2 * x).detach().numpy(), [2.0, 4.0])
    assert (2 * x).grad_fn.name() == "MulBackward0"
    assert (3 + x).grad_fn.next_functions[0][0] is not None  # the tensor is the first input
    assert np.allclose((x + np.array([1.0, 1.0])).detach().numpy(), [2.0, 3.0])
    y = ag.tensor([3.0, 4.0])
    y += 1
    y *= ag.tensor([2.0, 0.5])
    assert np.allclose(y.numpy(), [8.0, 2.5])
    (x * x + 2 / x).sum().backward()
    assert np.allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0]) - 2 / np.array([1.0, 4.0]))
