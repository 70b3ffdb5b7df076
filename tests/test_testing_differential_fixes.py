"""actorgrad.testing fixes found by comparing with torch.testing: tolerances shown whenever the comparison is not
an equality, the inputs' nesting checked (and reported without `msg`) before any values, 0-d boolean mismatches,
numpy strides in elements, PyTorch's type promotion under check_dtype=False, infinite numbers, bytes, and
make_tensor's memory_format and shape checks."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.testing import assert_close, make_tensor


def failure(actual, expected, error=AssertionError, **kwargs):
    with pytest.raises(error) as info:
        assert_close(actual, expected, **kwargs)
    return str(info.value)


def test_a_zero_tolerance_is_shown_when_the_other_is_not_zero():
    rel = float(np.float32(1.0) / np.float32(3.0))
    assert failure(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 3.0]), rtol=0, atol=1e-5) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 2 (50.0%)\n"
        "Greatest absolute difference: 1.0 at index (1,) (up to 1e-05 allowed)\n"
        f"Greatest relative difference: {rel} at index (1,) (up to 0 allowed)")
    assert failure(1.0, 2.0, rtol=1e-5, atol=0.0).endswith(
        "Absolute difference: 1.0 (up to 0.0 allowed)\nRelative difference: 0.5 (up to 1e-05 allowed)")


def test_the_nesting_is_checked_before_any_value():
    text = failure([ag.tensor([1.0]), [1, 2]], [ag.tensor([5.0]), [1]])
    assert text == "The length of the sequences mismatch: 2 != 1\n\nThe failure occurred for item [1]"


@pytest.mark.parametrize("actual, expected, error, text", [
    ([1.0], [1.0, 2.0], AssertionError, "The length of the sequences mismatch: 1 != 2"),
    ({"a": 1}, {"b": 1}, AssertionError, "The keys of the mappings do not match:\n"
     "Missing keys in the actual mapping: ['b']\nAdditional keys in the actual mapping: ['a']"),
    (ag.tensor([1.0]), "a", TypeError, "No comparison pair was able to handle inputs of type "
     f"{ag.Tensor} and {str}."),
])
def test_msg_does_not_replace_a_mismatch_of_the_nesting(actual, expected, error, text):
    assert failure(actual, expected, error, msg="custom") == text
    assert failure(actual, expected, error, msg=lambda m: "custom " + m) == text


def test_msg_still_replaces_value_mismatches():
    assert failure([ag.tensor([1.0])], [ag.tensor([2.0])], msg="custom") == "custom"
    assert failure([None], [1], msg="custom") == "custom"


def test_a_0d_boolean_mismatch_names_the_booleans():
    assert failure(ag.tensor(True), ag.tensor(False)) == (
        "Scalars are not equal!\n\nExpected False but got True.\nAbsolute difference: 1\nRelative difference: inf")


def test_numpy_strides_are_counted_in_elements():
    text = failure(np.ones((3, 2)).T, np.ones((2, 3)), check_stride=True)
    assert text == "The values for attribute 'stride()' do not match: (1, 2) != (3, 1)."


def test_int64_and_float32_compare_in_float32_without_check_dtype():
    big = 2 ** 24 + 1  # not a float32: it rounds to 2 ** 24
    assert float(np.float32(big)) == 2 ** 24
    assert_close(ag.tensor([big]), ag.tensor([2.0 ** 24]), check_dtype=False, rtol=0, atol=0)
    with pytest.raises(AssertionError, match="Tensor-likes are not equal"):
        assert_close(ag.tensor([big]), ag.tensor([2.0 ** 24], dtype=ag.float64), check_dtype=False, rtol=0, atol=0)


@pytest.mark.parametrize("actual, expected", [
    (math.inf, -math.inf), (1.0, math.inf), (-math.inf, 1.0), (complex(math.inf, 0), complex(-math.inf, 0)),
    (1j, complex(0, math.inf)),
])
def test_an_infinite_number_is_close_only_to_itself(actual, expected):
    text = failure(actual, expected)
    assert text.startswith(f"Scalars are not close!\n\nExpected {expected} but got {actual}.\n"
                           "Absolute difference: inf (up to 1e-07 allowed)\n")
    assert_close(expected, expected)


def test_bytes_compare_as_sequences_of_numbers():
    assert_close(b"ab", b"ab")
    assert_close(b"ab", [97, 98])
    assert failure(b"ab", b"ac") == ("Scalars are not equal!\n\nExpected 99 but got 98.\nAbsolute difference: 1\n"
                                     f"Relative difference: {1 / 99}\n\nThe failure occurred for item [1]")


@pytest.mark.parametrize("shape, memory_format", [((2, 3, 4, 5), "channels_last"), ((2, 3, 4, 5, 6),
                                                                                    "channels_last_3d")])
@pytest.mark.parametrize("dtype", [ag.float64, ag.int32, ag.bool])
def test_make_tensor_lays_values_out_in_the_memory_format(shape, memory_format, dtype):
    t = make_tensor(shape, dtype=dtype, memory_format=getattr(ag, memory_format))
    n, c, *spatial = shape
    inner = int(np.prod(spatial))
    # channels last: channels vary fastest, then the spatial dimensions in order, then the batch
    spatial_strides = [c * int(np.prod(spatial[i + 1:])) for i in range(len(spatial))]
    assert t.stride() == (c * inner, 1, *spatial_strides)
    assert t.is_contiguous(memory_format=getattr(ag, memory_format)) and not t.is_contiguous()
    assert tuple(t.shape) == shape and t.dtype == dtype


def test_make_tensor_memory_format_keeps_a_leaf_and_checks_the_rank():
    t = make_tensor(2, 3, 4, 5, dtype=ag.float64, memory_format=ag.channels_last, requires_grad=True)
    assert t.is_leaf and t.requires_grad and t.grad_fn is None
    assert make_tensor(2, 3, dtype=ag.float32, memory_format=ag.contiguous_format).is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        make_tensor(2, 3, 4, dtype=ag.float32, memory_format=ag.channels_last)
    with pytest.raises(ValueError, match="`noncontiguous` and `memory_format` are mutually exclusive"):
        make_tensor(2, 3, 4, 5, dtype=ag.float32, noncontiguous=True, memory_format=ag.channels_last)


@pytest.mark.parametrize("shape, error, text", [
    ((2.0,), TypeError, "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type "
     "float at pos 0"),
    (((2,), 3), TypeError, "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type "
     "tuple at pos 0"),
    ((2, -1), RuntimeError, "Trying to create tensor with negative dimension -1: [2, -1]"),
])
def test_make_tensor_checks_the_shape_as_empty_does(shape, error, text):
    with pytest.raises(error) as info:
        make_tensor(*shape, dtype=ag.float32)
    assert str(info.value) == text


def test_make_tensor_takes_the_shape_forms():
    for shape in [(2, 3), ((2, 3),), ([2, 3],), (ag.zeros(2, 3).shape,), (np.int64(2), 3)]:
        assert tuple(make_tensor(*shape, dtype=ag.float32).shape) == (2, 3)
    assert tuple(make_tensor(dtype=ag.float32).shape) == ()


@pytest.mark.gpu
def test_make_tensor_memory_format_on_cuda(cupy):
    t = make_tensor(2, 3, 4, 5, dtype=ag.float32, device="cuda:0", memory_format=ag.channels_last)
    assert t.device == ag.device("cuda:0") and t.stride() == (60, 1, 15, 3)
    assert t.is_contiguous(memory_format=ag.channels_last)
    assert_close(t, t.contiguous())
    assert failure(ag.tensor(True, device="cuda:0"), ag.tensor(False, device="cuda:0")).startswith(
        "Scalars are not equal!\n\nExpected False but got True.")
