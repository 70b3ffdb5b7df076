"""Shared test helpers (fixtures: tests run with --import-mode=importlib, so they cannot import each other)."""

import contextlib
import itertools
import time

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd.function import Function
from actorgrad.ops.record import Rule, record


@pytest.fixture
def cupy():
    """CuPy, for a gpu-marked test: the test is skipped when CuPy or a CUDA device is missing (the stand-in in
    tests/cupy_standin counts as one)."""
    module = pytest.importorskip("cupy")
    if not module.cuda.is_available():
        pytest.skip("no CUDA device")
    return module


@pytest.fixture
def concurrent_matches_sequential():
    """A check that backward passes run all at once add into a shared leaf exactly what they give one by one."""

    async def check(losses, leaf):
        expected = np.zeros(leaf.shape)
        for loss in losses:
            (g,) = await ag.grad(loss, leaf, retain_graph=True)
            expected += g.numpy()
        async with trio.open_nursery() as nursery:
            for loss in losses:
                nursery.start_soon(ag.backward, loss)
        np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-12)

    return check


class Trap:
    """A point in a node's backward where a test can inject a fault: does nothing until armed, then runs its
    action on the k-th call (counted from arming), on whichever thread runs the node."""

    def __init__(self, heavy: bool = False) -> None:
        self.heavy = heavy  # in a node that may run on a worker thread
        self.action = None
        self.at = 0
        self._calls = itertools.count(1)  # next() on a count is atomic: the node may run on several threads

    def arm(self, action, at: int = 1) -> None:
        self._calls, self.action, self.at = itertools.count(1), action, at

    def disarm(self) -> None:
        self.action = None

    def __call__(self) -> None:
        if next(self._calls) == self.at and self.action is not None:
            self.action()


def _trap_formula(ops, g, trap):
    trap()
    return g


class StressGraphs:
    """Random backward graphs for stress and fault tests, over leaves shared by all of them and a shared
    subgraph (so passes over them need `retain_graph=True`).

    Nodes: tanh, sigmoid, scaling, add/mul/sub, custom Functions (sync and async backward), tensor hooks (sync
    and async), trips through the async_cpu test devices (kind "cross", when asked for), and "heavy" identity
    nodes whose cost estimate sends them to worker threads (each sleeping `kernel_s`, which releases the GIL as
    a real kernel does). Every node of user code (Functions, hooks, trap
    and heavy nodes, and a hook on the first shared leaf) calls a Trap, so a test can make it raise, cancel or
    stall on its k-th call.
    """

    KINDS = ("tanh", "sigmoid", "scale", "add", "mul", "sub", "trap", "heavy", "cube", "async", "hook", "async_hook")

    def __init__(self, seed: int, n_shared: int = 3, size: int = 4, kernel_s: float = 0.0, kinds=KINDS) -> None:
        self.rng = np.random.default_rng(seed)
        self.size = size
        self.kernel_s = kernel_s
        self.kinds = kinds
        self.traps: list[Trap] = []
        self.trap_rule = Rule("TrapBackward0", (("trap",), _trap_formula))

        def heavy(ops, g, trap):
            trap()
            time.sleep(self.kernel_s)
            return g

        self.heavy_rule = Rule("HeavyTrapBackward0", (("trap",), heavy), cost=lambda data, params: 1e12)

        class TrappedCube(Function):
            @staticmethod
            def forward(ctx, x, trap):
                ctx.save_for_backward(x)
                ctx.trap = trap
                return ag.tensor(x._data**3)

            @staticmethod
            def backward(ctx, g):
                ctx.trap()
                (x,) = ctx.saved_tensors
                return g * 3 * x * x, None

        class AsyncHalf(Function):
            @staticmethod
            def forward(ctx, x, trap):
                ctx.trap = trap
                return ag.tensor(x._data * 0.5)

            @staticmethod
            async def backward(ctx, g):
                await trio.sleep(0)
                ctx.trap()
                return g * 0.5, None

        self.cube, self.async_half = TrappedCube, AsyncHalf
        self.shared = [self.leaf() for _ in range(n_shared)]
        leaf_trap = self.trap()  # a hook on a shared leaf (its AccumulateGrad runs it in every pass)
        self.shared[0].register_hook(lambda g: leaf_trap())
        self.trunk = self.program(list(self.shared), 4)

    def leaf(self):
        return ag.tensor(self.rng.uniform(-1, 1, size=self.size), requires_grad=True)

    def trap(self, heavy: bool = False) -> Trap:
        trap = Trap(heavy)
        self.traps.append(trap)
        return trap

    def step(self, kind: str, values: list):
        pick = values[self.rng.integers(len(values))]
        other = values[self.rng.integers(len(values))]
        if kind == "tanh":
            return pick.tanh()
        if kind == "sigmoid":
            return pick.sigmoid()
        if kind == "scale":
            return pick * 0.7
        if kind == "add":
            return pick + other
        if kind == "mul":
            return pick * other
        if kind == "sub":
            return pick - other
        if kind == "trap":
            return record(self.trap_rule, pick._data.copy(), (pick,), trap=self.trap())
        if kind == "heavy":
            return record(self.heavy_rule, pick._data.copy(), (pick,), trap=self.trap(heavy=True))
        if kind == "cross":  # through an async_cpu device and back: the gradient crosses devices both ways
            device = f"async_cpu:{self.rng.integers(2)}"
            return ((pick.to(device) * 0.9).tanh() + other.to(device)).to("cpu")
        if kind == "cube":
            return self.cube.apply(pick.tanh(), self.trap())
        if kind == "async":
            return self.async_half.apply(pick, self.trap())
        trap = self.trap()  # "hook", "async_hook": a tensor hook on a fresh node, halving the gradient
        hooked = pick * 1.0

        def halve(g):
            trap()
            return g * 0.5

        async def halve_later(g):
            await trio.sleep(0)
            return halve(g)

        hooked.register_hook(halve if kind == "hook" else halve_later)
        return hooked

    def program(self, values: list, n_steps: int) -> list:
        """`n_steps` random nodes reading earlier values; returns the new values."""
        start = len(values)
        for _ in range(n_steps):
            values.append(self.step(self.kinds[self.rng.integers(len(self.kinds))], values))
        return values[start:]

    def loss(self, n_private: int = 1, n_steps: int = 6):
        """A scalar over the shared leaves, the shared subgraph and `n_private` leaves of its own."""
        private = [self.leaf() for _ in range(n_private)]
        inputs = list(self.shared) + list(self.trunk) + private
        new = self.program(inputs, n_steps)
        total = new[0]
        for v in new[1:]:
            total = total + v
        return total.sum(), private

    def disarm(self) -> None:
        for trap in self.traps:
            trap.disarm()


