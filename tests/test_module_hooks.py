"""nn.Module hooks as PyTorch 2.13's: forward pre-hooks and hooks, full backward pre-hooks and hooks (with the
gradients PyTorch gives them, computed by hand in numpy), the deprecated backward hooks, global hooks,
handles, and the errors and warnings."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn import module_hooks
from actorgrad.nn.module import Module


def _close(t, expected):
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(expected, dtype=np.float64), rtol=1e-9, atol=1e-12)


class Two(nn.Module):
    def forward(self, a, b):
        return a * b


class Multi(nn.Module):
    def forward(self, a, b, c):
        return a * b, 3, b.detach() * 2, a.sum()


def _two(hook=None, pre=None, b_requires_grad=False):
    """Two's product of a (requires grad) and b, summed and run backward with the given hooks: (a, b)."""
    module = Two()
    if hook is not None:
        module.register_full_backward_hook(hook)
    if pre is not None:
        module.register_full_backward_pre_hook(pre)
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = ag.tensor([3.0, 4.0], requires_grad=b_requires_grad)
    module(a, b).sum().backward()
    return a, b


# -- forward hooks -----------------------------------------------------------------------------------------------
def test_forward_hooks_fire_in_order_with_prepend_and_globals(monkeypatch):
    monkeypatch.setattr(Module, "_with_hooks", False)
    monkeypatch.setattr(module_hooks, "_global_forward_pre_hooks", type(module_hooks._global_forward_pre_hooks)())
    monkeypatch.setattr(module_hooks, "_global_forward_hooks", type(module_hooks._global_forward_hooks)())
    calls = []

    class Probe(nn.Module):
        def forward(self, x):
            calls.append("forward")
            return x

    probe = Probe()
    probe.register_forward_pre_hook(lambda m, args: calls.append("pre1"))
    probe.register_forward_pre_hook(lambda m, args: calls.append("pre0"), prepend=True)
    probe.register_forward_hook(lambda m, args, out: calls.append("hook1"))
    probe.register_forward_hook(lambda m, args, out: calls.append("hook0"), prepend=True)
    with module_hooks.register_module_forward_pre_hook(lambda m, args: calls.append("global pre")), \
            module_hooks.register_module_forward_hook(lambda m, args, out: calls.append("global hook")):
        probe(ag.tensor(1.0))
        assert calls == ["global pre", "pre0", "pre1", "forward", "global hook", "hook0", "hook1"]
        calls.clear()
        nn.Identity()(ag.tensor(1.0))  # global hooks fire on every module
        assert calls == ["global pre", "global hook"]
    calls.clear()
    probe(ag.tensor(1.0))
    assert calls == ["pre0", "pre1", "forward", "hook0", "hook1"]


def test_forward_pre_hook_replaces_args_and_kwargs():
    lin = nn.Linear(2, 1)
    seen = []
    lin.register_forward_pre_hook(lambda m, args: args[0] * 0)  # a single value stands for a 1-tuple
    lin.register_forward_pre_hook(lambda m, args: seen.append(args))
    out = lin(ag.ones(2))
    assert isinstance(seen[0], tuple) and seen[0][0].tolist() == [0.0, 0.0]
    assert out.tolist() == lin.bias.tolist()

    class Scale(nn.Module):
        def forward(self, x, *, factor=1.0):
            return x * factor

    scale = Scale()
    scale.register_forward_pre_hook(lambda m, args, kwargs: (args, {"factor": kwargs["factor"] * 10}),
                                    with_kwargs=True)
    assert scale(ag.tensor(2.0), factor=3.0).item() == 60.0
    scale.register_forward_pre_hook(lambda m, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"^forward pre-hook must return None or a tuple of \(new_args, "
                                           r"new_kwargs\), but got 5\.$"):
        scale(ag.tensor(2.0), factor=3.0)


def test_forward_hook_replaces_output_and_sees_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    scale = Scale()
    seen = []
    scale.register_forward_hook(lambda m, args, kwargs, out: seen.append((args, kwargs, out.item())),
                                with_kwargs=True)
    scale.register_forward_hook(lambda m, args, out: out + 1)
    assert scale(ag.tensor(2.0), factor=3.0).item() == 7.0
    assert seen[0][1] == {"factor": 3.0} and seen[0][2] == 6.0


