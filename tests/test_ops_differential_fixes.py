"""Behaviours where a differential run against PyTorch found the ops differing, each checked against an independent
reference: integer powers with negative tensor exponents, the int64 sum of integers, float16 cumsum, logcumsumexp
and round(decimals), transpose of a 0-d tensor, 0-d boolean and uint8 masks as indices, where(condition) alone,
float_power with complex operands, view(dtype), complex lerp, the p=0 norm of a complex tensor in a backward pass,
var/std/norm refusing integers (norm's dtype= argument), fmod's and copysign's Python numbers, integer division of
empty tensors, complex tensors refused by fmod, signbit, fmax, fmin and heaviside, and the keyword names of flip,
permute, reshape, view, expand and concatenate."""

import cmath
import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck


def _integer_power(base: int, exponent: int) -> int:
    """Integer power as C's repeated multiplication gives it: a negative exponent leaves 1 / base truncated."""
    if exponent >= 0:
        return base**exponent
    return 1 if base == 1 else (-1) ** exponent if base == -1 else 0


@pytest.mark.parametrize("dtype", [ag.int64, ag.int32])
def test_integer_tensor_to_negative_tensor_powers_truncates_as_pytorch(dtype):
    bases = [2, 1, -1, 0, -2, 3, -1, 5]
    exponents = [-1, -2, -3, -1, -1, -2, -2, 2]
    got = ag.pow(ag.tensor(bases, dtype=dtype), ag.tensor(exponents, dtype=dtype))
    assert got.dtype == dtype
    assert got.tolist() == [_integer_power(b, e) for b, e in zip(bases, exponents)]
    # a 0-d exponent tensor broadcasts; a uint8 base promotes to int64 with the exponent
    assert (ag.tensor(bases) ** ag.tensor(-1)).tolist() == [_integer_power(b, -1) for b in bases]
    unsigned = ag.pow(ag.tensor([1, 2, 255], dtype=ag.uint8), ag.tensor([-1, -1, -3]))
    assert unsigned.dtype == ag.int64 and unsigned.tolist() == [1, 0, 0]


def test_python_int_to_negative_integer_tensor_powers_truncates_as_pytorch():
    exponents = [-2, -1, 0, 1, 3]
    for base in (2, -1, 1, 0, -3):
        got = base ** ag.tensor(exponents)
        assert got.dtype == ag.int64
        assert got.tolist() == [_integer_power(base, e) if base or e >= 0 else 0 for e in exponents]


def test_integer_tensor_to_a_negative_python_int_still_raises():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        ag.tensor([2, 3]) ** -1


@pytest.mark.parametrize("dtype", [ag.uint8, ag.int8, ag.int16, ag.int32, ag.bool])
def test_sum_of_integers_and_bools_is_int64(dtype):
    values = np.array([[200, 100, 7], [1, 0, 250]]) if dtype == ag.uint8 else np.array([[1, 0, 1], [1, 1, 0]])
    x = ag.tensor(values.astype(np.dtype(dtype)))
    for out, expected in [
        (x.sum(), int(values.sum())),
        (x[0, 0].sum(), int(values[0, 0])),
        (x.sum(0), values.sum(0).tolist()),
        (ag.sum(x, -1, keepdim=True), values.sum(-1, keepdims=True).tolist()),
    ]:
        assert out.dtype == ag.int64
        assert out.tolist() == expected


def test_float16_cumsum_and_its_gradient_accumulate_in_float32():
    n = 5000  # past 2048, where a float16 running sum of ones stops growing
    x = ag.ones(n, dtype=ag.float16, requires_grad=True)
    y = x.cumsum(0)
    assert y.dtype == ag.float16
    np.testing.assert_array_equal(y.detach().numpy(), np.arange(1, n + 1).astype(np.float16))
    (grad,) = ag.autograd.grad(y, x, ag.ones(n, dtype=ag.float16))
    assert grad.dtype == ag.float16
    np.testing.assert_array_equal(grad.numpy(), np.arange(n, 0, -1).astype(np.float16))
    from_ints = ag.ones(n, dtype=ag.int32).cumsum(0, dtype=ag.float16)
    np.testing.assert_array_equal(from_ints.numpy(), np.arange(1, n + 1).astype(np.float16))


def _float16_columns():
    """5000 float16 values in each of 3 columns: a float16 sum down a column stops growing at 2048."""
    values = np.random.default_rng(1).uniform(0, 1, (5000, 3)).astype(np.float16)
    return values, values.astype(np.float64)


