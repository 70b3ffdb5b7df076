"""Hostile and edge input: invalid input gets PyTorch's exception type with a message naming the problem; valid
edge input (NaN, inf, empty tensors, zero-size dims) gets PyTorch's values and gradients; a failing backward
leaves every `.grad` as it was. The PyTorch behaviour each case expects was checked against torch 2.13."""

import math

import numpy as np
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.nn import functional as F

pytestmark = [
    pytest.mark.timeout(120),  # a hang fails here instead of stalling CI
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy's notes on NaN, inf and empty input, given on purpose
    pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning"),
    pytest.mark.filterwarnings("ignore:Using a target size:UserWarning"),
]

SETTINGS = settings(max_examples=40, deadline=None, database=None)
NAN, INF = float("nan"), float("inf")


def leaf(values, dtype=np.float64) -> ag.Tensor:
    return ag.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# -- invalid input: fixed cases --------------------------------------------------------------------------------
INVALID = {
    # wrong shapes
    "add without broadcast": (lambda: ag.ones(2, 3) + ag.ones(4), RuntimeError, r"size of tensor a \(3\).*b \(4\)"),
    "matmul inner mismatch": (lambda: ag.ones(2, 3) @ ag.ones(4, 5), RuntimeError, r"\(2x3 and 4x5\)"),
    "matmul of a 0-d tensor": (lambda: ag.ones(()) @ ag.ones(3), RuntimeError, "at least 1D"),
    "reshape to another size": (lambda: ag.ones(2, 3).reshape(4, 2), RuntimeError, r"shape '\[4, 2\]' is invalid"),
    "reshape with -2": (lambda: ag.ones(2, 3).reshape(-2, 3), RuntimeError, "invalid shape dimension -2"),
    "reshape with two -1": (lambda: ag.ones(2, 3).reshape(-1, -1), RuntimeError, "only one dimension"),
    "cat of mismatched sizes": (lambda: ag.cat([ag.ones(2, 3), ag.ones(2, 4)]), RuntimeError, "Sizes of tensors"),
    "stack of mismatched sizes": (lambda: ag.stack([ag.ones(2), ag.ones(3)]), RuntimeError, "equal size"),
    "linear weight mismatch": (lambda: F.linear(ag.ones(2, 3), ag.ones(4, 5)), RuntimeError, "cannot be multiplied"),
    "conv channels": (lambda: F.conv2d(ag.ones(1, 3, 5, 5), ag.ones(2, 4, 3, 3)), RuntimeError, "4 channels"),
    "mse of other shapes": (lambda: F.mse_loss(ag.ones(2, 3), ag.ones(3, 2)), RuntimeError, "must match"),
    "cross_entropy batch": (
        lambda: F.cross_entropy(ag.ones(2, 3), ag.tensor([0, 1, 2])), ValueError, "batch_size",
    ),
    # out-of-range dims and indices
    "sum dim 2 of 2-d": (lambda: ag.ones(2, 3).sum(dim=2), IndexError, r"Dimension out of range.*got 2"),
    "softmax dim 5": (lambda: ag.ones(2, 3).softmax(dim=5), IndexError, "Dimension out of range"),
    "transpose dim 2": (lambda: ag.ones(2, 3).transpose(0, 2), IndexError, "Dimension out of range"),
    "sum dim 1 of 0-d": (lambda: ag.ones(()).sum(1), IndexError, "Dimension out of range"),
    "a float dim": (lambda: ag.ones(2, 3).transpose(0.0, 1), TypeError, "dim must be an int"),
    "a str dim": (lambda: ag.ones(2, 3).sum(dim="a"), TypeError, "dim must be an int"),
    "index 5 of size 2": (lambda: ag.ones(2, 3)[5], IndexError, "index 5 is out of bounds"),
    "too many indices": (lambda: ag.ones(2, 3)[0, 0, 0], IndexError, "too many indices"),
    "a float index": (lambda: ag.ones(2, 3)[1.5], IndexError, "only integers"),
    "gather index 7": (lambda: ag.ones(2, 3).gather(1, ag.tensor([[0, 7]])), RuntimeError, "index 7 is out of bounds"),
    "embedding index 9": (lambda: F.embedding(ag.tensor([0, 9]), ag.ones(3, 2)), IndexError, "index out of range"),
    "target 5 of 3 classes": (
        lambda: F.cross_entropy(ag.ones(2, 3), ag.tensor([0, 5])), IndexError, "Target 5 is out of bounds",
    ),
    "max_pool2d of kernel 0": (lambda: F.max_pool2d(ag.ones(1, 1, 4, 4), 0), RuntimeError, "stride should not be"),
    "avg_pool2d of stride 0": (lambda: F.avg_pool2d(ag.ones(1, 1, 4, 4), 2, 0), RuntimeError, "stride should not be"),
    "max_pool2d of dilation 0": (
        lambda: F.max_pool2d(ag.ones(1, 1, 4, 4), 2, dilation=0), RuntimeError, "dilation should be",
    ),
    "max_pool2d of padding -1": (
        lambda: F.max_pool2d(ag.ones(1, 1, 4, 4), 2, padding=-1), RuntimeError, "pad must be non-negative",
    ),
    "repeat -1 times": (lambda: ag.ones(3).repeat(-1), RuntimeError, "negative dimension"),
    "arange to nan": (lambda: ag.arange(0, NAN), RuntimeError, "unsupported range"),
    "arange to inf": (lambda: ag.arange(0, INF), RuntimeError, "unsupported range"),
    "permute repeated dim": (lambda: ag.ones(2, 3).permute(0, 0), RuntimeError, "multiple times"),
    # wrong dtypes
    "requires_grad on int64": (lambda: ag.tensor([1, 2], requires_grad=True), RuntimeError, "floating point"),
    "mean of int64": (lambda: ag.ones(2, dtype=ag.int64).mean(), RuntimeError, "could not infer output dtype"),
    "where on a float condition": (lambda: ag.where(ag.ones(2), ag.ones(2), ag.ones(2)), RuntimeError, "boolean"),
    "embedding float indices": (lambda: F.embedding(ag.tensor([0.0]), ag.ones(3, 2)), RuntimeError, "'indices'"),
    "matmul of float64 and float32": (
        lambda: ag.ones(2, 3, dtype=ag.float64) @ ag.ones(3), RuntimeError,
        "same dtype, but got Float, Double, and Float",
    ),
    "matmul of float and int": (lambda: ag.ones(2, 3) @ ag.ones(3, dtype=ag.int64), RuntimeError, "same dtype"),
    "linear of float64 input, float32 weight": (
        lambda: F.linear(ag.ones(2, 3, dtype=ag.float64), ag.ones(4, 3)), RuntimeError, "same dtype",
    ),
    "int to a negative int power": (lambda: ag.tensor([2]) ** -1, RuntimeError, "negative integer powers"),
    # non-tensors and None
    "tensor(None)": (lambda: ag.tensor(None), RuntimeError, "Could not infer dtype of NoneType"),
    "tensor of objects": (lambda: ag.tensor([object()]), RuntimeError, "Could not infer dtype"),
    "tensor of a str": (lambda: ag.tensor("abc"), TypeError, "str"),
    "ragged tensor": (lambda: ag.tensor([[1, 2], [3]]), ValueError, "expected sequence of length 2 at dim 1"),
    "tensor of None with a dtype": (
        lambda: ag.tensor([None, 1.0], dtype=ag.float64), RuntimeError, "Could not infer dtype",  # not a silent nan
    ),
    "None written into a tensor": (lambda: ag.ones(3).__setitem__(0, None), TypeError, "can't assign a NoneType"),
    "a str written into a tensor": (lambda: ag.ones(3).__setitem__(0, "a"), TypeError, "can't assign a str"),
    "in-place on a leaf": (lambda: leaf([1.0]).add_(1), RuntimeError, "leaf Variable that requires grad"),
    "in-place broadcast": (lambda: ag.ones(3).add_(ag.ones(3, 3)), RuntimeError, r"doesn't match the broadcast"),
    "in-place float into int": (lambda: ag.ones(3, dtype=ag.int64).mul_(0.5), RuntimeError, "can't be cast"),
    "cat of a number": (lambda: ag.cat([ag.ones(2), 3]), TypeError,
                        "expected Tensor as element 1 in argument 0, but got int"),
    "cat of nothing": (lambda: ag.cat([]), ValueError, "non-empty list"),
    "zeros(None)": (lambda: ag.zeros(None), TypeError, "NoneType"),
    "zeros(2.5)": (lambda: ag.zeros(2.5), TypeError, "float"),
    "full of None": (lambda: ag.full((2,), None), TypeError, "fill_value"),
    "item of 2 elements": (lambda: ag.ones(2).item(), RuntimeError, "2 elements"),
    "bool of 2 elements": (lambda: bool(ag.ones(2)), RuntimeError, "ambiguous"),
    # sizes that cannot fit
    "negative size": (lambda: ag.ones(-1), RuntimeError, "negative dimension -1"),
    "zeros(10**12)": (lambda: ag.zeros(10**12), MemoryError, r"allocate .*TiB"),
    "randn(10**12)": (lambda: ag.randn(10**12), MemoryError, r"allocate .*TiB"),
    "ones(10**6, 10**6)": (lambda: ag.ones(10**6, 10**6), MemoryError, r"allocate .*TiB"),
    "broadcast to 10**12": (lambda: ag.ones(10**6, 1) + ag.ones(1, 10**6), MemoryError, r"allocate .*TiB"),
    "outer product of 10**12": (lambda: ag.ones(10**6, 1) @ ag.ones(1, 10**6), MemoryError, r"allocate .*TiB"),
    "expand then compute": (lambda: ag.ones(1).expand(10**12) * 2, MemoryError, r"allocate .*TiB"),
    "arange of 10**24 steps": (lambda: ag.arange(0, 1e12, 1e-12), RuntimeError, "Storage size calculation overflowed"),
    "bytes overflow": (lambda: ag.zeros(2**40, 2**40), RuntimeError, "Storage size calculation overflowed"),
}


