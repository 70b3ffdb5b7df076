"""Shape, joining and data-movement ops: forward values against numpy, gradients and second derivatives
against finite differences, PyTorch's node names and errors.

These ops are linear, so their own second derivative is zero; each case also runs gradgradcheck on the op's
output squared, which differentiates the recorded backward of the op itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import grad

TOLERANCES = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
EXAMPLES = settings(
    max_examples=8, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


@dataclass(frozen=True)
class Case:
    label: str
    fn: Callable
    arrays: tuple
    ref: Callable  # numpy forward; returns an array, or a list of arrays for a multi-output op

    def __repr__(self) -> str:
        return f"Case({self.label}, shapes={[a.shape for a in self.arrays]})"


def _outputs(out) -> tuple:
    return tuple(out) if isinstance(out, tuple | list) else (out,)


def _leaves(arrays) -> list:
    return [ag.tensor(a, dtype=ag.float64, requires_grad=True) for a in arrays]


def check(case: Case) -> None:
    """Forward against numpy, gradcheck, and gradgradcheck of the squared outputs after checking that a
    recorded backward gives the plain backward's values."""
    with ag.no_grad():
        got = _outputs(case.fn(*[ag.tensor(a, dtype=ag.float64) for a in case.arrays]))
    want = _outputs(case.ref(*case.arrays))
    assert len(got) == len(want), case
    for g, w in zip(got, want):
        assert g.shape == np.shape(w), f"{case}: shape {g.shape}, numpy gives {np.shape(w)}"
        np.testing.assert_array_equal(g.numpy(), w)
    xs = _leaves(case.arrays)
    assert ag.autograd.gradcheck(case.fn, xs, **TOLERANCES)

    def squared(*inputs):
        return tuple(o * o for o in _outputs(case.fn(*inputs)))

    recorded = grad(sum(o.sum() for o in squared(*xs)), xs, create_graph=True)
    fresh = _leaves(case.arrays)
    plain = grad(sum(o.sum() for o in squared(*fresh)), fresh)
    for r, p in zip(recorded, plain):
        np.testing.assert_allclose(r.detach().numpy(), p.numpy(), rtol=1e-12, atol=1e-14)
    assert ag.autograd.gradgradcheck(squared, xs, **TOLERANCES)


@st.composite
def arrays(draw, shape=None, count=1):
    """Random float64 arrays; sometimes a transposed (non-contiguous) view."""
    shape = draw(SHAPES) if shape is None else shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = []
    for _ in range(count):
        if len(shape) >= 2 and draw(st.booleans()):
            out.append(rng.uniform(-1.5, 1.5, shape[::-1]).T)
        else:
            out.append(rng.uniform(-1.5, 1.5, shape))
    return tuple(out)


def dim_of(draw, ndim: int) -> int:
    return draw(st.integers(-ndim, ndim - 1))


@st.composite
def view_case(draw):
    (a,) = draw(arrays())
    a = np.ascontiguousarray(a)  # view() refuses strides it cannot reinterpret, as PyTorch's does
    target = draw(st.sampled_from([(-1,), (a.size,), (1, -1), a.shape[::-1]]))
    return Case(f"view{target}", lambda x: x.view(*target), (a,), lambda a: a.reshape(target))


@st.composite
def flatten_case(draw):
    (a,) = draw(arrays())
    start = dim_of(draw, a.ndim)
    end = draw(st.integers(start % a.ndim, a.ndim - 1))
    fn = (lambda x: x.flatten(start, end)) if draw(st.booleans()) else (lambda x: ag.flatten(x, start, end))
    shape = a.shape[:start % a.ndim] + (-1,) + a.shape[end + 1:]
    return Case(f"flatten({start}, {end})", fn, (a,), lambda a: a.reshape(shape))


@st.composite
def squeeze_case(draw):
    shape = tuple(draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=4)))
    (a,) = draw(arrays(shape))
    dim = draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1),
                         st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True).map(tuple)))
    if dim is None:
        return Case("squeeze()", lambda x: x.squeeze(), (a,), np.squeeze)
    dims = (dim,) if isinstance(dim, int) else dim
    ones = tuple(d % a.ndim for d in dims if a.shape[d] == 1)
    return Case(f"squeeze({dim})", lambda x: ag.squeeze(x, dim), (a,), lambda a: np.squeeze(a, ones))


