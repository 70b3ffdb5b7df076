"""scatter_reduce (sum, prod, mean, amax, amin, with and without the input's values) and scatter's reduce= forms:
values and gradients against a numpy loop of the documented rules, second derivatives against finite
differences, PyTorch's even split among ties, its handling of zeros in prod, its dtypes, errors and their order,
and the same on cuda:0 (CuPy, or the stand-in in CI).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings

NAN = math.nan


def f64(values, requires_grad: bool = False, device: str = "cpu") -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad, device=device)


def assert_values(t: ag.Tensor, want) -> None:
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-14)


def _numpy_scatter_reduce_1d(x, index, src, reduce: str, include_self: bool, upstream) -> tuple:
    """The documented scatter_reduce along one row, and the gradients of (output * upstream).sum(): an output that
    no src element reaches is the input's; else the reduction of its members (the input's value when include_self,
    and the src elements sent there). A member's gradient is the upstream's times 1 (sum), 1 / count (mean), the
    product of the other members (prod, so zeros need no division), or an even share among the members equal to
    the result (amax, amin; PyTorch counts the input's value among the ties even without include_self, and drops
    its share: torch 2.13's convention, read off it)."""
    x, src = np.asarray(x, dtype=float), np.asarray(src, dtype=float)
    out, gx, gs = x.copy(), np.asarray(upstream, dtype=float).copy(), np.zeros(src.shape)
    for j in range(len(x)):
        sent = [k for k in range(len(index)) if index[k] == j]
        if not sent:
            continue
        values = ([x[j]] if include_self else []) + [src[k] for k in sent]
        out[j] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](values)
        if reduce == "prod":
            shares = [np.prod(values[:m] + values[m + 1:]) for m in range(len(values))]
        elif reduce in ("amax", "amin"):
            ties = values.count(out[j]) + (not include_self and x[j] == out[j])  # PyTorch counts the input anyway
            shares = [float(v == out[j]) / ties for v in values]
        else:
            shares = [1.0 / (len(values) if reduce == "mean" else 1)] * len(values)
        shares = [gx[j] * share for share in shares]
        gx[j] = shares.pop(0) if include_self else 0.0
        for k, share in zip(sent, shares, strict=True):
            gs[k] = share
    return out, gx, gs


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_values_and_gradients_match_a_numpy_loop(reduce: str, include_self: bool) -> None:
    # ties at 3 (amax) and 1 (amin) share the gradient evenly
    x, src, index, upstream = [1, 2, 3, 4, 5], [2, 7, 3, 1, 3, 6], [0, 1, 0, 1, 2, 1], [1, 2, 3, 4, 5]
    xt, st = f64(x, True), f64(src, True)
    y = ag.scatter_reduce(xt, 0, ag.tensor(index), st, reduce, include_self=include_self)
    assert y.grad_fn.name() == "ScatterReduceBackward0"
    gx, gs = ag.autograd.grad(y, (xt, st), f64(upstream))
    for got, want in zip((y, gx, gs), _numpy_scatter_reduce_1d(x, index, src, reduce, include_self, upstream)):
        assert_values(got, want)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_a_src_larger_than_the_index_along_dim_1(reduce: str) -> None:
    # src's last column, which the index does not reach, gets 0; x[0, 0] = 0 is a zero in a product
    xs, srcs, index = np.arange(6.0).reshape(2, 3), np.arange(8.0).reshape(2, 4) + 1, [[0, 2, 2], [1, 1, 0]]
    x, src = ag.tensor(xs, requires_grad=True), ag.tensor(srcs, requires_grad=True)
    y = x.scatter_reduce(-1, ag.tensor(index), src, reduce=reduce)
    rows = [_numpy_scatter_reduce_1d(xs[r], index[r], srcs[r, :3], reduce, True, np.ones(3)) for r in range(2)]
    want_src_grad = np.zeros((2, 4))
    want_src_grad[:, :3] = [row[2] for row in rows]
    for got, want in zip((y, *ag.autograd.grad(y.sum(), (x, src))),
                         ([row[0] for row in rows], [row[1] for row in rows], want_src_grad)):
        assert_values(got, want)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_gradients_and_second_derivatives_match_finite_differences(reduce: str, include_self: bool) -> None:
    rng = np.random.default_rng(3)
    # no ties and no zeros: every value differs, so amax's and amin's gradients are smooth there
    x = ag.tensor(rng.uniform(0.5, 1.5, (3, 2)), requires_grad=True)
    src = ag.tensor(rng.uniform(0.5, 1.5, (4, 2)) * rng.choice([-1, 1], (4, 2)), requires_grad=True)
    index = ag.tensor([[0, 2], [0, 0], [2, 2], [0, 1]])

    def f(x, src):
        return ag.scatter_reduce(x, 0, index, src, reduce, include_self=include_self)

    tolerances = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
    assert ag.autograd.gradcheck(f, (x, src), **tolerances)
    assert ag.autograd.gradgradcheck(lambda x, src: f(x, src) ** 2, (x, src), **tolerances)


