"""Anomaly mode: a NaN gradient is caught naming the node that made it, an error in backward carries the
forward stack of the op that made the failing node, and the mode is off by default and local to a task."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from actorgrad.ops.record import Rule, record

pytestmark = [
    pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled"),
    pytest.mark.filterwarnings("ignore:Error detected in"),  # its warning before the error, as PyTorch's
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy's, for the NaNs made on purpose
]


def leaf(values=(0.0, 1.0)):
    return ag.tensor(np.array(values), requires_grad=True)


def test_entering_anomaly_mode_warns_that_it_is_slow():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with detect_anomaly():
            assert is_anomaly_enabled() and is_anomaly_check_nan_enabled()
    assert not is_anomaly_enabled()


@pytest.mark.parametrize("backward", ["sync", "async"])
def test_a_nan_gradient_is_caught_naming_the_node_and_changes_no_grad(backward):
    x = leaf()
    x.grad = ag.tensor(np.ones(2))
    with detect_anomaly():
        y = (x * ag.tensor(np.array([np.nan, 1.0]))).sum()
        with pytest.raises(RuntimeError) as caught:
            if backward == "sync":
                y.backward()
            else:
                trio.run(ag.backward, y)
    assert str(caught.value) == "Function 'MulBackward0' returned nan values in its 0th output."
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1])


def test_the_nan_is_blamed_on_the_node_that_made_it_not_on_those_it_flows_through():
    x = leaf()
    with detect_anomaly():
        y = (x.sqrt() * 0).exp().sum()  # sqrt's gradient at 0 is inf; times 0 gives NaN in SqrtBackward0 only
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output"):
            y.backward()


def test_without_nan_checks_a_nan_flows_into_grad():
    x = leaf()
    with set_detect_anomaly(True, check_nan=False):
        assert is_anomaly_enabled() and not is_anomaly_check_nan_enabled()
        (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_anomaly_mode_is_off_by_default_and_costs_nodes_nothing():
    assert not is_anomaly_enabled()
    x = leaf()
    y = x.sqrt() * 0
    assert y.grad_fn._metadata is None  # no forward stack, not even a metadata dict
    y.sum().backward()  # the NaN is not checked
    assert np.isnan(x.grad.numpy()[0])


def _raising(ops, g, self):
    raise ValueError("this backward always fails")


FAILING = Rule("FailingBackward", (("self",), _raising))


def test_an_error_in_backward_carries_the_forward_stack_of_the_failing_node():
    x = leaf()
    with detect_anomaly():
        y = record(FAILING, x._data * 2, (x,))  # the forward call named by the stack
    stack = y.grad_fn.metadata["traceback_"]
    assert "record(FAILING" in stack[-1] and __file__ in stack[-1]
    with pytest.raises(ValueError, match="this backward always fails") as caught:
        with detect_anomaly():  # on during backward too: PyTorch reports the stack only then
            (y * 3).sum().backward()
    notes = "\n".join(caught.value.__notes__)
    assert "Error detected in FailingBackward. Traceback of forward call that caused the error:" in notes
    assert "y = record(FAILING, x._data * 2, (x,))" in notes


def test_nodes_recorded_outside_anomaly_mode_add_no_stack_to_errors():
    x = leaf()
    y = record(FAILING, x._data * 2, (x,))
    with pytest.raises(ValueError) as caught:
        with detect_anomaly():
            y.sum().backward()
    assert not any("Traceback of forward call" in note for note in caught.value.__notes__)


async def test_anomaly_mode_is_local_to_a_task():
    inside = trio.Event()
    recorded_outside = trio.Event()
    nodes = {}

    async def anomalous():
        with detect_anomaly():
            inside.set()
            await recorded_outside.wait()
            nodes["inside"] = (leaf() * 2).grad_fn
            y = (leaf() * ag.tensor(np.array([np.nan, 1.0]))).sum()
            with pytest.raises(RuntimeError, match="returned nan values"):
                await ag.backward(y)

    async def plain():
        await inside.wait()
        assert not is_anomaly_enabled()
        nodes["outside"] = (leaf() * 2).grad_fn
        x = leaf()
        await ag.backward((x * ag.tensor(np.array([np.nan, 1.0]))).sum())  # no NaN check in this task
        assert np.isnan(x.grad.numpy()[0])
        recorded_outside.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(anomalous)
        nursery.start_soon(plain)
    assert "traceback_" in nodes["inside"].metadata
    assert nodes["outside"]._metadata is None
