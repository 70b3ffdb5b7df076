"""Creation functions: shapes, PyTorch's default dtypes, values, repeatable random draws and bad input."""

import numpy as np
import pytest

import actorgrad as ag


@pytest.mark.parametrize(("make", "fill"), [(ag.zeros, 0.0), (ag.ones, 1.0)])
def test_constants_take_size_as_varargs_or_a_tuple(make, fill):
    for t in (make(2, 3), make((2, 3)), make([2, 3])):
        assert t.shape == (2, 3) and t.dtype == ag.float32
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), fill))
    assert make(()).shape == ()
    assert make(2, dtype=ag.float64).dtype == ag.float64
    assert make(0, 4).shape == (0, 4)


def test_empty_has_the_shape_and_dtype_asked_for():
    t = ag.empty(3, 2, dtype=ag.int32)
    assert t.shape == (3, 2) and t.dtype == ag.int32


def test_requires_grad_makes_a_leaf_that_requires_grad():
    t = ag.zeros(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None


@pytest.mark.parametrize(
    ("fill", "dtype"),
    [(True, ag.bool_), (3, ag.int64), (1.5, ag.float32), (np.float64(2.0), ag.float32), (1 - 2j, ag.complex64)],
)
def test_full_infers_its_dtype_from_the_fill_value(fill, dtype):
    t = ag.full((2, 2), fill)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), fill))
    assert ag.full((2,), 3, dtype=ag.float64).dtype == ag.float64


def test_a_complex_fill_value_fills_complex_tensors_and_a_real_one_only_off_its_imaginary_part():
    assert ag.full_like(ag.zeros(2, dtype=ag.complex128), 2j).tolist() == [2j, 2j]
    assert ag.full((2,), 2.5 + 0j, dtype=ag.int64).tolist() == [2, 2]  # on the real line: its real part, as C casts
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        ag.full((2,), 1j, dtype=ag.float32)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        ag.full_like(ag.zeros(2, dtype=ag.int64), 1 + 1j)
    # the same rule where a number is stored into an existing tensor (fill_, masked_fill)
    assert ag.zeros(2, dtype=ag.float64).fill_(1.5 + 0j).tolist() == [1.5, 1.5]
    with pytest.raises(RuntimeError, match="^value cannot be converted to type double without overflow$"):
        ag.zeros(2, dtype=ag.float64).masked_fill(ag.tensor([True, False]), 1j)


def test_like_functions_keep_shape_and_dtype():
    base = ag.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    for t, value in ((ag.zeros_like(base), 0), (ag.ones_like(base), 1), (ag.full_like(base, 7), 7)):
        assert t.shape == (2, 3) and t.dtype == ag.float64 and not t.requires_grad
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value))
    assert ag.zeros_like(base, dtype=ag.int64).dtype == ag.int64
    assert ag.ones_like(base, requires_grad=True).requires_grad


def test_arange_gives_int64_for_int_bounds_and_float32_otherwise():
    t = ag.arange(5)
    assert t.dtype == ag.int64
    np.testing.assert_array_equal(t.numpy(), np.arange(5))
    np.testing.assert_array_equal(ag.arange(2, 11, 3).numpy(), [2, 5, 8])
    np.testing.assert_array_equal(ag.arange(5, 0, -2).numpy(), [5, 3, 1])
    f = ag.arange(0, 1, 0.25)
    assert f.dtype == ag.float32
    np.testing.assert_allclose(f.numpy(), [0, 0.25, 0.5, 0.75])
    assert ag.arange(5.0).dtype == ag.float32
    assert ag.arange(3, dtype=ag.float64).dtype == ag.float64
    assert ag.arange(0, 1, 0.1).shape == (10,)
    assert ag.arange(3, 3).shape == (0,)


def test_linspace_includes_both_ends():
    t = ag.linspace(-1, 1, 5)
    assert t.dtype == ag.float32
    np.testing.assert_allclose(t.numpy(), [-1, -0.5, 0, 0.5, 1])
    assert ag.linspace(0, 1, 1).tolist() == [0.0]
    assert ag.linspace(0, 1, 0).shape == (0,)


def test_eye_is_square_or_rectangular():
    np.testing.assert_array_equal(ag.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ag.eye(2, 4).numpy(), np.eye(2, 4))
    assert ag.eye(2).dtype == ag.float32 and ag.eye(2, dtype=ag.int64).dtype == ag.int64


def test_random_tensors_have_the_default_dtypes_and_ranges():
    ag.manual_seed(0)
    u = ag.rand(1000)
    assert u.dtype == ag.float32 and u.numpy().min() >= 0 and u.numpy().max() < 1
    n = ag.randn(2000, dtype=ag.float64)
    assert n.dtype == ag.float64 and abs(n.numpy().mean()) < 0.1 and abs(n.numpy().std() - 1) < 0.1
    assert ag.randn(4, dtype=ag.float16).dtype == ag.float16
    i = ag.randint(3, 7, (500,))
    assert i.dtype == ag.int64 and set(i.tolist()) == {3, 4, 5, 6}
    assert set(ag.randint(2, (100,)).tolist()) == {0, 1}
    assert ag.randint(0, 5, (2, 3), dtype=ag.int32).dtype == ag.int32
    base = ag.zeros(2, 3, dtype=ag.float64)
    assert ag.rand_like(base).shape == (2, 3) and ag.randn_like(base).dtype == ag.float64


@pytest.mark.parametrize(
    "draw",
    [
        lambda g: ag.rand(3, 2, generator=g),
        lambda g: ag.randn(4, generator=g),
        lambda g: ag.randint(10, (5,), generator=g),
    ],
)
def test_random_draws_repeat_under_a_seed(draw):
    ag.manual_seed(7)
    first = draw(None).numpy()
    ag.manual_seed(7)
    np.testing.assert_array_equal(draw(None).numpy(), first)
    assert not np.array_equal(draw(None).numpy(), first)
    from_generator = draw(ag.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(from_generator, first)


def test_negative_sizes_are_refused():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1, 2\]"):
        ag.ones(-1, 2)
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        ag.randn((2, -3))
    with pytest.raises(TypeError, match="must be tuple of ints"):
        ag.ones(2.5)


def test_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        ag.zeros(2, dtype=ag.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        ag.arange(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        ag.randint(5, 5, (2,))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ag.arange(0, 3, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ag.arange(3, 0, 1)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ag.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        ag.eye(-1)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ag.rand(2, dtype=ag.int64)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, async_cpu device type .*: tpu"):
        ag.zeros(2, device="tpu")
    with pytest.raises(TypeError, match="generator must be an actorgrad.Generator"):
        ag.rand(2, generator=3)
    assert ag.ones(2, device="cpu").shape == (2,)