class Doubled(Function):
    """Doubles its input in place and says so (mark_dirty)."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


@pytest.fixture
def doubled():
    """A custom Function that doubles its input in place, marked dirty, named `Doubled` in PyTorch's messages."""
    return Doubled


@pytest.fixture
def stress_graphs():
    """StressGraphs(seed, ...): random graphs with shared leaves, a shared subgraph and fault injection points."""
    return StressGraphs


@pytest.fixture
def watchdog():
    """`with watchdog(seconds, what):` in an async test: a hang fails the test fast, saying what hung, instead
    of waiting for pytest-timeout."""

    @contextlib.contextmanager
    def guard(seconds: float, what: str):
        try:
            with trio.fail_after(seconds):
                yield
        except trio.TooSlowError:
            pytest.fail(f"{what} did not finish within {seconds} s: a deadlock or a lost wake-up", pytrace=False)

    return guard


@pytest.fixture
def random_leaves():
    """`random_leaves(seed, *shapes, device=None)`: float64 leaves of standard normal values, one per shape."""

    def make(seed, *shapes, device=None):
        rng = np.random.default_rng(seed)
        return [ag.tensor(rng.standard_normal(s), dtype=ag.float64, device=device, requires_grad=True)
                for s in shapes]

    return make


def grad_value(t) -> np.ndarray:
    """A gradient's values (a recorded one's too), or zeros for None."""
    return np.asarray(t.detach().numpy())


@pytest.fixture
def assert_sums():
    """`assert_sums(got, parts)`: `got` equals the sum of the gradient arrays `parts`, within 1e-12 relative to
    the parts' magnitudes (concurrent passes add them in another order than a sequential sum)."""

    def check(got, parts, what: str) -> None:
        expected = np.sum(parts, axis=0)
        scale = np.sum(np.abs(parts), axis=0)
        value = grad_value(got)
        bad = np.abs(value - expected) > 1e-12 * scale + 1e-300
        assert not bad.any(), f"{what}: got {value}, expected {expected} (the sum of {len(parts)} passes)"

    return check


