"""PyTorch's remaining Tensor methods: as_strided_scatter (values by a writable numpy view, gradients against finite
differences), nonzero_static, dim_order, as_subclass, is_set_to, the trivial is_* kinds, cfloat/cdouble,
new_empty_strided, record_stream (the memory of a dead tensor held until its stream passes the recorded work) and
grad_dtype."""

import gc
import itertools
import threading
import weakref

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.ops.stream_use import release_recorded
from actorgrad.tensor import grad_dtypes

RNG = np.random.default_rng(3)


def _scattered_by_numpy(storage, input_geometry, view_geometry, src):
    """A copy of `storage` with `src` written through a numpy view of `view_geometry`, read at `input_geometry`
    (each geometry: size, stride, offset in elements)."""
    copy = storage.copy()

    def view(size, stride, offset):
        return np.lib.stride_tricks.as_strided(copy[offset:], size, [s * copy.itemsize for s in stride])

    view(*view_geometry)[...] = src
    return view(*input_geometry).copy()


@pytest.mark.parametrize("case", ["contiguous", "transposed", "sliced"])
def test_as_strided_scatter_writes_where_the_view_of_the_storage_reads(case):
    storage = RNG.normal(size=12)
    base = ag.tensor(storage).reshape(3, 4)
    input, geometry = {
        "contiguous": (base, ((3, 4), (4, 1), 0)),
        "transposed": (base.t(), ((4, 3), (1, 4), 0)),
        "sliced": (base[1:, 1:3], ((2, 2), (4, 1), 5)),
    }[case]
    src = RNG.normal(size=(2, 3))
    view_geometry = ((2, 3), (1, 3), 2)
    got = ag.as_strided_scatter(input, ag.tensor(src), *view_geometry)
    np.testing.assert_array_equal(got.numpy(), _scattered_by_numpy(storage, geometry, view_geometry, src))
    np.testing.assert_array_equal(input.as_strided_scatter(ag.tensor(src), *view_geometry).numpy(), got.numpy())
    assert got.storage_offset() == 0 and got.is_contiguous()  # fresh storage, not a view


def test_as_strided_scatter_gradients_match_finite_differences():
    x = ag.tensor(RNG.normal(size=(3, 4)), requires_grad=True)
    src = ag.tensor(RNG.normal(size=(2, 3)), requires_grad=True)

    def scatter(a, b):
        return ag.as_strided_scatter(a, b, (2, 3), (1, 3), 2)

    assert gradcheck(scatter, (x, src)) and gradgradcheck(scatter, (x, src))
    assert scatter(x, src).grad_fn.name() == "AsStridedScatterBackward0"
    assert gradcheck(lambda a, b: ag.as_strided_scatter(a.t(), b, (2, 3), (1, 3), 2), (x, src))


def test_as_strided_scatter_overlapping_view_writes_and_differentiates_the_last_element():
    x = ag.tensor(RNG.normal(size=6), requires_grad=True)
    src = ag.tensor(RNG.normal(size=(2, 2)), requires_grad=True)  # places 1, 2, 2, 3: src[0, 1] is overwritten
    out = ag.as_strided_scatter(x, src, (2, 2), (1, 1), 1)
    want = x.detach().numpy().copy()
    want[[1, 2, 3]] = src.detach().numpy().ravel()[[0, 2, 3]]
    np.testing.assert_array_equal(out.detach().numpy(), want)
    assert gradcheck(lambda a, b: ag.as_strided_scatter(a, b, (2, 2), (1, 1), 1), (x, src))
    out.backward(ag.ones(6, dtype=ag.float64))
    np.testing.assert_array_equal(src.grad.numpy(), [[1, 0], [1, 1]])
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0, 0, 1, 1])


