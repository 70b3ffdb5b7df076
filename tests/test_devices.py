"""Devices: names and lookup, tensors placed on them, copies between them (ToCopyBackward0), PyTorch's
mixed-device error, and the async_cpu device's streams and events (record, wait device-side, await from trio)."""

import threading
import time

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.devices.events import WAIT_MODES, wait_async

ASYNC0 = "async_cpu:0"


def test_device_lookup_gives_one_object_per_device():
    cpu = ag.device("cpu")
    assert cpu is ag.device("cpu:0") is ag.device(cpu)
    a0 = ag.device(ASYNC0)
    assert a0 is ag.device("async_cpu", 0) is ag.device("async_cpu")
    assert a0 is not ag.device("async_cpu:1")
    assert (a0.type, a0.index, str(a0)) == ("async_cpu", 0, "async_cpu:0")
    assert repr(a0) == "device(type='async_cpu', index=0)"
    assert (cpu.type, cpu.index, str(cpu)) == ("cpu", None, "cpu")
    assert cpu.streams is None and a0.xp is np


def test_bad_device_names_are_refused():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, async_cpu device type at start of device "
                                           "string: tpu"):
        ag.device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        ag.device("cuda:x")
    with pytest.raises(TypeError, match="expects a string or a Device"):
        ag.device(3.5)
    with pytest.raises(RuntimeError, match="has no streams"):
        ag.device("cpu").new_stream()


@pytest.mark.parametrize("make", [
    lambda d: ag.zeros(2, 3, device=d), lambda d: ag.ones(4, device=d), lambda d: ag.randn(3, device=d),
    lambda d: ag.arange(5, device=d), lambda d: ag.full((2,), 1.5, device=d), lambda d: ag.eye(2, device=d),
    lambda d: ag.tensor([1.0, 2.0], device=d), lambda d: ag.rand(2, device=d),
])
def test_creation_functions_place_tensors(make):
    t = make(ASYNC0)
    assert t.device is ag.device(ASYNC0)
    assert make(None).device is ag.device("cpu")


def test_like_functions_follow_their_input_device():
    x = ag.ones(3, device=ASYNC0)
    assert ag.zeros_like(x).device is x.device
    assert ag.randn_like(x, device="cpu").device is ag.device("cpu")


def test_to_moves_values_and_records_a_copy_node():
    x = ag.tensor([1.0, -2.0, 3.0], dtype=ag.float64, requires_grad=True)
    y = x.to(ASYNC0)
    assert y.device is ag.device(ASYNC0) and y.grad_fn.name() == "ToCopyBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    assert "device='async_cpu:0'" in repr(y)
    assert y.to(ASYNC0) is y and x.to("cpu") is x
    back = y.cpu()
    assert back.device is ag.device("cpu") and back.grad_fn.name() == "ToCopyBackward0"
    both = x.to(ASYNC0, ag.float32)
    assert both.device is ag.device(ASYNC0) and both.dtype == ag.float32
    plain = ag.tensor([1, 2]).to(ASYNC0)  # an integer tensor: no graph
    assert plain.device is ag.device(ASYNC0) and plain.grad_fn is None
    assert x.detach().to(x.to(ASYNC0)).device is ag.device(ASYNC0)  # to(other): its device and dtype


def test_ops_on_two_devices_raise_pytorchs_error():
    x = ag.ones(3)
    y = ag.ones(3, device=ASYNC0)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cpu and async_cpu:0!"):
        x + y
    with pytest.raises(RuntimeError, match="found at least two devices, async_cpu:0 and cpu!"):
        y * x
    with pytest.raises(RuntimeError, match="async_cpu:0 and async_cpu:1"):
        y + ag.ones(3, device="async_cpu:1")


def test_a_zero_dim_cpu_tensor_meets_any_device():
    y = ag.ones(3, device=ASYNC0)
    for out in (ag.tensor(2.0) * y, y * ag.tensor(2.0), y * 2.0, 2.0 - y):
        assert out.device is y.device
    np.testing.assert_array_equal((ag.tensor(2.0) * y).numpy(), [2.0, 2.0, 2.0])


def test_cuda_without_a_gpu_fails_clearly():
    try:
        import cupy

        if cupy.cuda.is_available():
            pytest.skip("a CUDA device is present")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        ag.ones(2).cuda()


# -- streams and events ---------------------------------------------------------------------------------------
def test_a_stream_runs_its_kernels_in_order():
    s = ag.device(ASYNC0).new_stream(delay_s=0.001)
    seen = []
    for i in range(20):
        s.launch(lambda i=i: seen.append(i))
    s.synchronize()
    assert seen == list(range(20))


def test_an_event_completes_when_its_stream_gets_there():
    s = ag.device(ASYNC0).new_stream()
    gate = threading.Event()
    s.launch(gate.wait)
    event = s.record_event()
    assert not event.query()
    gate.set()
    event.synchronize()
    assert event.query()


def test_wait_event_holds_another_stream_device_side():
    dev = ag.device(ASYNC0)
    producer, consumer = dev.new_stream(delay_s=0.05), dev.new_stream()
    box = np.zeros(1)
    producer.launch(lambda: box.fill(7.0))
    consumer.wait_event(producer.record_event())
    seen = []
    consumer.launch(lambda: seen.append(box[0]))
    consumer.synchronize()
    assert seen == [7.0]


def test_without_wait_event_the_consumer_reads_early():
    dev = ag.device(ASYNC0)
    producer, consumer = dev.new_stream(delay_s=0.05), dev.new_stream()
    box = np.zeros(1)
    producer.launch(lambda: box.fill(7.0))
    seen = []
    consumer.launch(lambda: seen.append(box[0]))
    consumer.synchronize()
    producer.synchronize()
    assert seen == [0.0]