@pytest.mark.parametrize("name", INVALID)
def test_invalid_input_gets_pytorchs_exception_naming_the_problem(name):
    make, error, match = INVALID[name]
    with pytest.raises(error, match=match):
        make()


# -- invalid input to backward and grad ---------------------------------------------------------------------------
def two_leaves_with_grads():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    x.grad, w.grad = ag.tensor(np.array([0.5, 0.5])), ag.tensor(np.array([-1.0, 2.0]))
    return x, w


def grads_of(*tensors) -> list:
    return [None if t.grad is None else t.grad.numpy().copy() for t in tensors]


def assert_grads_unchanged(tensors, before) -> None:
    for t, old in zip(tensors, before):
        if old is None:
            assert t.grad is None
        else:
            np.testing.assert_array_equal(t.grad.numpy(), old)


def backward_of(make_args):
    def call():
        args, kwargs = make_args()
        ag.autograd.backward(*args, **kwargs)
    return call


BACKWARD_MISTAKES = {
    "tensors=None": (lambda x, w: ((None,), {}), TypeError, "tensors must be a Tensor"),
    "tensors=5": (lambda x, w: ((5,), {}), TypeError, "tensors must be a Tensor"),
    "a float among tensors": (lambda x, w: (([x * w, 1.0],), {}), TypeError, r"tensors\[1\]"),
    "implicit grad of a vector": (lambda x, w: ((x * w,), {}), RuntimeError, "only for scalar outputs"),
    "grad of the wrong shape": (
        lambda x, w: ((x * w, ag.ones(3, dtype=ag.float64)), {}), RuntimeError, r"shape of \(3,\).*\(2,\)",
    ),
    "too few grads": (
        lambda x, w: (([x * w, x + w], [ag.ones(2, dtype=ag.float64)]), {}), RuntimeError, "same length",
    ),
    "a list of floats as grad": (lambda x, w: ((x * w, [1.0, 1.0]), {}), TypeError, r"grad_tensors\[0\]"),
    "a non-grad output": (lambda x, w: ((ag.ones(2).sum(),), {}), RuntimeError, "does not require grad"),
    "empty inputs": (lambda x, w: (((x * w).sum(),), {"inputs": []}), RuntimeError, "cannot be empty"),
    "an int among inputs": (
        lambda x, w: (((x * w).sum(),), {"inputs": [x, 3]}), RuntimeError, "all inputs have to be Tensors or",
    ),
}


