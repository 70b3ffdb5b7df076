"""Worker limits: heavy kernels overlap on worker threads, light ones stay on the event loop, and the
process-wide settings held while kernels overlap are restored afterwards."""

import os
import sys
import time

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.ops.record import Rule, record
from actorgrad.scheduler.workers import blas_threads


@pytest.fixture
def workers():
    before = ag.get_num_workers()
    yield ag.set_num_workers
    ag.set_num_workers(before)


def sleepy_branches(n, seen=None):
    """`n` independent heavy branches whose kernels sleep (releasing the GIL, as BLAS does)."""

    def slow(ops, g):
        if seen is not None:
            seen.append((blas_threads(), sys.getswitchinterval()))
        time.sleep(0.03)
        return g

    rule = Rule("SlowBackward0", ((), slow), cost=lambda data, params: 1e12)
    x = ag.tensor(np.ones(4), requires_grad=True)
    total = None
    for i in range(n):
        branch = record(rule, (x * float(i + 1))._data, (x * float(i + 1),)).sum()
        total = branch if total is None else total + branch
    return x, total


async def test_independent_heavy_branches_overlap_on_two_workers(workers):
    workers(2)
    x, loss = sleepy_branches(2)
    with ag.profile() as prof:
        await ag.backward(loss)
    slow = [e for e in prof.events if e.name == "SlowBackward0"]
    assert sorted(e.worker for e in slow) == [1, 2]
    first, second = sorted(slow, key=lambda e: e.start_ns)
    assert second.start_ns < first.end_ns, "the two kernels should have run at the same time"
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


async def test_one_worker_runs_everything_on_the_event_loop_in_turn(workers):
    workers(1)
    x, loss = sleepy_branches(2)
    with ag.profile() as prof:
        await ag.backward(loss)
    slow = sorted((e for e in prof.events if e.name == "SlowBackward0"), key=lambda e: e.start_ns)
    assert [e.worker for e in slow] == [0, 0]
    assert slow[1].start_ns >= slow[0].end_ns


async def test_light_nodes_never_leave_the_event_loop(workers):
    workers(2)
    x = ag.tensor(np.ones(8), requires_grad=True)
    with ag.profile() as prof:
        await ag.backward(sum(((x * float(i)).tanh() for i in range(6)), start=x).sum())
    assert {e.worker for e in prof.events} == {0}


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or blas_threads() < 2, reason="needs a multi-threaded BLAS")
async def test_blas_and_switch_interval_are_held_while_kernels_overlap_then_restored(workers):
    workers(2)
    blas_before, interval_before = blas_threads(), sys.getswitchinterval()
    seen = []
    _, loss = sleepy_branches(3, seen)
    await ag.backward(loss)
    assert len(seen) == 3
    assert all(threads == max(1, (os.cpu_count() or 1) // 2) for threads, _ in seen)
    assert all(interval <= 0.0002 for _, interval in seen)
    assert (blas_threads(), sys.getswitchinterval()) == (blas_before, interval_before)


def in_trio_recorder(seen, cost):
    def formula(ops, g):
        try:
            trio.lowlevel.current_task()
            seen.append("trio")
        except RuntimeError:
            seen.append("inline")
        return g

    return Rule("WhereBackward0", ((), formula), cost=lambda data, params: cost)


def test_sync_backward_runs_inline_unless_a_worker_may_be_used(workers):
    workers(2)
    seen = []
    x = ag.tensor(np.ones(3), requires_grad=True)
    record(in_trio_recorder(seen, 1.0), x._data * 1, (x,)).sum().backward()
    assert seen == ["inline"]  # light nodes only: no trio run is started
    record(in_trio_recorder(seen, 1e12), x._data * 1, (x,)).sum().backward()
    assert seen == ["inline", "trio"]  # a heavy node may go to a worker: the pass runs in trio
    workers(1)
    record(in_trio_recorder(seen, 1e12), x._data * 1, (x,)).sum().backward()
    assert seen == ["inline", "trio", "inline"]
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)


def test_nested_passes_started_by_hooks_on_workers_stage_every_sum(workers):
    workers(3)
    rule = Rule("SlowBackward0", ((), lambda ops, g: g), cost=lambda data, params: 1e12)  # heavy: on a worker
    n, branches, passes = 2_000_000, 4, 3  # large sums release the GIL while threads stage the same leaf
    x = ag.tensor(np.ones(n), requires_grad=True)
    p = ag.tensor(np.ones(branches), requires_grad=True)
    outs = []
    for _ in range(branches):
        h = record(rule, (p * 1.0)._data, (p * 1.0,))
        inner = x * 1.0

        def hook(g, inner=inner):
            for _ in range(passes):  # nested passes stage into the outer one from this worker thread
                inner.backward(ag.ones(n), retain_graph=True)

        h.register_hook(hook)
        outs.append(h.sum())
    sum(outs[1:], outs[0]).backward()
    np.testing.assert_array_equal(x.grad.numpy()[[0, -1]], [branches * passes] * 2)
