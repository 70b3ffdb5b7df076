"""nn.Module and nn.Parameter: registration, traversal with dotted names, modes, gradients, state_dict and
initialisation. Nothing here runs nn.functional (the layers' forwards are in test_nn_layers.py)."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn


class Affine(nn.Module):
    """y = x @ weight + bias, written with core ops only."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(ag.randn(n_in, n_out))
        self.bias = nn.Parameter(ag.zeros(n_out))
        self.register_buffer("calls", ag.zeros(1))
        self.scale = 2.0

    def forward(self, x):
        return ag.matmul(x, self.weight) + self.bias


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(Affine(3, 4), nn.ReLU())
        self.head = Affine(4, 2)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.head(self.encoder(x)))


def test_attributes_are_filed_as_parameters_buffers_and_submodules():
    m = Affine(2, 3)
    assert list(m._parameters) == ["weight", "bias"]
    assert list(m._buffers) == ["calls"]
    assert m.scale == 2.0 and "scale" not in m._parameters
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    net = Net()
    assert list(net._modules) == ["encoder", "head", "act"]
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        _ = net.missing


def test_a_registered_name_accepts_only_its_kind():
    m = Affine(2, 3)
    with pytest.raises(TypeError, match="cannot assign 'actorgrad.FloatTensor' as parameter 'weight'"):
        m.weight = ag.zeros(2, 3)
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'calls'"):
        m.calls = 3
    m.calls = ag.ones(1)
    assert m.calls.tolist() == [1.0]
    m.bias = None
    assert [name for name, _ in m.named_parameters()] == ["weight"]
    m.weight = nn.Parameter(ag.zeros(1))
    assert m.weight.shape == (1,)
    del m.weight
    assert list(m._parameters) == ["bias"]


def test_registration_errors_name_the_problem():
    m = nn.Module()
    with pytest.raises(KeyError, match='buffer name can.+t contain "."'):
        m.register_buffer("a.b", ag.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'x'"):
        m.register_buffer("x", 3)
    with pytest.raises(TypeError, match="cannot assign 'actorgrad.FloatTensor' object to parameter 'p'"):
        m.register_parameter("p", ag.zeros(1))
    m.plain = 1
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", ag.zeros(1))

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ag.zeros(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_named_parameters_are_dotted_and_in_registration_order():
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["encoder.0.weight", "encoder.0.bias", "head.weight", "head.bias"]
    assert [p for p in net.parameters()] == [p for _, p in net.named_parameters()]
    assert [name for name, _ in net.named_parameters(prefix="model")][0] == "model.encoder.0.weight"
    assert list(net.parameters(recurse=False)) == []
    assert [name for name, _ in net.named_buffers()] == ["encoder.0.calls", "head.calls"]
    assert len(list(net.buffers())) == 2


def test_a_shared_parameter_or_module_is_listed_once():
    shared = Affine(2, 2)
    seq = nn.Sequential(shared, shared)
    assert [name for name, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(seq.modules())) == 2 and len(list(seq.children())) == 1
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "0.calls", "1.weight", "1.bias", "1.calls"]


def test_children_and_modules_walk_the_tree():
    net = Net()
    assert [type(m).__name__ for m in net.children()] == ["Sequential", "Affine", "Tanh"]
    assert [name for name, _ in net.named_modules()] == ["", "encoder", "encoder.0", "encoder.1", "head", "act"]
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Affine", "ReLU", "Sequential", "Affine", "Tanh", "Net"]


def test_train_and_eval_reach_every_submodule():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.encoder.train()
    assert net.encoder[0].training and not net.head.training and not net.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_forward_and_backward_through_a_module_reach_its_parameters():
    ag.manual_seed(0)
    net = Net()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    out = net(ag.tensor(x))
    w1, b1, w2, b2 = (p.detach().numpy() for p in net.parameters())
    hidden = np.maximum(x @ w1 + b1, 0)
    np.testing.assert_allclose(out.detach().numpy(), np.tanh(hidden @ w2 + b2), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    d_pre = 1 - np.tanh(hidden @ w2 + b2) ** 2
    np.testing.assert_allclose(net.head.bias.grad.numpy(), d_pre.sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.head.weight.grad.numpy(), hidden.T @ d_pre, rtol=1e-5, atol=1e-5)
    assert all(p.grad is not None for p in net.parameters())


def test_zero_grad_drops_or_zeroes_gradients():
    m = Affine(2, 3)
    m.weight.grad = ag.ones(2, 3)
    m.bias.grad = ag.ones(3)
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((2, 3)))
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    m.bias.grad = ag.broadcast_to(ag.ones(1), (3,))  # a read-only view gets a fresh array of zeros
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.bias.grad.numpy(), np.zeros(3))