@pytest.mark.parametrize("name", BACKWARD_MISTAKES)
def test_backward_mistakes_raise_and_leave_every_grad_unchanged(name):
    make_args, error, match = BACKWARD_MISTAKES[name]
    x, w = two_leaves_with_grads()
    before = grads_of(x, w)
    with pytest.raises(error, match=match):
        backward_of(lambda: make_args(x, w))()
    assert_grads_unchanged((x, w), before)


GRAD_MISTAKES = {
    "inputs=None": (lambda x, y: ag.autograd.grad(y, None), TypeError, "inputs must be a Tensor"),
    "empty inputs": (lambda x, y: ag.autograd.grad(y, []), RuntimeError, "cannot be empty"),
    "an int among inputs": (
        lambda x, y: ag.autograd.grad(y, [x, 3]), RuntimeError, "all inputs have to be Tensors or GradientEdges",
    ),
    "a detached input": (lambda x, y: ag.autograd.grad(y, x.detach()), RuntimeError, "does not require grad"),
    "a leaf of another graph": (
        lambda x, y: ag.autograd.grad(y, leaf([1.0, 2.0])), RuntimeError, "not have been used in the graph",
    ),
    "grad_outputs of the wrong count": (
        lambda x, y: ag.autograd.grad([y, y], x, [ag.ones((), dtype=ag.float64)]), RuntimeError, "same length",
    ),
    "a grad without create_graph, differentiated again": (
        lambda x, y: ag.autograd.grad(ag.autograd.grad(y, x)[0].sum(), x), RuntimeError, "does not require grad",
    ),
}


@pytest.mark.parametrize("name", GRAD_MISTAKES)
def test_grad_mistakes_raise(name):
    call, error, match = GRAD_MISTAKES[name]
    x = leaf([1.0, 2.0])
    with pytest.raises(error, match=match):
        call(x, (x ** 3).sum())
    assert x.grad is None


def test_grad_of_an_unused_input_with_allow_unused_is_none_and_empty_outputs_are_a_no_op():
    x, other = leaf([1.0, 2.0]), leaf([3.0])
    gx, gother = ag.autograd.grad((x * x).sum(), [x, other], allow_unused=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    assert gother is None
    ag.autograd.backward([])
    assert ag.autograd.grad([], [x], allow_unused=True) == (None,)
    (x * 2).sum().backward(inputs=[other])
    assert other.grad is None and x.grad is None


def test_assigning_a_bad_grad_is_refused_so_backward_never_meets_one():
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="Tensor or None but got grad of type int"):
        x.grad = 5
    with pytest.raises(RuntimeError, match=r"size '\[3\]' to a tensor of size '\[2\]'"):
        x.grad = ag.ones(3, dtype=ag.float64)
    with pytest.raises(RuntimeError, match="dtype 'float32'"):
        x.grad = ag.ones(2)
    assert x.grad is None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_backward_twice_through_a_freed_graph_changes_no_grad():
    x, w = two_leaves_with_grads()
    shared = (x * w).exp()
    first, second = shared.sum(), (shared * w).sum()
    first.backward()
    before = grads_of(x, w)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ag.autograd.backward([(x * w).sum(), second])  # the first output's pass is fine, the second's is not
    assert_grads_unchanged((x, w), before)