@pytest.mark.parametrize("op, reference", [
    (lambda x: x.sum(0), lambda v: v.sum(0)),
    (lambda x: ag.nansum(x, 0), lambda v: v.sum(0)),
    (lambda x: x.norm(dim=0), lambda v: np.sqrt((v * v).sum(0))),
    (lambda x: x.norm(p=3, dim=0), lambda v: (v**3).sum(0) ** (1 / 3)),
    (lambda x: x.var(0), lambda v: v.var(0, ddof=1)),
    (lambda x: ag.var_mean(x, 0)[1], lambda v: v.mean(0)),
    (lambda x: ag.logsumexp(x, 0), lambda v: np.log(np.exp(v).sum(0))),
    (lambda x: x.softmax(0)[:4] * 5000, lambda v: np.exp(v[:4]) / np.exp(v).sum(0) * 5000),
    (lambda x: x.log_softmax(0)[:4], lambda v: v[:4] - np.log(np.exp(v).sum(0))),
])
def test_float16_reductions_along_a_long_dim_accumulate_in_float32(op, reference):
    values, exact = _float16_columns()
    got = op(ag.tensor(values))
    assert got.dtype == ag.float16
    np.testing.assert_allclose(got.numpy().astype(np.float64), reference(exact), rtol=2e-3)


@pytest.mark.parametrize("op, reference", [
    (lambda x: x.log_softmax(0), lambda v: 1 - np.exp(v) / np.exp(v).sum(0) * len(v)),
    (lambda x: x.var(0), lambda v: 2 * (v - v.mean(0)) / (len(v) - 1)),
])
def test_float16_gradients_of_long_reductions_accumulate_in_float32(op, reference):
    values, exact = _float16_columns()
    x = ag.tensor(values, requires_grad=True)
    out = op(x)
    (grad,) = ag.autograd.grad(out, x, ag.ones_like(out))
    assert grad.dtype == ag.float16
    # float16's own rounding of the saved results leaves errors near 1e-2 (a float16 sum gave 0.6 for 0.04)
    np.testing.assert_allclose(grad.numpy().astype(np.float64), reference(exact), rtol=1e-2, atol=1e-2)


def test_float16_logcumsumexp_runs_in_float32():
    values = np.random.default_rng(1).uniform(0, 1, 3000).astype(np.float16)
    got = ag.tensor(values).logcumsumexp(0)
    assert got.dtype == ag.float16
    exact = np.log(np.cumsum(np.exp(values.astype(np.float64))))
    np.testing.assert_allclose(got.numpy().astype(np.float64), exact, rtol=2e-3)


def test_float16_round_with_decimals_scales_in_float32():
    # float16 values next to a rounding boundary, where scaling by 10 in float16 itself lands on the boundary
    values = np.array([-1.55, -0.9497, -1.45, -1.851, 2.65, 0.35, 7.45], dtype=np.float16)
    got = ag.tensor(values).round(decimals=1)
    assert got.dtype == ag.float16
    expected = [np.float16(round(float(v), 1)) for v in values]  # Python rounds the exact value
    np.testing.assert_array_equal(got.numpy(), expected)


def test_transpose_of_a_0d_tensor_is_differentiable():
    x = ag.tensor(1.25, dtype=ag.float64, requires_grad=True)
    y = x.transpose(0, -1)
    assert y.shape == () and y.grad_fn.name() == "TransposeBackward0"
    assert gradcheck(lambda t: t.transpose(0, -1) * t, (x,))
    assert gradgradcheck(lambda t: t.transpose(0, 0) * t, (x,))


def test_0d_boolean_masks_index_as_a_new_dim():
    data = np.arange(6.0).reshape(2, 3)
    x = ag.tensor(data)
    for index, expected in [
        (True, data[True]),
        (False, data[False]),
        (ag.tensor(True), data[np.True_]),
        (ag.tensor(False), data[np.False_]),
        ((ag.tensor(True), 1), data[np.True_, 1]),
        ((Ellipsis, ag.tensor(False)), data[..., np.False_]),
        ((ag.tensor(True), ag.tensor([1, 0])), data[np.True_, np.array([1, 0])]),
    ]:
        got = x[index]
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got.numpy(), expected)
    flag = ag.tensor(True)
    assert flag[flag].tolist() == [True]
    leaf = ag.tensor(data, requires_grad=True)
    assert gradcheck(lambda t: t[True, 1:] * 2, (leaf,))
    written = x.clone()
    written[True] = 5.0
    written[False] = -1.0
    np.testing.assert_array_equal(written.numpy(), np.full((2, 3), 5.0))


