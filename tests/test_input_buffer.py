"""Mailboxes sum their messages in producer order, so results do not depend on arrival order or workers."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.scheduler import InputBuffer


def test_sum_is_in_sender_order_whatever_the_arrival_order():
    values = {5: np.array([1e16]), 9: np.array([1.0]), 2: np.array([-1e16]), 7: np.array([1.0])}
    results = set()
    for arrival in ([5, 9, 2, 7], [2, 7, 9, 5], [9, 2, 5, 7]):
        buffer = InputBuffer(1)
        for sender in arrival:
            buffer.add(0, values[sender], sender)
        results.add(buffer.grads()[0].item())
    assert len(results) == 1


def test_slots_are_summed_independently_and_missing_ones_stay_none():
    buffer = InputBuffer(3)
    buffer.add(0, np.array([1.0]), 1)
    buffer.add(0, np.array([2.0]), 2)
    buffer.add(2, np.array([5.0]), 3)
    grads = buffer.grads()
    assert grads[0].item() == 3.0 and grads[1] is None and grads[2].item() == 5.0


def test_summing_leaves_every_message_unchanged():
    """The sum adds in place into the array it made itself, never into a message a sender may still hold."""
    shared = np.array([1.0, 2.0])
    messages = [shared, shared, np.array([10.0, 20.0]), shared]
    buffer = InputBuffer(1)
    for sender, grad in enumerate(messages):
        buffer.add(0, grad, sender)
    total = buffer.grads()[0]
    assert total.tolist() == [13.0, 26.0]
    assert shared.tolist() == [1.0, 2.0] and messages[2].tolist() == [10.0, 20.0]
    assert all(total is not m for m in messages)


def wide_fan_in_grads():
    rng = np.random.default_rng(1)
    x = ag.tensor(rng.normal(size=(192, 192)), requires_grad=True)
    total = None
    for i in range(6):
        w = ag.tensor(rng.normal(size=(192, 192)) * 0.1)
        branch = ((x @ w).tanh() @ w).tanh().sum() * float(i + 1)
        total = branch if total is None else total + branch
    (gx,) = ag.autograd.grad(total, x)
    return gx.numpy()


@pytest.mark.parametrize("repeat", range(3))
def test_gradients_are_bitwise_identical_for_one_and_two_workers(repeat, num_workers):
    with num_workers(1):
        one = wide_fan_in_grads()
    with num_workers(2):
        two = wide_fan_in_grads()
    assert np.array_equal(one, two)