async def test_async_backward_refuses_bad_input_and_a_failing_pass_changes_no_grad():
    x, w = two_leaves_with_grads()
    before = grads_of(x, w)
    with trio.fail_after(10):
        with pytest.raises(TypeError, match="tensors must be a Tensor"):
            await ag.backward(None)
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            await ag.backward(x * w, ag.ones(3, dtype=ag.float64))
        loss = hooked(lambda g: 1 / 0)(x, w) + (x * w.exp()).sum()
        with pytest.raises(ZeroDivisionError):
            await ag.backward(loss)
        with pytest.raises(ZeroDivisionError):
            await ag.grad(hooked(lambda g: 1 / 0)(x, w), [x, w])
    assert_grads_unchanged((x, w), before)


def test_double_backward_through_a_freed_create_graph_graph():
    x = leaf([1.0, 2.0])
    (g,) = ag.autograd.grad((x ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy())
    with pytest.raises(RuntimeError, match="second time"):
        g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy())


def answered_by(answer):
    """x * w through a Function whose backward returns `answer(g)`."""

    class Product(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return answer(g)

    return lambda x, w: Product.apply(x, w).sum()


def hooked(hook):
    def make(x, w):
        y = x * w
        y.register_hook(hook)
        return y.sum()
    return make


USER_CODE_MISTAKES = {  # user code in the backward pass that answers wrongly
    "Function: too few gradients": (
        answered_by(lambda g: g), RuntimeError, r"incorrect number of gradients \(expected 2, got 1\)",
    ),
    "Function: a gradient of the wrong shape": (
        answered_by(lambda g: (g, ag.ones(3, dtype=ag.float64))), RuntimeError,
        r"invalid gradient at index 1 - got \[3\]",
    ),
    "Function: a str as gradient": (
        answered_by(lambda g: ("x", g)), RuntimeError, "type str at index 0",
    ),
    "hook: a gradient of the wrong shape": (
        hooked(lambda g: ag.ones(3, dtype=ag.float64)), RuntimeError, "changed the size",
    ),
    "hook: a str": (hooked(lambda g: "x"), TypeError, "returned 'str'"),
    "hook: raises": (hooked(lambda g: 1 / 0), ZeroDivisionError, "division by zero"),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", USER_CODE_MISTAKES)
def test_user_code_mistakes_in_backward_raise_and_change_no_grad(name, create_graph):
    make, error, match = USER_CODE_MISTAKES[name]
    x, w = two_leaves_with_grads()
    before = grads_of(x, w)
    loss = make(x, w) + (x * w.exp()).sum()  # other paths run and stage gradients before the mistake surfaces
    with pytest.raises(error, match=match):
        loss.backward(create_graph=create_graph)
    assert_grads_unchanged((x, w), before)


# -- hypothesis: shapes, dims and operands -------------------------------------------------------------------------
def sum_to(array: np.ndarray, shape: tuple) -> np.ndarray:
    """A broadcast gradient summed back to an input's shape."""
    array = array.sum(axis=tuple(range(array.ndim - len(shape))))
    return array.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "mul": (lambda a, b: a * b, np.multiply),
    "sub": (lambda a, b: a - b, np.subtract),
    "maximum": (ag.maximum, np.maximum),
}


@SETTINGS
@given(shapes, shapes, st.sampled_from(sorted(BINARY)))
def test_binary_ops_broadcast_or_refuse_shape_pairs(shape_a, shape_b, name):
    """Any pair of shapes, zero-size dims included: PyTorch's broadcast result and gradients, or its error."""
    op, kernel = BINARY[name]
    rng = np.random.default_rng(0)
    a_data, b_data = rng.uniform(1, 2, shape_a), rng.uniform(3, 4, shape_b)
    a, b = ag.tensor(a_data, requires_grad=True), ag.tensor(b_data, requires_grad=True)
    try:
        out_shape = np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            op(a, b)
        return
    out = op(a, b)
    np.testing.assert_array_equal(out.detach().numpy(), kernel(a_data, b_data))
    assert out.shape == out_shape
    out.sum().backward()
    assert a.grad.shape == shape_a and b.grad.shape == shape_b

    def uses(shape):  # how many output elements each input element reaches
        return math.prod(out_shape) // math.prod(shape) if math.prod(shape) else 0

    # a (in [1, 2]) always loses maximum to b (in [3, 4]); mul's gradient is the other operand, summed
    expected_a = {"add": uses(shape_a), "sub": uses(shape_a), "maximum": 0.0}.get(name)
    expected_b = {"add": uses(shape_b), "sub": -uses(shape_b), "maximum": uses(shape_b)}.get(name)
    if name == "mul":
        np.testing.assert_allclose(a.grad.numpy(), sum_to(np.broadcast_to(b_data, out_shape), shape_a), rtol=1e-12)
        np.testing.assert_allclose(b.grad.numpy(), sum_to(np.broadcast_to(a_data, out_shape), shape_b), rtol=1e-12)
    else:
        np.testing.assert_array_equal(a.grad.numpy(), np.full(shape_a, float(expected_a)))
        np.testing.assert_array_equal(b.grad.numpy(), np.full(shape_b, float(expected_b)))


@SETTINGS
@given(shapes, st.integers(-5, 5), st.sampled_from(["sum", "mean", "softmax", "log_softmax", "cumsum", "unsqueeze",
                                                   "squeeze", "amax", "logsumexp", "flip"]))
def test_a_dim_out_of_range_is_an_index_error_and_one_in_range_works(shape, dim, op):
    x = ag.tensor(np.random.default_rng(1).uniform(-1, 1, shape), requires_grad=True)
    ndim = len(shape) + (op == "unsqueeze")
    low, high = (-ndim, ndim - 1) if ndim else (-1, 0)
    call = {"flip": lambda: x.flip((dim,)), "cumsum": lambda: x.cumsum(dim)}.get(op, lambda: getattr(x, op)(dim))
    if not low <= dim <= high:
        with pytest.raises(IndexError, match="Dimension out of range"):
            call()
        return
    if op == "amax" and shape and shape[dim] == 0:
        with pytest.raises(IndexError, match=f"reduction dim {dim} to have non-zero size"):  # named as given
            call()
        return
    out = call()
    out.sum().backward()
    assert x.grad.shape == shape
    assert np.isfinite(x.grad.numpy()).all()


@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3),
       hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
