"""CUDA through CuPy: placement, copies, cross-device backward (cpu and cuda:0), several streams on cuda:0.
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def test_tensors_on_cuda_hold_cupy_arrays():
    x = ag.ones(2, 3, device="cuda")
    assert x.device is ag.device("cuda:0") and x.is_cuda
    assert isinstance(x._data, cupy.ndarray)
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones((2, 3), np.float32))
    assert "device='cuda:0'" in repr(x)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()


def test_mixed_devices_raise_pytorchs_error():
    with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cpu!"):
        ag.ones(3, device="cuda") + ag.ones(3)


def test_an_mlp_on_cuda_matches_the_cpu(random_leaves):
    x, w1, w2 = random_leaves(0, (16, 8), (8, 32), (32, 4))

    def loss(x, w1, w2):
        return ((x @ w1).relu() @ w2).tanh().sum()

    expected = loss(x, w1, w2)
    gx, g1, g2 = ag.autograd.grad(expected, (x, w1, w2))
    on = [t.detach().cuda().requires_grad_() for t in (x, w1, w2)]
    got = loss(*on)
    assert got.item() == pytest.approx(expected.item(), rel=1e-10)
    got.backward()
    for t, g in zip(on, (gx, g1, g2)):
        assert t.grad.device is ag.device("cuda:0")
        np.testing.assert_allclose(t.grad.cpu().numpy(), g.numpy(), rtol=1e-10, atol=1e-13)  # BLAS rounding


def test_gradients_cross_between_cpu_and_cuda_both_ways(random_leaves):
    x, w = random_leaves(1, (4, 3), (3, 3))

    def loss(d):
        h = (x.to(d) @ w.to(d)).sin()
        return (h.to("cpu") * x.sum()).exp().sum()

    expected = ag.autograd.grad(loss("cpu"), (x, w))
    got = ag.autograd.grad(loss("cuda:0"), (x, w))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10)


async def test_two_streams_on_cuda_give_the_same_gradients(random_leaves):
    x, w = random_leaves(2, (64, 64), (64, 64))
    xd, wd = x.detach().cuda().requires_grad_(), w.detach().cuda().requires_grad_()
    dev = ag.device("cuda:0")
    s1 = dev.new_stream()
    a = (xd @ wd).tanh().sum()
    with ag.stream(s1):
        await ag.backward(a)
    expected = await ag.grad((x @ w).tanh().sum(), (x, w))
    np.testing.assert_allclose(xd.grad.cpu().numpy(), expected[0].numpy(), rtol=1e-10)
    np.testing.assert_allclose(wd.grad.cpu().numpy(), expected[1].numpy(), rtol=1e-10)


def test_events_wait_across_cuda_streams():
    dev = ag.device("cuda:0")
    producer, consumer = dev.new_stream(), dev.new_stream()
    with producer.stream:
        a = cupy.ones((2048, 2048))
        for _ in range(10):
            a = a @ a / 2048
    consumer.wait_event(producer.record_event())
    with consumer.stream:
        total = float(a.sum())
    assert total == pytest.approx(2048 * 2048)


def test_numbers_beside_cuda_tensors_reach_the_backward_kernels_as_scalars(random_leaves):
    (x,) = random_leaves(3, (5, 7))

    def loss(t):
        return -((t / 4 - 1).log_softmax(1) * 2).sum() / 5

    expected = ag.autograd.grad(loss(x), x)[0]
    on = x.detach().cuda().requires_grad_()
    (got,) = ag.autograd.grad(loss(on), on)
    assert got.device is ag.device("cuda:0")
    np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-10, atol=1e-13)


def test_a_pass_on_the_callers_stream_needs_no_events(monkeypatch, random_leaves):
    from actorgrad.devices import cuda

    recorded = []
    record = cuda.CudaStream.record_event
    monkeypatch.setattr(cuda.CudaStream, "record_event", lambda self: recorded.append(self) or record(self))
    x, w = (t.detach().cuda().requires_grad_() for t in random_leaves(4, (8, 8), (8, 8)))
    (x @ w).tanh().sum().backward()
    assert recorded == []
    y = (x @ w).sum()
    with ag.stream(ag.device("cuda:0").new_stream()):  # the forward's stream is not the caller's: events again
        ag.autograd.grad(y, w)
    assert recorded


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dims", [(0,), (1,)])
def test_the_fused_cuda_helpers_match_the_generic_ones(dtype, dims):
    rng = np.random.default_rng(5)
    x, g = rng.normal(size=(2, 6, 5)).astype(dtype)
    x[0, 0] = 0
    x[1, 1] = np.nan
    host, gpu = ag.device("cpu").ops, ag.device("cuda:0").ops
    assert type(gpu).__name__ == "CudaArrayOps"
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    relu = np.maximum(x, 0)  # NaN stays NaN
    for name, args in [("relu_grad", (g, relu)), ("log_softmax", (g, dims)), ("log_softmax_grad", (g, x, dims))]:
        expected = getattr(host, name)(*args)
        got = getattr(gpu, name)(*(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got.get(), expected, rtol=rtol, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 1), (5, 10), (3, 7, 33), (2, 4096), (2, 4097)])
def test_log_softmax_over_rows_matches_the_generic_helpers(dtype, shape):
    """The last dim by a kernel of one warp per row (rows up to 4096 long; longer ones by CuPy's reductions):
    infinities and NaN as on the cpu, a row of -inf all NaN."""
    rng = np.random.default_rng(6)
    x, g = rng.normal(size=(2, *shape)).astype(dtype) * 3
    rows = x.reshape(-1, shape[-1])
    rows[0, 0] = -np.inf
    rows[1, -1] = np.inf
    rows[2 % len(rows)] = -np.inf
    if len(rows) > 3:
        rows[3, 0] = np.nan
    host, gpu = ag.device("cpu").ops, ag.device("cuda:0").ops
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    result = host.log_softmax(x, (x.ndim - 1,))
    with np.errstate(invalid="ignore"):
        expected_grad = host.log_softmax_grad(g, result, (x.ndim - 1,))
    got = gpu.log_softmax(cupy.asarray(x), (x.ndim - 1,))
    got_grad = gpu.log_softmax_grad(cupy.asarray(g), cupy.asarray(result), (x.ndim - 1,))
    assert got.dtype == dtype and got_grad.dtype == dtype
    np.testing.assert_allclose(got.get(), result, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(got_grad.get(), expected_grad, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("make, args", [
    (lambda: cupy.ElementwiseKernel("T g, T r", "T y", "y = r != 0 ? g : (T)zero", "actorgrad_relu_grad"), 2),
    (lambda: cupy.ElementwiseKernel("T g, T r,", "T y", "y = g", "actorgrad_relu_grad"), 2),
    (lambda: cupy.ElementwiseKernel("T g, floatt r", "T y", "y = g", "actorgrad_relu_grad"), 2),
    (lambda: cupy.ReductionKernel("T x, T m", "T s", "exp(x - m)", "a + c", "s = a", "0", "actorgrad_exp_sum"), 2),
    (lambda: cupy.ReductionKernel("T x, T m", "T s", "exp(x - s)", "a + b", "s = a", "0", "actorgrad_exp_sum"), 2),
], ids=["undeclared name", "empty parameter", "unknown dtype", "reduce_expr not in a and b", "map_expr reads out"])
def test_a_fused_kernel_that_cupy_cannot_build_is_refused(make, args):
    """What NVRTC or CuPy's parameter parser refuses on a GPU, the stand-in refuses too (where it may differ: when)."""
    x = cupy.ones((2, 3), dtype=np.float32)
    with pytest.raises(Exception):  # noqa: B017, PT011 - CuPy's Exception, TypeError or CompileException
        make()(*[x] * args)


def test_a_fused_kernel_given_two_dtypes_for_one_placeholder_raises_cupys_type_error():
    relu_grad = cupy.ElementwiseKernel("T g, T r", "T y", "y = r != 0 ? g : (T)0", "actorgrad_relu_grad")
    with pytest.raises(TypeError, match="Type is mismatched"):
        relu_grad(cupy.ones(2, dtype=np.float32), cupy.ones(2, dtype=np.float64))


def test_a_saved_tensor_changed_through_a_view_on_cuda_is_refused():
    x = ag.ones(2, 3, device="cuda", requires_grad=True)
    y = x * 1
    loss = (y * y).sum()  # saves y
    view = y.reshape(3, 2)
    assert view._base is y and view._version == y._version
    view[0].mul_(2)
    assert y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("op", [
    lambda x, s: x * s, lambda x, s: s - x, lambda x, s: x / s, lambda x, s: x ** s,
    lambda x, s: ag.where(x > 1.5, x, s), lambda x, s: x.clamp(s * 0.1, None),
    lambda x, s: ag.maximum(x, s) + ag.minimum(s, x),
])
def test_a_zero_dim_cpu_tensor_beside_a_cuda_tensor_gets_its_gradient_on_the_cpu(op):
    def grads(where):
        x = ag.tensor([1.0, 2.0], dtype=ag.float64, device=where, requires_grad=True)
        leaf = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)  # on the cpu
        out = op(x, leaf * 0.5).tanh().sum()  # through a cpu node, then a leaf
        first, = ag.autograd.grad(out, [leaf], create_graph=True)
        second, = ag.autograd.grad(first, [leaf])
        out = op(x, leaf * 0.5).tanh().sum()
        out.backward()
        return [leaf.grad, first, second]

    for got, want in zip(grads("cuda:0"), grads("cpu")):
        assert got.device is ag.device("cpu") and isinstance(got._data, np.ndarray)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [lambda t: t.prod(1).sum(), lambda t: (t.max(1)[0] ** 2).sum()],
                         ids=["prod through zeros", "max along a dim"])
