"""The Tensor API surface as PyTorch's: pickling and copy.copy, numpy(force=True), complex(), the augmented
assignments as in-place ops, finfo/iinfo, the top-level constants, detach/get_device and the `_copy` view forms."""

import copy
import pickle

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn import Buffer, Parameter


class Tagged(ag.Tensor):
    """A Tensor subclass with attributes of its own (in a __dict__), which pickling keeps."""


def double_leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return ag.tensor(rng.uniform(0.5, 2.0, shape), dtype=ag.float64, requires_grad=True)


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


# -- pickling and copy.copy ----------------------------------------------------------------------------------------

def test_pickled_non_leaf_comes_back_as_a_leaf_that_requires_grad():
    x = double_leaf(3)
    y = round_trip(x * 2)
    assert y.is_leaf and y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.detach().numpy(), 2 * x.detach().numpy())


def test_pickled_views_keep_their_strides_and_offset():
    base = ag.arange(6.0).reshape(2, 3)
    column, transposed = round_trip(base[:, 1]), round_trip(base.t())
    np.testing.assert_array_equal(column.numpy(), [1.0, 4.0])
    assert column.storage_offset() == 1 and column.stride() == (3,)
    assert transposed.stride() == (1, 3) and not transposed.is_contiguous()
    expanded = round_trip(ag.ones(3).expand(4, 3))
    assert expanded.stride() == (0, 1) and expanded.shape == (4, 3)
    flipped = round_trip(ag.arange(4.0).flip(0))
    np.testing.assert_array_equal(flipped.numpy(), [3.0, 2.0, 1.0, 0.0])


def test_tensors_pickled_together_share_their_memory_again():
    base = ag.arange(4.0)
    got_base, got_view = round_trip((base, base[1:]))
    got_view.fill_(7.0)
    np.testing.assert_array_equal(got_base.numpy(), [0.0, 7.0, 7.0, 7.0])
    assert not np.shares_memory(got_base.numpy(), base.numpy())


def test_pickling_drops_grad_and_keeps_subclasses_and_their_state():
    x = double_leaf(2)
    x.grad = ag.ones(2, dtype=ag.float64)
    assert round_trip(x).grad is None
    p = round_trip(Parameter(ag.ones(2)))
    assert type(p) is Parameter and p.requires_grad
    frozen = round_trip(Parameter(ag.ones(2), requires_grad=False))
    assert not frozen.requires_grad
    b = round_trip(Buffer(ag.ones(2), persistent=False))
    assert type(b) is Buffer and b.persistent is False
    tagged = ag.arange(3.0).as_subclass(Tagged)
    tagged.label = "kept"
    back = round_trip(tagged)
    assert type(back) is Tagged and back.label == "kept" and back.tolist() == [0.0, 1.0, 2.0]


def test_integer_and_empty_tensors_pickle():
    ints = round_trip(ag.arange(5, dtype=ag.int16)[1:])
    assert ints.dtype == ag.int16 and ints.tolist() == [1, 2, 3, 4]
    assert round_trip(ag.zeros(0, 3)).shape == (0, 3)
    assert round_trip(ag.tensor(2.5)).item() == 2.5


def test_copy_copy_shares_memory_and_cuts_history():
    base = ag.arange(4.0)
    view_copy = copy.copy(base[1:])
    view_copy.fill_(5.0)
    np.testing.assert_array_equal(base.numpy(), [0.0, 5.0, 5.0, 5.0])
    y = copy.copy(double_leaf(3) * 2)
    assert y.is_leaf and y.requires_grad


# -- conversions ---------------------------------------------------------------------------------------------------

def test_numpy_force_gives_the_memory_of_a_tensor_that_requires_grad():
    x = double_leaf(3)
    with pytest.raises(RuntimeError, match="Use tensor.detach"):
        x.numpy()
    array = x.numpy(force=True)
    assert isinstance(array, np.ndarray) and np.shares_memory(array, x.detach().numpy())
    with pytest.raises(TypeError):
        x.numpy(True)  # keyword-only, as PyTorch's


