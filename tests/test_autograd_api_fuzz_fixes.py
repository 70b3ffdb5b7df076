"""The autograd attributes of a tensor, checked as PyTorch checks them, found by a generated comparison with
PyTorch: `.grad` assignment refuses the tensor itself and a wrong dtype before a wrong size, and the requires_grad
flag takes only a bool (a truthy 1 or a None is refused, not read as a flag)."""

import numpy as np
import pytest

import actorgrad as ag


def leaf(device=None):
    x = ag.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    return x if device is None else x.detach().to(device).requires_grad_()


def test_grad_of_wrong_dtype_and_size_is_refused_for_its_dtype():
    x = leaf()
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype 'int16' to a tensor with "
                                           "grad_dtype 'float32'"):
        x.grad = ag.zeros(3, 2, dtype=ag.int16)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size '\[3, 2\]' to a tensor of "
                                           r"size '\[2, 3\]'"):
        x.grad = ag.zeros(3, 2)
    assert x.grad is None


def test_a_tensor_is_refused_as_its_own_grad_and_keeps_its_values():
    x = leaf()
    with pytest.raises(RuntimeError, match="^can't assign Variable as its own grad$"):
        x.grad = x
    assert x.grad is None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.detach().numpy(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    x.grad = x.detach()  # another tensor over the same memory is a gradient like any other
    assert x.grad is not x


@pytest.mark.parametrize("value", [1, 0, None, 1.0, "yes", np.bool_(True)])
def test_requires_grad_setter_takes_only_a_bool(value):
    x = ag.ones(2)
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        x.requires_grad = value
    assert x.requires_grad is False
    nonleaf = leaf() * 2  # the type is checked before the leaf
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        nonleaf.requires_grad = value


@pytest.mark.parametrize(("value", "name"), [(1, "int"), (None, "NoneType"), (np.bool_(True), "numpy.bool")])
def test_requires_grad_method_takes_only_a_bool(value, name):
    x = ag.ones(2)
    with pytest.raises(TypeError, match=f"^requires_grad_\\(\\): argument 'requires_grad' must be bool, not {name}$"):
        x.requires_grad_(value)
    assert x.requires_grad is False
    assert x.requires_grad_(True) is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad


def test_bools_still_set_the_flag_and_backward_fills_grad():
    x = ag.ones(3)
    x.requires_grad = True
    (x * ag.tensor([2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0, 4.0])
    y = x.detach().requires_grad_()
    assert y.requires_grad and y.is_leaf


@pytest.mark.gpu
def test_the_checks_on_cuda(cupy):
    x = leaf("cuda:0")
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype 'float64'"):
        x.grad = ag.zeros(3, 2, dtype=ag.float64, device="cuda:0")
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        x.requires_grad = 1
    with pytest.raises(TypeError, match="must be bool, not int$"):
        x.requires_grad_(0)
    assert x.requires_grad and x.grad is None