@pytest.fixture
def num_workers():
    """`with num_workers(n):` runs passes with at most n kernels at once (so worker threads are used even on a
    machine with one core), restoring the setting after."""

    @contextlib.contextmanager
    def setting(n: int):
        before = ag.get_num_workers()
        ag.set_num_workers(n)
        try:
            yield
        finally:
            ag.set_num_workers(before)

    return setting


@pytest.fixture
def interleaved_stream_blocks():
    """`await interleaved_stream_blocks(first, second, check)`: task A opens `actorgrad.stream(first)`, task B
    then opens `actorgrad.stream(second)`, A closes its block while B's is open, and B calls `check()` before
    closing its own: the order in which a per-thread current stream goes wrong if blocks restore what they saw."""

    async def run(first, second, check):
        first_open, second_open, first_closed = trio.Event(), trio.Event(), trio.Event()

        async def task_a():
            with ag.stream(first):
                first_open.set()
                await second_open.wait()
            first_closed.set()

        async def task_b():
            await first_open.wait()
            with ag.stream(second):
                second_open.set()
                await first_closed.wait()
                check()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(task_a)
            nursery.start_soon(task_b)

    return run


def _central_jacobian(fn, arrays: list, wrt: int, eps: float = 1e-6) -> np.ndarray:
    def value(shifted):
        args = [ag.tensor(a) for a in arrays]
        args[wrt] = ag.tensor(shifted)
        with ag.no_grad():
            return fn(*args).numpy()

    x = arrays[wrt]
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size).reshape(x.shape)
        step.flat[k] = eps
        columns.append((value(x + step) - value(x - step)) / (2 * eps))
    return np.stack([c.ravel() for c in columns], axis=1).reshape(columns[0].shape + x.shape)


@pytest.fixture
def central_jacobian():
    """`central_jacobian(fn, arrays, wrt)`: d fn(*arrays) / d arrays[wrt] by central differences in float64,
    shaped out.shape + input.shape."""
    return _central_jacobian