def test_complex_of_a_one_element_tensor():
    assert complex(ag.tensor(1 + 2j)) == 1 + 2j
    assert complex(ag.tensor([1.5])) == 1.5 + 0j
    with pytest.raises(ValueError, match="only one element tensors"):
        complex(ag.zeros(2))


def test_float_and_int_of_a_complex_tensor_need_a_zero_imaginary_part():
    assert float(ag.tensor(2.5 + 0j, dtype=ag.complex128)) == 2.5
    assert int(ag.tensor(-2.7 + 0j, dtype=ag.complex128)) == -2
    with pytest.raises(RuntimeError, match="value cannot be converted to type double without overflow"):
        float(ag.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        int(ag.tensor(1 + 2j))


def test_deleting_items_is_refused():
    with pytest.raises(TypeError, match="Tensor does not support deleting items"):
        del ag.zeros(3)[0]


def test_contains_names_the_tensors_in_pytorchs_order():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of tensor b \(3\)"):
        ag.tensor([1, 2]) in ag.arange(3)  # noqa: B015


# -- augmented assignments -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, expected", [
    ("**=", lambda a: a ** 2), ("%=", lambda a: np.remainder(a, 3)), ("//=", lambda a: np.floor_divide(a, 3)),
    ("&=", lambda a: a & 6), ("|=", lambda a: a | 6), ("^=", lambda a: a ^ 6),
])
def test_augmented_assignments_change_the_tensor_in_place(op, expected):
    values = np.array([-5, -1, 0, 4, 9], dtype=np.int64)
    x = ag.tensor(values)
    alias = x
    other = {"**=": 2, "%=": 3, "//=": 3}.get(op, 6)
    namespace = {"x": x}
    exec(f"x {op} {other}", namespace)
    assert namespace["x"] is alias
    np.testing.assert_array_equal(alias.numpy(), expected(values))


def test_augmented_power_is_differentiable_on_a_non_leaf():
    def cube(x):
        y = alias = x * 1
        y **= 3
        assert y is alias
        return y

    x = double_leaf(4)
    assert cube(x).grad_fn is not None
    assert gradcheck(cube, (x,))
    assert gradgradcheck(cube, (x,))


def test_augmented_assignment_on_a_leaf_that_requires_grad_is_refused():
    x = double_leaf(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x **= 2


# -- finfo and iinfo -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, mantissa, max_exponent, digits", [
    (ag.float16, 10, 15, 3), (ag.float32, 23, 127, 6), (ag.float64, 52, 1023, 15),
])
def test_finfo_gives_the_ieee_limits(dtype, mantissa, max_exponent, digits):
    info = ag.finfo(dtype)
    assert info.eps == 2.0 ** -mantissa
    assert info.max == (2 - 2.0 ** -mantissa) * 2.0 ** max_exponent == -info.min
    assert info.tiny == info.smallest_normal == 2.0 ** (1 - max_exponent)
    assert info.resolution == 10.0 ** -digits
    assert info.bits == 8 * dtype.itemsize and info.dtype == str(dtype)
    assert f"dtype={dtype}" in repr(info) and repr(info).startswith("finfo(resolution=")


def test_finfo_defaults_to_the_default_dtype_and_takes_complex_dtypes():
    assert ag.finfo() == ag.finfo(ag.float32)
    assert ag.finfo(ag.complex128) == ag.finfo(ag.float64)
    previous = ag.get_default_dtype()
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.finfo().eps == 2.0 ** -52
    finally:
        ag.set_default_dtype(previous)
    with pytest.raises(TypeError, match="unhashable"):
        hash(ag.finfo())