def test_always_call_forward_hook_runs_when_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("broken forward")

    broken = Broken()
    calls = []
    broken.register_forward_hook(lambda m, args, out: calls.append(("always", out)), always_call=True)
    broken.register_forward_hook(lambda m, args, out: calls.append("plain"))
    with pytest.raises(ValueError, match="broken forward"):
        broken(ag.tensor(1.0))
    assert calls == [("always", None)]

    def failing(m, args, out):
        raise KeyError("in hook")

    broken.register_forward_hook(failing, always_call=True)
    with pytest.warns(UserWarning, match="^module forward hook with ``always_call=True`` raised an exception that "
                                         "was silenced as another error was raised in forward: 'in hook'$"):
        with pytest.raises(ValueError, match="broken forward"):
            broken(ag.tensor(1.0))


def test_handle_removes_hook_and_its_flags():
    lin = nn.Linear(2, 1)
    calls = []
    handle = lin.register_forward_hook(lambda m, a, k, out: calls.append(1), with_kwargs=True, always_call=True)
    assert list(lin._forward_hooks) == [handle.id]
    assert handle.id in lin._forward_hooks_with_kwargs and handle.id in lin._forward_hooks_always_called
    handle.remove()
    assert not lin._forward_hooks and not lin._forward_hooks_with_kwargs and not lin._forward_hooks_always_called
    with lin.register_forward_pre_hook(lambda m, args: calls.append(2)):
        lin(ag.ones(2))
    lin(ag.ones(2))
    assert calls == [2]
    handle.remove()  # a second remove does nothing


# -- full backward hooks -------------------------------------------------------------------------------------------
def _linear():
    lin = nn.Linear(3, 2).double()
    with ag.no_grad():
        lin.weight.copy_(ag.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=ag.float64))
        lin.bias.copy_(ag.tensor([0.01, -0.02], dtype=ag.float64))
    return lin


def test_linear_full_backward_hooks_see_torchs_gradients():
    lin = _linear()
    log = []
    lin.register_full_backward_hook(lambda m, gi, go: log.append(("full", m, gi, go)))
    lin.register_full_backward_pre_hook(lambda m, go: log.append(("pre", m, go)))
    x = ag.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=ag.float64, requires_grad=True)
    y = lin(x)
    assert y.grad_fn.name() == "BackwardHookFunctionBackward"
    (y * ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ag.float64)).sum().backward()
    (pre, pre_module, (go,)), (full, full_module, (gi,), (go2,)) = log
    assert (pre, full) == ("pre", "full") and pre_module is lin and full_module is lin
    _close(go, [[1.0, 2.0], [3.0, 4.0]])
    _close(go2, [[1.0, 2.0], [3.0, 4.0]])
    expected = np.array([[1.0, 2.0], [3.0, 4.0]]) @ lin.weight.detach().numpy()  # d(go . (x W^T + b))/dx = go W
    _close(gi, expected)
    _close(x.grad, expected)


def test_sequential_hooks_fire_outermost_pre_first_and_innermost_hook_first():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)).double()
    with ag.no_grad():
        seq[0].weight.copy_(ag.tensor([[0.5, -0.25], [0.75, 0.1], [-0.3, 0.2]], dtype=ag.float64))
        seq[0].bias.copy_(ag.tensor([0.1, 0.0, -0.1], dtype=ag.float64))
        seq[2].weight.copy_(ag.tensor([[1.0, -2.0, 0.5]], dtype=ag.float64))
        seq[2].bias.copy_(ag.tensor([0.3], dtype=ag.float64))
    log = []
    for name, m in seq.named_modules():
        m.register_full_backward_pre_hook(lambda mod, go, name=name: log.append(("pre", name or "seq", go)))
        m.register_full_backward_hook(lambda mod, gi, go, name=name: log.append(("full", name or "seq", gi, go)))
    x = ag.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=ag.float64, requires_grad=True)
    seq(x).sum().backward()
    assert [entry[:2] for entry in log] == [
        ("pre", "seq"), ("pre", "2"), ("full", "2"), ("pre", "1"), ("full", "1"), ("pre", "0"), ("full", "0"),
        ("full", "seq"),
    ]
    w0, b0, w2 = (t.detach().numpy() for t in (seq[0].weight, seq[0].bias, seq[2].weight))
    tanh_grad = np.repeat(w2, 2, 0) * (1 - np.tanh(x.detach().numpy() @ w0.T + b0) ** 2)  # the chain rule by hand
    x_grad = tanh_grad @ w0
    _close(log[2][2][0], [[1.0, -2.0, 0.5], [1.0, -2.0, 0.5]])
    _close(log[4][2][0], tanh_grad)
    _close(log[6][2][0], x_grad)
    _close(log[7][2][0], x_grad)
    _close(log[7][3][0], [[1.0], [1.0]])


