"""The default floating dtype: `get_default_dtype` / `set_default_dtype`, honoured by the creation functions that
default to a float and by the promotion of Python floats and floating ops on integer tensors."""

import numpy as np
import pytest

import actorgrad as ag


@pytest.fixture
def float64_default():
    """The default set to float64 for one test, and float32 again after it, whatever the test does."""
    ag.set_default_dtype(ag.float64)
    try:
        yield
    finally:
        ag.set_default_dtype(ag.float32)


def test_the_default_is_float32():
    assert ag.get_default_dtype() == ag.float32
    assert ag.tensor([1.5]).dtype == ag.zeros(2).dtype == ag.float32


MADE = {
    "tensor": lambda: ag.tensor([1.5, 2]),
    "tensor of a number": lambda: ag.tensor(0.1),
    "zeros": lambda: ag.zeros(2),
    "ones": lambda: ag.ones(2, 3),
    "empty": lambda: ag.empty(1),
    "full": lambda: ag.full((2,), 0.1),
    "eye": lambda: ag.eye(2),
    "arange": lambda: ag.arange(0.5, 2),
    "linspace": lambda: ag.linspace(0, 1, 5),
    "logspace": lambda: ag.logspace(0, 1, 3),
    "rand": lambda: ag.rand(3),
    "randn": lambda: ag.randn(3),
    "int times float": lambda: ag.arange(3) * 0.1,
    "int divided": lambda: ag.arange(3) / 3,
    "sqrt of int": lambda: ag.arange(3).sqrt(),
    "Linear's weight": lambda: ag.nn.Linear(2, 3).weight,
    "empty Parameter": lambda: ag.nn.Parameter(),
    "rfft of ints": lambda: ag.fft.irfft(ag.fft.rfft(ag.arange(4))),
    "trapezoid of ints": lambda: ag.trapezoid(ag.arange(3)),
    "block_diag of nothing": lambda: ag.block_diag(),
    "Normal of floats": lambda: ag.distributions.Normal(0.0, 1.0).sample(),
}


@pytest.mark.parametrize("name", list(MADE))
def test_float64_default_is_honoured(name, float64_default):
    made = MADE[name]()
    assert made.dtype == ag.float64
    ag.set_default_dtype(ag.float32)
    assert MADE[name]().dtype == ag.float32


def test_values_are_the_float64_ones(float64_default):
    np.testing.assert_array_equal(ag.tensor([0.1, 1 / 3]).numpy(), np.array([0.1, 1 / 3]))
    np.testing.assert_array_equal((ag.arange(3) * 0.1).numpy(), np.arange(3) * 0.1)


def test_explicit_and_inferred_dtypes_still_win(float64_default):
    assert ag.zeros(2, dtype=ag.float32).dtype == ag.float32
    assert ag.arange(3).dtype == ag.int64 and ag.full((1,), 2).dtype == ag.int64
    x32 = ag.tensor([1.0], dtype=ag.float32)
    assert (x32 * 0.5).dtype == ag.float32  # a Python number never outranks a floating tensor
    assert ag.tensor(np.array([1.0], np.float32)).dtype == ag.float32


def test_repr_names_dtypes_other_than_the_default(float64_default):
    assert repr(ag.tensor([1.5])) == "tensor([1.5000])"
    assert repr(ag.tensor([1.5], dtype=ag.float32)) == "tensor([1.5000], dtype=actorgrad.float32)"


def test_gradients_flow_in_the_default_dtype(float64_default):
    x = ag.tensor([0.5, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == ag.float64
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 4.0])


@pytest.mark.parametrize(("value", "message"), [
    (ag.int64, "only floating-point types are supported as the default type"),
    (ag.bool_, "only floating-point types are supported as the default type"),
    ("float64", "invalid dtype object: only floating-point types are supported as the default type"),
    (None, "invalid dtype object: only floating-point types are supported as the default type"),
    (ag.float16, "only float32 and float64 are supported as the default type in actorgrad"),
])
def test_other_dtypes_are_refused_and_leave_the_default(value, message):
    with pytest.raises(TypeError, match=message):
        ag.set_default_dtype(value)
    assert ag.get_default_dtype() == ag.float32


def test_numpy_scalar_types_name_a_dtype():
    try:
        ag.set_default_dtype(np.float64)
        assert ag.get_default_dtype() == ag.float64
    finally:
        ag.set_default_dtype(ag.float32)


@pytest.mark.gpu
def test_cuda_creation_takes_the_default(float64_default, cupy):
    for made in (ag.zeros(2, device="cuda"), ag.rand(2, device="cuda"), ag.arange(0.0, 1.0, 0.5, device="cuda"),
                 ag.arange(3, device="cuda") * 0.5):
        assert made.dtype == ag.float64 and made.device.type == "cuda"


@pytest.mark.parametrize("optimizer", [ag.optim.Adam, ag.optim.NAdam, ag.optim.ASGD, ag.optim.RMSprop])
def test_optimizer_counters_take_the_default_dtype(optimizer, float64_default):
    """PyTorch keeps step counts (and ASGD's eta and mu, NAdam's mu product) in the default float dtype."""
    p = ag.nn.Parameter(ag.ones(2))
    opt = optimizer([p])
    p.grad = ag.ones(2)
    opt.step()
    counters = {name: value.dtype for name, value in opt.state[p].items() if value.ndim == 0}
    assert counters and set(counters.values()) == {ag.float64}, counters
