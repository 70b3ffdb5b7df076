"""Ops give inf and NaN quietly, as PyTorch's do, where numpy's kernels warn; numpy called by the user still warns.

The warnings filter that silences them is installed when actorgrad is imported; pytest drops filters added while
it collects, so these checks run a script in a fresh interpreter, as a user's program runs.
"""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import actorgrad as ag

INF = math.inf

SCRIPT = textwrap.dedent(
    """
    import math
    import numpy as np
    import actorgrad as ag

    INF, NAN = math.inf, math.nan
    x = ag.tensor([0.0, 1.0], requires_grad=True)
    ag.log(x).sum().backward()
    cases = {
        "log of 0 and -1": (ag.log(ag.tensor([0.0, -1.0])), [-INF, NAN]),
        "division by 0": (ag.tensor([1.0, 0.0]) / 0, [INF, NAN]),
        "sqrt of -1": (ag.sqrt(ag.tensor([-1.0])), [NAN]),
        "exp overflow": (ag.exp(ag.tensor([1000.0], dtype=ag.float64)), [INF]),
        "product overflow": (ag.tensor([1e30]) * 1e30, [INF]),
        "cast past float16's range": (ag.tensor([1e6]).half(), [INF]),
        "sum of inf and -inf": (ag.tensor([INF, -INF]).sum(), NAN),
        "mean over a dim": (ag.tensor([[INF, -INF]]).mean(1), [NAN]),
        "prod of 0 and inf": (ag.tensor([0.0, INF]).prod(), NAN),
        "cumsum past inf - inf": (ag.tensor([INF, -INF]).cumsum(0), [INF, NAN]),
        "cumprod of inf and 0": (ag.tensor([INF, 0.0]).cumprod(0), [INF, NAN]),
        "nansum of inf and -inf": (ag.tensor([INF, -INF, NAN]).nansum(), NAN),
        "mean of an empty tensor": (ag.zeros(0).mean(), NAN),
        "backward of log at 0": (x.grad, [INF, 1.0]),
    }
    for name, (result, expected) in cases.items():
        np.testing.assert_array_equal(result.numpy(), np.array(expected, result.numpy().dtype), err_msg=name)
    for name, user_code in {"log": lambda: np.log(np.zeros(1)), "sum": lambda: np.array([INF, -INF]).sum()}.items():
        try:
            user_code()
        except RuntimeWarning:
            continue
        raise AssertionError(f"numpy's {name} called by the user gave no warning")
    print("quiet")
    """
)


def test_ops_give_inf_and_nan_without_warnings_where_numpy_called_by_the_user_warns():
    """Every RuntimeWarning is an error in the script (`-W error`), as a test suite may set."""
    run = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", SCRIPT], capture_output=True, text=True)
    assert run.stdout.strip() == "quiet", run.stderr


@pytest.mark.parametrize(
    "op, expected",
    [
        (lambda: ag.tensor([INF, -INF]).sum(), math.nan),
        (lambda: ag.tensor([[INF, -INF]]).mean(1), [math.nan]),
        (lambda: ag.tensor([0.0, INF]).prod(), math.nan),
        (lambda: ag.tensor([INF, -INF]).cumsum(0), [INF, math.nan]),
        (lambda: ag.tensor([INF, 0.0]).cumprod(0), [INF, math.nan]),
        (lambda: ag.tensor([INF, -INF]).nansum(), math.nan),
    ],
)
def test_reductions_run_numpys_python_quietly_and_leave_the_users_setting(op, expected):
    """numpy's `ndarray.sum` family warns from numpy's own modules, out of the filter's reach: these reductions
    switch numpy's floating-point errors off around the kernel, and back to the user's setting after it."""
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(op().numpy(), expected)
        with pytest.raises(FloatingPointError):
            np.array([INF, -INF]).sum()
