"""Backward passes that cross devices (the cpu and async_cpu devices, whose streams are worker threads): values
and gradients equal the single-device pass, gradients cross in both directions, branches on two devices overlap,
and the event waits matter (with them switched off, a consumer reads a gradient before it is written)."""

import json
import time

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.ops.record import Rule, record
from actorgrad.profiler.chrome import chrome_trace
from actorgrad.scheduler.streams import waits_disabled

A0, A1 = "async_cpu:0", "async_cpu:1"


def chain_crossing_in_the_middle(x, w, d):
    h = (x @ w).tanh()  # cpu
    h = (h.to(d) * 2.0).sigmoid() + 1  # the middle of the chain on d
    return ((h.to("cpu") * x.sum()) ** 2).sum()


def branches_on_two_devices(x, w, d0, d1):
    a = (x.to(d0) @ w.to(d0)).tanh().sum(1)
    b = (x.to(d1) * 3.0).exp().mean(1)
    return (a.to("cpu") * b.to("cpu")).sum() + x.sum()  # x's gradient sums messages from three devices


def leaf_on_the_device(x, w, d):
    wd = w.detach().to(d).requires_grad_()
    y = (x.to(d) @ wd).relu().to("cpu")
    return (y * y).sum(), wd


def gradients(loss, inputs):
    return [g.numpy() for g in ag.autograd.grad(loss, inputs, retain_graph=True)]


@pytest.mark.parametrize("d", [A0, "cpu"])
def test_a_crossing_in_the_middle_of_a_chain_matches_the_cpu(d, random_leaves):
    x, w = random_leaves(0, (3, 4), (4, 4))
    loss = chain_crossing_in_the_middle(x, w, d)
    expected_loss = chain_crossing_in_the_middle(x, w, "cpu")
    assert loss.item() == pytest.approx(expected_loss.item(), rel=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), gradients(expected_loss, [x])[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gradients(expected_loss, [w])[0], rtol=1e-12)


def test_branches_on_two_devices_match_the_cpu(random_leaves):
    x, w = random_leaves(1, (5, 3), (3, 2))
    loss = branches_on_two_devices(x, w, A0, A1)
    expected = branches_on_two_devices(x, w, "cpu", "cpu")
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12)
    loss.backward()
    for leaf, g in zip((x, w), gradients(expected, [x, w])):
        np.testing.assert_allclose(leaf.grad.numpy(), g, rtol=1e-12)


def test_gradients_cross_in_both_directions_to_a_leaf_on_the_device(random_leaves):
    x, w = random_leaves(2, (4, 3), (3, 5))
    loss, wd = leaf_on_the_device(x, w, A0)
    expected, w_cpu = leaf_on_the_device(x, w, "cpu")
    loss.backward()
    assert wd.grad.device is ag.device(A0) and x.grad.device is ag.device("cpu")
    gx, gw = gradients(expected, [x, w_cpu])
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12)
    np.testing.assert_allclose(wd.grad.numpy(), gw, rtol=1e-12)


async def test_grad_returns_gradients_on_their_inputs_devices(random_leaves):
    (x,) = random_leaves(3, (6,), device=A0)
    y = x.to("cpu").sin().to(A1).exp().to(A0)
    (g,) = await ag.grad(y.sum(), x)
    assert g.device is ag.device(A0)
    xs = x.detach().numpy()
    np.testing.assert_allclose(g.numpy(), np.exp(np.sin(xs)) * np.cos(xs), rtol=1e-12)


async def test_the_device_nodes_run_on_their_devices_and_accumulate_across_passes(random_leaves):
    (x,) = random_leaves(4, (3,))
    for _ in range(2):
        await ag.backward((x.to(A0) * 2.0).sum())
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])


@pytest.fixture
def slow_streams():
    """A fresh stream with an injected delay as the current stream of each async device."""
    streams = [ag.device(A0).new_stream(delay_s=0.03), ag.device(A1).new_stream(delay_s=0.03)]
    with ag.stream(streams[0]), ag.stream(streams[1]):
        yield streams


def intervals(prof, device):
    return [(e.start_ns, e.end_ns) for e in prof.events if e.device == device]


async def test_branches_on_two_devices_overlap(slow_streams, random_leaves):
    x, w = random_leaves(5, (4, 3), (3, 3))
    loss = branches_on_two_devices(x, w, A0, A1)
    with ag.profile() as prof:
        await ag.backward(loss)
    on0, on1 = intervals(prof, A0), intervals(prof, A1)
    assert len(on0) >= 3 and len(on1) >= 3
    assert any(s0 < e1 and s1 < e0 for s0, e0 in on0 for s1, e1 in on1)
    busy = sum(e - s for s, e in on0 + on1)
    span = max(e for _, e in on0 + on1) - min(s for s, _ in on0 + on1)
    assert span < 0.8 * busy  # most of the work ran side by side