def test_as_strided_scatter_casts_src_to_the_input_dtype_and_refuses_pytorchs_cases():
    x = ag.zeros(2, 3)
    assert ag.as_strided_scatter(x, ag.ones(2, dtype=ag.float64), (2,), (1,)).dtype == ag.float32
    with pytest.raises(RuntimeError, match=r"^expected src to have a size equal to the slice of self. "
                                           r"src size = \[3\], slice size = \[2, 2\]$"):
        ag.as_strided_scatter(x, ag.ones(3), (2, 2), (1, 2), 1)
    with pytest.raises(RuntimeError, match="setStorage: sizes \\[2, 2\\], strides \\[1, 2\\], storage offset 10"):
        ag.as_strided_scatter(x, ag.ones(2, 2), (2, 2), (1, 2), 10)
    with pytest.raises(RuntimeError, match="^mismatch in length of strides and shape$"):
        ag.as_strided_scatter(x, ag.ones(2), (2,), (1, 2), 0)
    with pytest.raises(TypeError, match="argument 'src' \\(position 2\\) must be Tensor, not list"):
        ag.as_strided_scatter(x, [1.0], (1,), (1,))


def test_nonzero_static_pads_or_cuts_nonzeros_rows():
    values = RNG.integers(0, 2, size=(3, 4)) * RNG.integers(1, 5, size=(3, 4))
    t = ag.tensor(values)
    rows = [list(i) for i in itertools.product(range(3), range(4)) if values[i]]
    for size in (0, 2, len(rows), len(rows) + 3):
        want = (rows + [[-5, -5]] * size)[:size]
        got = ag.nonzero_static(t, size=size, fill_value=-5)
        assert got.dtype == ag.int64 and got.shape == (size, 2)
        assert got.tolist() == want
    assert t.nonzero_static(size=1).tolist() == rows[:1]
    assert ag.nonzero_static(ag.tensor(3.0), size=2).shape == (2, 0)
    with pytest.raises(RuntimeError, match="^nonzero_static: 'size' must be an non-negative integer$"):
        ag.nonzero_static(t, size=-1)
    with pytest.raises(TypeError, match="argument 'size' must be int, not float"):
        ag.nonzero_static(t, size=1.5)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_dim_order_of_a_permuted_tensor_is_the_inverse_permutation(perm):
    t = ag.empty(2, 3, 4).permute(*perm)
    assert t.dim_order() == tuple(int(i) for i in np.argsort(perm))
    assert t.dim_order(ambiguity_check=True) == t.dim_order()


def test_dim_order_ambiguity_check_refuses_several_legal_orders():
    assert ag.empty(1, 2, 3).dim_order() == (0, 1, 2)
    assert ag.empty(3, 4).expand(2, 3, 4).dim_order() == (0, 1, 2)  # a zero stride keeps its place
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        ag.empty(1, 2, 3).dim_order(ambiguity_check=True)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        ag.empty(2).dim_order(ambiguity_check="x")


