"""The extension surface on cuda:0 (custom Functions, hooks, saved-tensor hooks, nested passes): the tensors user
code gets and gives back are on the device of the gradients they stand for, and values and gradients equal the
CPU's. Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd.function import Function, once_differentiable
from actorgrad.autograd.graph import register_multi_grad_hook, saved_tensors_hooks

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

CUDA = ag.device("cuda:0")


def on_cuda(*leaves):
    return [t.detach().cuda().requires_grad_() for t in leaves]


def assert_same(got, expected):
    """`got` (on cuda:0) holds `expected`'s values (on the cpu)."""
    assert got.device is CUDA and isinstance(got._data, cupy.ndarray)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_a_function_returning_its_input_gives_a_tensor_on_the_inputs_device(random_leaves):
    (x,) = random_leaves(0, (3, 4))
    (xc,) = on_cuda(x)
    y = Identity.apply(xc)
    assert y.device is CUDA and y._data is xc._data and y.grad_fn is not None
    for t in (x, xc):
        (Identity.apply(t) * t).sum().backward()
    assert_same(xc.grad, x.grad)


class OnceSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


def test_once_differentiable_results_under_create_graph_stay_on_cuda(random_leaves):
    (x,) = random_leaves(1, (5,))
    (xc,) = on_cuda(x)

    def first_grad(t):
        return ag.autograd.grad((OnceSquare.apply(t) * t).sum(), t, create_graph=True)[0]

    got = first_grad(xc)
    assert_same(got, first_grad(x))
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_diff"):
        got.sum().backward()


def _double_tensor_hook(y, seen):
    y.register_hook(lambda g: seen.append(g.device) or g * 2)


def _double_async_tensor_hook(y, seen):
    async def hook(g):
        await trio.sleep(0)
        seen.append(g.device)
        return g * 2

    y.register_hook(hook)


def _double_node_prehook(y, seen):
    y.grad_fn.register_prehook(lambda grads: seen.extend(g.device for g in grads) or tuple(g * 2 for g in grads))


def _double_node_post_hook(y, seen):
    def hook(grad_inputs, grad_outputs):
        seen.extend(g.device for g in (*grad_inputs, *grad_outputs))
        return tuple(g * 2 for g in grad_inputs)

    y.grad_fn.register_hook(hook)


def _see_multi_grad_hook(y, seen):
    register_multi_grad_hook([y], lambda grads: seen.extend(g.device for g in grads))


@pytest.mark.parametrize("register", [_double_tensor_hook, _double_async_tensor_hook, _double_node_prehook,
                                      _double_node_post_hook, _see_multi_grad_hook])
def test_hooks_get_gradients_on_cuda(random_leaves, register):
    x, w = random_leaves(2, (3, 4), (3, 4))

    def grads(leaves):
        seen = []
        y = leaves[0] * leaves[1]
        register(y, seen)
        (y.tanh().sum()).backward()
        return seen, [t.grad for t in leaves]

    seen_cpu, expected = grads([x, w])
    seen, got = grads(on_cuda(x, w))
    assert seen == [CUDA] * len(seen_cpu) and seen
    for g, e in zip(got, expected):
        assert_same(g, e)


def _nested_backward_function(device):
    class NestedBackward(Function):
        """A backward running a plain backward pass of its own over a leaf of `device`."""

        inner = ag.tensor(np.arange(1.0, 4.0), dtype=ag.float64, device=device, requires_grad=True)

        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            (NestedBackward.inner * NestedBackward.inner).sum().backward()
            return g * 3

    return NestedBackward


def test_a_plain_nested_pass_inside_a_create_graph_pass_commits_on_cuda(random_leaves):
    (x,) = random_leaves(3, (3,))
    (xc,) = on_cuda(x)
    results = []
    for leaf, device in ((x, "cpu"), (xc, "cuda")):
        fn = _nested_backward_function(device)
        (fn.apply(leaf) * leaf).sum().backward(create_graph=True)
        results.append((leaf.grad, fn.inner.grad))
    (expected_x, expected_inner), (got_x, got_inner) = results
    assert_same(got_x, expected_x)
    assert_same(got_inner, expected_inner)


