"""The PyTorch module paths that only gather names kept elsewhere: `actorgrad.utils.hooks` and
`actorgrad.autograd.grad_mode` hand out the very objects the rest of actorgrad uses."""

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import grad_mode
from actorgrad.utils.hooks import RemovableHandle


def test_removable_handle_is_what_hooks_return():
    layer = nn.Linear(2, 2)
    calls = []
    handle = layer.register_forward_pre_hook(lambda module, inputs: calls.append(1))
    assert isinstance(handle, RemovableHandle)
    layer(ag.ones(1, 2))
    handle.remove()
    layer(ag.ones(1, 2))
    assert calls == [1]
    x = ag.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g * 2) as tensor_handle:
        assert isinstance(tensor_handle, RemovableHandle)
        x.sum().backward()
    x.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_mode_module_gathers_the_grad_modes():
    assert grad_mode.no_grad is ag.no_grad and grad_mode.enable_grad is ag.enable_grad
    assert grad_mode.set_grad_enabled is ag.set_grad_enabled and grad_mode.inference_mode is ag.inference_mode
    assert grad_mode.set_multithreading_enabled is ag.autograd.set_multithreading_enabled
    assert ag.autograd.grad_mode is grad_mode
    with grad_mode.no_grad():
        assert not (ag.ones(1, requires_grad=True) * 2).requires_grad
