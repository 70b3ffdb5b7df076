"""Differences from PyTorch that a generated (fuzzed) comparison of the index and order ops found, each fixed:
`out=` for gather, take_along_dim, index_select, masked_select, take, scatter, scatter_add, scatter_reduce,
index_add, index_copy, index_reduce, msort, argsort, searchsorted, bucketize, nonzero and histc (with each kernel's
dtype refusal and autograd refusal); masked_select's gradient where a broadcast mask gives a result of the input's
own shape; bincount's weights that require grad recording PyTorch's node that refuses a backward; masked_fill's
and index_fill's integer results refused where their fill value requires grad; index_add's and index_select's
errors for a position out of range, in PyTorch's type and words; the 0-dim refusals of index_reduce,
repeat_interleave and take_along_dim; index_reduce's refusal of bool and complex tensors; searchsorted's refusal of
tensors on two devices."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings(r"ignore:index_reduce\(\) is in beta")
RNG = np.random.default_rng(41)
X = (RNG.permutation(12).reshape(3, 4) - 5.5) * 0.5  # distinct values, none zero
GATHER_INDEX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
ROWS = np.array([2, 0, 2])
EDGES = np.array([-1.5, 0.0, 1.0])


def _f32(array: np.ndarray) -> ag.Tensor:
    return ag.tensor(array, dtype=ag.float32)


def _scattered(base: np.ndarray, index: np.ndarray, src: np.ndarray, combine) -> np.ndarray:
    """base with src[i, j] combined into base[index[i, j], j], element by element."""
    out = base.copy()
    for i, j in np.ndindex(index.shape):
        out[index[i, j], j] = combine(out[index[i, j], j], src[i, j])
    return out


def _row_reduced(base: np.ndarray, rows: np.ndarray, source: np.ndarray, combine) -> np.ndarray:
    out = base.copy()
    for k, row in enumerate(rows):
        out[row] = combine(out[row], source[k])
    return out


SRC = np.arange(8.0).reshape(2, 4) + 0.25
SOURCE = np.arange(12.0).reshape(3, 4) * 0.5 + 1.0
UNIQUE_ROWS = np.array([[2, 0, 1, 2], [0, 1, 2, 1]])  # scatter: no two writes to one place
# name: (the call, given x and out, and its independent expectation)
OUT_CASES = {
    "gather": (lambda x, out: ag.gather(x, 1, ag.tensor(GATHER_INDEX[:, :3]), out=out),
               np.take_along_axis(X[:2], GATHER_INDEX[:, :3], 1)),  # an index shorter than x
    "take_along_dim": (lambda x, out: ag.take_along_dim(x, ag.tensor(GATHER_INDEX), 0, out=out),
                       np.take_along_axis(X, GATHER_INDEX, 0)),
    "index_select": (lambda x, out: ag.index_select(x, 0, ag.tensor(ROWS), out=out), X[ROWS]),
    "masked_select": (lambda x, out: ag.masked_select(x, x > 0, out=out), X[X > 0]),
    "take": (lambda x, out: ag.take(x, ag.tensor([5, -1, 0]), out=out), X.reshape(-1)[[5, -1, 0]]),
    "scatter": (lambda x, out: ag.scatter(x, 0, ag.tensor(UNIQUE_ROWS), _f32(SRC), out=out),
                _scattered(X, UNIQUE_ROWS, SRC, lambda a, b: b)),
    "scatter_add": (lambda x, out: ag.scatter_add(x, 0, ag.tensor(GATHER_INDEX), _f32(SRC), out=out),
                    _scattered(X, GATHER_INDEX, SRC, lambda a, b: a + b)),
    "scatter_reduce": (lambda x, out: ag.scatter_reduce(x, 0, ag.tensor(GATHER_INDEX), _f32(SRC), "amax",
                                                        out=out),
                       _scattered(X, GATHER_INDEX, SRC, max)),
    "index_add": (lambda x, out: ag.index_add(x, 0, ag.tensor(ROWS), _f32(SOURCE), alpha=2, out=out),
                  _row_reduced(X, ROWS, SOURCE, lambda a, b: a + 2 * b)),
    "index_copy": (lambda x, out: ag.index_copy(x, 0, ag.tensor([1, 0]), _f32(SOURCE[:2]), out=out),
                   np.stack([SOURCE[1], SOURCE[0], X[2]])),
    "index_reduce": (lambda x, out: ag.index_reduce(x, 0, ag.tensor(ROWS), _f32(SOURCE), "prod", out=out),
                     _row_reduced(X, ROWS, SOURCE, lambda a, b: a * b)),
    "msort": (lambda x, out: ag.msort(x, out=out), np.sort(X, 0)),
    "histc": (lambda x, out: ag.histc(x, 4, -3.0, 3.0, out=out), np.histogram(X, 4, (-3.0, 3.0))[0]),
}
INDEX_OUT_CASES = {
    "argsort": (lambda x, out: ag.argsort(x, stable=True, descending=True, out=out),
                np.argsort(-X, -1, kind="stable")),
    "searchsorted": (lambda x, out: ag.searchsorted(ag.tensor(EDGES), x, right=True, out=out),
                     np.searchsorted(EDGES, X, "right")),
    "bucketize": (lambda x, out: ag.bucketize(x, ag.tensor(EDGES), out=out), np.searchsorted(EDGES, X, "left")),
    "nonzero": (lambda x, out: ag.nonzero(x > 0, out=out), np.argwhere(X > 0)),
}


# -- out= --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(OUT_CASES) + sorted(INDEX_OUT_CASES))
def test_out_receives_the_result_in_the_results_dtype(name):
    call, expected = {**OUT_CASES, **INDEX_OUT_CASES}[name]
    x = ag.tensor(X, dtype=ag.float32)
    out = ag.empty(0, dtype=ag.int64 if name in INDEX_OUT_CASES else ag.float32)
    assert call(x, out) is out
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name, out_dtype, message", [
    ("gather", ag.float64, "Expected out tensor to have dtype float, but got double instead"),
    ("scatter_reduce", ag.int64, "Expected out tensor to have dtype float, but got long int instead"),
    ("index_select", ag.float64, r"index_select\(\): self and result must have the same scalar type"),
    ("masked_select", ag.float16, r"masked_select\(\): self and result must have the same scalar type"),
    ("take", ag.int64, r"take\(\): self and out expected to have the same dtype, but got self.dtype = Float and "
                       r"out.dtype = Long"),
    ("histc", ag.float64, "input tensor and hist tensor should have the same dtype, but got input float and hist "
                          "double"),
    ("searchsorted", ag.int32, "output tensor's dtype Int and out_int32 flag is False"),
    ("nonzero", ag.int32, "Expected out tensor to have scalar type Long but got scalar typeInt"),
    ("argsort", ag.float32, "Expected out tensor to have dtype long int, but got float instead"),
])
def test_out_of_another_dtype_is_refused_in_the_kernels_words(name, out_dtype, message):
    call = {**OUT_CASES, **INDEX_OUT_CASES}[name][0]
    out = ag.zeros(2, dtype=out_dtype)
    with pytest.raises(RuntimeError, match=message):
        call(ag.tensor(X, dtype=ag.float32), out)
    assert out.tolist() == [0, 0]  # left as it was


def test_searchsorted_with_out_int32_takes_only_an_int32_out():
    x = ag.tensor(X, dtype=ag.float32)
    out = ag.empty(0, dtype=ag.int32)
    ag.searchsorted(ag.tensor(EDGES), x, out_int32=True, out=out)
    np.testing.assert_array_equal(out.numpy(), np.searchsorted(EDGES, X))
    with pytest.raises(RuntimeError, match="output tensor's dtype Long and out_int32 flag is True"):
        ag.bucketize(x, ag.tensor(EDGES), out_int32=True, out=ag.empty(0, dtype=ag.int64))


@pytest.mark.parametrize("name, kernel", [("gather", "gather"), ("take_along_dim", "gather"), ("msort", "sort"),
                                          ("scatter_add", "scatter_add"), ("index_add", "index_add")])
def test_out_refuses_an_argument_that_requires_grad_naming_the_kernel(name, kernel):
    x = ag.tensor(X, dtype=ag.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"^{kernel}\(\): functions with out=\.\.\. arguments don't support "
                                           "automatic differentiation"):
        OUT_CASES[name][0](x, ag.empty(0))
    with ag.no_grad():  # outside grad mode there is no graph to refuse
        OUT_CASES[name][0](x, ag.empty(0))


def test_argsort_names_sort_and_the_ops_without_a_derivative_take_out_beside_grad():
    x = ag.tensor(X, dtype=ag.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^sort\(\): functions with out="):
        INDEX_OUT_CASES["argsort"][0](x, ag.empty(0, dtype=ag.int64))
    for name in ("searchsorted", "bucketize", "nonzero"):
        call, expected = INDEX_OUT_CASES[name]
        out = ag.empty(0, dtype=ag.int64)
        call(x, out)
        np.testing.assert_array_equal(out.numpy(), expected)
    hist = ag.histc(x, 4, -3.0, 3.0, out=ag.empty(0))
    np.testing.assert_array_equal(hist.numpy(), np.histogram(X, 4, (-3.0, 3.0))[0])


def test_out_that_is_no_tensor_is_refused_and_the_method_takes_none():
    x = ag.tensor(X)
    with pytest.raises(TypeError, match=r"gather\(\): argument 'out' must be Tensor, not int"):
        ag.gather(x, 1, ag.tensor(GATHER_INDEX), out=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        x.gather(1, ag.tensor(GATHER_INDEX), out=ag.empty(0))


# -- masked_select's gradient --------------------------------------------------------------------------------------
def test_masked_select_gradient_sums_a_broadcast_mask_back_to_the_inputs_shape():
    x = ag.tensor([1.5, -2.0], dtype=ag.float64, requires_grad=True)
    mask = ag.tensor([[True, False], [True, True]])  # three picks from the broadcast (2, 2): x0, x0, x1
    w = np.array([0.25, 2.0, -3.0])
    ag.masked_select(x, mask).backward(ag.tensor(w))
    assert x.grad.shape == (2,)
    np.testing.assert_allclose(x.grad.numpy(), [w[0] + w[1], w[2]])
    diagonal = ag.tensor([[True, False], [False, True]])  # two picks: the result has the input's shape
    x.grad = None
    ag.masked_select(x, diagonal).backward(ag.tensor(w[:2]))
    np.testing.assert_allclose(x.grad.numpy(), w[:2])
    assert gradcheck(lambda a: ag.masked_select(a, diagonal), (x,))
    assert gradgradcheck(lambda a: ag.masked_select(a, diagonal), (x,))


def test_masked_select_gradient_of_an_empty_input_is_empty():
    x = ag.zeros(0, dtype=ag.float64, requires_grad=True)
    (grad,) = ag.autograd.grad(ag.masked_select(x, ag.ones(3, 1, 1, dtype=ag.bool)).sum(), x)
    assert grad.shape == (0,)


# -- bincount --------------------------------------------------------------------------------------------------------
def test_bincount_of_weights_that_require_grad_records_a_node_that_refuses_backward():
    weights = ag.tensor([0.5, 1.5, 2.0], requires_grad=True)
    counts = ag.bincount(ag.tensor([2, 0, 2]), weights)
    np.testing.assert_allclose(counts.detach().numpy(), np.bincount([2, 0, 2], [0.5, 1.5, 2.0]))
    assert counts.requires_grad and counts.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        counts.sum().backward()
    assert ag.bincount(ag.tensor([1]), weights.detach()[:1]).grad_fn is None
    assert not ag.bincount(ag.tensor([], dtype=ag.int64), ag.ones(0, requires_grad=True)).requires_grad


# -- fill values that require grad into integer tensors ----------------------------------------------------------
@pytest.mark.parametrize("dtype, name, filled", [(ag.int64, "Long", [0, 0]), (ag.bool, "Bool", [True, False])])
def test_an_integer_copy_filled_from_a_value_that_requires_grad_is_refused(dtype, name, filled):
    value = ag.tensor(0.5, requires_grad=True)
    x = ag.tensor([1, 0], dtype=dtype)
    mask, rows = ag.tensor([True, False]), ag.tensor([0])
    for fill in (lambda: ag.masked_fill(x, mask, value), lambda: x.index_fill(0, rows, value)):
        with pytest.raises(RuntimeError, match=f"^Autograd not support dtype: {name}$"):
            fill()
        with ag.no_grad():
            assert fill().tolist() == filled
    # in place, the value is written out of the graph
    for written in (x.clone().masked_fill_(mask, value), x.clone().index_fill_(0, rows, value)):
        assert written.tolist() == filled and not written.requires_grad
    assert ag.masked_fill(x, mask, value.detach()).tolist() == filled


def test_a_floating_copy_filled_from_a_value_that_requires_grad_takes_its_gradient():
    value = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64)
    mask = ag.tensor([True, False, True])
    (grad,) = ag.autograd.grad((ag.masked_fill(x, mask, value) * ag.tensor([1.0, 10.0, 100.0])).sum(), value)
    assert grad.item() == 101.0  # the weights of the two filled places
    assert gradcheck(lambda v: ag.index_fill(x, 0, ag.tensor([2, 0, 2]), v), (value,))


# -- errors for positions out of range ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim, index, alpha, error, message", [
    ((3,), 0, [0, -1], 1, IndexError, "index out of range in self"),  # a 1-dim self: PyTorch's slice loop
    ((2, 3), 1, [1, 3], 2, IndexError, "index out of range in self"),  # alpha other than 1: the slice loop
    ((2, 3), 1, [1, 3], 1, RuntimeError, "index 3 is out of bounds for dimension 1 with size 3"),
    ((2, 3), 0, [-1], 1.0, RuntimeError, "index -1 is out of bounds for dimension 0 with size 2"),
    ((2, 3, 4), 1, [-1], 1, IndexError, "index out of range in self"),  # a middle dim: the slice loop
    ((2, 3, 4), 2, [4], 1, RuntimeError, "index 4 is out of bounds for dimension 2 with size 4"),
])
def test_index_add_words_a_position_out_of_range_as_pytorchs_kernel_for_it(shape, dim, index, alpha, error,
                                                                           message):
    source_shape = list(shape)
    source_shape[dim] = len(index)
    with pytest.raises(error, match=f"^{message}$"):
        ag.index_add(ag.zeros(shape), dim, ag.tensor(index), ag.ones(source_shape), alpha=alpha)
    with pytest.raises(IndexError, match="^index out of range in self$"):  # an int32 index: the slice loop
        ag.index_add(ag.zeros(shape), dim, ag.tensor(index, dtype=ag.int32), ag.ones(source_shape), alpha=alpha)


@pytest.mark.parametrize("shape, dim, index, error, message", [
    ((3,), 0, [-1], IndexError, "index out of range in self"),
    ((3, 1), 0, [0, 3], IndexError, "index out of range in self"),
    ((1, 3, 1), 1, [1, -1, 5], RuntimeError, "INDICES element is out of DATA bounds, id=-1 axis_dim=3"),
    ((0, 3), 1, [1, 5], RuntimeError, "INDICES element is out of DATA bounds, id=5 axis_dim=3"),
    ((4, 0), 1, [0], RuntimeError, r"index_select\(\): self indexing axis dim should be positive"),
])
def test_index_select_words_a_position_out_of_range_as_pytorchs_kernel_for_it(shape, dim, index, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        ag.index_select(ag.zeros(shape), dim, ag.tensor(index))


# -- 0-dim inputs ----------------------------------------------------------------------------------------------------
def test_a_0dim_input_has_no_size_along_a_dim_where_the_op_reads_one():
    x = ag.tensor(2.0)
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions$"):
        ag.index_reduce(x, 0, ag.tensor([0, 0]), ag.tensor(3.0), "prod")
    with pytest.raises(IndexError, match="^Dimension specified as -1 but tensor has no dimensions$"):
        ag.repeat_interleave(x, ag.tensor([3]), dim=-1)
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions$"):
        ag.take_along_dim(x, ag.tensor(0), dim=-1)
    # what a 0-dim input does take
    assert ag.index_reduce(x, 0, ag.tensor([0]), ag.tensor(3.0), "prod").item() == 6.0
    assert ag.repeat_interleave(x, ag.tensor([3])).tolist() == [2.0, 2.0, 2.0]
    assert ag.take_along_dim(x, ag.tensor(0)).tolist() == [2.0]


@pytest.mark.parametrize("include_self, kernel", [(True, "index_func_"),
                                                  (False, "index_reduce_func_exclude_input_init")])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("values, name", [([True, False], "Bool"), ([1 + 2j, 3j], "ComplexDouble")])
def test_index_reduce_refuses_bool_and_complex_tensors_as_pytorchs_kernels(values, name, reduce, include_self, kernel):
    x = ag.tensor(values, dtype=ag.complex128 if name == "ComplexDouble" else None)
    refusal = f"^\"{kernel}\" not implemented for '{name}'$"
    with pytest.raises(NotImplementedError, match=refusal):
        ag.index_reduce(x, 0, ag.tensor([1]), x[:1], reduce, include_self=include_self)
    with pytest.raises(NotImplementedError, match=refusal):
        x.index_reduce_(0, ag.tensor([1]), x[:1].clone(), reduce, include_self=include_self)
    assert x.tolist() == values


# -- device ----------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(X, dtype=ag.float32, device=device)
        outs = []
        ag.set_default_device(device)  # the cases' index tensors
        try:
            for name, (call, _) in sorted({**OUT_CASES, **INDEX_OUT_CASES}.items()):
                out = ag.empty(0, dtype=ag.int64 if name in INDEX_OUT_CASES else ag.float32)
                outs.append(call(x, out).cpu().numpy())
        finally:
            ag.set_default_device(None)
        with pytest.raises(RuntimeError, match="boundaries and input value tensors should have same device type"):
            ag.searchsorted(ag.tensor(EDGES, device=device), x.cpu() if device == "cuda" else x.cuda())
        leaf = ag.tensor([1.5, -2.0], dtype=ag.float64, device=device, requires_grad=True)
        ag.masked_select(leaf, ag.tensor([[True, False], [False, True]], device=device)).backward(
            ag.tensor([0.25, 2.0], dtype=ag.float64, device=device))
        counts = ag.bincount(ag.tensor([2, 0, 2], device=device), ag.ones(3, device=device, requires_grad=True))
        assert counts.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match="INDICES element is out of DATA bounds, id=5 axis_dim=3"):
            ag.index_select(ag.zeros(1, 3, 1, device=device), 1, ag.tensor([5], device=device))
        results.append([*outs, leaf.grad.cpu().numpy(), counts.detach().cpu().numpy()])
    for cpu, cuda in zip(*results):
        assert cpu.dtype == cuda.dtype
        np.testing.assert_allclose(cuda, cpu, rtol=1e-6)