def test_second_derivatives_whose_rules_build_constants_run_on_cuda(fn):
    def hessian_row(where):
        t = ag.tensor([[0.0, 2.0, 3.0], [1.0, 2.0, 3.0]], dtype=ag.float64, device=where, requires_grad=True)
        g, = ag.autograd.grad(fn(t), [t], create_graph=True)
        assert g.device is ag.device(where)
        return ag.autograd.grad((g * g).sum(), [t])[0].cpu().numpy()

    np.testing.assert_allclose(hessian_row("cuda:0"), hessian_row("cpu"), rtol=1e-10, atol=1e-12)


async def test_cupys_current_stream_follows_stream_blocks_closed_out_of_order(interleaved_stream_blocks):
    """Forward kernels queue on CuPy's current stream and nodes record actorgrad's: the two must agree, also
    after blocks of two tasks close out of order (CuPy's own `with stream:` would restore a closed block's)."""
    dev = ag.device("cuda:0")
    default = dev.current_stream()
    first, second = dev.new_stream(), dev.new_stream()

    def check():
        assert cupy.cuda.get_current_stream().ptr == second.stream.ptr
        assert (ag.ones(2, device=dev, requires_grad=True) * 2).grad_fn.stream is second

    await interleaved_stream_blocks(first, second, check)
    assert dev.current_stream() is default and cupy.cuda.get_current_stream().ptr == default.stream.ptr


