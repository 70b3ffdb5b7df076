"""The training surface (nn.Module, layers, init, functional, optimizers, checkpoint) against PyTorch 2.13: its
behaviour and error texts. Expected numbers are exact closed forms
or computed in numpy from the documented formulas; error texts were read off torch 2.13."""

import importlib
import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn, optim


# -- Module registration ------------------------------------------------------------------------------------------
def test_replacing_a_registered_name_keeps_its_position():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    s[0] = nn.Linear(2, 3)
    assert list(s._modules) == ["0", "1", "2"] and s(ag.ones(1, 2)).shape == (1, 1)
    m = nn.Linear(2, 2)
    m.weight = nn.Parameter(ag.zeros(2, 2))
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"] and list(m.state_dict()) == ["weight", "bias"]
    m.register_buffer("x", ag.ones(1))
    m.register_buffer("y", ag.ones(1))
    m.register_buffer("x", ag.zeros(1))
    m.register_parameter("weight", nn.Parameter(ag.ones(2, 2)))
    assert list(m._buffers) == ["x", "y"] and list(m._parameters) == ["weight", "bias"]
    m.add_module("a", nn.ReLU())
    m.add_module("b", nn.ReLU())
    m.a = nn.Tanh()
    assert list(m._modules) == ["a", "b"]
    m.b = nn.Parameter(ag.ones(1))  # another kind: the name moves to that registry, as in PyTorch
    assert list(m._modules) == ["a"] and list(m._parameters) == ["weight", "bias", "b"]


def test_registration_errors_are_pytorchs():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"^cannot assign 'actorgrad.FloatTensor' as parameter 'weight' "
                                        r"\(actorgrad.nn.Parameter or None expected\)$"):
        m.weight = ag.ones(2, 2)
    with pytest.raises(TypeError, match="^buffer name should be a string. Got int$"):
        m.register_buffer(1, ag.ones(1))
    with pytest.raises(TypeError, match="^parameter name should be a string. Got int$"):
        m.register_parameter(1, None)
    with pytest.raises(KeyError, match='buffer name can.+t contain "."\'$'):
        m.register_buffer("a.b", ag.ones(1))
    with pytest.raises(KeyError, match='module name can.+t contain ".", got: a.b'):
        m.add_module("a.b", None)
    with pytest.raises(TypeError, match="cannot assign 'actorgrad.DoubleTensor' object to parameter 'q'"):
        m.register_parameter("q", ag.ones(1, dtype=ag.float64))

    class Early(nn.Module):
        def __init__(self):
            self.child = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match=r"^cannot assign module before Module.__init__\(\) call$"):
        Early()
    with pytest.raises(TypeError, match=r"^Expected state_dict to be dict-like, got <class 'list'>.$"):
        m.load_state_dict([])


def test_layer_sizes_fail_as_pytorchs_empty():
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        nn.Linear(-1, 2)
    with pytest.raises(TypeError, match="empty"):
        nn.Linear(2.0, 2)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1, 2\]"):
        nn.Embedding(-1, 2)


# -- Module.to and friends ----------------------------------------------------------------------------------------
def test_module_to_takes_pytorchs_forms():
    m = nn.Linear(2, 2)
    assert m.to(dtype=ag.float64).weight.dtype == ag.float64
    assert m.to(device="cpu") is m and m.to(non_blocking=True) is m
    assert m.to("cpu", ag.float32).weight.dtype == ag.float32
    assert m.to(ag.ones(1, dtype=ag.float64), True).bias.dtype == ag.float64
    with pytest.raises(TypeError, match=r"^nn.Module.to only accepts floating point or complex dtypes, but got "
                                        r"desired dtype=actorgrad.int32$"):
        m.to(ag.int32)


def test_half_and_type_cast_as_pytorch():
    m = nn.Linear(2, 2)
    m.register_buffer("count", ag.zeros(1, dtype=ag.int64))
    assert m.half().weight.dtype == ag.float16 and m.count.dtype == ag.int64
    assert m.type(ag.float64).weight.dtype == ag.float64 and m.count.dtype == ag.float64  # every tensor
    assert m.type("actorgrad.FloatTensor").bias.dtype == ag.float32
    with pytest.raises(RuntimeError, match="requires gradients must be floating point"):
        m.type(ag.int32)