def test_a_uint8_index_tensor_is_a_deprecated_mask():
    data = np.arange(6.0).reshape(3, 2)
    x = ag.tensor(data)
    for mask in ([1, 0, 2], [[1, 0], [0, 0], [0, 1]]):
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            got = x[ag.tensor(mask, dtype=ag.uint8)]
        np.testing.assert_array_equal(got.numpy(), data[np.array(mask, dtype=bool)])
    with pytest.raises(IndexError, match=re.escape("does not match the shape of the indexed tensor [3, 2] at index 0")):
        x[ag.tensor([True, False])]


def test_where_with_only_a_condition_is_nonzero_as_a_tuple():
    mask = np.array([[1, 0, 2], [0, 3, 0]])
    got = ag.where(ag.tensor(mask))
    assert isinstance(got, tuple) and len(got) == 2
    for part, expected in zip(got, np.nonzero(mask)):
        assert part.dtype == ag.int64 and part.tolist() == expected.tolist()
    assert [p.tolist() for p in ag.where(ag.tensor(2.5))] == [[0]]
    with pytest.raises(TypeError, match=r"where\(\) received an invalid combination of arguments - got \(Tensor, "):
        ag.where(ag.tensor([True]), ag.tensor([1.0]))


def test_float_power_with_a_complex_operand_is_complex128():
    bases, exponents = [2.0, 0.5 - 1j, 3j], [1j, 2.0, 0.5 + 0.25j]
    z = ag.tensor(np.array(bases, dtype=np.complex64))
    w = ag.tensor(exponents)
    got = ag.float_power(z, w)
    assert got.dtype == ag.complex128
    np.testing.assert_allclose(got.numpy(), [complex(b) ** e for b, e in zip(bases, exponents)], rtol=1e-6)
    real = ag.tensor([2.0, 4.0])
    assert ag.float_power(real, 1j).dtype == ag.complex128
    np.testing.assert_allclose(ag.float_power(real, 1j).numpy(), [cmath.exp(1j * cmath.log(v)) for v in (2, 4)])
    np.testing.assert_allclose(ag.float_power(1j, real).numpy(), [1j**2, 1j**4], atol=1e-15)
    assert ag.float_power(ag.tensor([2]), ag.tensor([3])).dtype == ag.float64
    leaves = (ag.tensor([1.5 + 0.5j, -0.7 + 1.2j], dtype=ag.complex128, requires_grad=True),
              ag.tensor([0.3 - 0.2j, 1.4 + 0.1j], dtype=ag.complex128, requires_grad=True))
    assert gradcheck(ag.float_power, leaves)


def test_view_as_another_dtype_reinterprets_the_bits():
    floats = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    x = ag.tensor(floats, requires_grad=True)
    bits = x.view(ag.int32)
    assert bits.dtype == ag.int32 and not bits.requires_grad
    np.testing.assert_array_equal(bits.numpy(), floats.view(np.int32))
    np.testing.assert_array_equal(x.detach().view(dtype=ag.float64).numpy(), floats.view(np.float64))
    np.testing.assert_array_equal(x.detach().view(ag.int16).numpy(), floats.view(np.int16))
    assert ag.tensor(1.5).view(ag.int32).item() == int(np.float32(1.5).view(np.int32))
    assert ag.zeros(3, 0, dtype=ag.int16).view(ag.int16).shape == (3, 0)
    base = ag.zeros(2)
    base.view(ag.int32)[0] = 1  # the smallest float32 subnormal: the memory is shared
    assert base[0].item() == float(np.array(1, dtype=np.int32).view(np.float32))