@pytest.mark.parametrize("loss", [
    lambda x, d: F.cross_entropy(x * x, ag.tensor([0, 1, 2, 1], device=d)),
    lambda x, d: F.binary_cross_entropy_with_logits(x * x, (x > 0).detach().to(ag.float64)),
    lambda x, d: F.avg_pool2d((x * x).reshape(1, 1, 4, 3), 2, padding=1, count_include_pad=False).sum(),
    lambda x, d: F.batch_norm(x * x, ag.zeros(3, dtype=ag.float64, device=d), ag.ones(3, dtype=ag.float64,
                              device=d), training=False).pow(3).sum(),
], ids=["cross_entropy", "bce_with_logits", "avg_pool2d without padding counted", "batch_norm in eval"])
def test_second_derivatives_of_rules_that_save_raw_arrays_run_on_cuda(loss, random_leaves):
    """These rules save raw arrays (weights, divisors, statistics), which a recorded backward meets beside
    tensors: a CuPy array there is a constant on the tensor's device."""
    (x,) = random_leaves(41, (4, 3))

    def second(where):
        leaf = x.detach().to(where).requires_grad_()
        (g,) = ag.autograd.grad(loss(leaf, where), [leaf], create_graph=True)
        return ag.autograd.grad((g * g).sum(), [leaf])[0].cpu().numpy()

    np.testing.assert_allclose(second("cuda:0"), second("cpu"), rtol=1e-10)


