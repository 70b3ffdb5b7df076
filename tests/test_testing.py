"""actorgrad.testing: assert_close's tolerances per dtype, its checks and PyTorch's failure messages; make_tensor's
ranges per dtype, its options and errors."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.testing import assert_close, make_tensor


def failure(actual, expected, error=AssertionError, **kwargs):
    with pytest.raises(error) as info:
        assert_close(actual, expected, **kwargs)
    return str(info.value)


def test_message_for_mismatched_tensors():
    rel = float(np.float32(0.5) / np.float32(2.5))
    assert failure(ag.tensor([1.0, 2.0, 3.0]), ag.tensor([1.0, 2.5, 3.0])) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        f"Greatest relative difference: {rel} at index (1,) (up to 1.3e-06 allowed)")


def test_greatest_differences_are_located_separately():
    text = failure(ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ag.float64),
                   ag.tensor([[1.0, 2.5], [3.0, 5.0]], dtype=ag.float64))
    assert "Mismatched elements: 2 / 4 (50.0%)" in text
    assert "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-07 allowed)" in text
    assert "Greatest relative difference: 0.2 at index (0, 1) (up to 1e-07 allowed)" in text


def test_integers_and_bools_compare_for_equality():
    assert failure(ag.tensor([1, 2, 3]), ag.tensor([1, 4, 3])) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 2 at index (1,)\nGreatest relative difference: 0.5 at index (1,)")
    assert "Greatest absolute difference: 1 at index (1,)" in failure(ag.tensor([True, False]),
                                                                       ag.tensor([True, True]))


def test_tolerances_given_for_integers_apply_to_them():
    assert_close(ag.tensor([1, 2]), ag.tensor([1, 3]), rtol=0, atol=1)
    assert_close(ag.tensor([10, 20]), ag.tensor([10, 22]), rtol=0.1, atol=0)
    assert "Greatest absolute difference: 2 at index (1,) (up to 1 allowed)" in failure(
        ag.tensor([1, 1]), ag.tensor([1, 3]), rtol=0, atol=1)


def test_numpy_scalars_compare_as_python_numbers():
    assert_close(np.float64(1.0), np.float64(1.0 + 1e-9))  # float64's tolerances, not equality
    assert_close(np.float32(2.0), 2.0)
    assert_close(np.int64(3), 3)
    assert failure(np.float64(1.0), np.float64(1.5)).startswith(
        "Scalars are not close!\n\nExpected 1.5 but got 1.0.\nAbsolute difference: 0.5 (up to 1e-07 allowed)")


@pytest.mark.parametrize(("dtype", "rtol", "atol"), [
    (ag.float16, 1e-3, 1e-5), (ag.float32, 1.3e-6, 1e-5), (ag.float64, 1e-7, 1e-7),
    (ag.complex64, 1.3e-6, 1e-5), (ag.complex128, 1e-7, 1e-7),
])
def test_default_tolerances_per_dtype(dtype, rtol, atol):
    expected = ag.tensor([100.0], dtype=dtype)
    inside = 0.9 * (atol + rtol * 100.0)
    assert_close(ag.tensor([100.0 + inside], dtype=dtype), expected)
    text = failure(ag.tensor([100.0 + 3 * (atol + rtol * 100.0)], dtype=dtype), expected)
    assert f"(up to {atol} allowed)" in text and f"(up to {rtol} allowed)" in text


def test_explicit_tolerances_and_their_pairing():
    assert_close(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.1]), rtol=0.1, atol=0.0)
    assert failure(ag.tensor([1.0]), ag.tensor([1.0]), ValueError, rtol=1e-3) == (
        "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol.")
    assert "not equal" in failure(ag.tensor([0.0]), ag.tensor([1e-6]), rtol=0, atol=0)


def test_nan_and_infinities():
    nan = float("nan")
    assert "Greatest absolute difference: nan at index (1,)" in failure(ag.tensor([1.0, nan]), ag.tensor([1.0, nan]))
    assert_close(ag.tensor([1.0, nan]), ag.tensor([1.0, nan]), equal_nan=True)
    assert_close(ag.tensor([math.inf, -math.inf]), ag.tensor([math.inf, -math.inf]))
    failure(ag.tensor([math.inf]), ag.tensor([-math.inf]))


def test_attribute_checks():
    assert failure(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.0, 3.0])) == (
        "The values for attribute 'shape' do not match: (2,) != (3,).")
    assert failure(ag.tensor([1.0]), ag.tensor([1.0], dtype=ag.float64)) == (
        "The values for attribute 'dtype' do not match: actorgrad.float32 != actorgrad.float64.")
    assert_close(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.0], dtype=ag.float64), check_dtype=False)
    # Without the dtype check, values compare in the promoted dtype with the looser tolerance of the two.
    assert "Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)" in failure(
        ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.5], dtype=ag.float64), check_dtype=False)
    column = ag.tensor([[1.0, 2.0], [3.0, 4.0]])[:, 0]
    assert_close(ag.tensor([1.0, 3.0]), column)
    assert failure(ag.tensor([1.0, 3.0]), column, check_stride=True) == (
        "The values for attribute 'stride()' do not match: (1,) != (2,).")
    assert_close(ag.tensor([1.0]), ag.tensor([1.0], requires_grad=True))
    assert_close(ag.nn.Parameter(ag.tensor([1.0])), ag.tensor([1.0]))
    assert "No comparison pair" in failure(ag.nn.Parameter(ag.tensor([1.0])), ag.tensor([1.0]), TypeError,
                                           allow_subclasses=False)


def test_scalars_and_zero_dim_tensors():
    assert failure(ag.tensor(1.0), ag.tensor(2.0)) == (
        "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
        "Absolute difference: 1.0 (up to 1e-05 allowed)\nRelative difference: 0.5 (up to 1.3e-06 allowed)")
    assert failure(1.0, 1.5).startswith("Scalars are not close!\n\nExpected 1.5 but got 1.0.")
    assert failure(1, 1.0) == "The (d)types do not match: <class 'int'> != <class 'float'>."
    assert_close(1, 1.0, check_dtype=False)
    assert "Relative difference: inf" in failure(1.0, 0.0)


def test_containers_name_the_failing_item():
    assert failure([1.0, 2.0], [1.0, 2.5]).endswith("\n\nThe failure occurred for item [1]")
    assert failure({"a": ag.tensor(1.0)}, {"a": ag.tensor(2.0)}).endswith("The failure occurred for item ['a']")
    assert failure([1.0], [1.0, 2.0]) == "The length of the sequences mismatch: 1 != 2"
    assert failure({"a": 1}, {"b": 1}) == (
        "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
        "Additional keys in the actual mapping: ['a']")
    assert failure(None, 1) == "None mismatch: None is not 1"
    assert_close((ag.tensor([1.0]), None, [2]), [ag.tensor([1.0]), None, (2,)])
    assert failure(ag.tensor([1.0]), [1.0], TypeError) == (
        "No comparison pair was able to handle inputs of type <class 'actorgrad.tensor.Tensor'> and <class 'list'>.")


def test_msg_replaces_or_edits_the_message():
    assert failure(ag.tensor([1.0]), ag.tensor([2.0]), msg="custom") == "custom"
    assert failure([ag.tensor([1.0])], [ag.tensor([2.0])], msg=lambda m: "X" + m).startswith(
        "XTensor-likes are not close!")
    assert failure(ag.tensor([1.0]), ag.tensor([1.0, 2.0]), msg="m") == "m"


def test_numpy_arrays_compare_like_tensors():
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert "Mismatched elements: 1 / 2 (50.0%)" in failure(np.array([1.0, 2.0]), np.array([1.0, 3.0]))


@pytest.mark.parametrize(("dtype", "low", "high"), [
    (ag.float32, -9, 9), (ag.float64, -9, 9), (ag.float16, -9, 9), (ag.int64, -9, 10), (ag.int32, -9, 10),
    (ag.int8, -9, 10), (ag.uint8, 0, 10), (ag.bool, 0, 2),
])
def test_make_tensor_default_ranges(dtype, low, high):
    ag.manual_seed(0)
    t = make_tensor(2000, dtype=dtype)
    values = t.numpy().astype(np.float64)
    assert t.dtype == dtype and t.shape == (2000,)
    assert values.min() >= low and values.max() < high
    # The draws fill the range: both ends are approached.
    assert values.min() < low + 1 and values.max() >= high - 1 - (dtype.kind == "f")


def test_make_tensor_complex_parts_and_explicit_range():
    t = make_tensor((3, 40), dtype=ag.complex128, low=2, high=3)
    parts = np.concatenate([t.numpy().real.ravel(), t.numpy().imag.ravel()])
    assert t.shape == (3, 40) and parts.min() >= 2 and parts.max() < 3
    ints = make_tensor(500, dtype=ag.int64, low=-2.5, high=2.5)  # int bounds are ceiled: [-2, 3)
    assert set(ints.tolist()) == {-2, -1, 0, 1, 2}
    huge = make_tensor(100, dtype=ag.float16, low=-1e9, high=1e9)
    assert np.all(np.isfinite(huge.numpy()))


def test_make_tensor_options():
    ag.manual_seed(1)
    a = make_tensor(3, 4, dtype=ag.float64, noncontiguous=True, requires_grad=True)
    assert a.shape == (3, 4) and not a.is_contiguous() and a.requires_grad and a.is_leaf
    ag.manual_seed(1)
    b = make_tensor([3, 4], dtype=ag.float64, noncontiguous=True)
    assert_close(a.detach(), b)
    assert make_tensor(1, dtype=ag.float32, noncontiguous=True).is_contiguous()
    ones = make_tensor(50, dtype=ag.int64, low=0, high=1, exclude_zero=True)
    assert ones.tolist() == [1] * 50
    # Draws below float32's smallest subnormal round to zero, which exclude_zero replaces by the smallest normal.
    tiny = make_tensor(50, dtype=ag.float32, low=0.0, high=1e-46, exclude_zero=True)
    assert np.all(tiny.numpy() == np.finfo(np.float32).tiny)


def test_make_tensor_errors():
    with pytest.raises(ValueError, match=r"`requires_grad=True` is not supported for boolean and integral dtypes"):
        make_tensor(2, dtype=ag.int64, requires_grad=True)
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 3 >= 2"):
        make_tensor(2, dtype=ag.float32, low=3, high=2)
    with pytest.raises(ValueError, match="`low` and `high` cannot be NaN"):
        make_tensor(2, dtype=ag.float32, low=math.nan)
    with pytest.raises(ValueError, match=r"The value interval specified by `low` and `high` is \[300, 400\), but "
                                         r"actorgrad.uint8 only supports \[0, 256\)"):
        make_tensor(2, dtype=ag.uint8, low=300, high=400)
    with pytest.raises(ValueError, match="`noncontiguous` and `memory_format` are mutually exclusive"):
        make_tensor(2, dtype=ag.float32, noncontiguous=True, memory_format="channels_last")


@pytest.mark.gpu
def test_assert_close_and_make_tensor_on_cuda(cupy):
    t = make_tensor(3, 5, dtype=ag.float32, device="cuda:0", noncontiguous=True)
    assert t.device == ag.device("cuda:0") and t.cpu().numpy().min() >= -9
    assert_close(t, t.clone())
    assert failure(t.cpu(), t) == "The values for attribute 'device' do not match: cpu != cuda:0."
    assert_close(t.cpu(), t, check_device=False)