async def test_heavy_host_nodes_of_a_pass_through_a_device_overlap_on_workers(num_workers, random_leaves):
    # The cpu branches' kernels (each sleeps, releasing the GIL as BLAS does) go to worker threads even though
    # the pass also runs on a streamed device; each still waits for the gradient the device sends it.
    def slow(ops, g):
        time.sleep(0.03)
        return g

    rule = Rule("SlowBackward0", ((), slow), cost=lambda data, params: 1e12)
    (x,) = random_leaves(7, (3,))
    from_device = (x.to(A0) * 2.0).to("cpu")
    loss = sum(record(rule, (from_device * k)._data, (from_device * k,)).sum() for k in (1.0, 2.0))
    with num_workers(2), ag.profile() as prof:
        await ag.backward(loss)
    slow_events = sorted((e for e in prof.events if e.name == "SlowBackward0"), key=lambda e: e.start_ns)
    assert sorted(e.worker for e in slow_events) == [1, 2]
    assert slow_events[1].start_ns < slow_events[0].end_ns, "the two kernels should have run at the same time"
    np.testing.assert_allclose(x.grad.numpy(), 6.0)


async def test_the_host_waits_for_a_gradient_from_a_stream(slow_streams, random_leaves):
    (x0,) = random_leaves(6, (3,))
    x = x0 * 2.0  # a cpu node that computes with the gradient the device sends
    loss = ((x.to(A0) * 3.0).to("cpu")).sum()
    with ag.profile() as prof:
        await ag.backward(loss)
    np.testing.assert_array_equal(x0.grad.numpy(), [6.0, 6.0, 6.0])
    assert any(w.device == "cpu" and w.what == "event of async_cpu:0" for w in prof.waits)


async def test_without_the_wait_the_host_reads_an_unwritten_gradient(slow_streams, random_leaves):
    (x0,) = random_leaves(6, (3,))
    x = x0 * 2.0
    loss = ((x.to(A0) * 3.0).to("cpu")).sum()
    with waits_disabled():
        await ag.backward(loss)
    assert not np.allclose(x0.grad.numpy(), 6.0)  # read before the stream wrote it: still the zeros allocated


async def test_without_the_wait_another_stream_reads_an_unwritten_gradient(slow_streams, random_leaves):
    (x0,) = random_leaves(7, (3,))
    loss = ((x0.to(A1) * 2.0).to(A0) * 3.0).sum()  # async_cpu:0 -> async_cpu:1 is a device-side wait
    with waits_disabled():
        await ag.backward(loss)
    assert not np.allclose(x0.grad.numpy(), 6.0)
    x0.grad = None
    with ag.profile() as prof:
        await ag.backward(((x0.to(A1) * 2.0).to(A0) * 3.0).sum())
    np.testing.assert_array_equal(x0.grad.numpy(), [6.0, 6.0, 6.0])
    assert any(w.device == A1 for w in prof.waits)  # the stream of async_cpu:1 waited, not the host


async def test_the_trace_shows_waits_and_cross_device_arrows(slow_streams, tmp_path, random_leaves):
    x, w = random_leaves(8, (4, 3), (3, 3))
    with ag.profile() as prof:
        await ag.backward(branches_on_two_devices(x, w, A0, A1))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("cat") == "wait" for e in events)
    assert any(e.get("ph") == "s" for e in events) and any(e.get("ph") == "f" for e in events)
    assert chrome_trace(prof)["traceEvents"] == events


async def test_an_error_in_a_kernel_reaches_the_caller(random_leaves):
    (x,) = random_leaves(9, (3,))
    y = x.to(A0) * 2.0

    def broken(g):
        raise ValueError("hook failed on the stream")

    y.register_hook(broken)
    with pytest.raises(ValueError, match="hook failed on the stream"):
        await ag.backward(y.sum())
    assert x.grad is None


def test_a_sync_backward_through_a_device_runs_its_own_trio_loop(random_leaves):
    x, w = random_leaves(10, (2, 3), (3, 3))
    loss = chain_crossing_in_the_middle(x, w, A1)
    expected = gradients(chain_crossing_in_the_middle(x, w, "cpu"), [x, w])
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), expected[1], rtol=1e-12)


async def test_concurrent_passes_through_devices_match_sequential(concurrent_matches_sequential, random_leaves):
    (x,) = random_leaves(11, (4,))
    losses = [((x.to(A0) * float(k)).to("cpu").sin() * x).sum() for k in range(1, 5)]
    await concurrent_matches_sequential(losses, x)


def test_create_graph_through_a_device_gives_second_derivatives(random_leaves):
    (x,) = random_leaves(12, (3,))
    y = (x.to(A0) ** 3).sum()
    (g,) = ag.autograd.grad(y, x, create_graph=True)
    assert g.device is ag.device("cpu")
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy(), rtol=1e-12)


async def test_kernels_run_off_the_event_loop(slow_streams, random_leaves):
    (x,) = random_leaves(13, (3,))
    ticks = 0
    done = False

    async def tick():
        nonlocal ticks
        while not done:
            ticks += 1
            await trio.sleep(0.005)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        await ag.backward(((x.to(A0) * 2.0).exp() * 3.0).sum().to("cpu"))
        done = True
    assert ticks >= 5