def test_get_submodule_parameter_and_buffer():
    net = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Linear(1, 2)))
    net[1][0].register_buffer("stat", ag.ones(2))
    assert net.get_submodule("1.0") is net[1][0] and net.get_submodule("") is net
    assert net.get_parameter("1.0.weight") is net[1][0].weight
    assert net.get_buffer("1.0.stat") is net[1][0].stat
    with pytest.raises(AttributeError, match="^Sequential has no attribute `3`$"):
        net.get_submodule("1.3")
    with pytest.raises(AttributeError, match="^`weight` is not an nn.Module$"):
        net.get_submodule("0.weight")
    with pytest.raises(AttributeError, match="^Linear has no attribute `nope`$"):
        net.get_parameter("0.nope")
    with pytest.raises(AttributeError, match="^`in_features` is not an nn.Parameter$"):
        net.get_parameter("0.in_features")
    with pytest.raises(AttributeError, match="^`weight` is not a buffer$"):
        net.get_buffer("0.weight")


# -- zero_grad and state_dict -------------------------------------------------------------------------------------
@pytest.mark.parametrize("via", ["module", "optimizer"])
def test_zero_grad_without_none_detaches_a_graph_gradient(via):
    m = nn.Linear(1, 1)
    (m.weight**3).sum().backward(create_graph=True)
    grad = m.weight.grad
    assert grad.requires_grad
    if via == "module":
        m.zero_grad(set_to_none=False)
    else:
        optim.SGD(m.parameters()).zero_grad(set_to_none=False)
    assert m.weight.grad is grad and not grad.requires_grad and grad.grad_fn is None
    assert grad.tolist() == [[0.0]]


def test_state_dict_prefix_concatenates_plainly_and_carries_metadata():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(1, 1)

    assert list(Net().state_dict(prefix="m")) == ["mfc.weight", "mfc.bias"]
    assert list(Net().state_dict(prefix="m.")) == ["m.fc.weight", "m.fc.bias"]
    assert dict(Net().state_dict()._metadata) == {"": {"version": 1}, "fc": {"version": 1}}


# -- Conv2d -------------------------------------------------------------------------------------------------------
def test_conv2d_same_padding_refuses_stride_and_reprs_bare():
    with pytest.raises(ValueError, match="^padding='same' is not supported for strided convolutions$"):
        nn.Conv2d(4, 4, 3, padding="same", stride=2)
    assert repr(nn.Conv2d(4, 4, 3, padding="same")) == (
        "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    )


# -- functional in place --------------------------------------------------------------------------------------------
def test_relu_inplace_writes_into_its_input():
    x = ag.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
    leaf = ag.tensor([-1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        F.relu(leaf, inplace=True)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        F.relu(leaf[:1], inplace=True)
    z = leaf * 1
    assert F.relu(z, inplace=True) is z and z.grad_fn.name() == "ReluBackward0"
    z.sum().backward()
    assert leaf.grad.tolist() == [0.0, 1.0]


def test_dropout_inplace_multiplies_its_input():
    x = ag.tensor([1.0, 2.0, 3.0, 4.0])
    assert F.dropout(x, 1.0, inplace=True) is x and x.tolist() == [0.0] * 4
    leaf = ag.tensor(np.arange(1.0, 9.0), requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable"):
        F.dropout(leaf, inplace=True)
    z = leaf * 1
    out = F.dropout(z, 0.5, inplace=True)
    assert out is z and z.grad_fn.name() == "MulBackward0"
    kept = z.detach().numpy() != 0
    np.testing.assert_allclose(z.detach().numpy()[kept], 2 * np.arange(1.0, 9.0)[kept])
    z.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2.0 * kept)


def test_leaky_relu_and_silu_inplace():
    leaf = ag.tensor([-1.0, 2.0], requires_grad=True)
    z = leaf * 1
    assert F.leaky_relu(z, 0.2, inplace=True) is z and z.grad_fn.name() == "LeakyReluBackward1"
    assert z.tolist() == pytest.approx([-0.2, 2.0])
    z.sum().backward()
    assert leaf.grad.tolist() == pytest.approx([0.2, 1.0])
    leaf.grad = None
    z = leaf * 1
    F.leaky_relu(z, -0.2, inplace=True).sum()
    with pytest.raises(RuntimeError, match="^In-place leakyReLu backward calculation is triggered with a negative"):
        z.sum().backward()
    leaf.grad = None
    z = leaf * 1
    assert F.silu(z, inplace=True) is z and z.grad_fn.name() == "SiluBackward0"
    z.sum().backward()
    sigmoid = 1 / (1 + np.exp(-np.array([-1.0, 2.0])))
    np.testing.assert_allclose(leaf.grad.numpy(), sigmoid * (1 + np.array([-1.0, 2.0]) * (1 - sigmoid)),
                               rtol=1e-6)  # (x sigmoid(x))' = sigmoid(x) (1 + x (1 - sigmoid(x)))
    with pytest.raises(RuntimeError, match="^a leaf Variable"):
        F.silu(leaf, inplace=True)


# -- losses and batch_norm dtypes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, name", [(ag.int32, "Int"), (ag.int16, "Short"), (ag.int8, "Char"),
                                         (ag.bool, "Bool")])
def test_class_targets_must_be_long_or_byte(dtype, name):
    logits = ag.zeros(2, 3)
    for loss in (F.cross_entropy, F.nll_loss):
        with pytest.raises(RuntimeError, match=f"^expected target dtype to be Long or Byte, but got {name}$"):
            loss(logits, ag.tensor([0, 1], dtype=dtype))
    assert F.nll_loss(logits, ag.tensor([0, 1], dtype=ag.uint8)).item() == 0.0


def test_batch_norm_refuses_mixed_dtypes_as_pytorch():
    x = ag.ones(3, 2)
    stats = (ag.zeros(2, dtype=ag.float64), ag.ones(2, dtype=ag.float64))
    with pytest.raises(RuntimeError, match=r"^mixed dtype \(CPU\): expect parameter to have scalar type of Float$"):
        F.batch_norm(x, *stats, training=True)
    with pytest.raises(RuntimeError, match=r"^mixed dtype \(CPU\): all inputs must share same datatype.$"):
        F.batch_norm(x.double(), ag.zeros(2), ag.ones(2), training=True)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        F.batch_norm(x, *stats, ag.ones(2), training=True)


# -- optimizers -----------------------------------------------------------------------------------------------------
# one step from 1 with gradient 1 and lr 0.1: SGD 1 - 0.1; Adam's first step moves lr (m / sqrt(v) = 1, eps aside);
# AdamW first decays by 1 - lr * 0.01 (its default weight_decay): 0.999 - 0.1
@pytest.mark.parametrize("cls, expected", [(optim.SGD, 0.9), (optim.Adam, 0.9), (optim.AdamW, 0.899)])
def test_tensor_lr_steps(cls, expected):
    p = nn.Parameter(ag.ones(2))
    opt = cls([p], lr=ag.tensor(0.1))
    p.grad = ag.ones(2)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [expected] * 2, atol=1e-4)


