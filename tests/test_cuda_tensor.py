"""Tensors on cuda:0 meeting numbers, zero-dim cpu tensors and tensors of another device: values, devices and
gradients equal the CPU's in float64, or PyTorch's error. Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

CUDA = ag.device("cuda")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"


def host(t):
    return t.detach().cpu().numpy()


def matches_cpu(fn, *arrays, on=None):
    """`fn` on float64 leaves made from `arrays`, once all on the cpu and once on the devices `on` names (default:
    all on cuda). Both give the same values, the placed run's on its first leaf's device, and a summed backward
    the same gradients, each on its leaf's device. Returns the placed run's result."""
    placed = on or ["cuda"] * len(arrays)
    runs = []
    for devices in (["cpu"] * len(arrays), placed):
        leaves = [ag.tensor(a, dtype=ag.float64, device=d, requires_grad=True) for a, d in zip(arrays, devices)]
        out = fn(*leaves)
        out.sum().backward()
        runs.append((out, leaves))
    (expected, cpu_leaves), (got, leaves) = runs
    assert got.device is leaves[0].device
    assert isinstance(got._data, cupy.ndarray if got.device is CUDA else np.ndarray)
    np.testing.assert_allclose(host(got), host(expected), rtol=1e-10, atol=1e-12)
    for leaf, cpu_leaf in zip(leaves, cpu_leaves):
        assert leaf.grad.device is leaf.device
        np.testing.assert_allclose(host(leaf.grad), host(cpu_leaf.grad), rtol=1e-10, atol=1e-12)
    return got


def test_maximum_and_minimum_take_a_zero_dim_cpu_tensor_beside_a_cuda_one():
    def pick(x):
        s = ag.tensor(2.0, dtype=ag.float64)
        return ag.maximum(x, s) + 2 * ag.minimum(x, s)

    matches_cpu(pick, [1.0, 0.0, 3.0])
    x, s = ag.tensor([1.0, 0.0, 3.0], device="cuda"), ag.tensor(2.0)
    for got, expected in ((ag.maximum(s, x), [2.0, 2.0, 3.0]), (ag.minimum(s, x), [1.0, 0.0, 2.0])):
        assert got.device is CUDA
        np.testing.assert_array_equal(host(got), expected)


def test_where_puts_its_result_on_the_conditions_device():
    for device in ("cpu", "cuda"):
        cond = ag.tensor([True, False], device=device)
        numbers, bools = ag.where(cond, 1.5, 2), ag.where(cond, True, False)
        assert numbers.device is bools.device is ag.device(device)
        assert numbers.dtype == ag.float32 and bools.dtype == ag.bool_
        np.testing.assert_array_equal(host(numbers), [1.5, 2.0])
        np.testing.assert_array_equal(host(bools), [True, False])
    matches_cpu(lambda x: ag.where(x > 0, x, 0.0) + ag.where(x < 0, -1, x), [1.5, -2.0, 0.5])
    matches_cpu(lambda x, s: ag.where(x > 0, x, s) * ag.where(x < 0, s, x), [1.5, -2.0, 0.5], 3.0, on=["cuda", "cpu"])


def test_contiguous_copies_a_transposed_cuda_tensor_row_major():
    out = matches_cpu(lambda x: x.transpose(0, 1).contiguous() ** 2, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert out._data.flags.c_contiguous


def test_copy_into_a_cuda_tensor_from_either_device():
    matches_cpu(lambda x, s: (x * 1).copy_(s) * x, [[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0])
    matches_cpu(lambda x, s: (x * 1).copy_(s) * x, [[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0], on=["cuda", "cpu"])
    matches_cpu(lambda x, s: (x * 1).copy_(s) * x, [[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0], on=["cpu", "cuda"])
    into = ag.zeros(2, dtype=ag.int64, device="cuda").copy_(ag.tensor([1.5, 2.5]))
    assert into.device is CUDA and into.dtype == ag.int64
    np.testing.assert_array_equal(host(into), [1, 2])


def test_add_and_sub_with_alpha_on_cuda():
    matches_cpu(lambda x, y: (x * 1).add_(y, alpha=2).sub_(x, alpha=3).add_(2.0, alpha=-1), [1.0, 2.0], [3.0, 5.0])
    doubled = ag.tensor([1, 2], device="cuda")
    doubled.add_(doubled, alpha=2)
    np.testing.assert_array_equal(host(doubled), [3, 6])


def test_setitem_copies_a_tensor_from_another_device():
    def write(x, v):
        y = x * 1
        y[1:] = v
        y[[0, 2]] = v[:2] * 2
        return y * x

    matches_cpu(write, [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0], on=["cuda", "cpu"])
    matches_cpu(write, [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0], on=["cpu", "cuda"])


@pytest.mark.parametrize("values", [[1, 2], [True, False]])
def test_value_tests_of_integer_and_bool_cuda_tensors_stay_on_the_gpu(values):
    x = ag.tensor(values, device="cuda")
    for test, expected in ((ag.isnan, False), (ag.isinf, False), (ag.isfinite, True)):
        out = test(x)
        assert out.device is CUDA and isinstance(out._data, cupy.ndarray)
        np.testing.assert_array_equal(host(out), [expected, expected])


def test_tensor_of_a_cuda_tensor_copies_it_on_its_device():
    x = ag.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        same, double, on_cpu = ag.tensor(x), ag.tensor(x, dtype=ag.float64), ag.tensor(x, device="cpu")
    assert same.device is double.device is CUDA and on_cpu.device is ag.device("cpu")
    assert isinstance(same._data, cupy.ndarray) and isinstance(on_cpu._data, np.ndarray)
    assert (same.dtype, double.dtype, on_cpu.dtype) == (ag.float32, ag.float64, ag.float32)
    assert not same.requires_grad and same.grad_fn is None
    with ag.no_grad():
        x.mul_(10)
    for copy in (same, double, on_cpu):
        np.testing.assert_array_equal(host(copy), [1.0, 2.0])


def test_a_list_of_zero_dim_cuda_tensors_indexes_a_cuda_tensor():
    def index(x):  # a list of tensors is a tuple of index entries, as PyTorch reads it (with its warning)
        with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
            one, zero = ag.tensor(1, device=x.device), ag.tensor(0, device=x.device)
            return x[[one, zero]] * x[[zero]]

    matches_cpu(index, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_cat_and_stack_across_devices_raise_pytorchs_error():
    cuda_row, cpu_row = ag.tensor([1.0], device="cuda"), ag.tensor([2.0])
    with pytest.raises(RuntimeError, match=MIXED.format("cuda:0", "cpu")):
        ag.cat([cuda_row, cpu_row])
    with pytest.raises(RuntimeError, match=MIXED.format("cpu", "cuda:0")):
        ag.stack([cpu_row, cuda_row])
    with pytest.raises(RuntimeError, match=MIXED.format("cuda:0", "cpu")):  # devices before shapes, as PyTorch
        ag.cat([cuda_row, ag.tensor([[2.0]])])
    with pytest.raises(RuntimeError, match=MIXED.format("cuda:0", "cpu")):
        ag.stack([cuda_row, ag.tensor([2.0, 3.0])])
    with pytest.raises(RuntimeError, match=MIXED.format("cuda:0", "cpu")):  # no zero-dim cpu exception in a list
        ag.stack([ag.tensor(1.0, device="cuda"), ag.tensor(2.0)])


def test_legacy_type_names_a_cuda_tensor_as_pytorch_does():
    x = ag.tensor([1.5], device="cuda")
    assert (x.type(), x.double().type(), x.cpu().type()) == (
        "actorgrad.cuda.FloatTensor", "actorgrad.cuda.DoubleTensor", "actorgrad.FloatTensor"
    )
    on_cpu, on_cuda = x.type("actorgrad.DoubleTensor"), x.cpu().type("actorgrad.cuda.LongTensor")
    assert (on_cpu.device, on_cpu.dtype) == (ag.device("cpu"), ag.float64)
    assert (on_cuda.device, on_cuda.dtype) == (CUDA, ag.int64)
    assert x.type(x.type()) is x


def test_fill_with_a_zero_dim_cpu_tensor_on_cuda():
    def run(where):
        x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, device=where, requires_grad=True)
        value = ag.tensor(2.5, dtype=ag.float64, requires_grad=True)
        y = x * 1.0
        y[1:].fill_(value * 2)
        (y * y).sum().backward()
        return y.detach().cpu().numpy(), x.grad.cpu().numpy(), value.grad

    want, got = run("cpu"), run("cuda:0")
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2].device is ag.device("cpu") and got[2].item() == want[2].item() == 40.0


def test_masked_fill_with_a_mask_on_another_device_gets_pytorchs_error():
    x = ag.tensor([1.0, -2.0], device="cuda:0")
    with pytest.raises(RuntimeError, match="expected self and mask to be on the same device, but got mask on cpu"):
        x.masked_fill(ag.tensor([True, False]), 0.0)