def test_inputs_without_grad_get_zeros_and_non_tensors_none():
    module = Multi()
    log = []
    module.register_full_backward_pre_hook(lambda m, go: log.append(go))
    module.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    out = module(a, ag.tensor([3.0, 4.0]), 7)
    assert [getattr(t, "requires_grad", None) for t in out] == [True, None, False, True]
    out[0].sum().backward()
    pre_go, (gi, go) = log
    # torch 2.13: grad_output None for the non-tensor, the output without grad and the one that got none
    assert [g is None for g in pre_go] == [False, True, True, True]
    _close(pre_go[0], [1.0, 1.0])
    assert go is pre_go
    _close(gi[0], [3.0, 4.0])
    _close(gi[1], [0.0, 0.0])  # b does not require grad: PyTorch's identity hands its hooks zeros
    assert gi[2] is None
    _close(a.grad, [3.0, 4.0])


def test_input_the_forward_ignores_gets_zeros():
    class Ignore(nn.Module):
        def forward(self, a, b):
            return a * 2

    module = Ignore()
    seen = []
    module.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = ag.tensor([1.0, 2.0], requires_grad=True)
    module(a, b).sum().backward()
    _close(seen[0][0], [2.0, 2.0])
    _close(seen[0][1], [0.0, 0.0])
    _close(b.grad, [0.0, 0.0])  # as in torch 2.13, the zeros reach b


def test_tuple_output_with_a_non_tensor():
    class WithTag(nn.Module):
        def forward(self, a):
            return a * 2, "tag", a * a

    module = WithTag()
    seen = []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a = ag.tensor([1.0, 3.0], requires_grad=True)
    out = module(a)
    assert out[1] == "tag"
    (out[0] + out[2]).sum().backward()
    (gi,), go = seen[0]
    _close(gi, [4.0, 8.0])
    assert go[1] is None
    _close(go[0], [1.0, 1.0])
    _close(go[2], [1.0, 1.0])


def test_hooks_replace_gradients():
    a, _ = _two(hook=lambda m, gi, go: tuple(g * 2 for g in gi))
    _close(a.grad, [6.0, 8.0])
    a, _ = _two(hook=lambda m, gi, go: [gi[0] * 2, None])  # any sequence of the right length
    _close(a.grad, [6.0, 8.0])
    a, _ = _two(pre=lambda m, go: (go[0] * 10,))
    _close(a.grad, [30.0, 40.0])
    a, b = _two(hook=lambda m, gi, go: (None, None), b_requires_grad=True)
    assert a.grad is None and b.grad is None


def test_pre_hook_may_drop_or_fill_output_gradients():
    class Pair(nn.Module):
        def forward(self, a):
            return a * 2, a * 3

    def run(pre):
        module = Pair()
        module.register_full_backward_pre_hook(pre)
        a = ag.tensor([1.0, 2.0], requires_grad=True)
        module(a)[0].sum().backward()
        return a.grad

    _close(run(lambda m, go: (go[0], ag.ones(2))), [5.0, 5.0])  # a gradient where there was none: allowed
    _close(run(lambda m, go: (None, None)), [0.0, 0.0])  # no gradient reaches the input's identity: zeros


