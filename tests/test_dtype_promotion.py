"""PyTorch's dtype promotion: result_type and promote_types against tables checked with torch 2.13.0, the same
dtypes from the ops that promote (arithmetic, maximum, where, clamp, comparisons), float64 graphs that stay float64,
and gradients that keep their input's dtype."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import grad

# torch.promote_types(a, b), symmetric; checked against torch 2.13.0.
PROMOTE_TYPES = {
    ("bool", "bool"): "bool", ("bool", "uint8"): "uint8", ("bool", "int8"): "int8", ("bool", "int16"): "int16",
    ("bool", "int32"): "int32", ("bool", "int64"): "int64", ("bool", "float16"): "float16",
    ("bool", "float32"): "float32", ("bool", "float64"): "float64", ("uint8", "uint8"): "uint8",
    ("uint8", "int8"): "int16", ("uint8", "int16"): "int16", ("uint8", "int32"): "int32", ("uint8", "int64"): "int64",
    ("uint8", "float16"): "float16", ("uint8", "float32"): "float32", ("uint8", "float64"): "float64",
    ("int8", "int8"): "int8", ("int8", "int16"): "int16", ("int8", "int32"): "int32", ("int8", "int64"): "int64",
    ("int8", "float16"): "float16", ("int8", "float32"): "float32", ("int8", "float64"): "float64",
    ("int16", "int16"): "int16", ("int16", "int32"): "int32", ("int16", "int64"): "int64",
    ("int16", "float16"): "float16", ("int16", "float32"): "float32", ("int16", "float64"): "float64",
    ("int32", "int32"): "int32", ("int32", "int64"): "int64", ("int32", "float16"): "float16",
    ("int32", "float32"): "float32", ("int32", "float64"): "float64", ("int64", "int64"): "int64",
    ("int64", "float16"): "float16", ("int64", "float32"): "float32", ("int64", "float64"): "float64",
    ("float16", "float16"): "float16", ("float16", "float32"): "float32", ("float16", "float64"): "float64",
    ("float32", "float32"): "float32", ("float32", "float64"): "float64", ("float64", "float64"): "float64",
}
# torch.result_type(a, b), symmetric; checked against torch 2.13.0.
RESULT_TYPE = {
    ("t:bool", "t:bool"): "bool", ("t:bool", "t:uint8"): "uint8", ("t:bool", "t:int32"): "int32",
    ("t:bool", "t:int64"): "int64", ("t:bool", "t:float16"): "float16", ("t:bool", "t:float32"): "float32",
    ("t:bool", "t:float64"): "float64", ("t:bool", "z:bool"): "bool", ("t:bool", "z:int32"): "int32",
    ("t:bool", "z:int64"): "int64", ("t:bool", "z:float16"): "float16", ("t:bool", "z:float32"): "float32",
    ("t:bool", "z:float64"): "float64", ("t:bool", "True"): "bool", ("t:bool", "2"): "int64",
    ("t:bool", "2.5"): "float32", ("t:uint8", "t:uint8"): "uint8", ("t:uint8", "t:int32"): "int32",
    ("t:uint8", "t:int64"): "int64", ("t:uint8", "t:float16"): "float16", ("t:uint8", "t:float32"): "float32",
    ("t:uint8", "t:float64"): "float64", ("t:uint8", "z:bool"): "uint8", ("t:uint8", "z:int32"): "uint8",
    ("t:uint8", "z:int64"): "uint8", ("t:uint8", "z:float16"): "float16", ("t:uint8", "z:float32"): "float32",
    ("t:uint8", "z:float64"): "float64", ("t:uint8", "True"): "uint8", ("t:uint8", "2"): "uint8",
    ("t:uint8", "2.5"): "float32", ("t:int32", "t:int32"): "int32", ("t:int32", "t:int64"): "int64",
    ("t:int32", "t:float16"): "float16", ("t:int32", "t:float32"): "float32", ("t:int32", "t:float64"): "float64",
    ("t:int32", "z:bool"): "int32", ("t:int32", "z:int32"): "int32", ("t:int32", "z:int64"): "int32",
    ("t:int32", "z:float16"): "float16", ("t:int32", "z:float32"): "float32", ("t:int32", "z:float64"): "float64",
    ("t:int32", "True"): "int32", ("t:int32", "2"): "int32", ("t:int32", "2.5"): "float32",
    ("t:int64", "t:int64"): "int64", ("t:int64", "t:float16"): "float16", ("t:int64", "t:float32"): "float32",
    ("t:int64", "t:float64"): "float64", ("t:int64", "z:bool"): "int64", ("t:int64", "z:int32"): "int64",
    ("t:int64", "z:int64"): "int64", ("t:int64", "z:float16"): "float16", ("t:int64", "z:float32"): "float32",
    ("t:int64", "z:float64"): "float64", ("t:int64", "True"): "int64", ("t:int64", "2"): "int64",
    ("t:int64", "2.5"): "float32", ("t:float16", "t:float16"): "float16", ("t:float16", "t:float32"): "float32",
    ("t:float16", "t:float64"): "float64", ("t:float16", "z:bool"): "float16", ("t:float16", "z:int32"): "float16",
    ("t:float16", "z:int64"): "float16", ("t:float16", "z:float16"): "float16", ("t:float16", "z:float32"): "float16",
    ("t:float16", "z:float64"): "float16", ("t:float16", "True"): "float16", ("t:float16", "2"): "float16",
    ("t:float16", "2.5"): "float16", ("t:float32", "t:float32"): "float32", ("t:float32", "t:float64"): "float64",
    ("t:float32", "z:bool"): "float32", ("t:float32", "z:int32"): "float32", ("t:float32", "z:int64"): "float32",
    ("t:float32", "z:float16"): "float32", ("t:float32", "z:float32"): "float32",
    ("t:float32", "z:float64"): "float32", ("t:float32", "True"): "float32", ("t:float32", "2"): "float32",
    ("t:float32", "2.5"): "float32", ("t:float64", "t:float64"): "float64", ("t:float64", "z:bool"): "float64",
    ("t:float64", "z:int32"): "float64", ("t:float64", "z:int64"): "float64", ("t:float64", "z:float16"): "float64",
    ("t:float64", "z:float32"): "float64", ("t:float64", "z:float64"): "float64", ("t:float64", "True"): "float64",
    ("t:float64", "2"): "float64", ("t:float64", "2.5"): "float64", ("z:bool", "z:bool"): "bool",
    ("z:bool", "z:int32"): "int32", ("z:bool", "z:int64"): "int64", ("z:bool", "z:float16"): "float16",
    ("z:bool", "z:float32"): "float32", ("z:bool", "z:float64"): "float64", ("z:bool", "True"): "bool",
    ("z:bool", "2"): "int64", ("z:bool", "2.5"): "float32", ("z:int32", "z:int32"): "int32",
    ("z:int32", "z:int64"): "int64", ("z:int32", "z:float16"): "float16", ("z:int32", "z:float32"): "float32",
    ("z:int32", "z:float64"): "float64", ("z:int32", "True"): "int32", ("z:int32", "2"): "int32",
    ("z:int32", "2.5"): "float32", ("z:int64", "z:int64"): "int64", ("z:int64", "z:float16"): "float16",
    ("z:int64", "z:float32"): "float32", ("z:int64", "z:float64"): "float64", ("z:int64", "True"): "int64",
    ("z:int64", "2"): "int64", ("z:int64", "2.5"): "float32", ("z:float16", "z:float16"): "float16",
    ("z:float16", "z:float32"): "float32", ("z:float16", "z:float64"): "float64", ("z:float16", "True"): "float16",
    ("z:float16", "2"): "float16", ("z:float16", "2.5"): "float16", ("z:float32", "z:float32"): "float32",
    ("z:float32", "z:float64"): "float64", ("z:float32", "True"): "float32", ("z:float32", "2"): "float32",
    ("z:float32", "2.5"): "float32", ("z:float64", "z:float64"): "float64", ("z:float64", "True"): "float64",
    ("z:float64", "2"): "float64", ("z:float64", "2.5"): "float64",
}
# (a / b).dtype: true division of integers gives the default float dtype; checked against torch 2.13.0.
TRUE_DIVISION = {
    ("t:bool", "t:bool"): "float32", ("t:bool", "t:int64"): "float32", ("t:bool", "z:int32"): "float32",
    ("t:bool", "z:float64"): "float64", ("t:bool", "True"): "float32", ("t:bool", "2"): "float32",
    ("t:bool", "2.5"): "float32", ("t:int32", "t:bool"): "float32", ("t:int32", "t:int64"): "float32",
    ("t:int32", "z:int32"): "float32", ("t:int32", "z:float64"): "float64", ("t:int32", "True"): "float32",
    ("t:int32", "2"): "float32", ("t:int32", "2.5"): "float32", ("t:int64", "t:bool"): "float32",
    ("t:int64", "t:int64"): "float32", ("t:int64", "z:int32"): "float32", ("t:int64", "z:float64"): "float64",
    ("t:int64", "True"): "float32", ("t:int64", "2"): "float32", ("t:int64", "2.5"): "float32",
    ("t:float16", "t:bool"): "float16", ("t:float16", "t:int64"): "float16", ("t:float16", "z:int32"): "float16",
    ("t:float16", "z:float64"): "float16", ("t:float16", "True"): "float16", ("t:float16", "2"): "float16",
    ("t:float16", "2.5"): "float16", ("t:float64", "t:bool"): "float64", ("t:float64", "t:int64"): "float64",
    ("t:float64", "z:int32"): "float64", ("t:float64", "z:float64"): "float64", ("t:float64", "True"): "float64",
    ("t:float64", "2"): "float64", ("t:float64", "2.5"): "float64", ("z:int64", "t:bool"): "float32",
    ("z:int64", "t:int64"): "float32", ("z:int64", "z:int32"): "float32", ("z:int64", "z:float64"): "float64",
    ("z:int64", "True"): "float32", ("z:int64", "2"): "float32", ("z:int64", "2.5"): "float32",
}


def operand(spec: str):
    """'t:int32' a tensor with dims, 'z:int32' a zero-dim tensor, else a Python number."""
    if spec in ("True", "2", "2.5"):
        return {"True": True, "2": 2, "2.5": 2.5}[spec]
    kind, dtype = spec.split(":")
    return ag.tensor(np.ones(2 if kind == "t" else (), dtype=dtype))


@pytest.mark.parametrize("a, b", list(PROMOTE_TYPES), ids=str)
def test_promote_types(a, b):
    want = np.dtype(PROMOTE_TYPES[a, b])
    assert ag.promote_types(a, b) == want
    assert ag.promote_types(np.dtype(b), np.dtype(a)) == want


@pytest.mark.parametrize("a, b", list(RESULT_TYPE), ids=str)
def test_result_type_and_arithmetic_follow_pytorch(a, b):
    want = np.dtype(RESULT_TYPE[a, b])
    for x, y in ((operand(a), operand(b)), (operand(b), operand(a))):
        assert ag.result_type(x, y) == want
        assert (x * y).dtype == want
        assert ag.add(x, y).dtype == want
        if "bool" in a + b or "True" in (a, b):  # PyTorch's `-` refuses a bool operand, whatever the other's dtype
            with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with"):
                x - y
        else:
            assert (x - y).dtype == want
        if isinstance(x, ag.Tensor) and isinstance(y, ag.Tensor):
            assert ag.maximum(x, y).dtype == want
        assert ag.where(ag.tensor([True, False]), x, y).dtype == want


@pytest.mark.parametrize("a, b", list(TRUE_DIVISION), ids=str)
def test_true_division(a, b):
    assert (operand(a) / operand(b)).dtype == np.dtype(TRUE_DIVISION[a, b])


def test_comparisons_compare_in_the_promoted_dtype():
    # 2**24 + 1 is not a float32: compared as float32 (PyTorch's promotion), an int64 tensor equals 2.0 ** 24.
    big = ag.tensor([2**24 + 1])
    assert (big == 2.0**24).tolist() == [True]
    assert (big == 2**24).tolist() == [False]
    assert (ag.tensor([1, 2]) < 1.5).tolist() == [True, False]


def test_unary_floating_ops_give_the_default_float_for_integers():
    ints = ag.tensor([1, 4])
    for op in (ag.sqrt, ag.rsqrt, ag.sin, ag.cos, ag.exp, ag.log, ag.tanh, ag.sigmoid, ag.log1p, ag.expm1, ag.erf,
               ag.reciprocal):
        assert op(ints).dtype == ag.float32, op.__name__
    for op in (ag.abs, ag.sign, ag.square, ag.neg):
        assert op(ints).dtype == ag.int64, op.__name__
    assert ag.sign(ag.tensor([True, False])).dtype == ag.bool_
    assert ints.clamp(0.5).dtype == ag.float32
    assert ints.clamp(2, 3).tolist() == [2, 3]
    assert (ints**2).dtype == ag.int64 and (ints**2.5).dtype == ag.float32
    assert (2**ints).dtype == ag.int64 and (2.5**ints).dtype == ag.float32


def test_a_float64_graph_stays_float64_end_to_end():
    x = ag.tensor([0.3, -1.2, 2.0], dtype=ag.float64, requires_grad=True)
    w = ag.tensor(0.5, dtype=ag.float32)  # a zero-dim float32 does not downcast (or upcast) a float64 tensor
    steps = [
        lambda t: (t * 2 + 1) / 3 - 0.5, lambda t: 2 / (t * t + 1), lambda t: 1 - t, lambda t: t**2, lambda t: 2**t,
        lambda t: t * w, lambda t: t.clamp(-1, 1.5), lambda t: ag.maximum(t, w), lambda t: ag.where(t > 0, t, 1.5),
        lambda t: ag.gelu(t) + ag.silu(t) + ag.softplus(t) + ag.leaky_relu(t), lambda t: t.sin() + t.erf(),
        lambda t: t + ag.tensor([1, 2, 3]), lambda t: t / ag.tensor(3),
    ]
    out = x
    for step in steps:
        out = step(out)
        assert out.dtype == ag.float64
    (g,) = grad(out.sum(), x, create_graph=True)
    assert g.dtype == ag.float64
    (h,) = grad(g.sum(), x)
    assert h.dtype == ag.float64


@pytest.mark.parametrize(
    "a_dtype, b_dtype, b_zero_dim, out_dtype",
    [
        ("float32", "float64", True, "float32"),
        ("float32", "float64", False, "float64"),
        ("float16", "float32", True, "float16"),
        ("float64", "float32", False, "float64"),
        ("float16", "float64", False, "float64"),
    ],
)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "where"])
def test_mixed_dtype_gradients_have_their_inputs_dtypes(a_dtype, b_dtype, b_zero_dim, out_dtype, op):
    a = ag.tensor([0.5, 1.5, 2.5], dtype=a_dtype, requires_grad=True)
    b = ag.tensor(2.0 if b_zero_dim else [2.0, 1.0, 3.0], dtype=b_dtype, requires_grad=True)
    fn = {
        "add": ag.add, "sub": ag.sub, "mul": ag.mul, "div": ag.div, "maximum": ag.maximum,
        "where": lambda x, y: ag.where(ag.tensor([True, False, True]), x, y),
    }[op]
    out = fn(a, b)
    assert out.dtype == np.dtype(out_dtype)
    ga, gb = grad((out * out).sum(), [a, b], create_graph=True)
    assert (ga.dtype, gb.dtype) == (a.dtype, b.dtype)
    assert ga.shape == a.shape and gb.shape == b.shape
    ha, hb = grad((ga.sum() + gb.sum()), [a, b], allow_unused=True)
    assert ha is None or ha.dtype == a.dtype
    assert hb is None or hb.dtype == b.dtype


def test_gradient_of_a_float_tensor_times_an_integer_tensor_stays_float32():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    out = x * ag.tensor([3, 4])
    assert out.dtype == ag.float32
    (g,) = grad(out.sum(), x)
    assert g.dtype == ag.float32 and g.tolist() == [3.0, 4.0]


def test_unsupported_dtypes_and_operands_are_refused():
    with pytest.raises(TypeError, match="dtype uint16 is not supported"):
        ag.promote_types(np.uint16, ag.float32)
    with pytest.raises(TypeError, match="expected a Tensor or a Python number as an operand, got str"):
        ag.result_type(ag.tensor([1.0]), "2")
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor' and 'str'"):
        ag.tensor([1.0]) + "2"


@pytest.mark.parametrize(("tensor_dtype", "scalar", "expected"), [
    ("int32", np.float16(2.0), "float32"), ("uint8", np.float32(2.0), "float32"), ("bool", np.float16(2.0), "float32"),
    ("bool", np.int8(3), "int64"), ("bool", np.uint8(3), "int64"), ("int32", np.int64(3), "int32"),
    ("float16", np.float64(2.0), "float16"), ("int16", np.True_, "int16"),
])
def test_a_numpy_scalar_promotes_as_the_python_number_it_holds(tensor_dtype, scalar, expected):
    """PyTorch reads a numpy scalar as a Python number: np.float16 beside an int tensor gives the default float,
    not float16, and np.int8 beside a bool tensor gives int64 (a 0-d array of its own dtype would give those)."""
    t = ag.ones(2, dtype=getattr(ag, tensor_dtype))
    for result in (t * scalar, scalar * t, ag.add(t, scalar), ag.where(t > 0, t, scalar)):
        assert result.dtype == getattr(ag, expected)
    assert ag.result_type(t, scalar) == getattr(ag, expected)