@st.composite
def unsqueeze_case(draw):
    (a,) = draw(arrays())
    dim = draw(st.integers(-a.ndim - 1, a.ndim))
    return Case(f"unsqueeze({dim})", lambda x: x.unsqueeze(dim), (a,), lambda a: np.expand_dims(a, dim))


@st.composite
def expand_case(draw):
    shape = tuple(draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=3)))
    (a,) = draw(arrays(shape))
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    sizes = lead + tuple(draw(st.sampled_from([-1, n] if n > 1 else [-1, 1, 3])) for n in shape)
    target = lead + tuple(n if s == -1 else s for n, s in zip(shape, sizes[len(lead):]))
    return Case(f"expand{sizes}", lambda x: x.expand(*sizes), (a,), lambda a: np.broadcast_to(a, target))


@st.composite
def repeat_case(draw):
    (a,) = draw(arrays())
    sizes = tuple(draw(st.lists(st.integers(1, 2), min_size=a.ndim, max_size=a.ndim + 1)))
    return Case(f"repeat{sizes}", lambda x: x.repeat(*sizes), (a,), lambda a: np.tile(a, sizes))


@st.composite
def cat_case(draw):
    shape = draw(SHAPES)
    dim = dim_of(draw, len(shape))
    count = draw(st.integers(1, 3))
    parts = []
    for _ in range(count):
        part = list(shape)
        part[dim] = draw(st.integers(1, 3))
        parts += draw(arrays(tuple(part)))
    op = draw(st.sampled_from([ag.cat, ag.concat, ag.concatenate]))
    return Case(f"{op.__name__}(dim={dim})", lambda *xs: op(xs, dim), tuple(parts),
                lambda *a: np.concatenate(a, dim))


@st.composite
def stack_case(draw):
    shape = draw(SHAPES)
    dim = draw(st.integers(-len(shape) - 1, len(shape)))
    parts = draw(arrays(shape, draw(st.integers(1, 3))))
    return Case(f"stack(dim={dim})", lambda *xs: ag.stack(xs, dim=dim), parts, lambda *a: np.stack(a, dim))


@st.composite
def split_case(draw):
    (a,) = draw(arrays())
    dim = dim_of(draw, a.ndim)
    size = a.shape[dim]
    if draw(st.booleans()):
        step = draw(st.integers(1, size + 1))
        return Case(f"split({step}, {dim})", lambda x: x.split(step, dim), (a,),
                    lambda a: np.split(a, range(step, size, step), dim))
    cuts = sorted(draw(st.lists(st.integers(0, size), max_size=2)))
    sections = [e - s for s, e in zip([0, *cuts], [*cuts, size])]
    return Case(f"split({sections}, {dim})", lambda x: ag.split(x, sections, dim), (a,),
                lambda a: np.split(a, cuts, dim))


@st.composite
def chunk_case(draw):
    (a,) = draw(arrays())
    dim = dim_of(draw, a.ndim)
    chunks = draw(st.integers(1, 4))
    step = -(-a.shape[dim] // chunks)
    return Case(f"chunk({chunks}, {dim})", lambda x: x.chunk(chunks, dim), (a,),
                lambda a: np.split(a, range(step, a.shape[dim], step), dim))


@st.composite
def unbind_case(draw):
    (a,) = draw(arrays())
    dim = dim_of(draw, a.ndim)
    return Case(f"unbind({dim})", lambda x: x.unbind(dim), (a,), lambda a: list(np.moveaxis(a, dim, 0)))


@st.composite
def flip_case(draw):
    (a,) = draw(arrays())
    dims = tuple(draw(st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True)))
    return Case(f"flip{dims}", lambda x: x.flip(*dims), (a,), lambda a: np.flip(a, dims))


@st.composite
def roll_case(draw):
    (a,) = draw(arrays())
    shifts = draw(st.integers(-4, 4))
    if draw(st.booleans()):
        return Case(f"roll({shifts})", lambda x: x.roll(shifts), (a,), lambda a: np.roll(a, shifts))
    dims = tuple(draw(st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True)))
    many = tuple(shifts + i for i in range(len(dims)))
    return Case(f"roll({many}, {dims})", lambda x: ag.roll(x, many, dims), (a,), lambda a: np.roll(a, many, dims))