@pytest.mark.parametrize("dtype, bits, signed", [
    (ag.uint8, 8, False), (ag.int8, 8, True), (ag.int16, 16, True), (ag.int32, 32, True), (ag.int64, 64, True),
])
def test_iinfo_gives_the_twos_complement_limits(dtype, bits, signed):
    info = ag.iinfo(dtype)
    assert info.bits == bits and info.dtype == str(dtype)
    if signed:
        assert (info.min, info.max) == (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    else:
        assert (info.min, info.max) == (0, 2 ** bits - 1)


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        ag.finfo(ag.int32)
    with pytest.raises(TypeError, match="iinfo\\(\\) requires an integer input type"):
        ag.iinfo(ag.float32)
    with pytest.raises(TypeError, match="bool is not supported by actorgrad.iinfo"):
        ag.iinfo(ag.bool)


# -- top-level names -----------------------------------------------------------------------------------------------

def test_constants():
    assert ag.pi == np.pi and ag.e == np.e and ag.inf == float("inf") and np.isnan(ag.nan)
    assert ag.zeros(3)[:, ag.newaxis].shape == (3, 1)


def test_top_level_detach_and_get_device():
    x = double_leaf(3)
    d = ag.detach(x)
    assert not d.requires_grad and np.shares_memory(d.numpy(), x.detach().numpy())
    assert ag.get_device(x) == -1


@pytest.mark.parametrize("name, args, view", [
    ("view_copy", ((2, 3),), lambda a: a.reshape(2, 3)),
    ("t_copy", (), lambda a: a.reshape(2, 3).T),
    ("transpose_copy", (0, 1), lambda a: a.reshape(2, 3).T),
    ("permute_copy", ((1, 0),), lambda a: a.reshape(2, 3).T),
    ("expand_copy", ((2, 2, 3),), lambda a: np.broadcast_to(a.reshape(2, 3), (2, 2, 3))),
    ("unsqueeze_copy", (0,), lambda a: a.reshape(1, 2, 3)),
    ("select_copy", (1, 2), lambda a: a.reshape(2, 3)[:, 2]),
    ("slice_copy", (1, 0, 3, 2), lambda a: a.reshape(2, 3)[:, 0:3:2]),
    ("diagonal_copy", (), lambda a: np.array([a[0], a[4]])),
    ("alias_copy", (), lambda a: a.reshape(2, 3)),
])
def test_view_copies_are_new_memory_with_the_views_values_and_gradients(name, args, view):
    x = double_leaf(6)
    source = x.reshape(2, 3) if name != "view_copy" else x
    out = getattr(ag, name)(source, *args)
    expected = view(x.detach().numpy())
    np.testing.assert_array_equal(out.detach().numpy(), expected)
    assert not np.shares_memory(out.detach().numpy(), x.detach().numpy())
    assert gradcheck(lambda t: getattr(ag, name)(t.reshape(2, 3) if name != "view_copy" else t, *args), (x,))


def test_split_and_unbind_copies_give_one_copy_per_part():
    x = double_leaf(6)
    parts = ag.split_copy(x, 4)
    assert [p.shape for p in parts] == [(4,), (2,)]
    assert not any(np.shares_memory(p.detach().numpy(), x.detach().numpy()) for p in parts)
    rows = ag.unbind_copy(x.reshape(2, 3))
    np.testing.assert_array_equal(rows[1].detach().numpy(), x.detach().numpy()[3:])
    assert gradcheck(lambda t: ag.split_with_sizes_copy(t, [2, 4])[1], (x,))
    assert not ag.detach_copy(x).requires_grad


def test_type_names_and_vmap():
    x = ag.zeros(2, 3)
    assert x.shape == ag.Size([2, 3]) and isinstance(x.shape, ag.Size)
    assert isinstance(x.dtype, ag.dtype) and isinstance(x.layout, ag.layout)
    assert ag.vmap is ag.func.vmap


def test_float32_matmul_precision_is_kept_and_checked():
    assert ag.get_float32_matmul_precision() == "highest"
    try:
        ag.set_float32_matmul_precision("high")
        assert ag.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="bogus is not one of 'highest', 'high', or 'medium'"):
            ag.set_float32_matmul_precision("bogus")
        assert ag.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="expects a str, but got int"):
            ag.set_float32_matmul_precision(3)
    finally:
        ag.set_float32_matmul_precision("highest")