def test_matmul_of_any_shapes_matches_numpy_or_refuses(shape_a, shape_b):
    rng = np.random.default_rng(2)
    a_data, b_data = rng.normal(size=shape_a), rng.normal(size=shape_b)
    a, b = ag.tensor(a_data, requires_grad=True), ag.tensor(b_data, requires_grad=True)
    try:
        expected = np.matmul(a_data, b_data)
    except ValueError:
        # PyTorch's texts, from the kernel the shapes lead to (dot, mv, mm or bmm)
        with pytest.raises(RuntimeError, match="cannot be multiplied|must match|inconsistent tensor size|size "
                                               "mismatch|Expected size for first two dimensions"):
            a @ b
        return
    out = a @ b
    np.testing.assert_allclose(out.detach().numpy(), expected, atol=1e-12)  # a zero inner dim gives zeros
    out.sum().backward()
    a2 = a_data[None] if a_data.ndim == 1 else a_data  # as matrices, then each gradient summed back to its input
    b2 = b_data[:, None] if b_data.ndim == 1 else b_data
    ones = np.ones(np.matmul(a2, b2).shape)
    np.testing.assert_allclose(a.grad.numpy(), sum_to(ones @ np.swapaxes(b2, -1, -2), a2.shape).reshape(shape_a))
    np.testing.assert_allclose(b.grad.numpy(), sum_to(np.swapaxes(a2, -1, -2) @ ones, b2.shape).reshape(shape_b))


indices = st.one_of(
    st.integers(-4, 4),
    st.lists(st.integers(-4, 4), min_size=0, max_size=4),
    st.tuples(st.integers(-3, 3), st.integers(-3, 3)),
    st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3)),
    st.tuples(st.slices(4), st.integers(-3, 3)),
)


@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), indices)
def test_indexing_with_any_index_matches_numpy_or_is_an_index_error(shape, index):
    data = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    x = ag.tensor(data, requires_grad=True)
    parts = index if isinstance(index, tuple) else (index,)
    if len(parts) <= len(shape) and any(isinstance(p, slice) and (p.step or 1) < 0 for p in parts):
        with pytest.raises(ValueError, match="step must be greater than zero"):  # PyTorch has no negative steps
            x[index]
        return
    try:
        expected = data[index]
    except IndexError:
        try:
            out = x[index]
        except IndexError:
            return
        # as PyTorch's, an index tensor's positions are checked only where the result has elements
        assert out.numel() == 0 and 0 in shape, f"{index} indexed {shape} where numpy refuses it"
        return
    out = x[index]
    np.testing.assert_array_equal(out.detach().numpy(), expected)
    out.sum().backward()
    counts = np.zeros(shape)
    np.add.at(counts, index, 1.0)  # a repeated index gets its gradient once per use
    np.testing.assert_array_equal(x.grad.numpy(), counts)


@SETTINGS
@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       st.lists(st.integers(-3, 6), min_size=0, max_size=3))
def test_reshape_to_any_shape_matches_numpy_or_refuses(shape, target):
    x = ag.zeros(shape, dtype=ag.float64, requires_grad=True)
    valid = target.count(-1) <= 1 and all(n >= -1 for n in target)
    try:
        expected = np.zeros(shape).reshape(target).shape if valid else None
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(RuntimeError, match="shape|dimension"):
            x.reshape(target)
        return
    out = x.reshape(target)
    assert out.shape == expected
    (out * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(shape, 2.0))