@st.composite
def pad_case(draw):
    (a,) = draw(arrays())
    widths = []
    for d in range(a.ndim - 1, a.ndim - 1 - draw(st.integers(1, a.ndim)), -1):
        low = draw(st.integers(-a.shape[d], 2))
        widths += [low, draw(st.integers(-(a.shape[d] + min(low, 0)), 2))]
    value = draw(st.sampled_from([0.0, 2.5]))

    def ref(a):
        out = a
        for i in range(len(widths) // 2):
            d = a.ndim - 1 - i
            before, after = widths[2 * i], widths[2 * i + 1]
            out = np.moveaxis(np.moveaxis(out, d, 0)[max(-before, 0):out.shape[d] - max(-after, 0)], 0, d)
            pads = [(0, 0)] * a.ndim
            pads[d] = (max(before, 0), max(after, 0))
            out = np.pad(out, pads, constant_values=value)
        return out

    return Case(f"pad({widths}, value={value})", lambda x: ag.pad(x, widths, value=value), (a,), ref)


@st.composite
def triangle_case(draw):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4))
    (a,) = draw(arrays(shape))
    k = draw(st.integers(-3, 3))
    if draw(st.booleans()):
        return Case(f"tril({k})", lambda x: x.tril(k), (a,), lambda a: np.tril(a, k))
    return Case(f"triu({k})", lambda x: ag.triu(x, diagonal=k), (a,), lambda a: np.triu(a, k))


@st.composite
def copy_case(draw):
    (a,) = draw(arrays())
    if draw(st.booleans()):
        return Case("clone", lambda x: x.clone(), (a,), np.copy)
    return Case("contiguous", lambda x: x.contiguous() * 1.0, (a,), np.ascontiguousarray)


CASES = {
    "view": view_case(), "flatten": flatten_case(), "squeeze": squeeze_case(), "unsqueeze": unsqueeze_case(),
    "expand": expand_case(), "repeat": repeat_case(), "cat": cat_case(), "stack": stack_case(),
    "split": split_case(), "chunk": chunk_case(), "unbind": unbind_case(), "flip": flip_case(),
    "roll": roll_case(), "pad": pad_case(), "tril/triu": triangle_case(), "clone/contiguous": copy_case(),
}


@pytest.mark.parametrize("name", sorted(CASES))
@EXAMPLES
@given(data=st.data())
def test_forward_gradient_and_recorded_backward(name, data):
    check(data.draw(CASES[name]))


def test_cat_and_stack_second_derivative_mixes_inputs():
    x, y = _leaves([np.arange(1.0, 7.0).reshape(2, 3), np.arange(-3.0, 3.0).reshape(2, 3) / 4])
    for f in (lambda a, b: ag.cat([a, b]) * ag.cat([b, a]), lambda a, b: ag.stack([a, b], 2) * ag.stack([b, a], 2)):
        assert ag.autograd.gradgradcheck(f, [x, y], **TOLERANCES)


def _leaf(shape=(2, 3, 4)) -> ag.Tensor:
    return ag.tensor(np.arange(math.prod(shape), dtype=np.float64).reshape(shape), requires_grad=True)


