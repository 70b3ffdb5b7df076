"""`autograd.set_multithreading_enabled` (passes without worker threads) and the deprecated `autograd.Variable`."""

import re
import threading
import time

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import Variable, is_multithreading_enabled, set_multithreading_enabled
from actorgrad.ops.record import Rule, record


@pytest.fixture
def two_workers():
    before = ag.get_num_workers()
    ag.set_num_workers(2)
    yield
    ag.set_num_workers(before)
    set_multithreading_enabled(True)


def heavy_branches(threads):
    """Two independent branches whose kernels claim to be heavy (so they would go to worker threads) and note the
    thread they run on."""

    def slow(ops, g):
        threads.append(threading.get_ident())
        time.sleep(0.005)
        return g

    rule = Rule("SlowBackward0", ((), slow), cost=lambda data, params: 1e12)
    x = ag.tensor(np.ones(3), requires_grad=True)
    branches = [record(rule, (x * float(i))._data, (x * float(i),)).sum() for i in (1, 2)]
    return x, branches[0] + branches[1]


def test_without_multithreading_a_sync_backward_runs_every_kernel_on_the_calling_thread(two_workers):
    threads = []
    x, loss = heavy_branches(threads)
    with set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
        loss.backward()
    assert is_multithreading_enabled()
    assert threads == [threading.get_ident()] * 2
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    threads.clear()
    _, loss = heavy_branches(threads)
    loss.backward()  # multithreading is back: the heavy kernels go to workers
    assert len(threads) == 2 and threading.get_ident() not in threads


async def test_without_multithreading_an_awaited_pass_keeps_its_kernels_on_the_event_loop(two_workers):
    _, loss = heavy_branches([])
    with set_multithreading_enabled(False), ag.profile() as prof:
        await ag.backward(loss)
    assert [e.worker for e in prof.events if e.name == "SlowBackward0"] == [0, 0]


def test_set_multithreading_enabled_as_a_call_and_as_a_decorator_as_pytorchs(two_workers):
    set_multithreading_enabled(False)  # a plain call takes effect at once
    assert not is_multithreading_enabled()
    with set_multithreading_enabled(True):
        assert is_multithreading_enabled()
    assert not is_multithreading_enabled()  # the previous mode is back
    set_multithreading_enabled(True)

    @set_multithreading_enabled(False)
    def inside():
        return is_multithreading_enabled()

    assert inside() is False
    assert set_multithreading_enabled(True).clone().mode is True


def test_variable_is_a_detached_tensor_requiring_grad_as_asked():
    x = ag.ones(2) * ag.tensor(2.0, requires_grad=True)
    v = Variable(x, requires_grad=True)
    assert v is not x and v.is_leaf and v.requires_grad and v.grad_fn is None
    assert v.tolist() == [2.0, 2.0] and not Variable(x).requires_grad
    with ag.no_grad():
        x.mul_(3.0)  # the data is shared
    assert v.tolist() == [6.0, 6.0]
    assert isinstance(x, Variable) and not isinstance([1.0], Variable)
    assert Variable().shape == (0,)


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: Variable([1.0]), TypeError, "Variable data has to be a tensor, but got list"),
    (lambda: Variable(ag.ones(2, dtype=ag.int64), requires_grad=True), RuntimeError,
     "Tensors of floating point dtype can require gradients"),  # requires_grad_'s own text
])
def test_variable_refuses_what_pytorchs_refuses(call, error, text):
    with pytest.raises(error, match=re.escape(text)):
        call()