def test_as_subclass_aliases_the_data_and_stays_in_the_graph():
    class Marked(ag.Tensor):
        pass

    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.as_subclass(Marked)
    assert type(y) is Marked and y.grad_fn.name() == "AliasBackward0" and y._base is x
    (y * ag.tensor([2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [2.0, 3.0, 4.0]
    with ag.no_grad():
        x.add_(1)
    assert y.tolist() == [2.0, 3.0, 4.0]
    y.tag = "kept"  # a subclass without __slots__ has a __dict__
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        x.as_subclass(int)


def test_is_kinds_and_is_set_to():
    t = ag.ones(2, 3)
    for name in ("is_meta", "is_nested", "is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_mps",
                 "is_xla", "is_xpu", "is_ipu", "is_mtia", "is_maia", "is_vulkan"):
        assert getattr(t, name) is False, name
    assert t.is_distributed() is False and t.const_data_ptr() == t.data_ptr()
    for move in ("xpu", "ipu", "mtia"):
        with pytest.raises(RuntimeError, match=f"actorgrad is not .* {move.upper() if move != 'ipu' else 'ipu'}"):
            getattr(t, move)()
    assert t.is_set_to(t.detach()) and not t.is_set_to(t.clone()) and not t.is_set_to(t.t())
    assert t[:1].is_set_to(t[:1]) and not t[:1].is_set_to(t[1:])


def test_cfloat_and_cdouble_cast_with_the_real_part_of_the_gradient():
    x = ag.tensor([1.0, -2.0], dtype=ag.float64, requires_grad=True)
    assert x.cfloat().dtype == ag.complex64 and x.cdouble().dtype == ag.complex128
    assert x.cdouble().tolist() == [1 + 0j, -2 + 0j]
    (x.cdouble() * ag.tensor([3 + 1j, 5 - 2j])).real.sum().backward()
    assert x.grad.tolist() == [3.0, 5.0]


def test_new_empty_strided_takes_the_tensors_dtype_and_device_unless_given():
    t = ag.ones(2, dtype=ag.float64)
    e = t.new_empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2) and e.dtype == ag.float64 and not e.requires_grad
    f = t.new_empty_strided((4,), (1,), dtype=ag.float32, requires_grad=True)
    assert f.dtype == ag.float32 and f.requires_grad and f.is_leaf


def test_record_stream_holds_a_dead_tensors_memory_until_the_stream_passes_the_recorded_work():
    device = ag.device("async_cpu:0")
    stream = device.new_stream()
    gate = threading.Event()
    stream.enqueue(gate.wait)  # work queued on the stream that may still use the tensor
    x = ag.ones(4).to(device)
    memory = weakref.ref(x._data)
    x.record_stream(stream)
    del x
    gc.collect()
    assert memory() is not None and release_recorded() >= 1
    gate.set()
    stream.synchronize()
    release_recorded()
    assert memory() is None


def test_record_stream_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="^unknown parameter type$"):
        ag.ones(2).record_stream(1)
    with pytest.raises(RuntimeError, match="has no streams to record"):
        ag.ones(2).record_stream(ag.device("async_cpu:0").new_stream())


def test_grad_dtype_casts_the_committed_gradients_and_checks_assignments():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_dtype == ag.float32
    x.grad_dtype = ag.float64
    (x * 2).sum().backward()
    (x * x).sum().backward()
    assert x.grad.dtype == ag.float64 and x.grad.tolist() == [4.0, 6.0]
    y = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    y.grad_dtype = ag.float16
    (y**2).sum().backward(create_graph=True)
    assert y.grad.dtype == ag.float16 and y.grad.tolist() == [2.0, 4.0] and y.grad.grad_fn is not None
    with pytest.raises(RuntimeError, match="^Cannot set grad_dtype to 'int64' because there is already a gradient "
                                           "with dtype 'float64'"):
        x.grad_dtype = ag.int64
    x.grad = None
    x.grad_dtype = None
    x.grad = ag.ones(2, dtype=ag.float16)  # None allows any dtype
    assert x.grad_dtype is None and x.grad.dtype == ag.float16


def test_grad_dtype_refusals_are_pytorchs():
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype 'float64' to a tensor with "
                                           "grad_dtype 'float32'. The gradient must match the tensor's grad_dtype"):
        x.grad = ag.ones(1, dtype=ag.float64)
    with pytest.raises(RuntimeError, match="^grad_dtype can only be accessed on leaf tensors.$"):
        assert (x * 2).grad_dtype is None  # not reached: the read raises
    with pytest.raises(RuntimeError, match="^grad_dtype can only be set on leaf tensors.$"):
        (x * 2).grad_dtype = ag.float64
    with pytest.raises(RuntimeError, match="^grad_dtype must be a torch.dtype or None, but got str$"):
        x.grad_dtype = "float64"
    assert ag.tensor([1, 2]).grad_dtype == ag.int64


def test_grad_dtype_setting_leaves_with_its_tensor():
    x = ag.ones(2, requires_grad=True)
    x.grad_dtype = ag.float64
    key = id(x)
    assert grad_dtypes[key] == ag.float64
    del x
    gc.collect()
    assert key not in grad_dtypes
