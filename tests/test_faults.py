"""Faults during a stress run: passes cancelled at random deadlines (some while their kernels run on worker
threads) and exceptions injected into random nodes (Functions, hooks, heavy kernels, shared nodes on their k-th
call). Each pass must either complete fully or change no `.grad`; no task or thread may outlive the calls; and a
later pass over the retained graphs must give the right answer."""

import functools
import threading
import time

import numpy as np
import pytest
import trio

import actorgrad as ag

PLANS = ("complete", "deadline", "fault", "cancel_in_kernel")


class InjectedFault(Exception):
    pass


def raise_fault(where):
    def action():
        raise InjectedFault(where)

    return action


def live_tasks() -> int:
    """Every task of this trio run, system tasks included."""
    count, stack = 0, [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


class Pass:
    """One backward or grad() call of the run, with what it was planned to meet and what it met."""

    def __init__(self, graphs, rng, mode):
        first_trap = len(graphs.traps)
        self.loss, private = graphs.loss(n_private=int(rng.integers(1, 3)), n_steps=int(rng.integers(2, 8)))
        self.traps = graphs.traps[first_trap:]
        self.heavy_traps = [t for t in self.traps if t.heavy]
        self.inputs = graphs.shared + private
        self.mode = mode
        self.plan = "complete"
        self.deadline = np.inf
        self.outcome = None
        self.result = None
        self.cancelled_in_kernel = False

    async def run(self):
        with trio.CancelScope(deadline=trio.current_time() + self.deadline) as scope:
            self.scope = scope
            try:
                if self.mode == "backward":
                    await ag.backward(self.loss, retain_graph=True)
                else:
                    self.result = await ag.grad(self.loss, self.inputs, retain_graph=True, allow_unused=True)
                self.outcome = "completed"
            except InjectedFault:
                self.outcome = "failed"
        if scope.cancelled_caught:
            self.outcome = "cancelled"

    def run_sync(self):
        try:
            if self.mode == "backward":
                self.loss.backward(retain_graph=True)
            else:
                self.result = ag.autograd.grad(self.loss, self.inputs, retain_graph=True, allow_unused=True)
            self.outcome = "completed"
        except InjectedFault:
            self.outcome = "failed"


def plan_faults(passes, shared_traps, rng, token):
    """Arm the traps: random deadlines, a fault in one node of some passes, cancellations from inside a heavy
    kernel of others, and a fault in a shared node on a random call (whichever pass makes it)."""
    for p in passes:
        p.plan = PLANS[rng.integers(len(PLANS))]
        if p.plan == "deadline":
            p.deadline = rng.uniform(0, 0.05)
        elif p.plan == "fault" and p.traps:
            p.traps[rng.integers(len(p.traps))].arm(raise_fault("a pass's own node"))
        elif p.plan == "cancel_in_kernel" and p.heavy_traps:
            p.heavy_traps[rng.integers(len(p.heavy_traps))].arm(cancel_in_kernel(p, token))
        else:
            p.plan = "complete"
    for trap in shared_traps:
        if rng.random() < 0.5:
            trap.arm(raise_fault("a shared node"), at=int(rng.integers(1, len(passes))))


def cancel_in_kernel(p, token):
    """Cancel the pass from inside one of its kernels, which then goes on working for 2 ms."""

    def action():
        token.run_sync_soon(p.scope.cancel)
        time.sleep(0.002)
        p.cancelled_in_kernel = threading.current_thread() is not threading.main_thread()

    return action


def check_outcomes(graphs, passes, reference, assert_sums):
    """Completed passes count in full, the others not at all: in every leaf's `.grad` and every grad() result."""
    contributions = {}
    for p, expected in zip(passes, reference):
        assert p.outcome is not None
        if p.outcome != "completed":
            continue
        for leaf, e, got in zip(p.inputs, expected, p.result or expected):
            if p.mode == "backward" and e is not None:
                contributions.setdefault(leaf, []).append(e.numpy())
            elif p.mode == "grad" and e is not None:
                assert_sums(got, [e.numpy()], "a completed grad() call's result")
    for p in passes:
        for leaf in p.inputs:
            parts = contributions.get(leaf)
            if parts is None:
                assert leaf.grad is None, f"a {p.outcome} {p.mode} pass changed a leaf's .grad"
            else:
                assert_sums(leaf.grad, parts, "a leaf's .grad after the faulty run")


async def faulty_stress(graphs, n_passes, rng, watchdog, assert_sums):
    shared_traps = list(graphs.traps)
    passes = [Pass(graphs, rng, ("backward", "grad")[rng.integers(2)]) for _ in range(n_passes)]
    reference = [
        await ag.grad(p.loss, p.inputs, retain_graph=True, allow_unused=True) for p in passes
    ]
    plan_faults(passes, shared_traps, rng, trio.lowlevel.current_trio_token())
    planned = {plan: sum(p.plan == plan for p in passes) for plan in PLANS}
    planned["shared faults"] = sum(trap.action is not None for trap in shared_traps)
    tasks, threads = live_tasks(), threading.active_count()
    with watchdog(10 + n_passes / 20, f"{n_passes} passes with faults"):
        async with trio.open_nursery() as nursery:
            for p in passes:
                nursery.start_soon(p.run)
    assert live_tasks() == tasks, "a task of a finished call is still running"
    assert threading.active_count() <= threads + ag.get_num_workers(), "worker threads accumulate"
    graphs.disarm()
    check_outcomes(graphs, passes, reference, assert_sums)
    counts = tally(passes)
    counts["cancelled_in_kernel"] = sum(p.cancelled_in_kernel for p in passes)
    counts["planned"] = planned

    # The retained graphs are whole: every pass once more, with nothing injected, gives the full sums.
    for p in passes:
        for leaf in p.inputs:
            leaf.grad = None
    with watchdog(10 + n_passes / 20, "the passes over the retained graphs"):
        async with trio.open_nursery() as nursery:
            for p in passes:  # the shared subgraph must outlive every pass
                nursery.start_soon(functools.partial(ag.backward, p.loss, retain_graph=True))
    for p in passes:
        p.mode, p.outcome, p.result = "backward", "completed", None
    check_outcomes(graphs, passes, reference, assert_sums)
    return counts


def tally(passes):
    return {outcome: sum(p.outcome == outcome for p in passes) for outcome in ("completed", "cancelled", "failed")}


@pytest.mark.heavy
async def test_thousands_of_faulty_passes_accumulate_no_threads_or_tasks(
    stress_graphs, watchdog, assert_sums, num_workers
):
    """Ten rounds of 300 passes with faults, then 300 clean ones each; threads stay within trio's idle cache."""
    threads = threading.active_count()
    for seed in range(10):
        graphs = stress_graphs(1000 + seed, kernel_s=0.0005)
        with num_workers(2):
            counts = await faulty_stress(graphs, 300, np.random.default_rng(seed), watchdog, assert_sums)
        assert counts["completed"] and counts["cancelled"] and counts["failed"], counts
        assert threading.active_count() <= threads + ag.get_num_workers(), "worker threads accumulate"


@pytest.mark.parametrize("workers", [1, 2])
def test_faults_in_sync_passes_from_several_threads_leave_whole_passes_or_none(
    workers, stress_graphs, assert_sums, num_workers
):
    """With 2 workers a pass over heavy nodes runs in a trio run of its own on its thread; with 1, inline."""
    rng = np.random.default_rng(workers)
    graphs = stress_graphs(20 + workers)
    shared_traps = list(graphs.traps)
    passes = [Pass(graphs, rng, ("backward", "grad")[rng.integers(2)]) for _ in range(100)]
    reference = [ag.autograd.grad(p.loss, p.inputs, retain_graph=True, allow_unused=True) for p in passes]
    for p in passes:
        if p.traps and rng.random() < 0.4:
            p.traps[rng.integers(len(p.traps))].arm(raise_fault("a pass's own node"))
    for trap in shared_traps:
        trap.arm(raise_fault("a shared node"), at=int(rng.integers(1, len(passes))))
    errors = []

    def run(k):
        try:
            for p in passes[k::4]:
                p.run_sync()
        except BaseException as error:
            errors.append(error)

    with num_workers(workers):
        threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a sync pass from a thread hung"
    assert not errors, errors
    graphs.disarm()
    counts = tally(passes)
    assert counts["completed"] and counts["failed"], counts
    check_outcomes(graphs, passes, reference, assert_sums)


@pytest.mark.parametrize("seed", range(2))
async def test_random_cancellations_and_faults_leave_whole_passes_or_none(
    seed, stress_graphs, watchdog, assert_sums, num_workers
):
    graphs = stress_graphs(seed, kernel_s=0.0005)
    with num_workers(2):
        counts = await faulty_stress(graphs, 200, np.random.default_rng(seed), watchdog, assert_sums)
    assert counts["completed"] and counts["cancelled"] and counts["failed"], counts
    assert counts["cancelled_in_kernel"], f"no pass was cancelled while its kernel ran on a worker: {counts}"


async def test_cancellations_and_faults_in_passes_through_other_devices_leave_whole_passes_or_none(
    stress_graphs, watchdog, assert_sums, num_workers
):
    """The same with a third of the nodes on two async_cpu devices, whose kernels run on stream threads: a
    stopped pass still waits for what it queued there, and its events, before it returns."""
    graphs = stress_graphs(5, kernel_s=0.0005)
    graphs.kinds = graphs.KINDS + ("cross",) * 6
    with num_workers(2):
        counts = await faulty_stress(graphs, 200, np.random.default_rng(5), watchdog, assert_sums)
    assert counts["completed"] and counts["cancelled"] and counts["failed"], counts


class Sleepy(ag.autograd.Function):
    """Identity whose async backward sleeps `seconds`, as one awaiting I/O does."""

    @staticmethod
    def forward(ctx, x, seconds):
        ctx.seconds = seconds
        return ag.tensor(x._data.copy())

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(ctx.seconds)
        return g, None


@pytest.mark.parametrize("seed", range(3))
async def test_no_task_of_a_stopped_call_outlives_it(seed, stress_graphs, watchdog):
    """Checked right after each call returns, with no checkpoint between: an async backward's task too."""
    rng = np.random.default_rng(seed)
    graphs = stress_graphs(seed, kernel_s=0.0005)
    x = ag.tensor(np.ones(3), requires_grad=True)
    tasks = live_tasks()
    for i in range(30):
        loss, _ = graphs.loss()
        loss = loss + Sleepy.apply(x, 0.002).sum()
        if i % 3 == 2:
            graphs.traps[-1].arm(raise_fault("the last node"))
        with watchdog(10, "a pass with faults"), trio.move_on_after(rng.uniform(0, 0.004)):
            try:
                await ag.backward(loss, retain_graph=True)
            except InjectedFault:
                pass
        assert live_tasks() == tasks, "a task of the call still runs after it returned"


async def test_a_pass_cancelled_while_its_dispatcher_runs_another_pass_s_async_hook_does_not_lose_that_node(
    watchdog,
):
    """Dispatchers run the ready nodes of every pass on the device: cancelling one pass must not drop another
    pass's node that its dispatcher happened to be running (here, awaiting that node's async hook)."""
    x = ag.tensor(np.ones(3), requires_grad=True)
    w = ag.tensor(np.ones(3), requires_grad=True)
    loss_a = Sleepy.apply(x, 0.05).sum()  # A's dispatcher falls asleep first, so it is the one woken next
    mid = w * 2.0
    loss_b = Sleepy.apply(mid, 0.005).sum()  # B's node `mid` becomes ready after B's dispatcher sleeps too
    scope_a = trio.CancelScope()

    async def hook(g):
        scope_a.cancel()
        await trio.sleep(0.001)
        return g

    mid.register_hook(hook)

    async def run_a():
        with scope_a:
            await ag.backward(loss_a)

    with watchdog(5, "pass B"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_a)
            await trio.sleep(0.001)
            await ag.backward(loss_b)
    assert scope_a.cancelled_caught and x.grad is None
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


async def test_a_cancelled_pass_s_kernels_waiting_for_a_worker_are_not_started_by_another_pass(
    stress_graphs, watchdog
):
    """Its heavy nodes that found every worker busy must not be handed to its closed nursery by another pass's
    dispatcher once it has stopped (that crashed the other pass with 'Nursery is closed to new arrivals')."""
    graphs = stress_graphs(0, kernel_s=0.004, kinds=("heavy",))
    for attempt in range(20):
        x = ag.tensor(np.ones(3), requires_grad=True)
        chain = x
        for _ in range(300):
            chain = record_tick(chain)
        wide = graphs.leaf()
        heavy = sum((graphs.step("heavy", [wide * float(i)]) for i in range(1, 7)), start=wide * 0).sum()
        with watchdog(10, "two passes"):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ag.backward, chain.sum())
                with trio.move_on_after(0.006 + attempt * 0.0005):
                    await ag.backward(heavy)
        np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))
        assert wide.grad is None or np.array_equal(wide.grad.numpy(), np.full(3, 21.0))


def _tick(ops, g):
    time.sleep(0.0002)
    return g


TICK = ag.ops.record.Rule("TickBackward0", ((), _tick))


def record_tick(t):
    return ag.ops.record.record(TICK, t._data.copy(), (t,))
