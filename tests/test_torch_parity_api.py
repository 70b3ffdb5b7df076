"""Small PyTorch APIs: dtype and size queries, type_as, equal/allclose/isclose, any/all, the dtype aliases and
the `size=` keyword of the creation functions. Expected values are torch 2.13's, written in."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag

NAN = math.nan


def test_is_floating_point_element_size_and_nelement():
    x = ag.tensor([[1.0, 2.0, 3.0]])
    assert x.is_floating_point() and ag.is_floating_point(x)
    assert not ag.tensor([1]).is_floating_point() and not ag.tensor([True]).is_floating_point()
    assert [ag.zeros(1, dtype=d).element_size() for d in (ag.float64, ag.float32, ag.int16, ag.bool_)] == [8, 4, 2, 1]
    assert x.nelement() == 3 and ag.zeros(0, 4).nelement() == 0


def test_type_as_casts_to_the_others_dtype_and_is_recorded():
    x = ag.tensor([1.5, 2.0], requires_grad=True)
    assert x.type_as(x) is x
    y = x.type_as(ag.tensor([1.0], dtype=ag.float64))
    assert y.dtype == ag.float64 and y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == ag.float32 and x.grad.tolist() == [1.0, 1.0]
    as_long = x.type_as(ag.tensor([1]))
    assert as_long.dtype == ag.int64 and as_long.tolist() == [1, 2] and as_long.grad_fn is None


def test_equal_needs_the_same_shape_and_values_of_any_dtype():
    assert ag.equal(ag.tensor([1, 2]), ag.tensor([1.0, 2.0])) is True
    assert ag.tensor([1, 2]).equal(ag.tensor([1, 2]))
    assert ag.equal(ag.tensor([1.0]), ag.tensor([1.0, 1.0])) is False  # no broadcasting
    assert ag.equal(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 3.0])) is False
    assert ag.equal(ag.tensor([NAN]), ag.tensor([NAN])) is False


def test_isclose_elementwise_with_torchs_tolerances():
    a = ag.tensor([1.0, 2.0, NAN])
    near = ag.isclose(a, ag.tensor([1.0, 2.00001, NAN]))
    assert near.dtype == ag.bool_ and near.grad_fn is None
    assert near.tolist() == [True, True, False]
    assert a.isclose(ag.tensor([1.0, 2.0001, NAN]), equal_nan=True).tolist() == [True, False, True]
    assert ag.isclose(ag.tensor([1.0]), ag.tensor([[1.0], [1.1]]), rtol=0.0, atol=0.2).tolist() == [[True], [True]]
    assert ag.isclose(ag.tensor([1, 2]), ag.tensor([1, 3])).tolist() == [True, False]


def test_isclose_refuses_mixed_dtypes_and_numbers():
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        ag.isclose(ag.tensor([1]), ag.tensor([1.0]))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        ag.isclose(ag.tensor([1.0]), 1.0)


def test_allclose_is_a_python_bool_and_broadcasts():
    a = ag.tensor([1.0, 2.0, NAN])
    assert ag.allclose(a, a) is False and ag.allclose(a, a, equal_nan=True) is True
    assert a.allclose(ag.tensor([1.0, 2.0 + 1e-6, NAN]), equal_nan=True)
    assert ag.allclose(ag.tensor([1.0]), ag.tensor([1.0, 1.0]))
    assert not ag.allclose(ag.tensor([1.0]), ag.tensor([1.1]), atol=0.05)


def test_any_and_all_reduce_to_bool_without_a_graph():
    m = ag.tensor([[0, 1], [0, 0]])
    assert m.any().tolist() is True and m.all().tolist() is False
    assert ag.any(m, 1).tolist() == [True, False] and m.any(dim=1).dtype == ag.bool_
    assert m.all(0, keepdim=True).tolist() == [[False, False]]
    assert m.any(dim=(0, 1)).tolist() is True
    grad = ag.tensor([1.0, 2.0], requires_grad=True).all()
    assert grad.tolist() is True and grad.grad_fn is None and not grad.requires_grad
    assert ag.tensor([]).all().tolist() is True and ag.tensor([]).any().tolist() is False
    assert ag.tensor(0.0).all(0).tolist() is False


def test_any_keeps_uint8_and_checks_dims():
    out = ag.tensor([1, 2], dtype=ag.uint8).any()
    assert out.dtype == ag.uint8 and out.tolist() == 1
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        ag.tensor([[0, 1]]).any(dim=2)


def test_dtype_aliases_and_constants():
    assert (ag.float, ag.double, ag.half, ag.long, ag.int) == (ag.float32, ag.float64, ag.float16, ag.int64, ag.int32)
    assert (ag.uint8, ag.int8, ag.int16) == (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16))
    assert ag.zeros(2, dtype=ag.int8).dtype == np.int8


def test_star_import_keeps_the_builtin_names():
    names: dict = {}
    exec("from actorgrad import *", names)
    assert not {"float", "double", "half", "long", "int", "bool"} & names.keys()
    assert {"uint8", "int8", "int16"} <= names.keys()


CREATORS = ["zeros", "ones", "empty", "rand", "randn"]


@pytest.mark.parametrize("name", CREATORS)
def test_size_keyword(name):
    create = getattr(ag, name)
    assert create(size=(2, 3)).shape == (2, 3) and create(size=[4]).shape == (4,) and create(size=()).shape == ()
    assert create(size=(2,), dtype=ag.float64).dtype == ag.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        create(2, size=(2,))
    with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
        create(size=2)


@pytest.mark.parametrize("name", CREATORS)
def test_no_size_is_a_type_error(name):
    with pytest.raises(TypeError, match=f'{name}\\(\\) missing 1 required positional arguments: "size"'):
        getattr(ag, name)()


def test_new_apis_on_cuda(cupy):
    x = ag.tensor([[1.0, NAN], [0.0, 2.0]], device="cuda")
    assert x.is_floating_point() and x.element_size() == 4 and x.nelement() == 4
    assert ag.isclose(x, x, equal_nan=True).device == x.device and ag.allclose(x, x, equal_nan=True)
    assert ag.equal(x[1], ag.tensor([0.0, 2.0], device="cuda")) and not ag.equal(x, x)
    assert x.all(dim=1).cpu().tolist() == [True, False] and x.any().device == x.device
    cast = x.type_as(ag.tensor([1], device="cuda"))
    assert cast.dtype == ag.int64 and cast.device == x.device
    assert ag.zeros(size=(2,), device="cuda").device == x.device