@pytest.mark.parametrize(
    ("hook", "pre", "error", "message"),
    [
        (lambda m, gi, go: (gi[0] * 2,), None, RuntimeError,
         "Backward hook returned an invalid number of grad_input, got 1, but expected 2"),
        (lambda m, gi, go: (ag.ones(3), None), None, RuntimeError, "hook 'hook' has changed the size of value"),
        (lambda m, gi, go: gi[0], None, RuntimeError, "hook 'hook' has changed the size of value"),
        (lambda m, gi, go: 5, None, TypeError, "object of type 'int' has no len()"),
        (lambda m, gi, go: ("x", None), None, TypeError, "expected Variable, but hook returned 'str'"),
        (lambda m, gi, go: (gi[0].double(), None), None, RuntimeError,
         "hook 'hook' has changed the type of value (was actorgrad.FloatTensor got actorgrad.DoubleTensor)"),
        (None, lambda m, go: (go[0], 1), RuntimeError,
         "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
        (None, lambda m, go: go[0] * 10, RuntimeError,
         "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
        (None, lambda m, go: (ag.ones(3),), RuntimeError, "hook 'hook' has changed the size of value"),
    ],
)
def test_bad_hook_results_raise_torchs_errors(hook, pre, error, message):
    a = None
    with pytest.raises(error) as info:
        a, _ = _two(hook=hook, pre=pre)
    assert str(info.value) == message
    assert a is None


def test_no_input_requiring_grad_fires_the_hooks_with_the_outputs_gradients():
    lin = _linear()
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    with pytest.warns(UserWarning, match="^Full backward hook is firing when gradients are computed with respect "
                                         "to module outputs since no inputs require gradients"):
        lin(ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64)).sum().backward()
    (gi, (go,)), = seen
    assert gi == (None,)
    _close(go, [[1.0, 1.0]])
    _close(lin.bias.grad, [1.0, 1.0])

    lin.register_full_backward_hook(lambda m, gi, go: (ag.ones(1, 3),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients."):
            lin(ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64)).sum().backward()


def test_backward_hooks_not_set_up_without_grad():
    lin = _linear()
    calls = []
    lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    x = ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    with ag.no_grad():
        y = lin(x)
    assert not y.requires_grad and y.grad_fn is None and not calls


def test_removed_backward_hooks_no_longer_fire():
    lin = _linear()
    calls = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: calls.append("full"))
    pre = lin.register_full_backward_pre_hook(lambda m, go: calls.append("pre"))
    x = ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    y = lin(x)  # set up with the hooks as they are at the call
    handle.remove()
    pre.remove()
    y.sum().backward()
    assert calls == ["pre", "full"]
    calls.clear()
    lin(x).sum().backward()
    assert calls == [] and lin(x).grad_fn.name() == "AddmmBackward0"


def test_backward_hook_order_with_prepend():
    lin = _linear()
    calls = []
    lin.register_full_backward_hook(lambda m, gi, go: calls.append("full1"))
    lin.register_full_backward_hook(lambda m, gi, go: calls.append("full0"), prepend=True)
    lin.register_full_backward_pre_hook(lambda m, go: calls.append("pre1"))
    lin.register_full_backward_pre_hook(lambda m, go: calls.append("pre0"), prepend=True)
    lin(ag.ones(1, 3, dtype=ag.float64, requires_grad=True)).sum().backward()
    assert calls == ["pre0", "pre1", "full0", "full1"]


async def test_full_backward_hooks_in_an_awaited_pass():
    lin = _linear()
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi[0]))
    x = ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    await ag.backward(lin(x).sum())
    _close(seen[0], [[0.5, 0.3, -0.3]])
    _close(x.grad, [[0.5, 0.3, -0.3]])


def test_inplace_change_of_an_output_or_input_is_refused_at_the_change():
    message = ("^Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created "
               "inside a custom Function")
    lin = _linear()
    lin.register_full_backward_hook(lambda m, gi, go: None)
    x = ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    y = lin(x)
    with pytest.raises(RuntimeError, match=message):
        y.add_(1)

    relu = nn.ReLU(inplace=True)
    relu.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match=message):
        relu(x * 1)