@pytest.mark.parametrize(("reduce", "include_self", "want"), [
    ("amax", True, ([3, 1, 5], [1 / 3, 1 / 2, 1], [1 / 3, 1 / 3, 1 / 2, 0])),
    ("amax", False, ([3, 1, 2], [0, 0, 0], [1 / 3, 1 / 3, 1 / 2, 1])),  # self's ties still count, as in PyTorch
    ("amin", True, ([3, 1, 2], [1 / 3, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 2, 1])),
    ("amin", False, ([3, 1, 2], [0, 0, 0], [1 / 3, 1 / 3, 1 / 2, 1])),
])
def test_ties_share_the_gradient_evenly_as_in_pytorch(reduce: str, include_self: bool, want: tuple) -> None:
    x, src = f64([3, 1, 5], True), f64([3, 3, 1, 2], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 2]), src, reduce, include_self=include_self)
    for got, w in zip((y, *ag.autograd.grad(y.sum(), (x, src))), want):
        assert_values(got, w)


def test_a_nan_extreme_propagates_and_takes_a_nan_gradient() -> None:
    x, src = f64([NAN, 1, 5], True), f64([3, NAN, 1, 2], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 2]), src, "amax")
    grads = ag.autograd.grad(y.sum(), (x, src))
    for got, want in zip((y, *grads), ([NAN, 1, 5], [NAN, 0.5, 1], [NAN, NAN, 0.5, 0])):
        assert_values(got, want)
    # without self, its gradient is 0 where src's elements landed, NaN or not (PyTorch's grad.scatter(.., 0))
    x, src = f64([1, 2], True), f64([NAN, 3], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0]), src, "amax", include_self=False)
    for got, want in zip((y, *ag.autograd.grad(y.sum(), (x, src))), ([NAN, 2], [0, 1], [NAN, NAN])):
        assert_values(got, want)


@pytest.mark.parametrize(("include_self", "want"), [
    (True, ([0, 0, 0, 4], [0, 12, 0, 4], [10, 0, 0, 0, 0])),
    (False, ([0, 6, 0, 4], [0, 0, 0, 4], [5, 0, 2, 0, 0])),
])
def test_prod_with_zeros_in_self_and_src(include_self: bool, want: tuple) -> None:
    x, src = f64([2, 0, 3, 4], True), f64([0, 5, 6, 0, 0], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 2, 2]), src, "prod", include_self=include_self)
    for got, w in zip((y, *ag.autograd.grad(y, (x, src), f64([1, 2, 3, 4]))), want):
        assert_values(got, w)


