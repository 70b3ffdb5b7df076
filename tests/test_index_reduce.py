"""index_reduce and index_reduce_: values against a brute-force loop, gradients (ties and zeros as PyTorch's) and
PyTorch's errors."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(9)
REDUCTIONS = ["prod", "mean", "amax", "amin"]
COMBINE = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}


def _brute(x: np.ndarray, dim: int, index: list[int], source: np.ndarray, reduce: str, include_self: bool):
    """Each slice of x along dim combined with the source slices whose index names it (and itself if included)."""
    out = np.moveaxis(x.copy(), dim, 0)
    src = np.moveaxis(source, dim, 0)
    for i in range(out.shape[0]):
        picked = [src[k] for k, j in enumerate(index) if j == i]
        if picked:
            stack = np.stack(([out[i]] if include_self else []) + picked)
            combined = COMBINE[reduce](stack, axis=0)
            out[i] = np.floor(combined) if x.dtype.kind == "i" and reduce == "mean" else combined
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_values_are_the_brute_force_ones(reduce, include_self, dim):
    x = RNG.uniform(0.5, 2.0, (4, 3, 2))
    index = [2, 0, 2, 3, 2]
    shape = list(x.shape)
    shape[dim] = len(index)
    index = [i % x.shape[dim] for i in index]
    source = RNG.uniform(0.5, 2.0, shape)
    out = ag.index_reduce(ag.tensor(x), dim, ag.tensor(index), ag.tensor(source), reduce, include_self=include_self)
    np.testing.assert_allclose(out.numpy(), _brute(x, dim, index, source, reduce, include_self), rtol=1e-14)


def test_integer_mean_and_in_place():
    x = ag.ones(3, 2, dtype=ag.int64)
    source = ag.arange(1, 9).reshape(4, 2)
    assert x.index_reduce_(0, ag.tensor([0, 2, 0, 2]), source, "mean") is x
    assert x.tolist() == [[2, 3], [1, 1], [3, 4]] and x._version == 1
    y = ag.ones(3, 2)
    y.index_reduce_(0, ag.tensor([0, 2, 0, 2], dtype=ag.int32), source.float(), "amax", include_self=False)
    assert y.tolist() == [[5.0, 6.0], [1.0, 1.0], [7.0, 8.0]]


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_pass_gradcheck(reduce, include_self):
    x = ag.tensor(RNG.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    source = ag.tensor(RNG.uniform(0.5, 2.0, (3, 5)), requires_grad=True)
    index = ag.tensor([1, 3, 1, 0, 1])

    def f(a, b):
        return ag.index_reduce(a, 1, index, b, reduce, include_self=include_self)

    assert gradcheck(f, (x, source))
    if reduce == "mean":
        assert gradgradcheck(f, (x, source))


def test_ties_share_the_gradient_and_zeros_in_prod():
    x = ag.tensor([[2.0], [1.0]], requires_grad=True)
    source = ag.tensor([[2.0], [2.0], [0.0]], requires_grad=True)
    ag.index_reduce(x, 0, ag.tensor([0, 0, 1]), source, "amax").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1 / 3], [1.0]])  # three 2s tie in row 0
    np.testing.assert_allclose(source.grad.numpy(), [[1 / 3], [1 / 3], [0.0]])
    x.grad = source.grad = None
    ag.index_reduce(x, 0, ag.tensor([0, 0, 1]), source, "prod").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0], [0.0]])
    np.testing.assert_allclose(source.grad.numpy(), [[4.0], [4.0], [1.0]])  # d(1 * 0)/d0 = 1


ERRORS = [
    (lambda x, s, i: x.index_reduce(0, i, s, "sum"), RuntimeError,
     "index_reduce\\(\\): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    (lambda x, s, i: x.index_reduce(0, i.float(), s, "prod"), RuntimeError,
     "index_reduce_\\(\\): Expected dtype int32/int64 for index but got: Float"),
    (lambda x, s, i: x.index_reduce(0, i[:, None], s, "prod"), IndexError,
     r"index_reduce_\(\): Index is supposed to be a vector, but got dim: 2 with type: Long and size: \[4, 1\]"),
    (lambda x, s, i: x.index_reduce(0, i[:3], s, "prod"), RuntimeError,
     r"index_reduce_\(\): Number of indices \(3\) should be equal to source.size\(dim\): \(4\), for dim: 0"),
    (lambda x, s, i: x.index_reduce(0, ag.tensor([0, 5, 0, 2]), s, "prod"), IndexError, "index out of range in self"),
    (lambda x, s, i: x.index_reduce(0, ag.tensor([-1, 0, 0, 0]), s, "prod"), IndexError,
     "index out of range in self"),
    (lambda x, s, i: x.index_reduce(0, i, s.double(), "prod"), RuntimeError,
     r"index_reduce_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda x, s, i: x.index_reduce(0, i, s[:, :1], "prod"), RuntimeError,
     r"source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
     r"\[3, 2\] source.shape = \[4, 1\]"),
    (lambda x, s, i: x.index_reduce(2, i, s, "prod"), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize(("call", "kind", "message"), ERRORS)
def test_errors_are_pytorchs(call, kind, message):
    with pytest.raises(kind, match=message):
        call(ag.ones(3, 2), ag.arange(8.0).reshape(4, 2), ag.tensor([0, 2, 0, 2]))


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy):
    x0, s0 = RNG.uniform(0.5, 2.0, (3, 4)), RNG.uniform(0.5, 2.0, (3, 5))
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(x0, requires_grad=True, device=device)
        source = ag.tensor(s0, requires_grad=True, device=device)
        index = ag.tensor([1, 3, 1, 0, 1], device=device)
        out = sum(ag.index_reduce(x, 1, index, source, r) for r in REDUCTIONS)
        out.sum().backward()
        assert out.device == x.device
        results.append([out.detach().cpu().numpy(), x.grad.cpu().numpy(), source.grad.cpu().numpy()])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12)