@pytest.mark.parametrize("make, message", [
    (lambda: ag.tensor(1.5).view(ag.int16), r"self.dim\(\) cannot be 0 to view Float as Short \(different element"),
    (lambda: ag.ones(3, dtype=ag.uint8).view(ag.int16),
     r"self.size\(-1\) must be divisible by 2 to view Byte as Short \(different element sizes\), but got 3"),
    (lambda: ag.ones(3, 2).t().view(ag.int16), r"self.stride\(-1\) must be 1 to view Float as Short"),
    (lambda: ag.ones(6, dtype=ag.int16)[1:5].view(ag.int32),
     r"self.storage_offset\(\) must be divisible by 2 to view Short as Int"),
])
def test_view_as_a_dtype_of_another_size_checks_the_layout(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


def test_lerp_of_complex_tensors_and_its_conjugate_gradients():
    rng = np.random.default_rng(5)
    start, end, weight = (rng.standard_normal(3) + 1j * rng.standard_normal(3) for _ in range(3))
    got = ag.lerp(ag.tensor(start), ag.tensor(end), ag.tensor(weight))
    np.testing.assert_allclose(got.numpy(), start + weight * (end - start), rtol=1e-12)
    np.testing.assert_allclose(ag.lerp(ag.tensor(start), ag.tensor(end), 0.25 + 0.5j).numpy(),
                               start + (0.25 + 0.5j) * (end - start), rtol=1e-12)
    leaves = tuple(ag.tensor(v, requires_grad=True) for v in (start, end, weight))
    assert gradcheck(ag.lerp, leaves)
    assert gradcheck(lambda a, b: ag.lerp(a, b, 0.3 - 0.6j), leaves[:2])
    assert gradgradcheck(ag.lerp, leaves)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_zero_norm_of_a_complex_tensor_gives_no_gradient(shape):
    z = ag.ones(shape, dtype=ag.complex64, requires_grad=True)
    assert ag.autograd.grad(ag.linalg.vector_norm(z, 0), z, allow_unused=True) == (None,)
    (ag.linalg.vector_norm(z, 0) + z.abs().sum()).backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.ones(shape))