NOT_OPERANDS = [None, "x", b"x", [1, 2], (1.0,), {"a": 1}, object(), {1}]
OPERATIONS = {
    "+": lambda t, v: t + v, "-": lambda t, v: v - t, "*": lambda t, v: t * v, "/": lambda t, v: t / v,
    "**": lambda t, v: t ** v, "@": lambda t, v: t @ v, "maximum": lambda t, v: ag.maximum(t, v),
    "cat": lambda t, v: ag.cat([t, v]), "where": lambda t, v: ag.where(t > 0, t, v),
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
@pytest.mark.parametrize("value", NOT_OPERANDS, ids=lambda v: type(v).__name__)
def test_a_non_tensor_operand_is_a_type_error(value, op):
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError):
        OPERATIONS[op](x, value)


@SETTINGS
@given(st.lists(st.booleans(), min_size=2, max_size=4), st.integers(0, 3), st.sampled_from(["freed", "hook", "shape"]))
def test_a_failing_multi_output_backward_changes_no_grad(has_grad, failing, how):
    """Several outputs sharing leaves, one of which fails part-way: every leaf keeps the `.grad` it had."""
    leaves = [leaf(np.arange(3.0) + i) for i in range(len(has_grad))]
    for t, given_grad in zip(leaves, has_grad):
        if given_grad:
            t.grad = ag.tensor(np.full(3, 7.0))
    before = grads_of(*leaves)
    outputs = [(t * leaves[0]).tanh().sum() for t in leaves]
    failing %= len(outputs)
    if how == "freed":
        outputs[failing].backward(retain_graph=False)
        for t, old in zip(leaves, before):  # undo the successful pass, so `before` stays the reference
            t.grad = None if old is None else ag.tensor(old)
    elif how == "hook":
        def fail(g):
            raise ValueError("hook failed")
        outputs[failing].register_hook(fail)
    grads = [None] * len(outputs)
    if how == "shape":
        grads[failing] = ag.ones(2, dtype=ag.float64)
    with pytest.raises((RuntimeError, ValueError)):
        ag.autograd.backward(outputs, grads)
    assert_grads_unchanged(leaves, before)


# -- valid edge input: empty tensors and zero-size dims --------------------------------------------------------------
empty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3).filter(lambda s: 0 in s)


@SETTINGS
@given(empty_shapes)
def test_reductions_of_empty_tensors_give_pytorchs_values_and_gradients(shape):
    x = ag.zeros(*shape, dtype=ag.float64, requires_grad=True)
    zero_dim = shape.index(0)
    with np.errstate(invalid="ignore"):
        expected = {"sum": 0.0, "mean": np.nan, "prod": 1.0, "logsumexp": -np.inf}
        for op, value in expected.items():
            out = getattr(x, op)(zero_dim)
            np.testing.assert_array_equal(out.detach().numpy(), np.full(out.shape, value))
            out.sum().backward()
            assert x.grad.shape == shape
            x.grad = None
        assert x.sum().item() == 0.0 and math.isnan(x.mean().item())
    for op in ("max", "min", "amax", "argmax"):
        with pytest.raises((RuntimeError, IndexError), match="Expected reduction dim"):
            getattr(x, op)()
        with pytest.raises(IndexError, match=f"Expected reduction dim {zero_dim} to have non-zero size"):
            getattr(x, op)(zero_dim)


@SETTINGS
@given(empty_shapes, st.sampled_from(["exp", "tanh", "relu", "abs", "sigmoid", "softmax", "log_softmax", "clone",
                                      "flatten", "transpose", "double"]))
def test_elementwise_and_shape_ops_on_empty_tensors(shape, op):
    x = ag.zeros(*shape, dtype=ag.float64, requires_grad=True)
    call = {
        "softmax": lambda: x.softmax(-1), "log_softmax": lambda: x.log_softmax(-1), "double": lambda: x * 2 + x,
        "transpose": lambda: x.transpose(0, -1), "flatten": lambda: x.flatten(),
    }.get(op, lambda: getattr(x, op)())
    out = call()
    assert out.numel() == 0
    out.sum().backward()
    assert x.grad.shape == shape


def empty_index():
    return ag.tensor(np.zeros(0, dtype=np.int64))