async def test_nodes_queue_on_the_stream_their_forward_ran_on(random_leaves):
    dev = ag.device(A0)
    slow, fast = dev.new_stream(delay_s=0.03), dev.new_stream()
    (x0,) = random_leaves(14, (3,))
    x = x0.to(A0)
    with ag.stream(slow):
        y = x * 2.0
    assert y.grad_fn.stream is slow
    with ag.stream(fast):
        loss = (y * 3.0).sum()
        with waits_disabled():
            await ag.backward(loss, retain_graph=True)
        assert not np.allclose(x0.grad.numpy(), 6.0)  # the fast stream read the slow one's gradient too early
        x0.grad = None
        with ag.profile() as prof:
            await ag.backward(loss)
    np.testing.assert_array_equal(x0.grad.numpy(), [6.0, 6.0, 6.0])
    assert any(w.device == A0 for w in prof.waits)  # a device-side wait between two streams of one device


def test_the_device_copy_passes_gradcheck_and_gradgradcheck(random_leaves):
    (x,) = random_leaves(15, (2, 3))

    def f(t):
        return ((t.to(A0) ** 2).to(A1).sin() * t.to(A1)).to("cpu")

    assert ag.autograd.gradcheck(f, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    assert ag.autograd.gradgradcheck(f, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)


async def test_a_recorded_backward_on_a_device_keeps_saved_outputs_on_it(random_leaves):
    """create_graph through a node on async_cpu: its saved output comes back as a tensor on that device."""
    (x,) = random_leaves(10, (3,))
    (g,) = await ag.grad(x.to(A0).tanh().sum(), x, create_graph=True)
    (h,) = await ag.grad(g.sum(), x)
    t = np.tanh(x.detach().numpy())
    np.testing.assert_allclose(h.numpy(), -2 * t * (1 - t * t), rtol=1e-12)


class AsyncSquare(ag.autograd.Function):
    """x * x with a backward that awaits (as one fetching something over the network would)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(0.001)
        (x,) = ctx.saved_tensors
        return 2 * x * g


async def test_nodes_that_await_run_on_the_event_loop_in_a_pass_through_a_device(watchdog, random_leaves):
    """An async hook or an async custom backward on a streamed device's tensor: not queued on a stream (whose
    thread has no event loop to await on), but run on the loop after the events of their gradients."""
    (x,) = random_leaves(16, (3,))
    seen = []

    async def doubled(g):
        await trio.sleep(0.001)
        seen.append(g.device)
        return g * 2

    y = x.to(A0) * 1.5
    y.register_hook(doubled)
    with watchdog(10, "a pass with an async hook on async_cpu"):
        await ag.backward(y.exp().to("cpu").sum())
    assert seen == [ag.device(A0)]
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(1.5 * x.detach().numpy()), rtol=1e-12)
    x.grad = None
    with watchdog(10, "a pass with an async custom backward on async_cpu"):
        await ag.backward((AsyncSquare.apply(x.to(A0) * 1.0) * 3.0).to("cpu").sum())
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy(), rtol=1e-12)


def test_a_sync_backward_nested_in_a_pass_through_a_device_sums_its_mailboxes(random_leaves):
    """checkpoint recomputes and runs a nested sync pass, inline: several gradients reach one slot there, and
    they are summed (a pass that uses streams would hand them on unsummed, for its consumer to add)."""
    from actorgrad.utils.checkpoint import checkpoint

    x0, w0 = random_leaves(17, (4,), (4,))

    def grads(where):
        x, w = (t.detach().to(where).requires_grad_() for t in (x0, w0))
        checkpoint(lambda a: a * a * w + a.sin() * w, x, use_reentrant=True).sum().backward()
        return [x.grad.numpy(), w.grad.numpy()]

    for got, want in zip(grads(A0), grads("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.timeout(30)
async def test_a_hook_on_a_stream_may_run_a_sync_backward(random_leaves):
    """The hook runs in its node's kernel on the stream's thread: its backward is nested in the pass (run there
    and then), not a pass of its own, which would queue kernels behind the very kernel waiting for them."""
    x, other = random_leaves(18, (2, 3), (2, 3))
    o2 = (other.to(A0) * other.to(A0)).sum()
    seen = []

    def hook(g):
        seen.append(ag.autograd.grad(o2, other, retain_graph=True)[0].numpy())

    h = x.to(A0).exp()
    h.register_hook(hook)
    await ag.backward(h.sum())
    np.testing.assert_allclose(seen[0], 2 * other.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-12)


async def test_a_pass_cancelled_while_its_kernels_are_queued_commits_nothing(random_leaves):
    """Its kernels are all queued at once: the cancel arrives while the pass waits for the stream. The kernels
    not yet run are skipped, those running finish, and no leaf gets a gradient."""
    (x,) = random_leaves(19, (3,))
    ran = []
    with ag.stream(ag.device(A0).new_stream(delay_s=0.005)):
        h = x.to(A0)
        for _ in range(40):
            h = h * 1.0
            h.register_hook(lambda g: ran.append(1))
    with trio.move_on_after(0.03) as scope:
        await ag.backward(h.sum())
    assert scope.cancelled_caught
    assert x.grad is None and len(ran) < 40
