"""Creation functions and the small Tensor API against PyTorch 2.13: values, dtypes, errors and warnings. Values
are small literals that follow by hand or are computed in the test (linspace's float32 steps); dtypes, errors and
warnings were read off torch 2.13."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings

COPY_WARNING = (
    r"To copy construct from a tensor, it is recommended to use sourceTensor.detach\(\).clone\(\) or "
    r"sourceTensor.detach\(\).clone\(\).requires_grad_\(True\), rather than "
)


# -- tensor(), as_tensor(), from_numpy() -------------------------------------------------------------------------
def test_tensor_promotes_numpy_numbers_and_tensors_in_a_list_as_torch_does():
    assert ag.tensor([np.float64(1.0), 2]).dtype == ag.float64  # a numpy double stays double
    assert ag.tensor([np.float16(1.0), 2.0]).dtype == ag.float32
    assert ag.tensor([ag.tensor(1), 2.5]).dtype == ag.float32  # promote_types(int64, float32)
    assert ag.tensor([ag.tensor(1, dtype=ag.int32), 2]).dtype == ag.int64
    nested = ag.tensor([[ag.tensor(1.0)], [ag.tensor(2.0)]])
    assert nested.shape == (2, 1) and nested.tolist() == [[1.0], [2.0]]
    assert ag.tensor(range(3)).tolist() == [0, 1, 2]


def test_tensor_stores_numbers_checked_against_an_integer_dtype():
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        ag.tensor([300], dtype=ag.uint8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int32 without overflow"):
        ag.tensor([1.5e10], dtype=ag.int32)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64 without overflow"):
        ag.tensor([float("nan")], dtype=ag.int64)
    assert ag.tensor([-1, -255], dtype=ag.uint8).tolist() == [255, 1]  # torch wraps down to -max
    assert ag.tensor(np.array([300]), dtype=ag.uint8).tolist() == [44]  # an array is cast, wrapping
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ag.tensor([2**63])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning: inf, silently
        assert ag.tensor([1e40]).tolist() == [float("inf")]


@pytest.mark.parametrize(("data", "error", "text"), [
    ([[1, 2], [3]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1], 2], TypeError, "not a sequence"),
    ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
    ("abc", TypeError, "new\\(\\): invalid data type 'str'"),
    (np.array(["a"]), TypeError, "can't convert np.ndarray of type numpy.str_. The only supported types are: "
                                 "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
                                 "uint64, uint32, uint16, uint8, and bool."),
    (np.array([1.0], dtype=">f8"), ValueError, "given numpy array has byte order different from the native"),
])
def test_tensor_refuses_bad_data_with_torchs_errors(data, error, text):
    with pytest.raises(error, match=text):
        ag.tensor(data)


def test_copy_constructing_from_a_tensor_warns_as_torch_does():
    source = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=COPY_WARNING + r"actorgrad.tensor\(sourceTensor\)."):
        copy = ag.tensor(source)
    assert copy.is_leaf and not copy.requires_grad
    with pytest.warns(UserWarning, match=COPY_WARNING + r"tensor.new_tensor\(sourceTensor\)."):
        source.new_tensor(source)


def test_numpy_reads_a_tensor_through_its_memory_as_torch_lets_it():
    t = ag.tensor([1.0, 2.0])
    shared = np.asarray(t)
    shared[0] = 5.0
    assert t.tolist() == [5.0, 2.0] and np.asarray(t).dtype == np.float32
    assert np.array(t).base is None and np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.stack([ag.ones(2), ag.zeros(2)]).shape == (2, 2) and np.asarray(ag.tensor(3)).shape == ()
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that requires grad"):
        np.asarray(ag.tensor([1.0], requires_grad=True))
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_from_numpy_and_as_tensor_share_the_array(monkeypatch):
    array = np.array([1.0, 2.0])
    shared, kept = ag.from_numpy(array), ag.as_tensor(array)
    array[0] = 9.0
    assert shared.tolist() == kept.tolist() == [9.0, 2.0] and shared.dtype == ag.float64
    copied = ag.as_tensor(array, dtype=ag.float32)
    array[0] = 5.0
    assert copied.tolist() == [9.0, 2.0]
    assert ag.as_tensor([1, 2]).dtype == ag.int64 and ag.as_tensor([1.0]).dtype == ag.float32
    x = ag.tensor([1.0], requires_grad=True)
    assert ag.as_tensor(x) is x
    assert ag.as_tensor(x, dtype=ag.float64).grad_fn.name() == "ToCopyBackward0"
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        ag.from_numpy([1, 2])
    readonly = np.array([1.0])
    readonly.setflags(write=False)
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch warns once per process
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        ag.from_numpy(readonly)


# -- requires_grad, data -----------------------------------------------------------------------------------------
def test_requires_grad_refusals_use_torchs_texts():
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        ag.zeros(2, dtype=ag.int64, requires_grad=True)
    ints = ag.tensor([1, 2])
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require gradients$"):
        ints.requires_grad = True
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        ints.requires_grad_()
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf variables\.$"):
        (ag.tensor([1.0], requires_grad=True) * 2).requires_grad = True


def test_data_of_a_tensor_requiring_grad_must_stay_floating():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be floating point"):
        x.data = ag.tensor([5, 6])
    assert x.dtype == ag.float32


# -- the Tensor API ----------------------------------------------------------------------------------------------
def test_size_stride_and_storage_offset():
    x = ag.zeros(4, 6)
    assert x.stride() == (6, 1) and x.stride(-1) == 1 and x.T.stride() == (1, 6)
    view = x[1::2, 1::3]
    assert view.stride() == (12, 3) and view.storage_offset() == 7 and x[2].storage_offset() == 12
    assert x.storage_offset() == 0 and ag.zeros(0, 3).stride() == (3, 1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.size(2)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ag.tensor(1.0).size(0)
    with pytest.raises(TypeError, match="size\\(\\): argument 'dim' \\(position 1\\) must be int, not float"):
        x.size(1.0)


def test_float_of_a_tensor_requiring_grad_warns():
    x = ag.tensor([2.5], requires_grad=True)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
        assert float(x) == 2.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.item() == 2.5 and int(x) == 2


def test_iteration_unbinds_and_reversed_flips():
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert [r.grad_fn.name() for r in rows] == ["UnbindBackward0", "UnbindBackward0"]
    assert [r.tolist() for r in reversed(x)] == [[3.0, 4.0], [1.0, 2.0]]


def test_adjoint_properties(monkeypatch):
    x = ag.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert x.H.tolist() == x.mH.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x.H.grad_fn.name() == "TransposeBackward0"
    assert ag.ones(2, 2, 3).mH.shape == (2, 3, 2)
    with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices \(2-D tensors\). Got 3-D tensor. "
                                           "For batches of matrices, consider using tensor.mH"):
        _ = ag.ones(2, 2, 3).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices or batches of matrices. Got 1-D"):
        _ = ag.ones(3).mH
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch warns once per process
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        _ = ag.tensor(2.0).H


def test_is_complex_and_legacy_type_names():
    assert not ag.zeros(2).is_complex() and not ag.is_complex(ag.zeros(2))
    with pytest.raises(ValueError, match="invalid type: 'foo'"):
        ag.zeros(2).type("foo")
    with pytest.raises(ValueError, match="invalid type: 'actorgrad.float64'"):
        ag.zeros(2).type("actorgrad.float64")


# -- constants ---------------------------------------------------------------------------------------------------
def test_sizes_as_torch_reads_them():
    assert ag.zeros(2, ag.tensor(3)).shape == (2, 3)
    with pytest.raises(TypeError, match=r"zeros\(\): argument 'size' \(position 1\) must be tuple of ints, not float"):
        ag.zeros(2.0)
    with pytest.raises(TypeError, match="ones\\(\\): argument 'size' failed to unpack the object at pos 2 with error "
                                        "\"type must be tuple of ints,but got float\""):
        ag.ones(2, 3.0)
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with sizes=\[4611686018427387904, "):
        ag.empty(2**62, 2**62)
    with pytest.raises(TypeError, match='^zeros\\(\\) missing 1 required positional arguments: "size"$'):
        ag.zeros()


@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.zeros(np.array([2, 3])),
     "zeros(): argument 'size' (position 1) must be tuple of ints, not numpy.ndarray"),
    (lambda: ag.ones(np.array([2])), "ones(): argument 'size' (position 1) must be tuple of ints, not numpy.ndarray"),
    (lambda: ag.zeros(size=np.array([2, 3])), "zeros(): argument 'size' must be tuple of ints, not numpy.ndarray"),
    (lambda: ag.zeros(np.array(3.0)), "zeros(): argument 'size' (position 1) must be tuple of ints, not numpy.ndarray"),
    (lambda: ag.zeros(np.float64(3)), "zeros(): argument 'size' (position 1) must be tuple of ints, not numpy.float64"),
    (lambda: ag.zeros(ag.tensor([2, 3])), "zeros(): argument 'size' (position 1) must be tuple of ints, not Tensor"),
    (lambda: ag.zeros(2, np.array([3])), "zeros(): argument 'size' failed to unpack the object at pos 2 with error "
                                         "\"type must be tuple of ints,but got numpy.ndarray\""),
    (lambda: ag.zeros(2).new_zeros(np.array([2])),
     "new_zeros(): argument 'size' (position 1) must be tuple of ints, not numpy.ndarray"),
])
def test_a_numpy_array_is_no_size_as_in_torch(call, text):
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == text


def test_zero_dim_integer_arrays_and_tensors_are_sizes():
    assert ag.zeros(np.array(3)).shape == (3,) and ag.zeros(np.array(2), np.int64(3)).shape == (2, 3)
    assert ag.zeros(ag.tensor(3)).shape == (3,)


def test_full_takes_zero_dim_tensors_and_refuses_what_does_not_fit():
    assert ag.full((2,), ag.tensor(3)).tolist() == [3, 3] and ag.full((2,), ag.tensor(1.5)).dtype == ag.float32
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        ag.full((2,), 1e300, dtype=ag.float32)
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half without overflow"):
        ag.full_like(ag.zeros(2, dtype=ag.float16), 70000.0)
    assert ag.full((2,), float("inf"), dtype=ag.float16).tolist() == [float("inf")] * 2
    with pytest.raises(TypeError, match="full\\(\\): argument 'size' \\(position 1\\) must be tuple of ints, not int"):
        ag.full(2, 1.0)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        ag.full_like(ag.zeros(2), 1 + 1j)  # numpy would drop the imaginary part


@pytest.mark.parametrize("make", [ag.zeros_like, ag.ones_like, ag.empty_like, ag.rand_like, ag.randn_like])
def test_like_functions_refuse_a_non_tensor(make):
    with pytest.raises(TypeError, match=f"{make.__name__}\\(\\): argument 'input' \\(position 1\\) must be Tensor"):
        make([1.0, 2.0])


# -- ranges ------------------------------------------------------------------------------------------------------
def test_arange_takes_end_as_a_keyword_and_words_errors_as_torch():
    assert ag.arange(end=3).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="^upper bound and lower bound inconsistent with step sign$"):
        ag.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="^step must be nonzero$"):
        ag.arange(0, 5, 0)


def test_linspace_computes_as_torchs_kernels():
    # the kernel's float32 steps: start + i step for the first half, end - (steps - 1 - i) step for the rest
    step = np.float32(1 / 6)
    expected = [np.float32(i * step) if i < 7 // 2 else np.float32(1 - (6 - i) * step) for i in range(7)]
    assert ag.linspace(0, 1, 7).tolist() == [float(v) for v in expected]
    assert ag.linspace(-3.7, 10, 4, dtype=ag.int64).tolist() == [-3, 1, 5, 10]
    assert ag.linspace(0, 1, 5, dtype=ag.int32).tolist() == [0, 0, 0, 0, 1]
    assert ag.linspace(ag.tensor(0.0), ag.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match=r"linspace only supports 0-dimensional start and end tensors, but got "
                                           r"start with 1 dimension\(s\) and end with 0 dimension\(s\)."):
        ag.linspace(ag.tensor([0.0]), ag.tensor(1.0), 3)
    with pytest.raises(NotImplementedError, match="\"linspace_cpu\" not implemented for 'Bool'"):
        ag.linspace(0, 1, 3, dtype=ag.bool_)
    with pytest.raises(RuntimeError, match="^number of steps must be non-negative$"):
        ag.linspace(0, 1, -1)


def test_logspace():
    assert ag.logspace(-1, 2, 4, base=3).tolist() == [float(np.float32(1 / 3)), 1.0, 3.0, 9.0]  # 3^-1 in float32
    assert ag.logspace(0, 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert ag.logspace(0.5, 3.7, 3, base=2, dtype=ag.int64).tolist() == [1, 2, 8]
    assert np.isnan(ag.logspace(0, 1, 3, base=-2.0).numpy()[1])
    assert ag.logspace(0, 1, 2, requires_grad=True).requires_grad


# -- random ------------------------------------------------------------------------------------------------------
def test_random_floats_refuse_other_dtypes_as_torchs_kernels():
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ag.rand(2, dtype=ag.int64)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Bool'"):
        ag.randn_like(ag.tensor([True]))


def test_randint_checks_the_range_fits_the_dtype():
    assert ag.randint(0, 2, (5,), dtype=ag.bool_).dtype == ag.bool_
    assert ag.randint(0, 256, (5,), dtype=ag.uint8).dtype == ag.uint8
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ag.randint(0, 257, (2,), dtype=ag.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        ag.randint(-1, 5, (2,), dtype=ag.uint8)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        ag.randint(0, 3, (2,), dtype=ag.bool_)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for c10::Half"):
        ag.randint(0, 70000, (2,), dtype=ag.float16)
    with pytest.raises(TypeError, match="randint\\(\\): argument 'size' \\(position 2\\) must be tuple of ints"):
        ag.randint(5, 3)


def test_randint_like_keeps_shape_and_dtype_and_follows_the_generator():
    base = ag.zeros(2, 3)
    drawn = ag.randint_like(base, 5)
    assert drawn.shape == (2, 3) and drawn.dtype == ag.float32 and 0 <= drawn.numpy().min() <= drawn.numpy().max() < 5
    assert ag.randint_like(base, 1, 5, dtype=ag.int64).dtype == ag.int64
    assert ag.randint_like(base, 5, requires_grad=True).requires_grad
    first = ag.randint_like(base, 100, generator=ag.Generator().manual_seed(3)).tolist()
    assert ag.randint_like(base, 100, generator=ag.Generator().manual_seed(3)).tolist() == first
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=0 >= to=0"):
        ag.randint_like(base, 0)


def test_seeds_are_kept_as_uint64():
    assert ag.Generator().manual_seed(-1).initial_seed() == 2**64 - 1
    assert ag.manual_seed(1.5).initial_seed() == 1  # torch.manual_seed takes int(seed)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ag.Generator().manual_seed(2**64)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        ag.Generator().manual_seed(1.5)