def test_tensor_betas_and_their_checks():
    p = nn.Parameter(ag.ones(2))
    opt = optim.Adam([p], betas=(ag.tensor(0.9), ag.tensor(0.99)))
    p.grad = ag.ones(2)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.999] * 2, atol=1e-6)  # Adam's first step: 1 - lr (1e-3)
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        optim.Adam([p], lr=ag.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="^Invalid learning rate: -0.10000000149011612$"):
        optim.SGD([p], lr=ag.tensor(-0.1))
    with pytest.raises(IndexError):
        optim.Adam([p], betas=(0.9,))
    with pytest.raises(ValueError, match="^betas must be either both floats or both Tensors$"):
        optim.Adam([p], betas=(0.9, ag.tensor(0.9)))


def test_adam_step_is_a_float32_tensor_and_an_int_step_loads():
    p = nn.Parameter(ag.ones(2))
    opt = optim.Adam([p])
    p.grad = ag.ones(2)
    opt.step()
    step = opt.state[p]["step"]
    assert isinstance(step, ag.Tensor) and step.dtype == ag.float32 and step.shape == () and step.item() == 1.0
    saved = opt.state_dict()
    assert isinstance(saved["state"][0]["step"], ag.Tensor) and saved["state"][0]["step"].item() == 1.0
    saved["state"][0]["step"] = 3
    p64 = nn.Parameter(ag.ones(2, dtype=ag.float64))
    other = optim.Adam([p64])
    other.load_state_dict(saved)
    loaded = other.state[p64]["step"]
    assert isinstance(loaded, ag.Tensor) and loaded.dtype == ag.float32 and loaded.item() == 3.0
    p64.grad = ag.ones(2, dtype=ag.float64)
    other.step()
    assert other.state[p64]["step"].item() == 4.0 and other.state[p64]["step"].dtype == ag.float32