def test_state_dict_round_trips_into_a_fresh_model():
    ag.manual_seed(1)
    source = Net()
    source.register_buffer("step", ag.full((1,), 5.0))
    source.register_buffer("scratch", ag.zeros(2), persistent=False)
    state = source.state_dict()
    assert list(state) == [
        "step", "encoder.0.weight", "encoder.0.bias", "encoder.0.calls", "head.weight", "head.bias", "head.calls"
    ]
    assert all(not v.requires_grad for v in state.values())
    target = Net()
    target.register_buffer("step", ag.zeros(1))
    target.register_buffer("scratch", ag.ones(2), persistent=False)
    assert repr(target.load_state_dict(state)) == "<All keys matched successfully>"
    for (name, a), b in zip(source.state_dict().items(), target.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert target.head.weight.requires_grad and isinstance(target.head.weight, nn.Parameter)
    assert target.scratch.tolist() == [1.0, 1.0]
    arrays = {"head.weight": np.zeros((4, 2)), "head.bias": np.ones(2)}
    target.load_state_dict(arrays, strict=False)
    assert target.head.bias.tolist() == [1.0, 1.0] and target.head.bias.dtype == ag.float32


def test_loading_leaves_earlier_snapshots_alone():
    m = Affine(2, 2)
    snapshot = m.state_dict()
    before = snapshot["weight"].numpy().copy()
    m.load_state_dict({"weight": np.zeros((2, 2)), "bias": np.zeros(2), "calls": np.zeros(1)})
    np.testing.assert_array_equal(snapshot["weight"].numpy(), before)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.zeros((2, 2)))


def test_load_state_dict_lists_missing_unexpected_and_mismatched_keys():
    m = Affine(2, 3)
    original = m.weight.detach().numpy().copy()
    bad = {"weight": ag.zeros(3, 3), "extra": ag.zeros(1), "extra2": ag.zeros(1)}
    expected = (
        "Error(s) in loading state_dict for Affine:\n"
        '\tMissing key(s) in state_dict: "bias", "calls". \n'
        '\tUnexpected key(s) in state_dict: "extra", "extra2". \n'
        "\tsize mismatch for weight: copying a param with shape (3, 3) from checkpoint, the shape in current "
        "model is (2, 3)."
    )
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(bad)
    assert str(info.value) == expected
    np.testing.assert_array_equal(m.weight.detach().numpy(), original)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict(bad, strict=False)
    result = m.load_state_dict({"weight": ag.ones(2, 3), "extra": ag.zeros(1)}, strict=False)
    assert result.missing_keys == ["bias", "calls"] and result.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((2, 3)))


def test_parameter_repr_and_defaults():
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    frozen = nn.Parameter(ag.tensor([1.0, 2.0]), requires_grad=False)
    assert repr(frozen) == "Parameter containing:\ntensor([1., 2.])" and not frozen.requires_grad
    assert isinstance(p, ag.Tensor) and p.is_leaf
    assert nn.Parameter().shape == (0,)
    with pytest.raises(TypeError, match="data must be a Tensor"):
        nn.Parameter([1.0])
    assert isinstance(p * 2, ag.Tensor) and not isinstance(p * 2, nn.Parameter)