EMPTY_NN = {  # input shape, op, output shape (as PyTorch gives them)
    "linear, zero batch": ((0, 3), lambda x: F.linear(x, ag.ones(2, 3, dtype=ag.float64)), (0, 2)),
    "linear, zero features": ((4, 0), lambda x: F.linear(x, ag.ones(2, 0, dtype=ag.float64)), (4, 2)),
    "conv2d, zero batch": ((0, 1, 5, 5), lambda x: F.conv2d(x, ag.ones(2, 1, 3, 3, dtype=ag.float64)), (0, 2, 3, 3)),
    "max_pool2d, zero batch": ((0, 1, 4, 4), lambda x: F.max_pool2d(x, 2), (0, 1, 2, 2)),
    "avg_pool2d, zero batch": ((0, 1, 4, 4), lambda x: F.avg_pool2d(x, 2), (0, 1, 2, 2)),
    "layer_norm, zero batch": ((0, 3), lambda x: F.layer_norm(x, (3,)), (0, 3)),
    "cross_entropy, zero batch": ((0, 3), lambda x: F.cross_entropy(x, empty_index(), reduction="sum"), ()),
    "mse_loss of nothing": ((0,), lambda x: F.mse_loss(x, ag.zeros(0, dtype=ag.float64), reduction="sum"), ()),
    "l1_loss of nothing": ((0,), lambda x: F.l1_loss(x, ag.zeros(0, dtype=ag.float64), reduction="sum"), ()),
    "embedding of no index": ((3, 2), lambda w: F.embedding(empty_index(), w), (0, 2)),
    "dropout, empty": ((0, 3), lambda x: F.dropout(x, 0.5), (0, 3)),
    "pad, empty": ((0, 2), lambda x: F.pad(x, (1, 1)), (0, 4)),
    "chunk of nothing": ((0, 2), lambda x: ag.cat(x.chunk(3, 0) + (x,)), (0, 2)),
    "cumsum, empty": ((0, 2), lambda x: x.cumsum(0), (0, 2)),
}


@pytest.mark.parametrize("name", EMPTY_NN)
def test_nn_ops_on_empty_batches_give_empty_results_and_gradients(name):
    shape, op, out_shape = EMPTY_NN[name]
    x = ag.zeros(*shape, dtype=ag.float64, requires_grad=True)
    out = op(x)
    assert out.shape == out_shape
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(shape))


def test_chunks_of_nothing_are_as_many_empty_pieces_as_asked():
    assert [piece.shape for piece in ag.zeros(0, 2).chunk(3, 0)] == [(0, 2)] * 3


def test_mean_losses_of_nothing_are_nan_as_in_pytorch():
    x = ag.zeros(0, dtype=ag.float64, requires_grad=True)
    loss = F.mse_loss(x, ag.zeros(0, dtype=ag.float64)) + F.l1_loss(x, ag.zeros(0, dtype=ag.float64))
    assert math.isnan(loss.item())
    loss.backward()
    assert x.grad.shape == (0,)


def test_matmul_with_a_zero_inner_dim_gives_zeros_and_empty_gradients():
    a, b = ag.zeros(2, 0, dtype=ag.float64, requires_grad=True), ag.zeros(0, 3, dtype=ag.float64, requires_grad=True)
    out = a @ b
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros((2, 3)))
    (out * 5).sum().backward()
    assert a.grad.shape == (2, 0) and b.grad.shape == (0, 3)


def test_cat_and_stack_of_empties_and_dtype_promotion():
    a, b = ag.zeros(0, 3, dtype=ag.float64, requires_grad=True), leaf([[1.0, 2.0, 3.0]])
    out = ag.cat([a, b, a])
    assert out.shape == (1, 3)
    (out * 2).sum().backward()
    assert a.grad.shape == (0, 3)
    np.testing.assert_array_equal(b.grad.numpy(), [[2.0, 2.0, 2.0]])
    assert ag.cat([ag.ones(0, 2), ag.ones(0, 2)]).shape == (0, 2)
    start, rows = ag.zeros(0, dtype=ag.float64, requires_grad=True), leaf([[1.0, 2.0]])
    out = ag.cat([start, rows, start])  # PyTorch's legacy rule: a 1-d empty tensor joins tensors of any rank
    assert out.shape == (1, 2)
    out.sum().backward()
    assert start.grad.shape == (0,)
    np.testing.assert_array_equal(rows.grad.numpy(), [[1.0, 1.0]])
    with pytest.raises(RuntimeError, match="same number of dimensions: got 2 and 1"):
        ag.cat([start, rows, ag.ones(2, dtype=ag.float64)])
    assert ag.stack([ag.ones(0), ag.ones(0)]).shape == (2, 0)
    assert ag.cat([ag.ones(2), ag.ones(2, dtype=ag.int64)]).dtype == ag.float32  # PyTorch's promotion, not numpy's
    assert ag.stack([ag.ones(2, dtype=ag.int64), ag.tensor([True, False])]).dtype == ag.int64


def test_reductions_of_0d_tensors_along_dim_0_give_the_value():
    x = leaf(2.0)
    out = x.sum(0) * x.mean(-1) + x.amax(0)
    out.backward()
    assert out.item() == 6.0 and x.grad.item() == 5.0


# -- valid edge input: NaN and inf -----------------------------------------------------------------------------------
def sgn(x):
    return np.nan_to_num(np.sign(x))