def test_prod_second_derivative_through_single_zeros_is_pytorchs() -> None:
    x, src = f64([2, 0, 3, 4], True), f64([0, 5, 6, 7], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 1]), src, "prod")
    w = f64([1, 2, 3, 4])
    gx, gs = ag.autograd.grad(y, (x, src), w, create_graph=True)
    assert_values(gx, [0, 84, 3, 4])
    assert_values(gs, [10, 0, 0, 0])
    hx, hs = ag.autograd.grad((gx * w).sum() + (gs * w).sum(), (x, src))
    assert_values(hx, [5, 90, 0, 0])
    assert_values(hs, [9, 2, 28, 24])


def test_prod_refuses_a_second_derivative_for_src_where_two_zeros_meet() -> None:
    x, src = f64([2, 0, 3, 4], True), f64([0, 5, 6, 0, 0], True)
    y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 2, 2]), src, "prod")
    gx, gs = ag.autograd.grad(y, (x, src), f64([1, 2, 3, 4]), create_graph=True)
    assert gs.grad_fn.name() == "torch::autograd::Error"
    hx, hs = ag.autograd.grad(gx.sum(), (x, src))  # self's gradient differentiates as PyTorch's
    assert_values(hx, [0, 0, 0, 0])
    assert_values(hs, [5, 0, 2, 0, 0])
    with pytest.raises(RuntimeError, match=r"^scatter_reduce\(\): Double backward is unsupported for src when >1 "
                                           r"zeros in src are scattered to the same position in self"):
        ag.autograd.grad(gs.sum(), (x, src))


def test_gradients_need_no_graph_of_their_own_where_pytorchs_have_none() -> None:
    x, src = f64([3, 1, 5], True), f64([3, 3, 1, 2], True)
    for reduce in ("sum", "mean", "amax"):
        y = ag.scatter_reduce(x, 0, ag.tensor([0, 0, 1, 2]), src, reduce)
        gx, gs = ag.autograd.grad(y.sum(), (x, src), create_graph=True)
        assert not gx.requires_grad and not gs.requires_grad, reduce


def test_the_in_place_form_and_method() -> None:
    x, src = f64([1, 2, 3], True), f64([2, 7, 3], True)
    index = ag.tensor([0, 1, 0])
    y = x.clone()
    assert y.scatter_reduce_(0, index, src, "amax", include_self=False) is y
    assert y.grad_fn.name() == "ScatterReduceBackward0"
    for got, want in zip((y, *ag.autograd.grad(y.sum(), (x, src))), ([3, 7, 3], [0, 0, 1], [0, 1, 1])):
        assert_values(got, want)
    y = x.clone().scatter_reduce_(0, index, src, "prod")
    for got, want in zip((y, *ag.autograd.grad(y.sum(), (x, src))), ([6, 14, 3], [6, 7, 1], [3, 2, 2])):
        assert_values(got, want)
    with pytest.raises(TypeError):
        x.scatter_reduce(0, index, src, "sum", False)  # include_self is keyword-only, as in PyTorch


def test_0_dim_tensors_and_an_empty_index() -> None:
    a, b = f64(2.0, True), f64([3, 4], True)
    y = ag.scatter_reduce(a, 0, ag.tensor([0, 0]), b, "prod")
    assert y.shape == ()
    assert_values(y, 24)
    assert_values(ag.autograd.grad(y, a)[0], 12)
    x, src = f64([1, 2, 3], True), f64([[1, 1], [1, 1]], True)
    # an empty index of any shape writes nothing (PyTorch checks no shapes for it)
    y = ag.scatter_reduce(x, 0, ag.tensor(np.zeros((0, 3), np.int64)), src, "amax", include_self=False)
    gx, gs = ag.autograd.grad(y.sum(), (x, src))
    assert_values(y, [1, 2, 3])
    assert_values(gx, [1, 1, 1])
    assert_values(gs, [[0, 0], [0, 0]])