def test_unsafe_split_with_sizes_is_split_with_sizes():
    x = double_leaf(2, 5)
    parts = x.unsafe_split_with_sizes([2, 3], 1)
    np.testing.assert_array_equal(parts[1].detach().numpy(), x.detach().numpy()[:, 2:])
    assert len(ag.unsafe_split_with_sizes(x, [1, 1])) == 2
    assert gradcheck(lambda t: ag.unsafe_split_with_sizes(t, [2, 3], 1)[1], (x,))


# -- legacy constructors and device indices ------------------------------------------------------------------------

def test_legacy_tensor_types_construct_and_match_their_dtype():
    assert ag.FloatTensor().shape == (0,) and ag.FloatTensor().dtype == ag.float32
    assert ag.DoubleTensor(2, 3).shape == (2, 3) and ag.DoubleTensor(2, 3).dtype == ag.float64
    np.testing.assert_array_equal(ag.LongTensor([1.7, -2.2]).numpy(), np.array([1.7, -2.2]).astype(np.int64))
    assert ag.BoolTensor([1, 0]).tolist() == [True, False] and ag.ByteTensor(2).dtype == ag.uint8
    assert isinstance(ag.zeros(2), ag.FloatTensor) and not isinstance(ag.zeros(2), ag.LongTensor)
    assert not isinstance(np.zeros(2, np.float32), ag.FloatTensor)
    assert ag.zeros(2).type(ag.LongTensor).dtype == ag.int64
    assert ag.arange(3).type() == "actorgrad.LongTensor"
    with pytest.raises(TypeError, match="expected Float \\(got Long\\)"):
        ag.FloatTensor(ag.arange(2))


def test_set_default_tensor_type_sets_the_default_dtype():
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            ag.set_default_tensor_type(ag.DoubleTensor)
        assert ag.get_default_dtype() == ag.float64 and ag.tensor([1.5]).dtype == ag.float64
        with pytest.warns(UserWarning):
            ag.set_default_tensor_type("actorgrad.FloatTensor")
        assert ag.get_default_dtype() == ag.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types"):
            ag.set_default_tensor_type(ag.LongTensor)
    finally:
        ag.set_default_dtype(ag.float32)


@pytest.mark.parametrize("number", [2.5, True, 1j, None, np.float64(2.0)])
def test_new_refuses_a_lone_number_as_data(number):
    with pytest.raises(TypeError, match="new\\(\\): data must be a sequence \\(got "):
        ag.zeros(1).new(number)


def test_a_bare_device_index_names_a_cuda_device():
    x = ag.arange(3.0)
    for call in (lambda: x.to(-1), lambda: x.to(device=-1), lambda: x.to(-1, ag.float64)):
        with pytest.raises(RuntimeError, match="Device index must not be negative"):
            call()
    assert x.to(ag.float64).dtype == ag.float64 and x.to("cpu") is x


@pytest.mark.gpu
def test_device_index_moves_to_cuda(cupy):
    x = ag.arange(3.0, dtype=ag.float64, requires_grad=True)
    moved = x.to(0)
    assert moved.device == ag.device("cuda:0") and moved.requires_grad
    assert x.to(0, ag.float32).dtype == ag.float32 and x.to(device=0).device == moved.device
    np.testing.assert_array_equal(moved.numpy(force=True), [0.0, 1.0, 2.0])


@pytest.mark.gpu
def test_pickling_and_numpy_force_on_cuda(cupy):
    x = ag.arange(4.0).cuda().requires_grad_()
    host = x.numpy(force=True)
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, [0.0, 1.0, 2.0, 3.0])
    back = round_trip(x[1:] * 2)
    assert back.device == x.device and back.is_leaf and back.requires_grad
    np.testing.assert_array_equal(back.numpy(force=True), [2.0, 4.0, 6.0])


def test_a_tensor_is_not_equal_to_a_dtype():
    t = ag.zeros(2)  # float32, whose numpy dtype would call itself equal to anything with that `.dtype`
    assert (t == ag.float32) is False and (t != ag.float32) is True
    assert (t == None) is False and (t != "float32") is True  # noqa: E711 - the operator itself is tested
    assert (t == 0).tolist() == [True, True]