@pytest.mark.parametrize("call, message", [
    (lambda: ag.tensor([1, 2]).var(), "std and var only support floating point and complex dtypes"),
    (lambda: ag.std(ag.tensor([[True, False]]), 1), "std and var only support floating point and complex dtypes"),
    (lambda: ag.tensor([3, 4]).norm(), "Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ag.norm(ag.ones(2), dtype=ag.int64), "dtype should be floating point or complex, but got Long"),
    (lambda: ag.norm(ag.ones(2), dtype=ag.complex128), "linalg.vector_norm: dtype should be real for real inputs"),
    (lambda: ag.norm(ag.ones(2, dtype=ag.complex64), dtype=ag.float64), "dtype should be complex for complex inputs"),
    (lambda: ag.norm(ag.ones(2, dtype=ag.float64), dtype=ag.float32),
     "the dtype of the input (Double) should be convertible without narrowing to the specified dtype (Float)"),
])
def test_var_std_and_norm_refuse_integer_tensors_and_bad_dtypes(call, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()


def test_norm_with_a_dtype_computes_in_it():
    values = np.array([[3.0, -4.0], [1.0, 2.0]], dtype=np.float32)
    x = ag.tensor(values, requires_grad=True)
    out = ag.norm(x, 2, 1, dtype=ag.float64)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(out.detach().numpy(), np.sqrt((values.astype(np.float64) ** 2).sum(1)), rtol=1e-15)
    out.sum().backward()
    assert x.grad.dtype == ag.float32
    np.testing.assert_allclose(x.grad.numpy(), values / np.sqrt((values**2).sum(1, keepdims=True)), rtol=1e-6)
    complex_norm = ag.ones(2, 2, dtype=ag.complex64).norm(dtype=ag.complex128)
    assert complex_norm.dtype == ag.float64 and complex_norm.item() == 2.0


def test_fmod_wraps_an_int_out_of_the_dtype_range_and_copysign_takes_any_number():
    # as PyTorch casts the number to the tensor's dtype: -3 as uint8 is 253, 300 as int8 is 44
    wrapped = ag.fmod(ag.tensor([5, 7, 255], dtype=ag.uint8), -3)
    assert wrapped.dtype == ag.uint8 and wrapped.tolist() == [5 % 253, 7 % 253, 255 % 253]
    assert ag.fmod(ag.tensor([50, -100], dtype=ag.int8), 300).tolist() == [50 % 44, -(100 % 44)]
    signs = ag.copysign(ag.tensor([5, 7], dtype=ag.uint8), -3)
    assert signs.dtype == ag.float32 and signs.tolist() == [-5.0, -7.0]


def test_integer_division_of_an_empty_tensor_by_zeros_is_empty():
    empty, divisors = ag.zeros(0, 3, dtype=ag.int64), ag.tensor([1, 0, 2])
    for result in (empty // divisors, empty % divisors, ag.fmod(empty, divisors)):
        assert result.shape == (0, 3) and result.dtype == ag.int64
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ag.ones(2, 3, dtype=ag.int64) // divisors


@pytest.mark.parametrize("call, error, message", [
    (lambda z: ag.fmod(z, 2), NotImplementedError, "\"fmod_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: ag.signbit(z), NotImplementedError, "signbit is not implemented for complex tensors."),
    (lambda z: ag.fmax(z, z), RuntimeError, "fmax not implemented for complex tensors."),
    (lambda z: ag.fmin(z, z), RuntimeError, "fmin not implemented for complex tensors."),
    (lambda z: ag.heaviside(z, z), RuntimeError, "heaviside is not yet implemented for complex tensors."),
])
def test_elementwise_ops_without_complex_kernels_refuse_complex_tensors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call(ag.tensor([1.0 + 1.0j, -2.0j]))


def test_shape_ops_take_pytorchs_keyword_names():
    data = np.arange(6.0).reshape(2, 3)
    x = ag.tensor(data)
    for got, expected in [
        (ag.flip(x, dims=[0]), data[::-1]),
        (x.flip(dims=(0, 1)), data[::-1, ::-1]),
        (x.permute(dims=[1, 0]), data.T),
        (x.reshape(shape=[3, 2]), data.reshape(3, 2)),
        (x.view(size=(6,)), data.reshape(6)),
        (x.expand(size=(2, 2, 3)), np.broadcast_to(data, (2, 2, 3))),
        (ag.concatenate([x, x], axis=1), np.concatenate([data, data], axis=1)),
    ]:
        np.testing.assert_array_equal(got.numpy(), expected)
    with pytest.raises(TypeError, match=r"permute\(\) got multiple values for argument 'dims'"):
        x.permute(1, 0, dims=[1, 0])


@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        ints = ag.tensor([2, 1, -1, 0, -3], device=device)
        floats = ag.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=ag.float32, device=device)
        z = ag.tensor([1.5 + 0.5j, -0.7 + 1.2j], device=device, requires_grad=True)
        power = ag.float_power(z, ag.tensor([0.3, 1.4], device=device))
        power.real.sum().backward()
        halves = ag.tensor(_float16_columns()[0], device=device, requires_grad=True)
        (halves_grad,) = ag.autograd.grad(halves.log_softmax(0), halves, ag.ones_like(halves))
        outs = [ints ** ag.tensor([-1, -2, -3, -1, 2], device=device),
                ag.tensor([200, 100], dtype=ag.uint8, device=device).sum(),
                floats.view(ag.int32), floats[True], floats[ag.tensor(False, device=device)],
                *ag.where(floats > 0), power, z.grad, 2 ** ints, ag.lerp(z, z * 2, 0.5j),
                ag.norm(floats, 2, 1, dtype=ag.float64), halves.sum(0), halves.softmax(0), halves.var(0),
                halves.cumsum(0), halves.round(decimals=1), halves_grad]
        assert all(o.device is ag.device(device) for o in outs)
        results.append([(o.dtype, o.detach().cpu().numpy()) for o in outs])
    for (cpu_dtype, cpu), (cuda_dtype, cuda) in zip(*results):
        assert cpu_dtype == cuda_dtype
        # a float16 scan adds its float32 partial sums in another order on a GPU: a few round to float16 the
        # other way (one ulp; a float16 sum would lose far more: it stops growing at 2048)
        np.testing.assert_allclose(cuda, cpu, rtol=np.finfo(np.float16).eps if cpu.dtype == np.float16 else 1e-12)


@pytest.mark.parametrize("write", [
    lambda x, m: x.masked_fill(m, 0.0),
    lambda x, m: ag.where(m, ag.zeros(3, dtype=ag.float64), x),
    lambda x, m: x.masked_scatter(m, ag.zeros(3, dtype=ag.float64)),
])
def test_positions_written_over_get_a_zero_gradient_even_from_a_nan(write):
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    mask = ag.tensor([True, False, True])
    for create_graph in (False, True):
        (grad,) = ag.autograd.grad(write(x, mask), x, ag.tensor([np.nan, 1.0, np.nan], dtype=ag.float64),
                                   create_graph=create_graph)
        assert grad.tolist() == [0.0, 1.0, 0.0]


def test_a_zero_dim_tensor_flattens_with_its_dims_checked_as_one_dims():
    x = ag.tensor(3.0)
    for dims in [(), (0,), (0, 0), (-1,), (-1, 0)]:
        assert x.flatten(*dims).shape == (1,)
    out_of_range = re.escape("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    for dims in [(1,), (0, 1), (1, -1)]:
        with pytest.raises(IndexError, match=out_of_range):
            x.flatten(*dims)


def test_dist_with_p_0_gives_no_gradient_through_broadcasting_too():
    a = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    b = ag.tensor([0.0, 3.0], dtype=ag.float64)
    assert ag.autograd.grad(ag.dist(a, b, 0), a, allow_unused=True) == (None,)  # PyTorch's undefined gradient
    assert ag.autograd.grad(ag.dist(a, b, 0), a, materialize_grads=True)[0].tolist() == [0.0, 0.0]