def test_a_gradient_sent_along_two_edges_is_waited_for_on_both_consumers_streams(monkeypatch):
    """AddBackward0 hands one array to both of its inputs: each consumer on another stream must wait for it."""
    from actorgrad.devices.cuda import CudaStream

    waits = []
    wait_event = CudaStream.wait_event
    monkeypatch.setattr(CudaStream, "wait_event", lambda s, e: waits.append((s, e.stream)) or wait_event(s, e))
    dev = ag.device("cuda:0")
    produce, first, second = dev.new_stream(), dev.new_stream(), dev.new_stream()
    x = ag.ones(3, dtype=ag.float64, device=dev, requires_grad=True)
    written = dev.current_stream().record_event()
    with ag.stream(first):
        first.wait_event(written)  # new streams do not wait for the default one by themselves
        a = x.sin()
    with ag.stream(second):
        second.wait_event(written)
        b = x.cos()
    with ag.stream(produce):
        produce.wait_event(first.record_event())
        produce.wait_event(second.record_event())
        loss = ((a + b) * 3).sum()
    loss.backward()
    assert (first, produce) in waits and (second, produce) in waits
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * (np.cos(1.0) - np.sin(1.0)), rtol=1e-10, atol=1e-12)


def test_a_stream_block_stays_current_after_a_backward_inside_it():
    """A backward node's kernels queue with its stream current, then the stream current before is current
    again: CuPy's own `with stream:` would make the null stream current, under the block's forward ops."""
    dev = ag.device("cuda:0")
    s = dev.new_stream()
    x = ag.ones(3, dtype=ag.float64, device=dev, requires_grad=True)
    loss = (x * 2).sum()  # its nodes queue on the default stream, not the block's
    with ag.stream(s):
        loss.backward()
        assert cupy.cuda.get_current_stream().ptr == s.stream.ptr
        assert (x * 3).grad_fn.stream is s


def test_cupy_refuses_what_the_standin_refuses():
    """What CuPy 14.2 refuses where numpy does not, so that the stand-in (CI's CuPy) refuses it too: accumulate
    and reduce of ufuncs other than add and multiply, add.at into small integers with integer indexes, sort kinds
    other than stable, in-place sorts of views, and `operator.index` (CuPy's ndarray has no __index__)."""
    import operator

    x = cupy.arange(6.0).reshape(2, 3)
    with pytest.raises(NotImplementedError):
        cupy.maximum.accumulate(x, axis=1)
    with pytest.raises(NotImplementedError):
        cupy.logaddexp.reduce(x, axis=1)
    with pytest.raises(TypeError):
        cupy.add.at(cupy.zeros(3, np.int8), cupy.asarray([0, 0]), cupy.ones(2, np.int8))
    with pytest.raises(ValueError):
        cupy.sort(x, kind="quicksort")
    with pytest.raises(NotImplementedError):
        x.T.sort()
    with pytest.raises(TypeError):
        operator.index(cupy.asarray(2))
    assert cupy.add.accumulate(x, axis=1).shape == (2, 3)
