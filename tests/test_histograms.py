"""histogram and histogramdd: counts against a brute-force count over the bins' edges, weights, densities, ranges,
PyTorch's edge rules and errors, and no derivative."""

import itertools

import numpy as np
import pytest

import actorgrad as ag

RNG = np.random.default_rng(5)


def _brute_counts(points: np.ndarray, edges: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """Each point's weight added to the bin whose edges hold it in every dim (left edge in, right edge out, but
    the last bin's right edge in)."""
    out = np.zeros([len(e) - 1 for e in edges])
    for point, w in zip(points, weights):
        where = []
        for value, e in zip(point, edges):
            found = [k for k in range(len(e) - 1) if e[k] <= value < e[k + 1] or (k == len(e) - 2 and value == e[-1])]
            where.append(found[0] if found else None)
        if None not in where:
            out[tuple(where)] += w
    return out


def test_histogram_counts_each_value_once():
    values = np.round(RNG.uniform(-2, 3, 200), 1)  # many values on edges
    out = ag.histogram(ag.tensor(values, dtype=ag.float64), bins=10)
    edges = out.bin_edges.numpy()
    np.testing.assert_allclose(edges, np.linspace(values.min(), values.max(), 11), rtol=1e-14)
    np.testing.assert_array_equal(out.hist.numpy(), _brute_counts(values[:, None], [edges], np.ones(200)))
    assert out.hist.sum().item() == 200


def test_histogram_with_range_weights_density_and_edges():
    values = ag.tensor([1.0, 2, 1, 4, -1, 9])
    out = ag.histogram(values, bins=4, range=(0.0, 4.0))
    assert out.hist.tolist() == [0.0, 2.0, 1.0, 1.0] and out.bin_edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    weighted = ag.histogram(ag.tensor([1.0, 2, 1]), bins=4, range=(0.0, 3.0), weight=ag.tensor([1.0, 2, 4]),
                            density=True)
    np.testing.assert_allclose(weighted.hist.numpy(), np.array([0, 5, 2, 0]) / (7 * 0.75), rtol=1e-6)
    given = ag.histogram(ag.tensor([1.0, 2, 1, 5]), ag.tensor([0.0, 1.0, 3.0, 4.0]))
    assert given.hist.tolist() == [0.0, 3.0, 0.0]
    assert ag.tensor([1.0, 2.0]).histogram(2).hist.tolist() == [1.0, 1.0]


def test_degenerate_ranges_are_pytorchs():
    assert ag.histogram(ag.tensor([1.0, 1.0]), 2).bin_edges.tolist() == [0.5, 1.0, 1.5]
    empty = ag.histogram(ag.tensor([]), 2)
    assert empty.hist.tolist() == [0.0, 0.0] and empty.bin_edges.tolist() == [0.0, 0.5, 1.0]
    assert ag.histogram(ag.tensor([1.0, 2.0], dtype=ag.float64), 2).hist.dtype == ag.float64


def test_histogramdd_against_brute_force():
    points = np.round(RNG.uniform(0, 2, (60, 3)), 1)
    weights = RNG.uniform(0.5, 1.5, 60)
    out = ag.histogramdd(ag.tensor(points), bins=[3, 2, 4], weight=ag.tensor(weights))
    edges = [e.numpy() for e in out.bin_edges]
    assert [len(e) for e in edges] == [4, 3, 5]
    np.testing.assert_allclose(out.hist.numpy(), _brute_counts(points, edges, weights), rtol=1e-13)
    dense = ag.histogramdd(ag.tensor(points, dtype=ag.float64), bins=2, range=[0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
                           density=True).hist.numpy()
    counts = _brute_counts(points, [np.array([0.0, 0.5, 1.0])] * 3, np.ones(60))
    np.testing.assert_allclose(dense, counts / (counts.sum() * 0.125), rtol=1e-13)
    by_edges = ag.histogramdd(ag.tensor([[0.0, 0.0], [1.0, 1.0]]), bins=[ag.tensor([0.0, 1.0, 2.0]),
                                                                          ag.tensor([0.0, 2.0])])
    assert by_edges.hist.tolist() == [[1.0], [1.0]]


def test_no_derivative_as_pytorch():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    out = ag.histogram(x, 2)
    assert out.hist.grad_fn.name() == out.bin_edges.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        out.hist.sum().backward()


ERRORS = [
    (lambda: ag.histogram(ag.tensor([1, 2]), 2), NotImplementedError, "\"histogramdd\" not implemented for 'Long'"),
    (lambda: ag.histogram(ag.tensor([1.0, 2]), 0), RuntimeError,
     r"torch.histogram\(\): bins must be > 0, but got 0 for dimension 0"),
    (lambda: ag.histogram(ag.tensor([1.0, 2]), 2, range=(3.0, 1.0)), RuntimeError,
     "torch.histogramdd: min should not exceed max, but got min 3 max 1 for dimension 0"),
    (lambda: ag.histogram(ag.tensor([1.0, float("inf")]), 2), RuntimeError,
     r"torch.histogramdd: dimension 0's range \[1, inf\] is not finite"),
    (lambda: ag.histogram(ag.tensor([1.0, 2]), 2, weight=ag.tensor([1.0])), RuntimeError,
     r"if weight tensor is provided it should have the same shape as the input tensor excluding its innermost "
     r"dimension, but got input with shape \[2, 1\] and weight with shape \[1\]"),
    (lambda: ag.histogramdd(ag.tensor([0.0, 0.0]), bins=2), RuntimeError,
     "torch.histogramdd: input tensor should have at least 2 dimensions"),
    (lambda: ag.histogramdd(ag.tensor([[0.0, 0.0]]), bins=[2, 2, 2]), RuntimeError,
     "histogramdd: The size of bins must be equal to the innermost dimension of the input."),
]


@pytest.mark.parametrize(("call", "kind", "message"), ERRORS)
def test_errors_are_pytorchs(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


@pytest.mark.gpu
def test_on_cuda_histograms_are_the_cpus(cupy):
    points = np.round(RNG.uniform(0, 2, (40, 2)), 1)
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(points, device=device)
        edges = ag.tensor([0.0, 0.5, 2.0], dtype=ag.float64, device=device)  # the input's dtype, as PyTorch wants
        dd = ag.histogramdd(x, bins=[3, edges], weight=x[:, 0], density=True)
        one = ag.histogram(x, 5, range=(0.0, 2.0))
        assert dd.hist.device == one.hist.device == x.device
        results.append([t.cpu().numpy() for t in itertools.chain((dd.hist, one.hist, one.bin_edges), dd.bin_edges)])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-6)