class _ModuleAgainstNumpy:
    """Checks a module against a numpy forward pass of its documented formula on the same parameters: `run` gives
    the module's float64 output (and attention weights, when it returns them) and the gradients of
    (output * upstream).sum() for every input and parameter; `expected` the numpy pass's values and the central
    differences of that sum; `assert_matches` compares them (values to rounding, gradients to the differences'
    accuracy). No number comes from torch or from actorgrad."""

    @staticmethod
    def set_parameters(module, seed: int) -> np.random.Generator:
        """Every parameter from a numpy stream, in registration order (PyTorch's too); the stream goes on to give
        the inputs and the upstream gradient."""
        rng = np.random.default_rng(seed)
        with ag.no_grad():
            for parameter in module.parameters():
                parameter.copy_(ag.tensor(rng.standard_normal(parameter.shape) * 0.5))
        return rng

    @classmethod
    def run(cls, module, shapes, masks, seed, **kwargs):
        """The module's results by name, flattened; and the parameters, inputs and upstream gradient it used."""
        module = module.double()
        rng = cls.set_parameters(module, seed)
        inputs = [ag.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
        masks = {name: m if isinstance(m, ag.Tensor) else ag.tensor(m) for name, m in masks.items()}
        result = module(*inputs, **masks, **kwargs)
        output, weights = result if isinstance(result, tuple) else (result, None)
        upstream = rng.standard_normal(output.shape)
        (output * ag.tensor(upstream)).sum().backward()
        got = {"output": output} | ({} if weights is None else {"weights": weights})
        got |= {f"input{i}": x.grad for i, x in enumerate(inputs)} | {n: p.grad for n, p in module.named_parameters()}
        used = {n: p.detach().numpy().copy() for n, p in module.named_parameters()} | {
            f"input{i}": x.detach().numpy().copy() for i, x in enumerate(inputs)}
        return {name: value.detach().numpy().ravel() for name, value in got.items()}, used, upstream

    @staticmethod
    def expected(forward, used, upstream, h: float = 1e-6) -> dict:
        """`forward(used)` gives the output, or (output, weights)."""
        result = forward(used)
        output, weights = result if isinstance(result, tuple) else (result, None)
        expected = {"output": output.ravel()} | ({} if weights is None else {"weights": weights.ravel()})

        def loss(values):
            result = forward(values)
            return ((result[0] if isinstance(result, tuple) else result) * upstream).sum()

        for name, value in used.items():
            grad = np.zeros(value.size)
            for j in range(value.size):
                sums = []
                for sign in (1, -1):
                    moved = value.copy().ravel()
                    moved[j] += sign * h
                    sums.append(loss(used | {name: moved.reshape(value.shape)}))
                grad[j] = (sums[0] - sums[1]) / (2 * h)
            expected[name] = grad
        return expected

    @staticmethod
    def assert_matches(got, expected) -> None:
        assert got.keys() == expected.keys()
        for name, value in got.items():
            exact = name in ("output", "weights")
            tolerance = {"rtol": 1e-12, "atol": 0} if exact else {"rtol": 1e-6, "atol": 1e-8}
            np.testing.assert_allclose(value, expected[name], **tolerance, err_msg=name)


@pytest.fixture
def numpy_check():
    """`_ModuleAgainstNumpy`: run a module, compute the numpy formula's values and central differences, compare."""
    return _ModuleAgainstNumpy


def _numpy_gradient(loss, array: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d loss(array) / d array by central differences, `loss` a numpy function of the array giving a scalar."""
    grad = np.zeros(array.shape)
    for k in range(array.size):
        step = np.zeros(array.shape)
        step.flat[k] = h
        grad.flat[k] = (loss(array + step) - loss(array - step)) / (2 * h)
    return grad


@pytest.fixture
def numpy_gradient():
    """`numpy_gradient(loss, array, h=1e-6)`: the central differences of a numpy scalar function, shaped as `array`:
    gradients from an independent formula, with no actorgrad in the loop."""
    return _numpy_gradient


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


class _NumpyRecurrence:
    """PyTorch's documented RNN (tanh, relu), LSTM (with projections) and GRU equations in numpy, on parameter
    arrays named as in the modules' state dicts."""

    @staticmethod
    def step(mode: str, x, state, p) -> tuple:
        """One step from `state` (h,) or (h, c); `p` holds one (layer, direction)'s arrays, biases absent as zeros."""
        gi = x @ p["weight_ih"].T + p.get("bias_ih", 0)
        gh = state[0] @ p["weight_hh"].T + p.get("bias_hh", 0)
        if mode == "RNN_TANH":
            return (np.tanh(gi + gh),)
        if mode == "RNN_RELU":
            return (np.maximum(gi + gh, 0),)
        if mode == "GRU":
            (i_r, i_z, i_n), (h_r, h_z, h_n) = np.split(gi, 3, -1), np.split(gh, 3, -1)
            r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
            n = np.tanh(i_n + r * h_n)
            return ((1 - z) * n + z * state[0],)
        i, f, g, o = np.split(gi + gh, 4, -1)
        c = _sigmoid(f) * state[1] + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return (h @ p["weight_hr"].T if "weight_hr" in p else h), c

    @classmethod
    def layers(cls, mode: str, params: dict, x, states, num_layers: int, directions: int) -> tuple:
        """The stacked layers over x of shape (seq, batch, feature) from `states`, each (layers * directions,
        batch, size): the output (seq, batch, directions * size) and the final states, stacked as `states`."""
        finals = []
        for layer_index in range(num_layers):
            outputs = []
            for direction in range(directions):
                suffix = f"_l{layer_index}" + ("_reverse" if direction else "")
                p = {name[:-len(suffix)]: value for name, value in params.items() if name.endswith(suffix)}
                state = tuple(s[layer_index * directions + direction] for s in states)
                out = []
                for t in reversed(range(len(x))) if direction else range(len(x)):
                    state = cls.step(mode, x[t], state, p)
                    out.append(state[0])
                outputs.append(np.stack(out[::-1] if direction else out))
                finals.append(state)
            x = np.concatenate(outputs, -1)
        return x, tuple(np.stack([f[k] for f in finals]) for k in range(len(states)))


@pytest.fixture
def numpy_recurrence():
    """`_NumpyRecurrence`: `step(mode, x, state, p)` and `layers(mode, params, x, states, num_layers, directions)`,
    modes "RNN_TANH", "RNN_RELU", "LSTM", "GRU"."""
    return _NumpyRecurrence
