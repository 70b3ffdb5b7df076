"""The Tensor leftovers on cuda:0: as_strided_scatter's values and gradients, nonzero_static, record_stream,
grad_dtype, CrossMapLRN2d and Module.to_empty give the cpu's results, on the device. Skipped when cupy or a CUDA
device is missing."""

import gc

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.ops.stream_use import release_recorded

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

CUDA = ag.device("cuda:0")
RNG = np.random.default_rng(5)


def test_as_strided_scatter_on_cuda_matches_the_cpu():
    values = RNG.normal(size=(3, 4))
    results = []
    for device in ("cpu", CUDA):
        x = ag.tensor(values).to(device).requires_grad_()
        src = ag.tensor(np.arange(4.0).reshape(2, 2)).to(device).requires_grad_()
        out = ag.as_strided_scatter(x.t(), src, (2, 2), (1, 1), 3)  # overlapping places
        out.backward(ag.tensor(np.arange(12.0).reshape(4, 3)).to(device))
        assert out.device == x.device and x.grad.device == x.device
        results.append([t.detach().cpu().numpy() for t in (out, x.grad, src.grad)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def test_nonzero_static_on_cuda():
    t = ag.tensor([[0, 3], [2, 0]]).to(CUDA)
    got = ag.nonzero_static(t, size=3, fill_value=9)
    assert got.device == CUDA and got.cpu().tolist() == [[0, 1], [1, 0], [9, 9]]


def test_record_stream_on_cuda_holds_the_array_until_the_stream_is_done():
    stream = CUDA.new_stream()
    x = ag.ones(8).to(CUDA)
    x.record_stream(stream)
    del x
    gc.collect()
    stream.synchronize()
    assert release_recorded() == 0


def test_cross_map_lrn2d_on_cuda_matches_the_cpu():
    values = RNG.normal(size=(2, 5, 2, 2))
    m = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.6, k=1.2)
    results = []
    for device in ("cpu", CUDA):
        x = ag.tensor(values).to(device).requires_grad_()
        out = m(x)
        out.backward(ag.ones_like(out))
        assert out.device == x.device and x.grad.device == x.device
        results.append((out.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_to_empty_moves_a_module_to_cuda():
    m = nn.Linear(2, 3).to_empty(device=CUDA)
    assert m.weight.device == CUDA and m.weight.shape == (3, 2) and m.bias.device == CUDA


def test_grad_dtype_casts_gradients_on_cuda():
    x = ag.ones(3).to(CUDA).requires_grad_()
    x.grad_dtype = ag.float64
    (x * 2).sum().backward()
    assert x.grad.device == CUDA and x.grad.dtype == ag.float64 and x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