@pytest.mark.parametrize("mode", WAIT_MODES)
async def test_awaiting_an_event_leaves_the_loop_free(mode):
    s = ag.device(ASYNC0).new_stream()
    s.launch(lambda: time.sleep(0.05))
    event = s.record_event()
    ticks = 0

    async def tick():
        nonlocal ticks
        while not event.query():
            ticks += 1
            await trio.sleep(0.002)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        await wait_async(event, mode)
    assert event.query()
    assert ticks >= 5  # the loop kept running other tasks while the event was awaited


async def test_awaiting_an_event_does_not_spin_a_core():
    s = ag.device(ASYNC0).new_stream()
    s.launch(lambda: time.sleep(0.1))
    event = s.record_event()
    cpu, wall = time.process_time(), time.perf_counter()
    await wait_async(event)
    assert (time.process_time() - cpu) < 0.3 * (time.perf_counter() - wall)


async def test_an_unknown_wait_mode_is_refused():
    s = ag.device(ASYNC0).new_stream()
    s.launch(lambda: time.sleep(0.01))
    with pytest.raises(ValueError, match="unknown event wait mode"):
        await wait_async(s.record_event(), "spin")


def test_stream_context_sets_the_current_stream():
    dev = ag.device(ASYNC0)
    default = dev.current_stream()
    s = dev.new_stream()
    with ag.stream(s):
        assert dev.current_stream() is s
    assert dev.current_stream() is default


def test_outputs_without_gradient_stay_on_their_inputs_device():
    y = ag.tensor([1.0, -2.0, 3.0], device=ASYNC0)
    for out in (y > 0, y == y, ag.isnan(y), ~(y > 0), y.argmax(), y.max(0).indices):
        assert out.device is y.device
    with pytest.raises(RuntimeError, match="found at least two devices"):
        ag.lt(y, ag.ones(3))
    dropped = ag.nn.functional.dropout(y.requires_grad_(), 0.5)
    assert dropped.device is y.device


def test_in_place_ops_keep_the_device():
    y = ag.ones(3, device=ASYNC0, requires_grad=True) * 2.0
    y.add_(1.0)
    y[0] = 5.0
    assert y.device is ag.device(ASYNC0)
    assert y.grad_fn.next_functions[0][0] is not None


def test_a_module_moves_to_a_device_and_trains_there():
    model = ag.nn.Linear(3, 2).double()
    x = ag.randn(4, 3, dtype=ag.float64)
    expected = model(x).sum()
    model.to(ASYNC0)
    assert all(p.device is ag.device(ASYNC0) for p in model.parameters())
    out = model(x.to(ASYNC0)).sum()
    assert out.item() == pytest.approx(expected.item(), rel=1e-12)
    out.backward()
    assert all(p.grad.device is ag.device(ASYNC0) for p in model.parameters())
    assert ag.nn.Parameter(ag.ones(2, device=ASYNC0)).device is ag.device(ASYNC0)
    model.cpu()
    assert all(p.device is ag.device("cpu") and p.grad.device is ag.device("cpu") for p in model.parameters())


def test_cupy_is_imported_only_when_a_cuda_device_is_used():
    import subprocess
    import sys

    code = ("import sys, actorgrad as ag; x = ag.ones(2, device='async_cpu:0', requires_grad=True); "
            "(x * 2).sum().backward(); print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_a_gradient_read_on_another_stream_lives_until_the_pass_has_synchronized(monkeypatch):
    from actorgrad.scheduler import dispatch

    seen = []
    synchronize = dispatch.synchronize_streams

    async def watched(task):
        seen.append(len(task.crossed))
        await synchronize(task)
        seen.append(len(task.crossed))

    monkeypatch.setattr(dispatch, "synchronize_streams", watched)
    dev = ag.device(ASYNC0)
    x = ag.tensor(np.arange(4.0), device=ASYNC0, requires_grad=True)
    with ag.stream(dev.new_stream()):  # the forward (so the backward) on a stream of its own
        y = (x * 2).exp()
    await ag.backward(y.sum())  # its root on the current stream: the gradient crosses to the forward's
    assert seen[0] > 0 and seen[1] == 0  # held while the streams still ran, let go after the wait
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * np.arange(4.0)))
    seen.clear()
    await ag.backward((x * 3).sum())  # one stream throughout: nothing crosses
    assert seen == [0, 0]


async def test_stream_blocks_of_two_tasks_may_close_in_any_order(interleaved_stream_blocks):
    """The current stream is one per thread (as CUDA's): blocks of two tasks that interleave leave it to the
    latest block still open, and to the default stream once both have closed."""
    dev = ag.device(ASYNC0)
    default = dev.current_stream()
    first, second = dev.new_stream(), dev.new_stream()

    def check():
        assert dev.current_stream() is second  # the other task's block closed: this one's stays current

    await interleaved_stream_blocks(first, second, check)
    assert dev.current_stream() is default


def test_the_current_stream_is_one_per_thread():
    """A block open on one thread leaves the streams other threads record and queue on alone, as CUDA's."""
    import threading

    dev = ag.device(ASYNC0)
    default, s = dev.current_stream(), dev.new_stream()
    inside, done = threading.Event(), threading.Event()

    def other_thread():
        with ag.stream(s):
            inside.set()
            done.wait(5)

    thread = threading.Thread(target=other_thread)
    thread.start()
    inside.wait(5)
    try:
        assert dev.current_stream() is default
        assert (ag.ones(2, device=dev, requires_grad=True) * 2).grad_fn.stream is default
    finally:
        done.set()
        thread.join()