def test_dtypes_as_pytorchs() -> None:
    ints = ag.tensor([1, 2, -7])
    index = ag.tensor([0, 0, 2, 2])
    assert ag.scatter_reduce(ints, 0, index, ag.tensor([2, 2, 0, -1]), "mean").tolist() == [1, 2, -3]  # floored
    got = ag.scatter_reduce(ints, 0, index, ag.tensor([2, 3, 0, -1]), "mean", include_self=False)
    assert got.tolist() == [2, 2, -1]
    got = ag.scatter_reduce(ag.tensor([1, 2, 3], dtype=ag.int8), 0, ag.tensor([0, 0]),
                            ag.tensor([5, 7], dtype=ag.int8), "amin", include_self=False)
    assert got.dtype == ag.int8 and got.tolist() == [5, 2, 3]
    got = ag.scatter_reduce(ag.tensor([1, 2, 3], dtype=ag.uint8), 0, ag.tensor([0, 0]),
                            ag.tensor([50, 7], dtype=ag.uint8), "prod")
    assert got.dtype == ag.uint8 and got.tolist() == [94, 2, 3]  # 350 wraps, as in PyTorch
    for dtype in (ag.float16, ag.float32):
        got = ag.scatter_reduce(ag.tensor([1.0, 2], dtype=dtype), 0, ag.tensor([0, 0]),
                                ag.tensor([2.0, 2], dtype=dtype), "mean")
        assert got.dtype == dtype
        assert got.numpy()[0] == np.asarray(5, got.numpy().dtype) / np.asarray(3, got.numpy().dtype)
    flags = (ag.tensor([True, False]), 0, ag.tensor([0, 1]), ag.tensor([True, True]))
    for reduce, want in (("sum", [True, True]), ("prod", [True, False]), ("amax", [True, True])):
        got = ag.scatter_reduce(*flags, reduce)
        assert got.dtype == ag.bool and got.tolist() == want
    with pytest.raises(NotImplementedError, match="^\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for "
                                                  "'Bool'$"):
        ag.scatter_reduce(*flags, "mean")


