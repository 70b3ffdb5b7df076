"""gcd, lcm, the bit shifts, frexp and nextafter: values against Python's own integer and float arithmetic, PyTorch's
dtypes and edge results, the in-place forms and operators, gradients and errors."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

A = [12, -18, 0, 7, 0, -35, 2**40, 9]
B = [8, 12, 0, 0, 5, 21, 3 * 2**20, -6]


def test_gcd_and_lcm_are_pythons():
    out_gcd = ag.gcd(ag.tensor(A), ag.tensor(B))
    out_lcm = ag.tensor(A).lcm(ag.tensor(B))
    assert out_gcd.dtype == out_lcm.dtype == ag.int64
    assert out_gcd.tolist() == [math.gcd(a, b) for a, b in zip(A, B)]
    assert out_lcm.tolist() == [math.lcm(a, b) for a, b in zip(A, B)]


def test_gcd_and_lcm_promote_broadcast_and_wrap_as_pytorch():
    small = ag.tensor([4, -128], dtype=ag.int8)
    assert ag.gcd(small, ag.tensor([6])).tolist() == [2, 2] and ag.gcd(small, ag.tensor([6])).dtype == ag.int64
    assert ag.gcd(small, ag.tensor([0], dtype=ag.int8)).tolist() == [4, -128]  # |-128| wraps in int8
    # |2**62 * 3| wraps past int64 to -2**62, whose absolute value is 2**62
    assert ag.lcm(ag.tensor([2**62]), ag.tensor([3])).tolist() == [2**62]


def _shifted(x: int, s: int, bits: int, left: bool) -> int:
    """A C shift of a signed `bits`-bit integer, with PyTorch's results for counts outside [0, bits)."""
    if not 0 <= s < bits:
        return 0 if left else (-1 if x < 0 else 0)
    value = x << s if left else x >> s
    value %= 1 << bits
    return value - (1 << bits) if value >> (bits - 1) else value


@pytest.mark.parametrize("dtype", [ag.int8, ag.int32, ag.int64])
@pytest.mark.parametrize("left", [True, False])
def test_shifts_are_c_shifts_with_pytorchs_edges(dtype, left):
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    xs = [1, -1, 5, -8, 100 % (info.max + 1), int(info.min), int(info.max)]
    counts = [0, 1, 3, bits - 1, bits, bits + 5, -1]
    x = ag.tensor([[v] for v in xs], dtype=dtype)
    s = ag.tensor(counts, dtype=dtype)
    out = x << s if left else x >> s
    assert out.dtype == dtype
    assert out.tolist() == [[_shifted(v, c, bits, left) for c in counts] for v in xs]


def test_unsigned_shifts_and_numbers():
    u = ag.tensor([200, 1], dtype=ag.uint8)
    assert ag.bitwise_right_shift(u, ag.tensor([9, 0], dtype=ag.uint8)).tolist() == [0, 1]
    assert ag.bitwise_left_shift(u, 1).tolist() == [144, 2] and ag.bitwise_left_shift(u, 1).dtype == ag.uint8
    assert (2 << ag.tensor([1, 2])).tolist() == [4, 8]
    assert (64 >> ag.tensor([1, 2])).tolist() == [32, 16]
    assert ag.bitwise_left_shift(3, ag.tensor([1])).tolist() == [6]
    assert (ag.tensor([1], dtype=ag.int8) << ag.tensor([1])).dtype == ag.int64


def test_in_place_forms_and_operators():
    x = ag.tensor([4, 9])
    x <<= 2
    assert x.tolist() == [16, 36]
    x >>= ag.tensor([1, 2])
    assert x.tolist() == [8, 9]
    assert x.gcd_(ag.tensor([6])).tolist() == [2, 3]
    assert x.lcm_(ag.tensor([4, 4])).tolist() == [4, 12]
    assert x.bitwise_left_shift_(1).tolist() == [8, 24] and x.bitwise_right_shift_(3).tolist() == [1, 3]
    assert x._version == 6
    small = ag.tensor([4], dtype=ag.int8)
    small.gcd_(ag.tensor([6]))
    assert small.dtype == ag.int8 and small.tolist() == [2]
    f = ag.tensor([1.0])
    f.nextafter_(ag.tensor([2.0], dtype=ag.float64))
    assert f.dtype == ag.float32 and f.item() == 1.0  # the float64 step rounds back to 1 in float32


def test_frexp_splits_into_a_mantissa_and_a_power_of_two():
    values = [8.0, 0.0, -0.3, 1e-30, 3.0e20, math.inf, -math.inf, math.nan]
    for dtype in (ag.float64, ag.float32, ag.float16):
        mantissa, exponent = ag.frexp(ag.tensor(values, dtype=dtype))
        assert mantissa.dtype == dtype and exponent.dtype == ag.int32
        for v, m, e in zip(ag.tensor(values, dtype=dtype).tolist(), mantissa.tolist(), exponent.tolist()):
            if not math.isfinite(v) or v == 0:
                assert e == 0 and (m == v or math.isnan(m) and math.isnan(v))
            else:
                assert 0.5 <= abs(m) < 1 and math.ldexp(m, e) == v
    result = ag.tensor([3.0]).frexp()
    assert result.mantissa.item() == 0.75 and result.exponent.item() == 2


