"""Fixes from a randomized stress review of the engine's guarantees (values, concurrency, atomicity, selective
execution)."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.devices.async_cpu import AsyncEvent


def reshaped_in_place_between_consumers():
    """x's gradient reaches y's node from three consumers: two made before `y.unsqueeze_(0)` under no_grad (shape
    (3,)) and, last in sender order, one made after it (shape (1, 3), which broadcasts larger)."""
    x = ag.tensor(np.full(3, 0.5), requires_grad=True)
    y = x * 2.0
    first, second = y * 3.0, y * 5.0
    with ag.no_grad():
        y.unsqueeze_(0)
    third = y + ag.tensor(np.ones((2, 3)))
    return x, first.sum() + second.sum() + third.sum()


def test_a_mailbox_sums_a_later_message_of_a_larger_broadcast_shape():
    # d/dy = 3 + 5 + 2 (y's row is broadcast over two rows), times dy/dx = 2; PyTorch gives 20 as well.
    x, loss = reshaped_in_place_between_consumers()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [20.0, 20.0, 20.0])


async def test_a_mailbox_sums_a_later_message_of_a_larger_broadcast_shape_in_an_awaited_pass():
    x, loss = reshaped_in_place_between_consumers()
    await ag.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), [20.0, 20.0, 20.0])


A0, A1 = "async_cpu:0", "async_cpu:1"


class InjectedFault(Exception):
    pass


class Faulty(ag.autograd.Function):
    """x * 1.25, whose backward raises while `armed[0]`."""

    @staticmethod
    def forward(ctx, x, armed):
        ctx.armed = armed
        return ag.tensor(x._data * 1.25, device=x.device)

    @staticmethod
    def backward(ctx, g):
        if ctx.armed[0]:
            raise InjectedFault("injected")
        return g * 1.25, None


async def test_a_stream_kernel_that_fails_as_the_pass_ends_fails_the_pass(monkeypatch):
    """A node on a stream runs after its pass has moved on (its outputs are arrays the kernel fills), so its error
    reaches the event loop later. Here every event query waits for its event, as when the stream has finished
    by the time the host looks: the pass ends with no checkpoint after the failure, yet must raise it and commit
    nothing (it used to return as if done, with the failed node's unfilled zeros in x.grad)."""

    def query_once_done(event):
        event.synchronize()
        return True

    monkeypatch.setattr(AsyncEvent, "query", query_once_done)
    x = ag.tensor(np.ones(3), requires_grad=True, device=A0)
    loss = Faulty.apply(x, [True]).sum()
    with pytest.raises(InjectedFault) as caught:
        await ag.backward(loss)
    assert any("raised by FaultyBackward" in note for note in caught.value.__notes__)
    assert x.grad is None
    await ag.backward(Faulty.apply(x, [False]).sum())  # and the next pass works
    np.testing.assert_array_equal(x.grad.numpy(), [1.25, 1.25, 1.25])


def _in_place(v, w, m):
    t = v * 1.0
    t[1] = w[2]
    t.mul_(w.sigmoid())
    return t


# Steps of a program: elementwise, a product, a reduction, views, in-place writes (through CopySlices).
STEPS = (
    lambda v, w, m: v.tanh(),
    lambda v, w, m: v * w,
    lambda v, w, m: (v @ m) * 0.5,
    lambda v, w, m: v - v.mean(1, keepdim=True),
    lambda v, w, m: v.t().reshape(3, 4),
    lambda v, w, m: v[:, [1, 0, 3, 2]] + w,
    _in_place,
)


def random_program(rng, n_values, n_steps):
    """Per step: which step, its two operands (among the values so far), its device and its stream's index."""
    program = []
    for k in range(n_steps):
        n = n_values + k
        program.append((int(rng.integers(len(STEPS))), int(rng.integers(n)), int(rng.integers(n)),
                        ("cpu", A0, A1)[rng.integers(3)], int(rng.integers(3))))
    return program


def run_program(program, leaves, m, armed, streams=None):
    """The program's loss; with `streams` (device -> streams to pick from), each step on its device and stream,
    else every step on the cpu."""
    values = list(leaves)
    for step, i, j, device, stream in program:
        device = device if streams else "cpu"
        v, w, mm = (t if str(t.device) == device else t.to(device) for t in (values[i], values[j], m))
        with ag.stream(streams[device][stream] if streams and device != "cpu" else None):
            values.append(STEPS[step](v, w, mm))
    return Faulty.apply(values[-1], armed).to("cpu").sum() + values[-2].to("cpu").tanh().sum()


async def test_random_passes_on_devices_and_streams_match_the_cpu_and_stopped_ones_change_no_grad(num_workers):
    """Random programs with steps on the cpu and two async_cpu devices (default, fresh and delayed streams) run
    all at once as awaited backward and grad() passes and sync backward passes on threads, over shared leaves;
    some raise in a custom backward, some are cancelled by a hook mid-pass. Each completed pass gives what its
    program gives on the cpu run alone (to 1e-12), the others change no `.grad`, and fresh passes then work."""
    rng = np.random.default_rng(2026)
    streams = {d: [None, ag.device(d).new_stream(), ag.device(d).new_stream(delay_s=0.0005)] for d in (A0, A1)}
    leaves = [ag.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True, device=d) for d in ("cpu", "cpu", A0)]
    m = ag.tensor(rng.uniform(-1, 1, (4, 4)), requires_grad=True)
    inputs = [*leaves, m]
    leaves[0].grad = ag.tensor(rng.standard_normal((3, 4)))
    before = [None if t.grad is None else t.grad.numpy().copy() for t in inputs]

    async def reference(program):
        """The program's gradients with every step on the cpu, the pass run alone."""
        copies = [ag.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in inputs]
        loss = run_program(program, copies[:-1], copies[-1], [False])
        return [None if g is None else g.numpy() for g in await ag.grad(loss, copies, allow_unused=True)]

    passes = []
    for k in range(14):
        program = random_program(rng, len(leaves), int(rng.integers(2, 9)))
        plan = ("complete", "fault", "cancel")[k % 3]
        mode = ("backward", "grad", "thread")[k // 3 % 3] if plan != "cancel" else ("backward", "grad")[k % 2]
        armed = [False]
        passes.append({"program": program, "plan": plan, "mode": mode, "armed": armed, "scope": trio.CancelScope(),
                       "loss": run_program(program, leaves, m, armed, streams), "ref": await reference(program)})

    async def run(p):
        p["armed"][0] = p["plan"] == "fault"
        if p["plan"] == "cancel":  # cancelled from inside the pass, by a hook on its loss's first node
            p["loss"].register_hook(lambda g: p["scope"].cancel())
        with p["scope"]:
            try:
                if p["mode"] == "backward":
                    await ag.backward(p["loss"])
                elif p["mode"] == "grad":
                    p["result"] = await ag.grad(p["loss"], inputs, allow_unused=True)
                else:
                    await trio.to_thread.run_sync(p["loss"].backward)
                p["outcome"] = "completed"
            except InjectedFault as error:
                p["outcome"], p["error"] = "failed", error
        p.setdefault("outcome", "cancelled")

    with num_workers(2), trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for p in passes:
                nursery.start_soon(run, p)

    assert {p["outcome"] for p in passes if p["plan"] == "fault"} == {"failed"}
    assert all("FaultyBackward" in " ".join(p["error"].__notes__) for p in passes if p["plan"] == "fault")
    assert {p["outcome"] for p in passes if p["plan"] == "complete"} == {"completed"}
    for p in passes:
        if p["outcome"] == "completed" and p["mode"] == "grad":
            for got, want in zip(p["result"], p["ref"]):
                assert (got is None) == (want is None)
                if want is not None:
                    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-12, atol=1e-300)
    for k, t in enumerate(inputs):
        parts = [p["ref"][k] for p in passes
                 if p["outcome"] == "completed" and p["mode"] != "grad" and p["ref"][k] is not None]
        if before[k] is not None:
            parts.append(before[k])
        if not parts:
            assert t.grad is None
            continue
        scale = np.sum(np.abs(parts), axis=0)
        assert (np.abs(t.grad.detach().cpu().numpy() - np.sum(parts, axis=0)) <= 1e-12 * scale).all(), k

    # The stopped passes left nothing behind: fresh passes over the same leaves still give their cpu values.
    for t in inputs:
        t.grad = None
    fresh = [random_program(rng, len(leaves), 5) for _ in range(3)]
    async with trio.open_nursery() as nursery:
        for program in fresh:
            nursery.start_soon(ag.backward, run_program(program, leaves, m, [False], streams))
    for k, t in enumerate(inputs):
        parts = [r[k] for r in [await reference(program) for program in fresh] if r[k] is not None]
        np.testing.assert_allclose(t.grad.detach().cpu().numpy(), np.sum(parts, axis=0), rtol=1e-12)
