"""Priority: among ready actors on a device, the deeper reentrant depth runs first, then the later op."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.engine import _backward_task
from actorgrad.scheduler import reentrant_depth
from actorgrad.scheduler.dispatch import _run_chain
from actorgrad.scheduler.ready_queue import ReadyQueue


@pytest.fixture
def one_worker(num_workers):
    with num_workers(1):
        yield


def order(events, *names):
    seen = [e.name for e in events if e.name in names]
    return seen


async def test_later_op_runs_first_when_both_are_ready(one_worker):
    x = ag.tensor(np.array([0.3, 0.7]), requires_grad=True)
    y = x.exp()
    z = x.tanh()
    with ag.profile() as prof:
        await ag.backward((y * z).sum())
    assert order(prof.events, "ExpBackward0", "TanhBackward0") == ["TanhBackward0", "ExpBackward0"]


async def test_order_follows_sequence_nr_not_op_kind(one_worker):
    x = ag.tensor(np.array([0.3, 0.7]), requires_grad=True)
    z = x.tanh()
    y = x.exp()
    with ag.profile() as prof:
        await ag.backward((y * z).sum())
    assert order(prof.events, "ExpBackward0", "TanhBackward0") == ["ExpBackward0", "TanhBackward0"]


async def test_dispatch_order_is_descending_sequence_nr_among_ready_branches(one_worker):
    x = ag.tensor(np.ones(4), requires_grad=True)
    branches = [(x * float(i)).tanh() for i in range(1, 6)]
    total = branches[0]
    for b in branches[1:]:
        total = total + b
    with ag.profile() as prof:
        await ag.backward(total.sum())
    tanh_seqs = [e.sequence_nr for e in prof.events if e.name == "TanhBackward0"]
    assert tanh_seqs == sorted(tanh_seqs, reverse=True)
    assert len(tanh_seqs) == 5


def chain(x, n):
    h = x
    for _ in range(n):
        h = (h * 1.01).tanh()
    return h.sum()


async def test_deeper_pass_runs_before_a_shallower_one_on_the_same_device(one_worker):
    # The deep pass's graph is built first, so by sequence_nr alone the shallow pass would run first.
    deep_loss = chain(ag.tensor(np.ones(3), requires_grad=True), 20)
    shallow_loss = chain(ag.tensor(np.ones(3), requires_grad=True), 20)

    async def run_at_depth(loss, depth):
        reentrant_depth.set(depth)
        await ag.backward(loss)

    with ag.profile() as prof:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_at_depth, shallow_loss, 0)
            nursery.start_soon(run_at_depth, deep_loss, 1)
    depths = [e.depth for e in prof.events]
    assert sorted(set(depths)) == [0, 1]
    assert depths == sorted(depths, reverse=True), "every depth-1 node must run before any depth-0 node"


async def test_concurrent_passes_at_one_depth_share_one_queue_by_sequence_nr(one_worker):
    first = chain(ag.tensor(np.ones(3), requires_grad=True), 10)
    second = chain(ag.tensor(np.ones(3), requires_grad=True), 10)
    with ag.profile() as prof:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ag.backward, first)
            nursery.start_soon(ag.backward, second)
    events = [e for e in prof.events if e.name != "torch::autograd::GraphRoot"]
    tasks = [e.graph_task for e in events]
    blocks = [t for i, t in enumerate(tasks) if i == 0 or tasks[i - 1] != t]
    assert len(blocks) == 2, "the later graph's nodes all outrank the earlier one's, so the passes do not interleave"
    first_block_seqs = [e.sequence_nr for e in events
                        if e.graph_task == blocks[0] and e.name != "torch::autograd::AccumulateGrad"]
    assert min(first_block_seqs) > second.grad_fn.sequence_nr - 100 > 0
    assert max(first_block_seqs) == second.grad_fn.sequence_nr


def test_a_running_chain_gives_way_to_a_deeper_pass_whatever_its_sequence_nr():
    # A chain goes on with the node it just completed only while nothing in the queue outranks it; an entry of
    # a deeper (nested) pass outranks every node of a shallower one, even an older op's.
    nested = chain(ag.tensor(np.ones(3), requires_grad=True), 2)  # built first: lower sequence_nrs
    outer = chain(ag.tensor(np.ones(3), requires_grad=True), 5)
    outer_task = _backward_task(outer, None, None, False, None)
    token = reentrant_depth.set(1)
    try:
        nested_task = _backward_task(nested, None, None, False, None)
    finally:
        reentrant_depth.reset(token)
    queue = ReadyQueue()
    outer_task.queues = nested_task.queues = {ag.device("cpu"): queue}
    queue.push(nested_task, nested.grad_fn, [np.ones(())])
    left = outer_task.remaining

    assert _run_chain(outer_task, outer_task.root, [], ag.device("cpu"), queue, float("inf")) is None
    assert outer_task.remaining == left - 1, "only the root ran"
    assert [entry[3] for entry in sorted(queue.heap)] == [nested_task, outer_task]
    assert sorted(queue.heap)[1][4] is outer.grad_fn, "the outer pass's next node went back to the queue"