@pytest.mark.parametrize("fn, name", [
    (lambda x: x.view(6, 4), "ViewBackward0"),
    (lambda x: x.flatten(1), "ViewBackward0"),
    (lambda x: x[:, :1].squeeze(), "SqueezeBackward0"),
    (lambda x: x[:, :1].squeeze(1), "SqueezeBackward1"),
    (lambda x: x[:, :1].squeeze((0, 1)), "SqueezeBackward2"),
    (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
    (lambda x: x[:, :1].expand(-1, 3, -1), "ExpandBackward0"),
    (lambda x: x.repeat(1, 2, 1), "RepeatBackward0"),
    (lambda x: ag.cat([x, x], 1), "CatBackward0"),
    (lambda x: ag.stack([x, x]), "StackBackward0"),
    (lambda x: x.split(2, 2)[1], "SplitBackward0"),
    (lambda x: x.split([1, 3], 2)[0], "SplitWithSizesBackward0"),
    (lambda x: x.chunk(2, 2)[0], "SplitBackward0"),
    (lambda x: x.unbind(1)[2], "UnbindBackward0"),
    (lambda x: x.flip(0), "FlipBackward0"),
    (lambda x: x.roll(1, 0), "RollBackward0"),
    (lambda x: ag.pad(x, (1, -1)), "ConstantPadNdBackward0"),
    (lambda x: x.tril(), "TrilBackward0"),
    (lambda x: x.triu(1), "TriuBackward0"),
    (lambda x: x.clone(), "CloneBackward0"),
    (lambda x: x.transpose(0, 1).contiguous(), "CloneBackward0"),
])
def test_node_names_match_pytorch(fn, name):
    assert fn(_leaf()).grad_fn.name() == name


def test_flatten_and_contiguous_return_the_tensor_itself_when_nothing_changes():
    x = _leaf()
    assert x.flatten(1, 1) is x
    assert x.contiguous() is x
    assert ag.tensor(2.0).flatten().shape == (1,)


def test_split_pieces_each_send_their_gradient_to_their_slice():
    x = _leaf((5,))
    a, b, c = x.split(2)
    (a.sum() * 1 + b.sum() * 2 + c.sum() * 3).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 2, 2, 3])


def test_pad_with_a_negative_width_crops():
    x = _leaf((2, 4))
    out = ag.pad(x, (-1, 2, 1, 0), value=7.0)
    np.testing.assert_array_equal(out.detach().numpy(), np.pad(np.arange(8.0).reshape(2, 4)[:, 1:], ((1, 0), (0, 2)),
                                                                constant_values=7.0))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 1, 1], [0, 1, 1, 1]])


@pytest.mark.parametrize("call, error, match", [
    (lambda x: ag.cat([x, x[:, :, :3]], 0), RuntimeError,
     r"Sizes of tensors must match except in dimension 0\. Expected size 4 but got size 3 for tensor number 1 in "
     r"the list\."),
    (lambda x: ag.cat([x, x[0]]), RuntimeError, "Tensors must have same number of dimensions: got 3 and 2"),
    (lambda x: ag.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda x: ag.cat([x[0, 0, 0]]), RuntimeError, "zero-dimensional tensor"),
    (lambda x: ag.cat([x, x], 3), IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\]"),
    (lambda x: ag.stack([x, x[:, :2]]), RuntimeError, "stack expects each tensor to be equal size"),
    (lambda x: x.split([1, 2], 2), RuntimeError, "split_with_sizes expects split_sizes to sum exactly to 4"),
    (lambda x: x.split(0, 2), RuntimeError, "split_size can only be 0 if dimension size is 0"),
    (lambda x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda x: x.expand(3, 4), RuntimeError, r"the number of sizes provided \(2\) must be greater or equal"),
    (lambda x: x.expand(2, 3, 5), RuntimeError, r"The expanded size of the tensor \(5\) must match"),
    (lambda x: x.expand(-1, 2, 3, 4), RuntimeError, "isn't allowed in a leading, non-existing dimension 0"),
    (lambda x: x.repeat(2, 2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
    (lambda x: x.unsqueeze(4), IndexError, "Dimension out of range"),
    (lambda x: x.squeeze(3), IndexError, "Dimension out of range"),
    (lambda x: x.flatten(2, 1), RuntimeError, "start_dim cannot come after end_dim"),
    (lambda x: x.flip(0, 0), RuntimeError, "appears multiple times"),
    (lambda x: x.roll((1, 2), 0), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda x: ag.pad(x, (1, 2, 3)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda x: ag.pad(x, (1,) * 8), RuntimeError, "Padding length should be less than or equal to two times"),
    (lambda x: ag.pad(x, (-3, -3)), RuntimeError, r"^narrow\(\): length must be non-negative\.$"),
    (lambda x: ag.pad(x, (-5, 2)), RuntimeError, "narrow"),
    (lambda x: ag.pad(x, (1, 1), mode="foo"), NotImplementedError, "^Unrecognised padding mode foo$"),
    (lambda x: x[0, 0].tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda x: x.view(5, -1), RuntimeError, r"shape '\[5, -1\]' is invalid for input of size 24"),
])
def test_bad_arguments_raise_pytorchs_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_leaf())
