"""LBFGS: the two-loop recursion against a plain-numpy L-BFGS, convergence on Rosenbrock's function with and without
the strong Wolfe line search, the line search's own conditions, state dict round trips and argument errors."""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim.line_search import cubic_minimum, strong_wolfe

START = np.array([-1.2, 1.0, -0.5, 0.8])


def rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def rosenbrock_grad(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def minimise(options, steps, start=START, device=None):
    p = nn.Parameter(ag.tensor(start, device=device))
    opt = optim.LBFGS([p], **options)
    losses = [opt.step(closure_for(opt, p)).item() for _ in range(steps)]
    return p, opt, losses


def closure_for(opt, p):
    def closure():
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        return loss
    return closure


def lbfgs_reference(x, iterations, lr=1.0, history_size=100, tolerance_change=1e-9):
    """Nocedal and Wright's algorithm 7.4 with a fixed step lr (the first scaled by min(1, 1 / |g|_1)), as
    PyTorch's documentation describes LBFGS without a line search; one step of `iterations` iterations."""
    x = x.copy()
    g = rosenbrock_grad(x)
    steps, changes = [], []
    g_prev = t = d = None
    for k in range(iterations):
        if k == 0:
            d = -g
            h0 = 1.0
        else:
            y, s = g - g_prev, d * t
            if y @ s > 1e-10:
                steps, changes = (steps + [s])[-history_size:], (changes + [y])[-history_size:]
                h0 = (y @ s) / (y @ y)
            q, alphas = -g, []
            for s_i, y_i in zip(reversed(steps), reversed(changes)):
                alphas.append((s_i @ q) / (y_i @ s_i))
                q = q - alphas[-1] * y_i
            r = h0 * q
            for s_i, y_i, a_i in zip(steps, changes, reversed(alphas)):
                r = r + (a_i - (y_i @ r) / (y_i @ s_i)) * s_i
            d = r
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 0 else lr
        if g @ d > -tolerance_change:
            break
        x = x + t * d
        g_prev = g
        g = rosenbrock_grad(x)
    return x


@pytest.mark.parametrize(("iterations", "options"), [(6, {}), (9, dict(lr=0.5, history_size=3))])
def test_iterations_follow_the_two_loop_recursion(iterations, options):
    p, _, _ = minimise(dict(max_iter=iterations, **options), steps=1)
    np.testing.assert_allclose(p.detach().numpy(), lbfgs_reference(START, iterations, **options), rtol=1e-10)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_minimises_rosenbrock_to_convergence(line_search_fn):
    p, opt, losses = minimise(dict(line_search_fn=line_search_fn), steps=15)
    np.testing.assert_allclose(p.detach().numpy(), np.ones(4), atol=1e-5)
    assert losses[-1] < 1e-9 < losses[0]
    state = opt.state[p]
    assert state["n_iter"] <= 15 * 20 and state["func_evals"] >= state["n_iter"]


def test_the_line_search_needs_fewer_evaluations_than_fixed_steps():
    _, with_search, _ = minimise(dict(line_search_fn="strong_wolfe", max_iter=200, max_eval=400), steps=1)
    _, plain, _ = minimise(dict(max_iter=200, max_eval=400), steps=1)
    [searched], [fixed] = with_search.state.values(), plain.state.values()
    assert searched["func_evals"] < fixed["func_evals"]


def test_a_step_at_an_optimum_evaluates_once_and_returns_the_loss():
    p, opt, losses = minimise({}, steps=1, start=np.ones(4))
    assert losses == [0.0] and opt.state[p]["func_evals"] == 1 and "d" not in opt.state[p]
    assert p.tolist() == [1.0] * 4


LINES = [  # phi(t) and phi'(t): functions along a search line, falling at t = 0
    (lambda t: t**4 - 3 * t, lambda t: 4 * t**3 - 3),
    (lambda t: np.exp(t) - 4 * t + 0.3 * np.sin(5 * t), lambda t: np.exp(t) - 4 + 1.5 * np.cos(5 * t)),
]


@pytest.mark.parametrize("t0", [0.01, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("line", LINES)
def test_strong_wolfe_returns_the_first_step_meeting_both_conditions(line, t0):
    phi, slope = line
    tried = []

    def evaluate(t):
        tried.append(t)
        return float(phi(t)), np.array([slope(t)])

    d, g = np.array([1.0]), np.array([slope(0.0)])
    f_new, g_new, t, evaluations = strong_wolfe(evaluate, t0, d, phi(0.0), g, g @ d)
    assert f_new <= phi(0.0) + 1e-4 * t * (g @ d)  # sufficient decrease
    assert abs(g_new @ d) <= 0.9 * abs(g @ d)  # curvature
    assert (f_new, g_new[0]) == (phi(t), slope(t))  # what it returns belongs to the step it returns
    assert t == tried[-1] and evaluations == len(tried)  # it stopped there


def test_strong_wolfe_stops_at_the_first_acceptable_step():
    # phi(t) = (t - 1)^2: t = 5 overshoots (Armijo fails), so [0, 5] brackets; the cubic through its ends is the
    # parabola itself, whose minimiser t = 1 meets both conditions at the second evaluation.
    def evaluate(t):
        return float((t - 1) ** 2), np.array([2 * (t - 1)])

    d, g = np.array([1.0]), np.array([-2.0])
    f_new, g_new, t, evaluations = strong_wolfe(evaluate, 5.0, d, 1.0, g, g @ d)
    assert (t, f_new, evaluations) == (pytest.approx(1.0, abs=1e-12), pytest.approx(0.0, abs=1e-20), 2)


def test_cubic_minimum_finds_a_cubics_minimiser():
    # c(x) = x^3 - 3x has its local minimum at 1: from values and slopes at 0 and 2.
    def cubic(x):
        return x**3 - 3 * x, 3 * x**2 - 3

    assert cubic_minimum(0.0, *cubic(0.0), 2.0, *cubic(2.0)) == pytest.approx(1.0, abs=1e-12)
    assert cubic_minimum(2.0, *cubic(2.0), 0.0, *cubic(0.0)) == pytest.approx(1.0, abs=1e-12)
    assert cubic_minimum(0.0, *cubic(0.0), 2.0, *cubic(2.0), bounds=(1.5, 3.0)) == 1.5


def test_state_dict_round_trip_continues_identically():
    options = dict(history_size=4, line_search_fn="strong_wolfe", max_iter=5)
    p, opt, _ = minimise(options, steps=2)
    saved = opt.state_dict()
    state = saved["state"][0]
    saved_iterations = state["n_iter"]
    assert list(state)[:2] == ["func_evals", "n_iter"] and len(state["old_dirs"]) == len(state["ro"]) <= 4
    assert all(isinstance(v, ag.Tensor) for v in state["old_dirs"] + [state["d"], state["prev_flat_grad"]])
    clone = nn.Parameter(ag.tensor(p.detach().numpy()))
    clone_opt = optim.LBFGS([clone], **options)
    clone_opt.load_state_dict(saved)
    for _ in range(2):
        opt.step(closure_for(opt, p))
        clone_opt.step(closure_for(clone_opt, clone))
    np.testing.assert_array_equal(clone.detach().numpy(), p.detach().numpy())
    assert saved["state"][0]["n_iter"] == saved_iterations < clone_opt.state[clone]["n_iter"] == opt.state[p]["n_iter"]
    # The saved history was copied: later steps did not change it.
    np.testing.assert_array_equal(saved["state"][0]["d"].numpy(), state["d"].numpy())


def test_parameters_of_several_shapes_move_as_one_vector():
    a, b = nn.Parameter(ag.tensor([[-1.2, 1.0]], dtype=ag.float64)), nn.Parameter(ag.tensor([-0.5, 0.8],
                                                                                               dtype=ag.float64))
    opt = optim.LBFGS([a, b], max_iter=6)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(ag.cat([a.reshape(-1), b]))
        loss.backward()
        return loss

    opt.step(closure)
    flat = np.concatenate([a.detach().numpy().ravel(), b.detach().numpy()])
    np.testing.assert_allclose(flat, lbfgs_reference(START, 6), rtol=1e-10)


@pytest.mark.parametrize(("make", "error", "text"), [
    (lambda ps: optim.LBFGS(ps, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda ps: optim.LBFGS([{"params": ps[:1]}, {"params": ps[1:]}]), ValueError,
     "LBFGS doesn't support per-parameter options (parameter groups)"),
    (lambda ps: optim.LBFGS(ps, line_search_fn="armijo").step(lambda: (ps[0] * ps[0]).sum().backward() or 1.0),
     RuntimeError, "only 'strong_wolfe' is supported"),
])
def test_bad_options_get_pytorchs_errors(make, error, text):
    with pytest.raises(error, match=re.escape(text)):
        make([nn.Parameter(ag.ones(1)), nn.Parameter(ag.ones(1))])


def test_max_eval_defaults_to_five_quarters_of_max_iter():
    opt = optim.LBFGS([nn.Parameter(ag.ones(1))], max_iter=10)
    assert opt.defaults == dict(lr=1, max_iter=10, max_eval=12, tolerance_grad=1e-7, tolerance_change=1e-9,
                                history_size=100, line_search_fn=None)


@pytest.mark.gpu
def test_cuda_parameters_minimise_as_cpu_ones():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    p, opt, _ = minimise(dict(line_search_fn="strong_wolfe", max_iter=8), steps=2, device=cuda)
    reference, _, _ = minimise(dict(line_search_fn="strong_wolfe", max_iter=8), steps=2)
    np.testing.assert_allclose(p.detach().cpu().numpy(), reference.detach().numpy(), rtol=1e-9)
    assert opt.state[p]["d"].device == cuda
