"""Stress: hundreds of backward and grad calls at once on random graphs that share leaves and a retained
subgraph, in one trio app and from several Python threads. Every leaf's `.grad` must equal the sum of the
same passes run one at a time, and every `grad()` call must return what it returns alone."""

import threading

import numpy as np
import pytest
import trio

import actorgrad as ag

MODES = ("backward", "backward_create_graph", "backward_inputs", "grad", "grad_create_graph")


async def sequential_reference(losses, inputs):
    """Each pass's gradients for its inputs, run one at a time."""
    return [await ag.grad(loss, leaves, retain_graph=True, allow_unused=True) for loss, leaves in zip(losses, inputs)]


def sync_reference(losses, inputs):
    return [
        ag.autograd.grad(loss, leaves, retain_graph=True, allow_unused=True) for loss, leaves in zip(losses, inputs)
    ]


def check_passes(graphs, modes, inputs, reference, results, assert_sums, chosen=None):
    """Leaves' `.grad` hold exactly the backward passes' sums (a `backward(inputs=...)` pass's for its chosen
    leaves only); grad() calls returned their own gradients."""
    contributions = {}
    chosen = chosen or [None] * len(modes)
    for mode, leaves, expected, got, only in zip(modes, inputs, reference, results, chosen):
        for k, (leaf, g) in enumerate(zip(leaves, expected)):
            if mode.startswith("backward") and g is not None and (only is None or k in only):
                contributions.setdefault(leaf, []).append(g.numpy())
        if mode.startswith("grad"):
            for g, e in zip(got, expected):
                assert (g is None) == (e is None)
                if g is not None:
                    assert_sums(g, [e.numpy()], f"grad() of a {mode} pass")
    for leaf in graphs.shared + [leaf for leaves in inputs for leaf in leaves[len(graphs.shared) :]]:
        parts = contributions.get(leaf)
        if parts is None:
            assert leaf.grad is None, "a leaf no backward pass reaches got a gradient"
        else:
            assert_sums(leaf.grad, parts, f"{'shared' if any(leaf is s for s in graphs.shared) else 'private'} leaf")


async def stress_in_one_app(graphs, n_passes, rng, watchdog, assert_sums):
    losses, inputs = [], []
    for _ in range(n_passes):
        loss, private = graphs.loss(n_private=int(rng.integers(1, 3)), n_steps=int(rng.integers(2, 8)))
        losses.append(loss)
        inputs.append(graphs.shared + private)
    modes = [MODES[i] for i in rng.integers(len(MODES), size=n_passes)]
    chosen = [None if mode != "backward_inputs" else pick_some(rng, len(leaves)) for mode, leaves in zip(modes, inputs)]
    reference = await sequential_reference(losses, inputs)
    results = [None] * n_passes

    async def run(i):
        create_graph = modes[i].endswith("create_graph")
        if modes[i] == "backward_inputs":
            await ag.backward(losses[i], retain_graph=True, inputs=[inputs[i][k] for k in sorted(chosen[i])])
        elif modes[i].startswith("backward"):
            await ag.backward(losses[i], retain_graph=True, create_graph=create_graph)
        else:
            results[i] = await ag.grad(
                losses[i], inputs[i], retain_graph=True, create_graph=create_graph, allow_unused=True
            )

    with watchdog(10 + n_passes / 20, f"{n_passes} concurrent passes"):
        async with trio.open_nursery() as nursery:
            for i in range(n_passes):
                nursery.start_soon(run, i)
    check_passes(graphs, modes, inputs, reference, results, assert_sums, chosen)


def pick_some(rng, n):
    """A random nonempty set of indices below n."""
    return set(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())


@pytest.mark.parametrize("seed", range(2))
async def test_hundreds_of_concurrent_passes_sum_to_the_sequential_results(
    seed, stress_graphs, watchdog, assert_sums, num_workers
):
    rng = np.random.default_rng(seed)
    with num_workers(2):
        await stress_in_one_app(stress_graphs(seed), 300, rng, watchdog, assert_sums)


async def test_concurrent_passes_through_other_devices_sum_to_the_sequential_results(
    stress_graphs, watchdog, assert_sums, num_workers
):
    """The same, with a third of the nodes on two async_cpu devices: each gradient crossing a device carries
    an event its consumer waits for, while hundreds of passes share those devices' streams."""
    rng = np.random.default_rng(7)
    graphs = stress_graphs(7)
    graphs.kinds = graphs.KINDS + ("cross",) * 6
    with num_workers(2):
        await stress_in_one_app(graphs, 200, rng, watchdog, assert_sums)


@pytest.mark.heavy
@pytest.mark.parametrize("seed", range(10))
async def test_thousands_of_concurrent_passes_sum_to_the_sequential_results(
    seed, stress_graphs, watchdog, assert_sums
):
    rng = np.random.default_rng(100 + seed)
    await stress_in_one_app(stress_graphs(100 + seed, kernel_s=0.0002), 1000, rng, watchdog, assert_sums)


def stress_from_threads(graphs, n_threads, per_thread, rng, assert_sums):
    losses, inputs = [], []
    for _ in range(n_threads * per_thread):
        loss, private = graphs.loss(n_private=1, n_steps=int(rng.integers(2, 8)))
        losses.append(loss)
        inputs.append(graphs.shared + private)
    modes = [("backward", "grad")[i] for i in rng.integers(2, size=len(losses))]
    reference = sync_reference(losses, inputs)
    results = [None] * len(losses)
    errors = []
    start = threading.Barrier(n_threads)

    def worker(k):
        try:
            start.wait()
            for i in range(k, len(losses), n_threads):
                if modes[i] == "backward":
                    losses[i].backward(retain_graph=True)
                else:
                    results[i] = ag.autograd.grad(losses[i], inputs[i], retain_graph=True, allow_unused=True)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a sync backward from a thread hung"
    assert not errors, errors
    check_passes(graphs, modes, inputs, reference, results, assert_sums)


@pytest.mark.parametrize("workers", [1, 2])
def test_sync_passes_from_several_threads_sum_to_the_sequential_results(
    workers, stress_graphs, assert_sums, num_workers
):
    """With 2 workers a thread's pass over heavy nodes runs in a trio run of its own; with 1, inline."""
    with num_workers(workers):
        stress_from_threads(stress_graphs(7 + workers), 4, 20, np.random.default_rng(workers), assert_sums)


@pytest.mark.heavy
def test_many_sync_passes_from_many_threads_sum_to_the_sequential_results(stress_graphs, assert_sums):
    stress_from_threads(stress_graphs(11, kernel_s=0.0002), 8, 100, np.random.default_rng(11), assert_sums)


def test_a_create_graph_gradient_kept_in_grad_is_the_leaf_s_own():
    """Mixed create_graph passes into shared leaves: the first gradient a recorded pass leaves in `.grad` may
    be one Tensor for several leaves (or the caller's grad_tensors); a later plain pass adds into `.grad` in
    place, which must change only its own leaf."""
    a = ag.tensor(np.ones(3), requires_grad=True)
    b = ag.tensor(np.ones(3), requires_grad=True)
    given = ag.tensor(np.ones(3))
    (a + b).backward(given, create_graph=True)
    assert a.grad is not b.grad and a.grad is not given
    (a * 5).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 6.0, 6.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(given.numpy(), [1.0, 1.0, 1.0])
