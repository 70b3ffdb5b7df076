"""PyTorch's other spellings of existing ops (top-level in-place functions, rsub, sum_to_size, fill_diagonal_,
scalar_tensor, asarray, the Tensor methods bernoulli / multinomial / prelu), the tensor questions (is_signed,
nbytes, ...) and unravel_index."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.ops.method_forms import IN_PLACE_FUNCTIONS

RNG = np.random.default_rng(3)
# Arguments each in-place function takes after the tensor (none for the rest), and inputs in its domain.
EXTRA = {"addmv_": (ag.ones(3, 2), ag.ones(2)), "clamp_": (0.2, 0.6), "clamp_max_": (0.5,), "clamp_min_": (0.5,),
         "clip_": (0.2, 0.6), "fill_": (2.0,), "gcd_": (ag.tensor([4, 6, 9]),), "lcm_": (ag.tensor([4, 6, 9]),),
         "ldexp_": (ag.tensor([1.0, 2.0, 3.0]),), "xlogy_": (ag.tensor([2.0, 3.0, 4.0]),)}
INTEGER = ("gcd_", "lcm_")


@pytest.mark.parametrize("name", IN_PLACE_FUNCTIONS)
def test_in_place_functions_are_the_methods(name):
    values = [6, 4, 3] if name in INTEGER else [1.3, 1.5, 1.7] if "cosh" in name else [0.3, 0.5, 0.7]
    by_function, by_method = ag.tensor(values), ag.tensor(values)
    out = getattr(ag, name)(by_function, *EXTRA.get(name, ()))
    assert out is by_function
    getattr(by_method, name)(*EXTRA.get(name, ()))
    np.testing.assert_array_equal(by_function.numpy(), by_method.numpy())
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        getattr(ag, name)(3)


def test_rsub_subtracts_the_input_from_other():
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    assert ag.rsub(x, 3).tolist() == [2.0, 1.0] and ag.rsub(x, 3).grad_fn.name() == "RsubBackward1"
    other = ag.tensor([3.0], dtype=ag.float64, requires_grad=True)
    out = ag.rsub(x, other, alpha=2)
    assert out.tolist() == [1.0, -1.0] and out.grad_fn.name() == "RsubBackward0"
    assert gradcheck(lambda a, b: ag.rsub(a, b, alpha=0.5), (x, other))
    assert gradgradcheck(lambda a, b: ag.rsub(a, b) * a, (x, other))
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor is not supported"):
        ag.rsub(ag.tensor([True]), 3)
    with pytest.raises(TypeError, match=r"rsub\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        ag.rsub(3, x)


def test_sum_to_size_sums_what_broadcasting_added():
    data = RNG.standard_normal((2, 3, 4))
    x = ag.tensor(data, requires_grad=True)
    np.testing.assert_allclose(x.sum_to_size(3, 1).detach().numpy(), data.sum(axis=(0, 2))[:, None], rtol=1e-14)
    np.testing.assert_allclose(x.sum_to_size((1, 1, 4)).detach().numpy(), data.sum(axis=(0, 1), keepdims=True),
                               rtol=1e-14)
    assert x.sum_to_size(2, 3, 4) is x
    assert gradcheck(lambda t: t.sum_to_size(1, 3, 1), (x,))
    with pytest.raises(RuntimeError, match=r"size \{\[2, 2\]\} is not expandable to size \{\[2, 3\]\}\."):
        ag.ones(2, 3).sum_to_size(2, 2)


def test_fill_diagonal_writes_the_diagonal_and_wraps_tall_matrices():
    tall = ag.zeros(7, 3).fill_diagonal_(2.0, wrap=True).numpy()
    expected = np.zeros((7, 3))
    for row in (0, 1, 2, 4, 5, 6):  # every columns + 1 rows the diagonal starts again
        expected[row, row % 4] = 2.0
    np.testing.assert_array_equal(tall, expected)
    np.testing.assert_array_equal(ag.zeros(7, 3).fill_diagonal_(2.0).numpy()[3:], 0)
    cube = ag.zeros(2, 2, 2).fill_diagonal_(1).numpy()
    assert cube[0, 0, 0] == cube[1, 1, 1] == 1 and cube.sum() == 2
    x = ag.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: (t * 1).fill_diagonal_(0.5) * t, (x,))
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        ag.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ag.zeros(2, 3, 2).fill_diagonal_(1)


def test_renorm_addbmm_and_addr_in_place():
    data = RNG.standard_normal((3, 4))
    x = ag.tensor(data)
    x.renorm_(2, 0, 1.0)
    np.testing.assert_allclose(np.linalg.norm(x.numpy(), axis=1), np.minimum(np.linalg.norm(data, axis=1), 1.0),
                               rtol=1e-6)
    b1, b2 = RNG.standard_normal((5, 3, 2)), RNG.standard_normal((5, 2, 4))
    y = ag.tensor(data).addbmm_(ag.tensor(b1), ag.tensor(b2), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(y.numpy(), 0.5 * data + 2 * np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)
    u, v = RNG.standard_normal(3), RNG.standard_normal(4)
    z = ag.tensor(data).addr_(ag.tensor(u), ag.tensor(v), alpha=3.0)
    np.testing.assert_allclose(z.numpy(), data + 3 * np.outer(u, v), rtol=1e-12)
    leaf = ag.tensor(data, requires_grad=True)
    assert gradcheck(lambda t: (t * 1).addr_(t[:, 0], t[0]), (leaf,))
    assert gradcheck(lambda t: (t * 1).renorm_(2, 1, 0.5), (leaf,))


def test_conj_physical_in_place():
    real = ag.tensor([1.0, -2.0])
    assert real.conj_physical_() is real and real.tolist() == [1.0, -2.0]
    z = ag.tensor(np.array([1 + 2j, -1j]))
    z.conj_physical_()
    np.testing.assert_array_equal(z.numpy(), [1 - 2j, 1j])
    assert z._version == 1


def test_scalar_tensor():
    assert ag.scalar_tensor(2).dtype == ag.float32 and ag.scalar_tensor(2).shape == ()
    assert ag.scalar_tensor(True).item() == 1.0 and ag.scalar_tensor(ag.tensor(3)).item() == 3.0
    assert ag.scalar_tensor(2, dtype=ag.int64).dtype == ag.int64
    assert ag.scalar_tensor(1.5, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match=r"scalar_tensor\(\): argument 's' \(position 1\) must be Number, not list"):
        ag.scalar_tensor([1])


def test_asarray_shares_what_it_can():
    array = np.array([1.0, 2.0])
    shared, copied = ag.asarray(array), ag.asarray(array, copy=True)
    array[0] = 5.0
    assert shared.tolist() == [5.0, 2.0] and copied.tolist() == [1.0, 2.0]
    assert ag.asarray(array, dtype=ag.float32).dtype == ag.float32
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Double' into dtype 'Float'."):
        ag.asarray(array, copy=False, dtype=ag.float32)
    t = ag.ones(2, requires_grad=True)
    assert ag.asarray(t) is t
    assert not ag.asarray(t * 2, requires_grad=False).requires_grad
    assert ag.asarray(t, dtype=ag.float64).grad_fn is not None  # a recorded conversion
    cloned = ag.asarray(t, copy=True)
    assert cloned is not t and cloned.requires_grad
    assert ag.asarray([1, 2]).dtype == ag.int64 and ag.asarray(3.5).shape == ()
    assert ag.asarray([1.0], requires_grad=True).requires_grad


def test_methods_of_existing_functions():
    ag.manual_seed(0)
    p = ag.tensor([0.0, 1.0, 0.0, 1.0])
    assert p.bernoulli().tolist() == [0.0, 1.0, 0.0, 1.0]
    assert ag.tensor([0.0, 1.0, 0.0]).multinomial(1).tolist() == [1]
    assert ag.tensor([-1.0, 2.0]).prelu(ag.tensor([0.25])).tolist() == [-0.25, 2.0]


def test_tensor_questions():
    x = ag.ones(2, 3)
    assert (x.nbytes, x.itemsize, x.ndimension(), x.get_device(), x.is_cpu) == (24, 4, 2, -1, True)
    assert x.expand(4, 2, 3).nbytes == 96 and ag.ones(2, dtype=ag.float64).itemsize == 8
    assert ag.is_tensor(x) and ag.is_tensor(ag.nn.Parameter(x)) and not ag.is_tensor([1])
    assert ag.numel(x) == 6
    assert ag.is_same_size(x, ag.zeros(2, 3)) and not ag.is_same_size(x, ag.zeros(3, 2))
    assert [ag.is_signed(ag.tensor([1], dtype=d)) for d in (ag.int8, ag.uint8, ag.bool_, ag.float16)] == [
        True, False, False, True]
    assert not ag.is_nonzero(ag.tensor([0.0])) and ag.is_nonzero(ag.tensor(3))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        ag.is_nonzero(ag.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"is_same_size\(\): argument 'other' \(position 2\) must be Tensor"):
        ag.is_same_size(x, [1])
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ag.numel([1])


def test_unravel_index_is_the_row_major_coordinates():
    shape = (3, 4, 5)
    flat = ag.tensor([0, 7, 59, 23, -1, 60])
    coords = ag.unravel_index(flat, shape)
    for k, i in enumerate(flat.tolist()):
        i %= 60  # negative indices count from the end; past the size they wrap, as PyTorch's
        assert [c.tolist()[k] for c in coords] == [i // 20, i // 5 % 4, i % 5]
    assert [c.shape for c in ag.unravel_index(ag.tensor(5), (2, 3))] == [(), ()]
    assert [c.add_(1).item() for c in ag.unravel_index(ag.tensor(5), (2, 3))] == [2, 3]  # 0-d arrays, writable
    assert ag.unravel_index(ag.tensor([1]), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got actorgrad.float32"):
        ag.unravel_index(ag.tensor([1.0]), (2, 3))
    with pytest.raises(ValueError, match=r"'shape' cannot have negative values, but got \(2, -3\)"):
        ag.unravel_index(ag.tensor([1]), (2, -3))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ag.unravel_index(ag.tensor([0]), (2, 0))


@pytest.mark.gpu
def test_on_cuda_results_are_the_cpus(cupy):
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(RNG.standard_normal((3, 3)) if not results else results[0][0], device=device)
        x = ag.tensor(x.cpu().numpy(), device=device, requires_grad=True)
        y = ag.exp_(x * 1).clone().fill_diagonal_(0.0)  # exp_ saved its result: change a copy of it
        out = ag.rsub(y, 2.0).sum_to_size(1, 3)
        out.sum().backward()
        assert out.device == x.device and x.get_device() == (-1 if device == "cpu" else 0)
        coords = ag.unravel_index(ag.tensor([5, 7], device=device), (3, 3))
        results.append([x.detach().cpu().numpy(), out.detach().cpu().numpy(), x.grad.cpu().numpy(),
                        coords[0].cpu().numpy(), ag.asarray(x, copy=True).detach().cpu().numpy()])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12)