def test_module_repr_nests_children():
    seq = nn.Sequential(
        nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1), nn.Sequential(nn.LayerNorm(4), nn.GELU()),
        nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False), nn.Embedding(5, 3, padding_idx=0), nn.Tanh(),
    )
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.1, inplace=False)\n"
        "  (3): Sequential(\n"
        "    (0): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "    (1): GELU(approximate='none')\n"
        "  )\n"
        "  (4): Conv2d(3, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"
        "  (5): Embedding(5, 3, padding_idx=0)\n"
        "  (6): Tanh()\n"
        ")"
    )
    assert repr(nn.Module()) == "Module()"


def test_sequential_indexes_slices_and_iterates():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.ReLU()
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    assert list(seq[1:]) == [b, c] and isinstance(seq[1:], nn.Sequential)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    named = nn.Sequential(OrderedDict(first=a, second=b))
    assert named.second is b and [n for n, _ in named.named_children()] == ["first", "second"]
    seq.append(nn.Tanh())
    assert len(seq) == 4
    x = ag.tensor([-1.0, 0.5])
    np.testing.assert_allclose(seq(x).numpy(), np.tanh(np.maximum(np.tanh(np.maximum([-1.0, 0.5], 0)), 0)))


def test_linear_and_conv_initialisation_follows_pytorch_bounds():
    ag.manual_seed(0)
    linear = nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)
    for p in (linear.weight, linear.bias):
        values = p.detach().numpy()
        assert values.dtype == np.float32 and np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.9 * bound
    conv = nn.Conv2d(6, 8, (3, 2), groups=2)
    assert conv.weight.shape == (8, 3, 3, 2) and conv.bias.shape == (8,)
    conv_bound = 1 / math.sqrt(3 * 3 * 2)
    assert np.abs(conv.weight.detach().numpy()).max() <= conv_bound
    assert np.abs(conv.weight.detach().numpy()).max() > 0.8 * conv_bound
    assert nn.Linear(3, 2, bias=False).bias is None


def test_embedding_and_layer_norm_initialisation():
    ag.manual_seed(0)
    emb = nn.Embedding(400, 10, padding_idx=-1)
    weight = emb.weight.detach().numpy()
    assert emb.padding_idx == 399 and np.all(weight[399] == 0)
    assert abs(weight[:399].std() - 1) < 0.05 and abs(weight[:399].mean()) < 0.05
    norm = nn.LayerNorm((2, 3))
    np.testing.assert_array_equal(norm.weight.detach().numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(norm.bias.detach().numpy(), np.zeros((2, 3)))
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None


def test_manual_seed_makes_a_model_repeatable():
    def build():
        ag.manual_seed(42)
        return nn.Sequential(nn.Linear(4, 3), nn.Conv2d(2, 2, 2), nn.Embedding(3, 2))

    first, second = build().state_dict(), build().state_dict()
    for name in first:
        np.testing.assert_array_equal(first[name].numpy(), second[name].numpy(), err_msg=name)
    assert not np.array_equal(nn.Linear(4, 3).weight.detach().numpy(), first["0.weight"].numpy())


def test_layer_arguments_are_checked():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU("fast")
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
        nn.Linear(-1, 2)


def test_init_functions_fill_in_place():
    t = ag.zeros(30, 20)
    nn.init.xavier_uniform_(t, generator=ag.Generator().manual_seed(0))
    bound = math.sqrt(6 / 50)
    assert np.abs(t.numpy()).max() <= bound and np.abs(t.numpy()).max() > 0.9 * bound
    nn.init.constant_(t, 0.5)
    assert np.all(t.numpy() == 0.5)
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.kaiming_uniform_(ag.zeros(3))


def test_to_casts_floating_parameters_and_buffers_in_place():
    m = Affine(2, 3)
    m.register_buffer("count", ag.zeros(1, dtype=ag.int64))
    weight = m.weight
    m.weight.grad = ag.ones(2, 3)
    assert m.double() is m and m.weight is weight
    assert m.weight.dtype == ag.float64 and m.weight.grad.dtype == ag.float64 and m.calls.dtype == ag.float64
    assert m.count.dtype == ag.int64 and m.weight.requires_grad
    assert m.float().bias.dtype == ag.float32 and m.to("cpu") is m
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        m.to(ag.int32)
