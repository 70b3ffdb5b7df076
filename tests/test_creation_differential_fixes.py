"""Creation arguments PyTorch code passes that actorgrad refused or answered differently: `layout` and `pin_memory`
on every creation function, a one-element integer tensor as eye's size, numpy arrays cast to a narrower dtype
without numpy's overflow warnings, a nested size in a size tuple, and the warnings of `tensor([loss_a, loss_b])` and
of as_tensor / from_numpy given a read-only array."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings

# Each creation function with the arguments of a small call, and the shape it makes.
CALLS = [
    (ag.zeros, (2, 3), {}, (2, 3)),
    (ag.ones, ((2, 3),), {}, (2, 3)),
    (ag.empty, (4,), {}, (4,)),
    (ag.full, ((2,), 1.5), {}, (2,)),
    (ag.eye, (2, 3), {}, (2, 3)),
    (ag.arange, (0, 1, 0.25), {}, (4,)),
    (ag.linspace, (0, 1, 5), {}, (5,)),
    (ag.logspace, (0, 1, 5), {}, (5,)),
    (ag.zeros_like, (np.zeros((2, 3)),), {}, (2, 3)),
    (ag.ones_like, (np.zeros(3),), {}, (3,)),
    (ag.full_like, (np.zeros(3), 2.0), {}, (3,)),
    (ag.empty_like, (np.zeros(3),), {}, (3,)),
    (ag.rand, (2, 3), {}, (2, 3)),
    (ag.randn, (3,), {}, (3,)),
    (ag.randint, (5, (4,)), {}, (4,)),
    (ag.randint_like, (np.zeros(3), 5), {}, (3,)),
    (ag.rand_like, (np.zeros(3),), {}, (3,)),
    (ag.randn_like, (np.zeros(3),), {}, (3,)),
    (ag.randperm, (6,), {}, (6,)),
]
IDS = [call[0].__name__ for call in CALLS]


def _args(args: tuple) -> tuple:
    """A numpy array in a call stands for a float32 tensor of its shape (made per test: tensors are not shared)."""
    return tuple(ag.zeros(a.shape) if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize(("fn", "args", "kwargs", "shape"), CALLS, ids=IDS)
def test_layout_strided_and_pin_memory_are_accepted(fn, args, kwargs, shape):
    plain = fn(*_args(args), **kwargs)
    given = fn(*_args(args), layout=ag.strided, pin_memory=False, **kwargs)
    assert given.shape == plain.shape == shape
    assert given.dtype == plain.dtype
    assert given.layout is ag.strided and not given.is_pinned()
    assert fn(*_args(args), layout=None, pin_memory=None, **kwargs).shape == shape


@pytest.mark.parametrize(("fn", "args", "kwargs", "shape"), CALLS, ids=IDS)
def test_a_layout_or_pin_memory_of_the_wrong_type_is_a_type_error(fn, args, kwargs, shape):
    with pytest.raises(TypeError, match=rf"^{fn.__name__}\(\): argument 'layout' must be torch.layout, not str$"):
        fn(*_args(args), layout="strided", **kwargs)
    with pytest.raises(TypeError, match=rf"^{fn.__name__}\(\): argument 'pin_memory' must be bool, not int$"):
        fn(*_args(args), pin_memory=1, **kwargs)


def test_deterministic_creations_with_layout_hold_the_same_values():
    assert np.array_equal(ag.full((2,), 1.5, layout=ag.strided).numpy(), np.full(2, 1.5, np.float32))
    assert np.array_equal(ag.eye(2, 3, pin_memory=False).numpy(), np.eye(2, 3, dtype=np.float32))
    assert np.array_equal(ag.arange(0, 1, 0.25, layout=ag.strided).numpy(), np.arange(4, dtype=np.float32) / 4)


def test_tensor_takes_pin_memory_but_not_layout():
    t = ag.tensor([1.0, 2.0], pin_memory=False)
    assert np.array_equal(t.numpy(), np.array([1.0, 2.0], np.float32))
    with pytest.raises(TypeError, match=r"^tensor\(\): argument 'pin_memory' must be bool, not int$"):
        ag.tensor([1.0], pin_memory=1)
    with pytest.raises(TypeError, match="layout"):
        ag.tensor([1.0], layout=ag.strided)


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_methods_take_layout_and_pin_memory(name):
    base = ag.zeros(2, dtype=ag.float64)
    out = getattr(base, name)((3, 2), layout=ag.strided, pin_memory=False)
    assert out.shape == (3, 2) and out.dtype == ag.float64
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'layout' must be torch.layout, not int$"):
        getattr(base, name)(3, layout=3)


def test_new_full_takes_layout_and_pin_memory():
    out = ag.zeros(2, dtype=ag.int32).new_full((3,), 7, layout=ag.strided, pin_memory=False)
    assert out.dtype == ag.int32 and np.array_equal(out.numpy(), np.full(3, 7, np.int32))


def test_eye_reads_a_one_element_integer_tensor_as_its_size():
    assert np.array_equal(ag.eye(ag.tensor(3)).numpy(), np.eye(3, dtype=np.float32))
    assert np.array_equal(ag.eye(2, ag.tensor([3])).numpy(), np.eye(2, 3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"^eye\(\): argument 'n' \(position 1\) must be int, not Tensor$"):
        ag.eye(ag.tensor(3.0))
    with pytest.raises(TypeError, match=r"^eye\(\): argument 'n' \(position 1\) must be int, not Tensor$"):
        ag.eye(ag.tensor([3, 4]))


def test_numpy_arrays_cast_narrower_without_numpy_warnings():
    big = np.array([1e40, -1e40, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_float32 = ag.tensor(big, dtype=ag.float32)
        ag.tensor(np.array([np.nan, 1e30, 2.0]), dtype=ag.int32)
        as_half = ag.zeros(1).new_tensor(big, dtype=ag.float16)
    assert np.array_equal(as_float32.numpy(), np.array([np.inf, -np.inf, 1.0], np.float32))
    assert np.array_equal(as_half.numpy(), np.array([np.inf, -np.inf, 1.0], np.float16))


@pytest.mark.parametrize("size", [(2, (3,)), [2, [3, 4]]])
def test_a_nested_size_in_a_size_tuple_is_a_type_error(size):
    kind = type(size[1]).__name__
    with pytest.raises(TypeError, match=rf"^zeros\(\): argument 'size' failed to unpack the object at pos 2 with "
                                        rf"error \"type must be tuple of ints,but got {kind}\"$"):
        ag.zeros(size)


def test_tensor_of_tensors_requiring_grad_warns_once_that_their_values_leave_the_graph(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch warns once per process
    a = ag.tensor(1.5, requires_grad=True)
    with pytest.warns(UserWarning, match=r"^Converting a tensor with requires_grad=True to a scalar may lead to "
                                         r"unexpected behavior.\nConsider using tensor.detach\(\) first.$") as seen:
        out = ag.tensor([a * 2, ag.tensor(2.0), a])
    assert len(seen) == 1
    assert np.array_equal(out.numpy(), np.array([3.0, 2.0, 1.5], np.float32)) and not out.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.tensor([a, a])  # once per process
        monkeypatch.setattr(user_warnings, "_warned_once", set())
        ag.tensor([ag.tensor(1.0), ag.tensor(2.0)])  # nothing requires grad: nothing to warn about


@pytest.mark.parametrize("convert", [ag.as_tensor, ag.from_numpy, lambda a: ag.as_tensor(a, dtype=ag.float32)])
def test_a_read_only_array_warns_once_from_as_tensor_and_from_numpy(monkeypatch, convert):
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # PyTorch warns once per process
    readonly = np.array([1.0, 2.0])
    readonly.setflags(write=False)
    with pytest.warns(UserWarning, match=r"^The given NumPy array is not writable, .* This type of warning will be "
                                         r"suppressed for the rest of this program.$") as seen:
        out = convert(readonly)
    assert len(seen) == 1 and np.array_equal(out.numpy(), readonly)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.from_numpy(readonly)
        ag.as_tensor(readonly)
        monkeypatch.setattr(user_warnings, "_warned_once", set())
        ag.tensor(readonly)  # a copy: nothing to warn about


@pytest.mark.gpu
def test_layout_and_pin_memory_on_cuda(cupy):
    out = ag.full((2,), 2.5, device="cuda:0", layout=ag.strided, pin_memory=False)
    assert out.device.type == "cuda" and np.array_equal(out.cpu().numpy(), np.full(2, 2.5, np.float32))
    like = ag.zeros_like(out, layout=ag.strided, pin_memory=False)
    assert like.device.type == "cuda" and np.array_equal(like.cpu().numpy(), np.zeros(2, np.float32))
    new = out.new_ones(3, layout=ag.strided, pin_memory=False)
    assert new.device.type == "cuda" and np.array_equal(new.cpu().numpy(), np.ones(3, np.float32))
    eye = ag.eye(ag.tensor(2), device="cuda:0", pin_memory=False)
    assert eye.device.type == "cuda" and np.array_equal(eye.cpu().numpy(), np.eye(2, dtype=np.float32))