ELEMENTWISE = {  # op, numpy forward, numpy gradient (PyTorch's, at NaN and inf too)
    "exp": (lambda t: t.exp(), np.exp, np.exp),
    "tanh": (lambda t: t.tanh(), np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sigmoid": (lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)),
                lambda x: 1 / (1 + np.exp(-x)) * (1 - 1 / (1 + np.exp(-x)))),
    "relu": (lambda t: t.relu(), lambda x: np.maximum(x, 0), lambda x: np.where(x <= 0, 0.0, 1.0)),
    "abs": (lambda t: t.abs(), np.abs, sgn),
    "sign": (lambda t: t.sign(), sgn, np.zeros_like),
    "square": (lambda t: t * t, np.square, lambda x: 2 * x),
    "neg": (lambda t: -t, np.negative, lambda x: -np.ones_like(x)),
    "clamp": (lambda t: t.clamp(-1, 1), lambda x: np.clip(x, -1, 1), lambda x: ((x >= -1) & (x <= 1)).astype(float)),
}
special_floats = st.one_of(st.sampled_from([NAN, INF, -INF, 0.0, -0.0, -50.0, 800.0, -800.0]), st.floats(-60, 60))


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), elements=special_floats),
       st.sampled_from(sorted(ELEMENTWISE)))
def test_nan_and_inf_give_pytorchs_values_and_gradients(values, name):
    op, forward, gradient = ELEMENTWISE[name]
    x = ag.tensor(values, requires_grad=True)
    with np.errstate(all="ignore"):
        out = op(x)
        np.testing.assert_allclose(out.detach().numpy(), forward(values), rtol=1e-12, atol=1e-15)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), gradient(values), rtol=1e-9, atol=1e-12)


def test_sigmoid_and_silu_keep_tiny_values_far_left():
    """sigmoid(-50) is 2e-22, not 0 (as 0.5 + 0.5 tanh(x / 2) rounds it), so its log stays finite."""
    x = ag.tensor([-50.0, -700.0], dtype=ag.float64)
    np.testing.assert_allclose(x.sigmoid().numpy(), np.exp([-50.0, -700.0]), rtol=1e-12)
    np.testing.assert_allclose(x.sigmoid().log().numpy(), [-50.0, -700.0], rtol=1e-12)
    np.testing.assert_allclose(F.silu(x).numpy(), [-50.0, -700.0] * np.exp([-50.0, -700.0]), rtol=1e-12)
    assert ag.tensor([-50.0]).sigmoid().item() > 0  # float32 too


def test_nan_at_kinks_and_extremes_follows_pytorch():
    x = leaf([NAN, 0.0, -1.0])
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0])  # threshold_backward passes g through NaN
    x = leaf([1.0, NAN, 3.0])
    out = x.max()
    out.backward()
    assert math.isnan(out.item())
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])  # the NaN was picked
    x = leaf([1.0, NAN, NAN])
    x.min().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5])
    x = leaf([1.0, NAN, 3.0])
    x.amax().backward()
    assert np.isnan(x.grad.numpy()).all()  # amax gives NaN gradients here, as in PyTorch
    x = leaf([[1.0, NAN], [2.0, 3.0]])
    x.max(1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0], [0.0, 1.0]])
    a, b = leaf([NAN, 1.0, 2.0]), leaf([0.0, NAN, 2.0])
    ag.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0, 0.5])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 0.5])


def test_pow_at_base_zero_and_other_singular_points():
    base, exponent = leaf([0.0, 2.0, 0.0]), leaf([2.0, 0.0, -1.0])
    with np.errstate(all="ignore"):
        (base ** exponent).sum().backward()
    np.testing.assert_array_equal(exponent.grad.numpy(), [0.0, math.log(2.0), -INF])  # 0, not 0 * log(0)
    np.testing.assert_array_equal(base.grad.numpy(), [0.0, 0.0, -INF])
    x = leaf([0.0])
    with np.errstate(divide="ignore"):
        x.sqrt().sum().backward()
        assert x.grad.item() == INF
        x.grad = None
        x.log().sum().backward()
    assert x.grad.item() == INF
    x = leaf([0.0, 0.0])
    x.norm().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_softmax_and_logsumexp_of_infinities():
    with np.errstate(invalid="ignore"):
        assert np.isnan(ag.tensor([INF, 1.0]).softmax(0).numpy()).all()
        assert ag.tensor([-INF, -INF]).logsumexp(0).item() == -INF
        assert ag.tensor([INF, 1.0]).logsumexp(0).item() == INF
        x = leaf([-INF, -INF])
        x.logsumexp(0).backward()
    assert np.isnan(x.grad.numpy()).all()


# -- non-leaf inputs to grad() -------------------------------------------------------------------------------------
@SETTINGS
@given(hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(-2, 2)))
def test_grad_with_respect_to_non_leaf_inputs(values):
    x = ag.tensor(values, requires_grad=True)
    h = x * 3.0
    y = (h * h).sum()
    gh, gx = ag.autograd.grad(y, [h, x])
    np.testing.assert_allclose(gh.numpy(), 6 * values)
    np.testing.assert_allclose(gx.numpy(), 18 * values)
    assert x.grad is None
    (gy,) = ag.autograd.grad(h, h, ag.ones_like(h))  # an output is its own input: the seed comes back
    np.testing.assert_array_equal(gy.numpy(), np.ones_like(values))
