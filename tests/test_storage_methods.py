"""Tensor methods about storage and legacy construction (resize_, apply_ / map_ / map2_, new, data_ptr, the cpu
answers about shared and pinned memory) and the top-level utilities (typename, can_cast, empty_strided,
frombuffer, DLPack, the inclusive range, fill, unsafe_chunk / unsafe_split, is_inference)."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck


def test_resize_keeps_leading_elements_and_refuses_tensors_that_require_grad() -> None:
    x = ag.arange(6.0).reshape(2, 3)
    version = x._version
    assert x.resize_(2, 2) is x and x.numpy().tolist() == [[0, 1], [2, 3]] and x._version > version
    y = ag.arange(6.0)
    assert y.resize_(8).shape == (8,) and y.numpy()[:6].tolist() == list(range(6))
    assert ag.arange(6.0).resize_as_(ag.zeros(3, 1)).shape == (3, 1)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ag.zeros(2, requires_grad=True).resize_(3)


def test_resize_that_fits_stays_a_view_of_the_memory_in_its_order() -> None:
    base = ag.zeros(6)
    view = base[2:]
    view.resize_(2, 2).fill_(1.0)  # still the base's memory: the write shows there
    assert base.tolist() == [0, 0, 1, 1, 1, 1]
    shrunk = base[:4]
    shrunk.resize_(2).fill_(2.0)
    assert base.tolist() == [2, 2, 1, 1, 1, 1]
    # The memory's order, not the logical one: a transposed (3, 2) of arange(6) holds 0..5 in memory.
    assert ag.arange(6).reshape(2, 3).t().resize_(6).tolist() == [0, 1, 2, 3, 4, 5]
    # Columns 1-2 of a (3, 4): memory runs on through column 3, as far as the last element viewed.
    assert ag.arange(12).reshape(3, 4)[:, 1:3].resize_(2, 3).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_python_callbacks_run_per_element_in_place() -> None:
    y = ag.arange(3.0)
    assert y.map_(ag.tensor([10.0, 20.0, 30.0]), lambda a, b: a + b) is y
    assert y.numpy().tolist() == [10, 21, 32]
    y.map2_(y, ag.ones(1), lambda a, b, c: a * b + c)  # the others broadcast to self
    assert y.numpy().tolist() == [101, 442, 1025]
    assert ag.arange(3).apply_(lambda v: v * 2.7).numpy().tolist() == [0, 2, 5]  # cast back to int64
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires grad"):
        ag.zeros(2, requires_grad=True).apply_(abs)


def test_new_is_the_legacy_constructor() -> None:
    x = ag.zeros(2, dtype=ag.float64)
    assert x.new().shape == (0,) and x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == ag.float64
    made = x.new([1, 2])
    assert made.dtype == ag.float64 and made.numpy().tolist() == [1, 2]
    other = ag.arange(3.0, dtype=ag.float64)
    assert x.new(other).data_ptr() == other.data_ptr()
    with pytest.raises(TypeError, match="expected Double \\(got Long\\)"):
        x.new(ag.arange(2))


def test_storage_questions_have_the_cpus_answers() -> None:
    x = ag.arange(4.0)
    assert x.data_ptr() == x.numpy().ctypes.data and x[1:].data_ptr() == x.data_ptr() + 4
    assert not x.is_shared() and not x.is_pinned() and x.share_memory_() is x and x.pin_memory() is x
    assert x.layout is ag.strided and repr(ag.strided) == "actorgrad.strided" and x.name is None


def test_typename_and_can_cast() -> None:
    assert ag.typename(ag.zeros(2)) == "actorgrad.FloatTensor"
    assert ag.typename(ag.zeros(2, dtype=ag.int64)) == "actorgrad.LongTensor"
    assert ag.typename(3) == "int" and ag.typename(ag.nn.Linear(2, 2)) == "actorgrad.nn.layers.Linear"
    assert ag.typename(ag.nn.Linear) == "actorgrad.nn.layers.Linear"
    table = {(ag.float64, ag.int32): False, (ag.int32, ag.float32): True, (ag.float32, ag.bool_): False,
             (ag.uint8, ag.int8): True, (ag.bool_, ag.uint8): True, (ag.complex64, ag.float64): False,
             (ag.float64, ag.complex64): True}
    assert {pair: ag.can_cast(*pair) for pair in table} == table


def test_empty_strided_frombuffer_and_dlpack_share_memory() -> None:
    x = ag.empty_strided((2, 3), (1, 2), dtype=ag.float64)
    assert x.shape == (2, 3) and x.stride() == (1, 2)
    with pytest.raises(RuntimeError, match="dimensionality of sizes \\(2\\) must match dimensionality of strides"):
        ag.empty_strided((2, 3), (1,))
    buffer = bytearray(b"\x01\x00\x02\x00\x03\x00")
    view = ag.frombuffer(buffer, dtype=ag.int16, offset=2, count=1)
    assert view.numpy().tolist() == [2]
    view[0] = 7
    assert buffer[2] == 7
    with pytest.raises(ValueError, match="must be a multiple of element size \\(2\\)"):
        ag.frombuffer(bytearray(b"abc"), dtype=ag.int16)
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        ag.frombuffer(b"abcd", dtype=ag.int16)
    array = np.arange(3.0)
    shared = ag.from_dlpack(array)
    shared[0] = 5
    assert array[0] == 5
    back = ag.from_dlpack(ag.to_dlpack(shared))
    assert back.data_ptr() == shared.data_ptr()
    assert np.from_dlpack(shared).ctypes.data == shared.data_ptr()


def test_range_includes_its_end_and_warns() -> None:
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        values = [ag.range(1, 4), ag.range(0, 1, 0.25), ag.range(3, 1, -1), ag.range(1, 3, dtype=ag.int64)]
    assert [v.numpy().tolist() for v in values] == [[1, 2, 3, 4], [0, 0.25, 0.5, 0.75, 1], [3, 2, 1], [1, 2, 3]]
    assert values[0].dtype == ag.get_default_dtype() and values[3].dtype == ag.int64
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="step must be nonzero"):
        ag.range(0, 1, 0)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        ag.range(0, 1, -1)


def test_fill_chunks_and_is_inference() -> None:
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    value = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    assert ag.fill(x, value).detach().numpy().tolist() == [3, 3] and x.detach().numpy().tolist() == [1, 2]
    assert gradcheck(lambda x, v: ag.fill(x, v) * ag.tensor([1.0, 2.0], dtype=ag.float64), (x, value))
    parts = ag.unsafe_chunk(ag.arange(6), 3)
    assert [p.numpy().tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert [p.numpy().tolist() for p in ag.arange(6).unsafe_split(4)] == [[0, 1, 2, 3], [4, 5]]
    with ag.inference_mode():
        made = ag.ones(1)
    assert ag.is_inference(made) and not ag.is_inference(x)


@pytest.mark.gpu
def test_on_cuda_dlpack_and_resize_stay_on_the_device(cupy) -> None:
    x = ag.arange(6.0, device="cuda:0")
    assert x.resize_(2, 2).device == ag.device("cuda:0") and x.cpu().numpy().tolist() == [[0, 1], [2, 3]]
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        x.apply_(abs)
    strided = ag.empty_strided((2, 3), (1, 2), device="cuda:0")
    assert strided.device == ag.device("cuda:0") and strided.stride() == (1, 2)
    array = cupy.arange(3.0)
    shared = ag.from_dlpack(array)
    assert shared.device == ag.device("cuda:0") and shared.data_ptr() == array.data.ptr
    assert ag.from_dlpack(x).data_ptr() == x.data_ptr() and cupy.from_dlpack(x).data.ptr == x.data_ptr()
