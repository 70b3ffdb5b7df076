"""Random graphs through the whole engine: fan-in, fan-out, leaves used many times, heavy nodes on worker
threads, selective execution. Gradients must match central finite differences in float64."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorgrad as ag
from actorgrad.ops.record import Rule, record

# An identity op whose cost estimate sends it to worker threads: it exercises the worker path with real values.
HEAVY_IDENTITY = Rule("HeavyIdentityBackward0", ((), lambda ops, g: g), cost=lambda data, params: 1e12)

UNARY = {
    "tanh": lambda t: t.tanh(),
    "sigmoid": lambda t: t.sigmoid(),
    "scale": lambda t: t * 0.7,
    "heavy": lambda t: record(HEAVY_IDENTITY, t._data.copy(), (t,)),
}
BINARY = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b}

step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.integers(0, 10**6)),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.integers(0, 10**6), st.integers(0, 10**6)),
)
program = st.lists(step, min_size=1, max_size=14)


def evaluate(program, leaves):
    """Run the program: each step reads earlier values (leaves included) and appends one; sum them all."""
    values = list(leaves)
    for kind, op, *picks in program:
        args = [values[p % len(values)] for p in picks]
        values.append(UNARY[op](*args) if kind == "unary" else BINARY[op](*args))
    total = values[len(leaves)]
    for v in values[len(leaves) + 1 :]:
        total = total + v
    return total.sum()


def finite_differences(program, arrays, eps=1e-6):
    grads = []
    for i, base in enumerate(arrays):
        grad = np.zeros_like(base)
        for j in range(base.size):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i].flat[j] += eps
            minus[i].flat[j] -= eps
            with ag.no_grad():
                up = evaluate(program, [ag.tensor(a) for a in plus]).item()
                down = evaluate(program, [ag.tensor(a) for a in minus]).item()
            grad.flat[j] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def leaves_from(seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=3) for _ in range(3)]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # num_workers: stateless
@given(program=program, seed=st.integers(0, 2**16), workers=st.sampled_from([1, 2]))
def test_backward_matches_finite_differences(program, seed, workers, num_workers):
    arrays = leaves_from(seed)
    with num_workers(workers):
        leaves = [ag.tensor(a, requires_grad=True) for a in arrays]
        evaluate(program, leaves).backward()
    for leaf, expected in zip(leaves, finite_differences(program, arrays)):
        got = np.zeros(3) if leaf.grad is None else leaf.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=program, seed=st.integers(0, 2**16), chosen=st.sets(st.integers(0, 2), min_size=1))
def test_grad_of_some_inputs_matches_and_leaves_grad_alone(program, seed, chosen):
    arrays = leaves_from(seed)
    leaves = [ag.tensor(a, requires_grad=True) for a in arrays]
    order = sorted(chosen)
    got = ag.autograd.grad(evaluate(program, leaves), [leaves[i] for i in order], allow_unused=True)
    expected = finite_differences(program, arrays)
    for i, g in zip(order, got):
        np.testing.assert_allclose(np.zeros(3) if g is None else g.numpy(), expected[i], rtol=1e-5, atol=1e-7)
    assert all(leaf.grad is None for leaf in leaves)


@pytest.mark.parametrize("seed", range(3))
async def test_many_random_graphs_at_once_match_one_at_a_time(seed, concurrent_matches_sequential):
    rng = np.random.default_rng(seed)
    shared = ag.tensor(rng.uniform(-1, 1, size=3), requires_grad=True)
    programs = [
        [("binary", "mul", 0, 1), ("unary", "heavy", 2), ("unary", "tanh", 3), ("binary", "add", 3, 0)],
        [("unary", "heavy", 0), ("binary", "mul", 1, 1), ("unary", "sigmoid", 2)],
        [("binary", "sub", 0, 1), ("unary", "scale", 2), ("unary", "heavy", 3), ("binary", "mul", 4, 2)],
    ] * 4
    losses = [evaluate(p, [shared, ag.tensor(rng.uniform(-1, 1, size=3))]) for p in programs]
    await concurrent_matches_sequential(losses, shared)