def test_inplace_change_of_one_of_several_inputs_names_multiple_views():
    class Scale(nn.Module):
        def forward(self, a, b):
            a.mul_(2)
            return a * b

    module = Scale()
    module.register_full_backward_hook(lambda *args: None)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^Output 0 of BackwardHookFunction is a view and is being modified "
                                           "inplace. This view is the output of a function that returns multiple "
                                           "views."):
        module(x * 1, x * 1)
    a = ag.tensor([1.0, 2.0])
    _close(module(a, x * 1), [2.0, 8.0])  # an input that requires no grad may change, as in PyTorch


def test_output_changed_in_no_grad_mode_is_refused_at_backward():
    lin = _linear()
    lin.register_full_backward_hook(lambda m, gi, go: None)
    y = lin(ag.tensor([[1.0, 2.0, 3.0]], dtype=ag.float64, requires_grad=True))
    with ag.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="^Output 0 of BackwardHookFunction is a view and its base or another "
                                           "view of its base has been modified inplace. This view was created "
                                           "inside a custom Function"):
        y.sum().backward()


def test_output_that_is_no_tensor_or_tuple_warns():
    class AsDict(nn.Module):
        def forward(self, a):
            return {"y": a * 2}

    module = AsDict()
    module.register_full_backward_hook(lambda *args: None)
    with pytest.warns(UserWarning, match="^For backward hooks to be called, module output should be a Tensor or a "
                                         "tuple of Tensors but received <class 'dict'>$"):
        out = module(ag.tensor([1.0, 3.0], requires_grad=True))
    assert out["y"].grad_fn.name() == "MulBackward0"


# -- the deprecated backward hooks ---------------------------------------------------------------------------------
def test_deprecated_backward_hook_sees_the_last_nodes_gradients():
    module = Two()
    seen = []
    module.register_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = ag.tensor([3.0, 5.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # non-leaf inputs whose nodes are the product's edges: no warning
        out = module(x * 1, y * 1)
    out.sum().backward()
    (ga, gb), (go,) = seen[0]
    _close(ga, [3.0, 5.0])
    _close(gb, [1.0, 2.0])
    _close(go, [1.0, 1.0])

    scaled = Two()
    scaled.register_backward_hook(lambda m, gi, go: tuple(g * 10 for g in gi))
    x.grad = None
    scaled(x * 1, y * 1).sum().backward()
    _close(x.grad, [30.0, 50.0])


def test_deprecated_backward_hook_warns_where_torch_does():
    module = Two()
    module.register_backward_hook(lambda *args: None)
    with pytest.warns(FutureWarning, match="^Using a non-full backward hook when the forward contains multiple "
                                           "autograd Nodes is deprecated"):
        module(ag.tensor([1.0, 2.0], requires_grad=True), ag.tensor([3.0, 5.0], requires_grad=True))


def test_full_and_deprecated_backward_hooks_do_not_mix(monkeypatch):
    message = ("^Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only "
               "one of them.$")
    module = Two()
    module.register_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match=message):
        module.register_full_backward_hook(lambda *args: None)
    other = Two()
    other.register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match=message):
        other.register_backward_hook(lambda *args: None)

    monkeypatch.setattr(Module, "_with_hooks", False)
    monkeypatch.setattr(module_hooks, "_global_is_full_backward_hook", None)
    monkeypatch.setattr(module_hooks, "_global_backward_hooks", type(module_hooks._global_backward_hooks)())
    seen = []
    with module_hooks.register_module_full_backward_hook(lambda m, gi, go: seen.append(type(m).__name__)):
        with pytest.raises(RuntimeError, match="^Cannot use both regular backward hooks and full backward hooks as "
                                               "a global Module hook"):
            module_hooks.register_module_backward_hook(lambda *args: None)
        _linear()(ag.ones(1, 3, dtype=ag.float64, requires_grad=True)).sum().backward()
    assert seen == ["Linear"]


def test_double_backward_through_a_hooked_module_fires_the_hook_once():
    tanh = nn.Tanh()
    calls = []
    tanh.register_full_backward_hook(lambda m, gi, go: calls.append(gi[0].requires_grad))
    x = ag.tensor([0.5, -1.0], dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(tanh(x).sum(), x, create_graph=True)
    g.sum().backward()  # reaches the inputs' identity without passing the outputs': no hook
    assert calls == [True]
    t = np.tanh([0.5, -1.0])
    _close(x.grad, -2 * t * (1 - t * t))
