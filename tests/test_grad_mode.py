"""Grad mode is task-local: `no_grad` in one trio task never changes another."""

import trio

import actorgrad as ag


def test_no_grad_records_nothing_and_restores():
    x = ag.tensor(1.0, requires_grad=True)
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        assert (x * 2).grad_fn is None
        with ag.enable_grad():
            assert (x * 2).grad_fn is not None
    assert ag.is_grad_enabled()
    assert (x * 2).grad_fn is not None


def test_set_grad_enabled_and_decorators():
    x = ag.tensor(1.0, requires_grad=True)

    @ag.no_grad()
    def double(t):
        return t * 2

    @ag.set_grad_enabled(False)
    async def triple(t):
        return t * 3

    assert double(x).grad_fn is None
    assert trio.run(triple, x).grad_fn is None
    with ag.set_grad_enabled(False):
        assert (x * 2).grad_fn is None
    assert ag.is_grad_enabled()


async def test_no_grad_in_one_task_does_not_leak_into_another():
    x = ag.tensor(1.0, requires_grad=True)
    inside = trio.Event()
    release = trio.Event()
    seen = {}

    async def quiet():
        with ag.no_grad():
            inside.set()
            await release.wait()
            seen["quiet"] = (x * 2).grad_fn

    async def recording():
        await inside.wait()
        seen["recording"] = (x * 2).grad_fn
        release.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(quiet)
        nursery.start_soon(recording)
    assert seen["quiet"] is None
    assert seen["recording"] is not None


def test_a_create_graph_pass_records_its_sums_under_no_grad():
    """Grad mode is on inside a create_graph pass, as in PyTorch's engine: the mailbox summing the two messages
    for x (from x * x) records an AddBackward0 even when the caller is in no_grad."""
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    with ag.no_grad():
        (g,) = ag.autograd.grad(loss, x, create_graph=True)
    assert g.grad_fn.name() == "AddBackward0"
    assert ag.autograd.grad(g.sum(), x)[0].tolist() == [2.0, 2.0]


async def test_an_async_create_graph_pass_records_its_sums_under_no_grad():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x * x).sum()
    with ag.no_grad():
        (h,) = await ag.grad(loss, x, create_graph=True)
    assert h.requires_grad
    assert (await ag.grad(h.sum(), x))[0].tolist() == [6.0, 12.0]
