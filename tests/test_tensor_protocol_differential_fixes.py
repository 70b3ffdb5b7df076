"""Python-protocol answers that differed from PyTorch's: `x in t` for complex and numpy scalars, the warning of
complex() on a tensor that requires grad, from_dlpack of an actorgrad tensor (a new leaf on the same memory, and
refused when it requires grad), and the errors of empty_strided's negative sizes and frombuffer's overlong count."""

import warnings

import numpy as np
import pytest

import actorgrad as ag


@pytest.mark.parametrize("element, expected", [
    (np.int64(3), True), (np.int32(4), False), (np.float32(2.0), True), (np.float64(2.5), False),
    (2 + 0j, True), (2 + 1j, False), (np.complex128(3), True),
])
def test_contains_takes_any_number(element: object, expected: bool) -> None:
    values = [1, 2, 3]
    assert (element in ag.tensor(values)) is expected
    assert expected is any(v == element for v in values)  # Python's own answer for the same numbers


@pytest.mark.parametrize("element", ["a", None, (1,), np.bool_(True), np.array(1)])
def test_contains_refuses_what_is_no_number(element: object) -> None:
    with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or scalar"):
        element in ag.tensor([1, 2])  # noqa: B015


def test_complex_of_a_tensor_requiring_grad_warns_as_float_does() -> None:
    leaf = ag.tensor(2.0, requires_grad=True)
    for convert in (complex, float):
        with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar") as caught:
            convert(leaf * 2)
        assert caught[0].filename == __file__  # pointed at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert complex(leaf.detach()) == 2 + 0j and int(leaf) == 2  # int() does not warn, as in PyTorch


def test_from_dlpack_of_a_tensor_is_a_new_leaf_on_its_memory() -> None:
    source = ag.tensor([1.0, 2.0])
    out = ag.from_dlpack(source)
    assert out is not source and out.data_ptr() == source.data_ptr() and out.is_leaf and not out.requires_grad
    source.add_(1)
    assert out.tolist() == [2.0, 3.0] and out._version == 0  # the memory is shared, the version counter is not


def test_from_dlpack_refuses_a_tensor_requiring_grad() -> None:
    leaf = ag.tensor([1.0, 2.0], requires_grad=True)
    for tracked in (leaf, leaf * 2):
        with pytest.raises(BufferError, match="Can't export tensors that require gradient, use tensor.detach()"):
            ag.from_dlpack(tracked)
    assert ag.from_dlpack(leaf.detach()).data_ptr() == leaf.data_ptr()


def test_empty_strided_refuses_a_negative_size_with_pytorchs_error() -> None:
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1, -3\]"):
        ag.empty_strided((2, -1, -3), (3, 1, 1))


@pytest.mark.parametrize("count, offset", [(3, 0), (2, 2), (1, 5)])
def test_frombuffer_refuses_a_count_past_the_buffer(count: int, offset: int) -> None:
    with pytest.raises(ValueError, match=rf"requested buffer length \({count} \* 4 bytes\) after offset "
                                         rf"\({offset} bytes\) must not be greater than actual buffer length \(8"):
        ag.frombuffer(bytearray(8), dtype=ag.int32, count=count, offset=offset)
    fits = ag.frombuffer(bytearray(range(8)), dtype=ag.uint8, count=8 - offset, offset=offset)
    assert fits.tolist() == list(range(offset, 8))


@pytest.mark.gpu
def test_contains_and_from_dlpack_on_cuda(cupy) -> None:
    x = ag.tensor([1.0, 2.0, 3.0], device="cuda:0")
    assert np.int64(2) in x and (2 + 1j) not in x
    out = ag.from_dlpack(x)
    assert out is not x and out.device == x.device and out.data_ptr() == x.data_ptr()
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        ag.from_dlpack(x.requires_grad_())