def test_identity_saved_tensor_hooks_give_numbers_to_cuda_kernels_as_scalars(random_leaves):
    (x,) = random_leaves(4, (2, 3))

    def grad(t):
        with saved_tensors_hooks(lambda s: s, lambda s: s):
            loss = (t * 2).exp().sum() / 3
        return ag.autograd.grad(loss, t)[0]

    (xc,) = on_cuda(x)
    assert_same(grad(xc), grad(x))


def test_saved_tensor_hooks_pack_a_cuda_mask_as_the_cpu_mask_is_packed(random_leaves):
    (x,) = random_leaves(5, (2, 5))

    def packed_and_grad(t):
        packed = []

        def pack(s):
            packed.append((s.device, s.dtype))
            return s

        with saved_tensors_hooks(pack, lambda s: s):
            loss = t.masked_fill(t > 0, 0.0).sum()
        return packed, ag.autograd.grad(loss, t)[0]

    expected_packed, expected = packed_and_grad(x)
    (xc,) = on_cuda(x)
    got_packed, got = packed_and_grad(xc)
    assert (ag.device("cpu"), ag.bool_) in expected_packed
    assert got_packed == [(CUDA, dtype) for _, dtype in expected_packed]
    assert_same(got, expected)


class GradientToHost(Function):
    @staticmethod
    def forward(ctx, x, w):
        return x + w

    @staticmethod
    def backward(ctx, g):
        return g, g.cpu()


def test_a_function_backward_returning_a_gradient_on_another_device_raises():
    x = ag.ones(3, dtype=ag.float64, device="cuda", requires_grad=True)
    w = ag.ones(3, dtype=ag.float64, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="GradientToHostBackward returned an invalid gradient at index 1 - "
                                           "expected device cuda:0 but got cpu"):
        GradientToHost.apply(x * 1, w).sum().backward()


def test_a_hook_returning_a_gradient_on_another_device_raises():
    x = ag.ones(3, dtype=ag.float64, device="cuda", requires_grad=True)
    y = x * x
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0], grad_inputs[1].cpu()))
    with pytest.raises(RuntimeError, match="invalid gradient at index 1 - expected device cuda:0 but got cpu"):
        y.sum().backward()
    z = x * 2
    z.register_hook(lambda g: g.cpu())
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device cuda:0 but got cpu"):
        z.sum().backward()


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_and_argmin_over_all_elements_on_cuda(random_leaves, op, keepdim):
    (x,) = random_leaves(6, (3, 4))
    expected = getattr(ag, op)(x, keepdim=keepdim)
    got = getattr(x.cuda(), op)(keepdim=keepdim)
    assert got.dtype == expected.dtype == ag.int64 and got.shape == expected.shape
    assert_same(got, expected)


class AsyncCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(0.001)
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


@pytest.mark.parametrize("side_stream", [False, True], ids=["current stream", "forward on a side stream"])
async def test_nodes_that_await_in_a_pass_crossing_to_the_cpu(side_stream, random_leaves):
    """An async hook and an async custom backward on cuda tensors in a pass that also runs on the cpu (so it uses
    events): they run on the event loop, and their gradients reach the cpu complete."""
    (x,) = random_leaves(31, (4,))

    async def doubled(g):
        await trio.sleep(0.001)
        return g * 2

    def loss(where):
        y = x.to(where) * 1.5
        y.register_hook(doubled)
        return (AsyncCube.apply(y).exp().to("cpu") * x).sum()

    (expected,) = await ag.grad(loss("cpu"), [x])
    stream = CUDA.new_stream() if side_stream else None
    with ag.stream(stream):
        out = loss("cuda:0")
    (got,) = await ag.grad(out, [x])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


class ScaledSum(Function):
    """sum(x * s) for a cuda x and a zero-dim cpu s: s's gradient comes back as a cuda scalar."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x)
        return (x * s).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ag.ones_like(x) * 2.0, (g * x).sum()


def test_a_functions_scalar_gradient_moves_to_its_inputs_device():
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, device="cuda", requires_grad=True)
    s = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    ScaledSum.apply(x, s).backward()
    assert s.grad.device is ag.device("cpu") and s.grad.item() == 3.0