def test_frexp_gradient_scales_by_the_power_of_two():
    x = ag.tensor([3.0, -0.4, 1e-3], dtype=ag.float64, requires_grad=True)
    mantissa, _ = ag.frexp(x)
    assert mantissa.grad_fn.name() == "FrexpBackward0"
    mantissa.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.25, 2.0, 512.0])  # 1e-3 = 0.512 * 2 ** -9
    assert gradcheck(lambda t: ag.frexp(t)[0] * t, (x,))
    assert gradgradcheck(lambda t: ag.frexp(t)[0] * t, (x,))


def test_nextafter_steps_one_ulp():
    x = ag.tensor([1.0, 1.0, 0.0, -2.0], dtype=ag.float64)
    out = ag.nextafter(x, ag.tensor([2.0, 0.0, -1.0, -2.0], dtype=ag.float64))
    assert out.tolist() == [1 + 2.0**-52, 1 - 2.0**-53, -5e-324, -2.0]
    assert (ag.nextafter(ag.tensor([1.0]), ag.tensor([2.0])) - 1).item() == 2.0**-23
    assert ag.nextafter(ag.tensor([1.0]), ag.tensor([2.0], dtype=ag.float64)).dtype == ag.float64


def test_nextafter_passes_the_gradient_to_its_input_only():
    x = ag.tensor([[1.0, 3.0]], dtype=ag.float64, requires_grad=True)
    other = ag.tensor([[2.0], [0.0]], dtype=ag.float64, requires_grad=True)
    out = ag.nextafter(x, other)
    assert out.grad_fn.name() == "NextafterBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 2.0]])
    np.testing.assert_array_equal(other.grad.numpy(), [[0.0], [0.0]])


ERRORS = [
    (lambda: ag.gcd(ag.tensor([1.0]), ag.tensor([2.0])), NotImplementedError,
     "\"gcd_cpu\" not implemented for 'Float'"),
    (lambda: ag.lcm(ag.tensor([True]), ag.tensor([True])), NotImplementedError,
     "\"lcm_cpu\" not implemented for 'Bool'"),
    (lambda: ag.gcd(ag.tensor([4]), 2), TypeError, r"gcd\(\): argument 'other' \(position 2\) must be Tensor, not int"),
    (lambda: ag.tensor([1.0]) << 2, NotImplementedError, "\"lshift_cpu\" not implemented for 'Float'"),
    (lambda: ag.tensor([1.5]) >> 1, NotImplementedError, "\"rshift_cpu\" not implemented for 'Float'"),
    (lambda: ag.bitwise_left_shift(ag.tensor([True]), ag.tensor([True])), NotImplementedError,
     "\"lshift_cpu\" not implemented for 'Bool'"),
    (lambda: ag.frexp(ag.tensor([1])), RuntimeError, r"torch.frexp\(\) only supports floating-point dtypes"),
    (lambda: ag.nextafter(ag.tensor([1]), ag.tensor([2])), NotImplementedError,
     "\"nextafter_cpu\" not implemented for 'Long'"),
    (lambda: ag.nextafter(ag.tensor([1.0]), 2.0), TypeError,
     r"nextafter\(\): argument 'other' \(position 2\) must be Tensor, not float"),
    (lambda: ag.gcd(ag.tensor([1, 2]), ag.tensor([1, 2, 3])), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
]


@pytest.mark.parametrize(("call", "kind", "message"), ERRORS)
def test_errors_are_pytorchs(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


@pytest.mark.gpu
def test_on_cuda_results_are_the_cpus(cupy):
    results = []
    for device in ("cpu", "cuda"):
        a, b = ag.tensor(A, device=device), ag.tensor(B, device=device)
        s = ag.tensor([0, 1, 63, 64, -1, 3, 2, 5], device=device)
        x = ag.tensor([3.0, -0.4, 1e-3], dtype=ag.float64, requires_grad=True, device=device)
        mantissa, exponent = ag.frexp(x)
        (mantissa + ag.nextafter(x, ag.zeros(3, dtype=ag.float64, device=device))).sum().backward()
        assert mantissa.device == exponent.device == x.device
        results.append([t.cpu().numpy() for t in (ag.gcd(a, b), ag.lcm(a, b), a << s, a >> s, 1 << s, mantissa.detach(),
                                                  exponent, x.grad)])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_array_equal(cuda_value, cpu_value)


def test_zero_d_results_are_tensors_that_in_place_ops_can_write():
    gcd = ag.gcd(ag.tensor(6), ag.tensor(4))  # numpy gives a scalar for 0-d operands; a tensor needs an array
    _, exponent = ag.frexp(ag.tensor(3.5))
    assert gcd.add_(1).item() == 3 and exponent.add_(1).item() == 3