@pytest.mark.parametrize("cls, keys", [
    (optim.SGD, ("maximize", "foreach", "differentiable", "fused", "nesterov")),
    (optim.Adam, ("maximize", "foreach", "differentiable", "fused", "amsgrad", "capturable",
                  "decoupled_weight_decay")),
])
def test_load_state_dict_fills_options_an_old_group_lacks(cls, keys):
    p = nn.Parameter(ag.ones(2))
    opt = cls([p], lr=0.1)
    saved = opt.state_dict()
    for key in keys:
        del saved["param_groups"][0][key]
    opt.load_state_dict(saved)
    assert all(key in opt.param_groups[0] for key in keys)
    p.grad = ag.ones(2)
    opt.step()


def test_optimizer_repr_and_group_errors():
    groups = [{"params": [nn.Parameter(ag.ones(1))]}, {"params": [nn.Parameter(ag.ones(1))], "lr": 0.1}]
    text = repr(optim.SGD(groups))
    assert "    weight_decay: 0\n\nParameter Group 1\n" in text
    with pytest.raises(TypeError, match="^param_group must be a dict, but got <class 'list'>$"):
        optim.SGD(groups).add_param_group([nn.Parameter(ag.ones(1))])


# -- init -------------------------------------------------------------------------------------------------------------
def test_calculate_gain_as_pytorch():
    for name in ("linear", "conv2d", "conv_transpose1d", "conv_transpose3d", "sigmoid"):
        gain = nn.init.calculate_gain(name)
        assert gain == 1 and isinstance(gain, int)
    assert nn.init.calculate_gain("selu") == 0.75
    assert nn.init.calculate_gain("leaky_relu", 0) == math.sqrt(2)
    with pytest.raises(ValueError, match="^negative_slope True not a valid number$"):
        nn.init.calculate_gain("leaky_relu", True)


def test_init_range_and_dtype_errors():
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, but found from=2 > to"):
        nn.init.uniform_(ag.empty(3), 2, 1)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1$"):
        nn.init.normal_(ag.empty(3), 0, -1)
    with pytest.raises(NotImplementedError, match="^\"check_uniform_bounds\" not implemented for 'Int'$"):
        nn.init.uniform_(ag.empty(3, dtype=ag.int32))
    with pytest.raises(ValueError, match=r"^Mode x not supported, please use one of \['fan_in', 'fan_out'\]$"):
        nn.init.kaiming_uniform_(ag.empty(3, 3), mode="x")


def test_more_init_functions():
    gen = ag.Generator().manual_seed(0)
    assert nn.init._calculate_fan_in_and_fan_out(ag.empty(3, 4, 5)) == (20, 15)
    assert nn.init.eye_(ag.empty(2, 3)).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    q = nn.init.orthogonal_(ag.empty(3, 5), generator=gen).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-5)
    t = nn.init.trunc_normal_(ag.empty(2000), a=-0.5, b=0.5, generator=gen).numpy()
    assert t.min() >= -0.5 and t.max() <= 0.5 and t.std() > 0.2
    std = nn.init.kaiming_normal_(ag.empty(400, 100), generator=gen).numpy().std()
    assert abs(std - math.sqrt(2 / (1 + 0.01**2)) / 10) < 0.01
    std = nn.init.xavier_normal_(ag.empty(300, 100), generator=gen).numpy().std()
    assert abs(std - math.sqrt(2 / 400)) < 0.005
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        nn.init.kaiming_normal_(ag.empty(0, 3))


# -- checkpoint -----------------------------------------------------------------------------------------------------
def test_checkpoint_is_a_module():
    cp = importlib.import_module("actorgrad.utils.checkpoint")
    import actorgrad.utils

    assert actorgrad.utils.checkpoint is cp
    x = ag.tensor([0.5, 1.0], requires_grad=True)
    cp.checkpoint(ag.sin, x, use_reentrant=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.0]), rtol=1e-6)


def test_checkpoint_keywords_as_pytorch():
    from actorgrad.utils.checkpoint import checkpoint

    x = ag.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: k,j$"):
        checkpoint(ag.sin, x, use_reentrant=True, k=1, j=2)
    with pytest.raises(ValueError, match="^Passing `context_fn` or `debug` is only supported when use_reentrant=False"):
        checkpoint(ag.sin, x, use_reentrant=True, debug=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(ag.sin, x, use_reentrant=True, determinism_check="none", debug=False)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(ag.sin, x)
    with pytest.raises(RuntimeError, match=r"^When use_reentrant=True, actorgrad.utils.checkpoint is incompatible "
                                           r"with .grad\(\) or passing an `inputs` parameter to .backward\(\)"):
        ag.autograd.grad(checkpoint(ag.sin, x, use_reentrant=True).sum(), x)
