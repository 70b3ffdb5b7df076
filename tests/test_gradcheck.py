"""gradcheck and gradgradcheck catch wrong first and second derivatives, and refuse input they cannot check."""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import GradcheckError, gradcheck, gradgradcheck
from actorgrad.ops.record import Rule, record


def _square_with(rule):
    return lambda x: record(rule, x._data * x._data, (x,))


RIGHT = Rule("SquareBackward", (("self",), lambda ops, g, self: g * 2 * self))
WRONG_FIRST = Rule("SquareBackward", (("self",), lambda ops, g, self: g * 2.1 * self))
# Right numbers, but the recorded backward treats x as a constant: the second derivative is lost.
WRONG_SECOND = Rule(
    "SquareBackward", (("self",), lambda ops, g, self: g * 2 * getattr(self, "_data", self))
)


def leaf(shape=(2, 3), seed=0):
    return ag.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, shape), requires_grad=True)


def test_a_right_rule_passes_both_checks():
    assert gradcheck(_square_with(RIGHT), (leaf(),))
    assert gradgradcheck(_square_with(RIGHT), (leaf(),))


def test_a_wrong_first_derivative_is_caught_and_named():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_square_with(WRONG_FIRST), (leaf(),))
    assert gradcheck(_square_with(WRONG_FIRST), (leaf(),), raise_exception=False) is False


def test_the_report_names_the_worst_mismatching_entry():
    # Right everywhere but at x[1, 2], which gets 3 x instead of 2 x.
    wrong_at = np.zeros((2, 3))
    wrong_at[1, 2] = 1.0
    rule = Rule("SquareBackward", (("self",), lambda ops, g, self: g * (2 + wrong_at) * self))
    x = leaf()
    with pytest.raises(GradcheckError) as caught:
        gradcheck(lambda t: record(rule, t._data * t._data, (t,)), (x,))
    message = str(caught.value)
    value = float(x.detach().numpy()[1, 2])
    numerical, analytical = (float(v) for v in re.search(r"numerical (\S+), analytical (\S+) ", message).groups())
    assert "worst mismatch: output 0 element (1, 2), input 0 element (1, 2):" in message
    assert numerical == pytest.approx(2 * value) and analytical == pytest.approx(3 * value)
    assert "numerical:[[" in message and "analytical:[[" in message  # the whole matrices follow


def test_a_lost_second_derivative_is_caught_by_gradgradcheck_only():
    assert gradcheck(_square_with(WRONG_SECOND), (leaf(),))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(_square_with(WRONG_SECOND), (leaf(),))


def test_several_inputs_and_outputs_and_a_non_tensor_argument():
    def f(x, y, scale):
        return (x * y * scale).tanh(), (x - y).sum(0)

    assert gradcheck(f, (leaf(seed=1), leaf(seed=2), 0.5))
    assert gradgradcheck(f, (leaf(seed=1), leaf(seed=2), 0.5))


def test_an_input_that_does_not_require_grad_is_held_constant():
    x, y = leaf(seed=3), ag.tensor(np.ones((2, 3)))
    assert gradcheck(lambda a, b: a * b, (x, y))


def test_no_input_requiring_grad_is_refused():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (ag.tensor(np.ones(3)),))


def test_float32_inputs_get_a_warning():
    x = ag.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        gradcheck(lambda a: a * 2, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)