X, SRC, INDEX = f64([1, 2, 3]), f64([2, 7, 3]), ag.tensor([0, 1])
ERRORS = [
    ((X, 0, INDEX, SRC, "bogus"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got bogus"),
    ((X, 0, INDEX, SRC, "add"), RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got add"),
    ((X, 0, INDEX[None], SRC, "sum"), RuntimeError, "Index tensor must have the same number of dimensions as self "
                                                    "tensor"),
    ((X, 0, INDEX, SRC[None], "sum"), RuntimeError, "Index tensor must have the same number of dimensions as src "
                                                    "tensor"),
    ((X, 0, ag.tensor([0, 1, 2, 0]), SRC, "sum"), RuntimeError,
     "Expected index [4] to be no larger than self [3] apart from dimension 0 and to be no larger size than src [3]"),
    ((X, 0, INDEX.double(), SRC, "sum"), RuntimeError, "scatter(): Expected dtype int32/int64 for index"),
    ((X, 0, ag.tensor([0, 1], dtype=ag.int16), SRC, "sum"), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ((X, 0, ag.tensor(np.array([0, 1], np.uint32)), SRC, "sum"), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ((X, 0, INDEX, SRC.float(), "sum"), RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ((X, 0, ag.tensor([0, 3]), SRC, "sum"), RuntimeError, "index 3 is out of bounds for dimension 0 with size 3"),
    ((X, 0, ag.tensor([0, -1]), SRC, "amax"), RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    ((X, 2, INDEX, SRC, "sum"), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ((X, 0, INDEX, 2.0, "sum"), TypeError, "scatter_reduce(): argument 'src' (position 4) must be Tensor, not float"),
    # PyTorch's order: the dim, the dtypes, the shapes, the reduce argument, the bounds (an empty index too)
    ((X, 2, INDEX.double(), SRC, "bogus"), IndexError, "Dimension out of range"),
    ((X, 0, INDEX.double(), SRC.float(), "bogus"), RuntimeError, "scatter(): Expected dtype int32/int64 for index"),
    ((X, 0, INDEX, SRC.float(), "bogus"), RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ((X, 0, INDEX[None], SRC, "bogus"), RuntimeError, "Index tensor must have the same number of dimensions as self"),
    ((X, 0, ag.tensor([0, 3]), SRC, "bogus"), RuntimeError, "reduce argument must be either sum, prod, mean, amax"),
    ((X, 0, ag.tensor(np.zeros(0, np.int64)), SRC, "bogus"), RuntimeError, "reduce argument must be either sum"),
]


@pytest.mark.parametrize(("args", "kind", "message"), ERRORS, ids=[e[2][:40] + str(i) for i, e in enumerate(ERRORS)])
def test_errors_are_pytorchs_in_its_order(args: tuple, kind: type, message: str) -> None:
    with pytest.raises(kind) as caught:
        ag.scatter_reduce(*args)
    assert message in str(caught.value)


# -- scatter(..., reduce=) -------------------------------------------------------------------------------------------
def test_scatter_reduce_forms_give_pytorchs_values() -> None:
    x, src, index = f64([1, 2, 3]), f64([2, 7, 3]), ag.tensor([0, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_values(ag.scatter(x, 0, index, src, reduce="add"), [6, 9, 3])
        assert_values(x.scatter(0, index, src, reduce="multiply"), [6, 14, 3])
        ints = ag.tensor([1, 2, 3])
        assert ag.scatter(ints, 0, index, ag.tensor([2, 7, 3]), reduce="multiply").tolist() == [6, 14, 3]
    assert_values(ag.scatter(x, 0, index, value=2.5, reduce="add"), [6, 4.5, 3])
    assert_values(ag.scatter(x, 0, index, value=2.5, reduce="multiply"), [6.25, 5, 3])
    assert ag.scatter(ints, 0, index, value=2.7, reduce="add").tolist() == [5, 4, 3]  # the value as an int64
    assert ag.scatter(ints, 0, index, value=2.7, reduce="multiply").tolist() == [4, 4, 3]
    assert_values(ag.scatter(x, 0, index, value=True, reduce="add"), [3, 3, 3])
    y = x.clone()
    assert y.scatter_(0, ag.tensor([0, 0]), value=3.0, reduce="multiply") is y
    assert_values(y, [9, 2, 3])


@pytest.mark.parametrize("form", ["src", "value"])
def test_scatter_with_reduce_records_no_derivative_as_pytorch(form: str) -> None:
    x, src, index = f64([1, 2, 3], True), f64([2, 7, 3], True), ag.tensor([0, 1, 0])
    operand = {"src": src} if form == "src" else {"value": 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = ag.scatter(x, 0, index, reduce="multiply", **operand)
        z = x.clone().scatter_(0, index, reduce="add", **operand)
    assert y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match=r"^derivative for aten::scatter is not implemented"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match=r"^derivative for aten::scatter_ is not implemented"):
        z.sum().backward()


def test_scatter_with_reduce_and_a_src_warns_once_as_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x, index = f64([1, 2, 3]), ag.tensor([0, 1])
    with pytest.warns(UserWarning, match=r"^The reduce argument of torch.scatter with Tensor src is deprecated and "
                                         r"will be removed in a future PyTorch release. Use torch.scatter_reduce "
                                         r"instead for more reduction options.$"):
        ag.scatter(x, 0, index, f64([1, 1]), reduce="add")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.scatter(x, 0, index, f64([1, 1]), reduce="add")  # once per process
        ag.scatter(x, 0, index, value=1.0, reduce="add")  # and never for a value


@pytest.mark.parametrize(("args", "kwargs", "kind", "message"), [
    ((X, 0, INDEX, SRC), {"reduce": "sum"}, RuntimeError, "reduce argument must be either add or multiply."),
    ((X, 0, INDEX), {"value": 1.0, "reduce": "mean"}, RuntimeError, "reduce argument must be either add or "
                                                                     "multiply."),
    ((X, 0, ag.tensor(np.zeros(0, np.int64)), SRC), {"reduce": "bogus"}, RuntimeError, "reduce argument must be"),
    ((X, 0, INDEX[None], SRC), {"reduce": "bogus"}, RuntimeError, "Index tensor must have the same number of "
                                                                  "dimensions as self tensor"),
    ((X, 0, ag.tensor([0, 5]), SRC), {"reduce": "bogus"}, RuntimeError, "reduce argument must be"),
    ((X, 0, ag.tensor([0, 5]), SRC), {"reduce": "add"}, RuntimeError, "index 5 is out of bounds for dimension 0 "
                                                                      "with size 3"),
    # the dim before the index's dtype, as PyTorch checks them
    ((X, 3, INDEX.double(), SRC), {}, IndexError, "Dimension out of range (expected to be in range of [-1, 0], but "
                                                  "got 3)"),
])
def test_scatter_errors_are_pytorchs(args: tuple, kwargs: dict, kind: type, message: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kind) as caught:
            ag.scatter(*args, **kwargs)
    assert message in str(caught.value)


# -- on cuda:0 -------------------------------------------------------------------------------------------------------
def _on(device: str, reduce: str, include_self: bool) -> list:
    """Values, first and second derivatives of a scatter_reduce with repeated positions and zeros (prod's own
    paths), as host arrays."""
    x = f64([[1, 0.5], [0, 2], [3, -1]], True, device)
    src = f64([[2, 0], [0.5, 3], [4, -2], [1.5, 2.5]], True, device)
    index = ag.tensor([[0, 2], [0, 0], [2, 2], [0, 1]], device=device)
    y = ag.scatter_reduce(x, 0, index, src, reduce, include_self=include_self)
    assert y.device == ag.device(device)
    first = ag.autograd.grad((y * y).sum(), (x, src), create_graph=True)
    second = ag.autograd.grad(sum(g.sum() for g in first), (x, src))
    return [t.detach().cpu().numpy() for t in (y, *first, *second)]


@pytest.mark.gpu
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_on_cuda_give_the_cpus_values_and_gradients(reduce: str, include_self: bool, cupy) -> None:
    for cuda, cpu in zip(_on("cuda:0", reduce, include_self), _on("cpu", reduce, include_self)):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12, atol=1e-14)


@pytest.mark.gpu
def test_scatter_reduce_forms_on_cuda(cupy) -> None:
    x, index = f64([1, 2, 3], device="cuda:0"), ag.tensor([0, 1, 0], device="cuda:0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ag.scatter(x, 0, index, f64([2, 7, 3], device="cuda:0"), reduce="multiply")
    assert got.device == ag.device("cuda:0")
    assert_values(got.cpu(), [6, 14, 3])
    assert_values(ag.scatter(x, 0, index, value=2.5, reduce="add").cpu(), [6, 4.5, 3])
    ints = ag.scatter_reduce(ag.tensor([1, 2, -7], device="cuda:0"), 0, ag.tensor([0, 0, 2, 2], device="cuda:0"),
                             ag.tensor([2, 2, 0, -1], device="cuda:0"), "mean")
    assert ints.cpu().tolist() == [1, 2, -3]
    # dtypes CuPy's add.at does not take
    small = ag.scatter_reduce(ag.tensor([1, 2, 3], dtype=ag.int8, device="cuda:0"), 0, index,
                              ag.tensor([100, 7, 100], dtype=ag.int8, device="cuda:0"), "sum")
    assert small.dtype == ag.int8 and small.cpu().tolist() == [-55, 9, 3]  # 201 wraps, as in PyTorch
    flags = ag.scatter_reduce(ag.tensor([False, False, True], device="cuda:0"), 0, index,
                              ag.tensor([True, False, False], device="cuda:0"), "sum")
    assert flags.cpu().tolist() == [True, False, True]
