"""Losses and layers with extra tensor arguments on CUDA: label smoothing, zero-dim cpu tensors beside cuda ones, and
PyTorch's error for arguments on two devices (never a CuPy TypeError from a raw kernel).
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

RNG = np.random.default_rng(5)
CUDA = ag.device("cuda:0")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"


def _leaf(array, device):
    return ag.tensor(array, dtype=ag.float64, device=device, requires_grad=True)


def _assert_same_run(compute, leaves, place):
    """`compute(*leaves)` on the cpu and with leaf i on `place(i)`: the same values, and each gradient (first
    and second order) the cpu's, on its leaf's device."""
    def grads(tensors):
        out = compute(*tensors)
        firsts = ag.autograd.grad(out.sum(), tensors, create_graph=True, allow_unused=True)
        seconds = ag.autograd.grad(sum((g * g).sum() for g in firsts if g is not None), tensors, allow_unused=True)
        return out, firsts, seconds

    on_cpu = [_leaf(a, "cpu") for a in leaves]
    placed = [_leaf(a, place(i)) for i, a in enumerate(leaves)]
    expected, got = grads(on_cpu), grads(placed)
    assert got[0].device is CUDA
    np.testing.assert_allclose(got[0].detach().cpu().numpy(), expected[0].detach().numpy(), rtol=1e-10, atol=1e-12)
    for leaf, g1, g2, e1, e2 in zip(placed, *got[1:], *expected[1:]):
        assert (g1 is None, g2 is None) == (e1 is None, e2 is None)
        if e1 is not None:
            assert g1.device is leaf.device
            np.testing.assert_allclose(g1.detach().cpu().numpy(), e1.detach().numpy(), rtol=1e-10, atol=1e-12)
        if e2 is not None:
            assert g2.device is leaf.device
            np.testing.assert_allclose(g2.cpu().numpy(), e2.numpy(), rtol=1e-10, atol=1e-12)


SHAPES = [((5,), np.array(3)), ((4, 5), np.array([1, 0, 3, 1])), ((2, 5, 3), np.array([[1, 4, 0], [2, 1, 1]]))]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape, target", SHAPES, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_label_smoothing_on_cuda_matches_the_cpu(reduction, shape, target, weighted, ignore_index):
    weight = RNG.uniform(0.5, 2.0, shape[0 if len(shape) == 1 else 1])

    def loss(x):
        d = x.device
        w = ag.tensor(weight, device=d) if weighted else None
        return F.cross_entropy(x, ag.tensor(target, device=d), weight=w, ignore_index=ignore_index,
                               reduction=reduction, label_smoothing=0.1)

    _assert_same_run(loss, [RNG.uniform(-2, 2, shape)], lambda i: "cuda")


# name, loss of (cuda input, cuda target, zero-dim cpu tensor)
ZERO_DIM_CASES = [
    ("mse_loss target", lambda x, t, s: F.mse_loss(x, s, reduction="none")),
    ("mse_loss input", lambda x, t, s: F.mse_loss(s, t)),
    ("l1_loss target", lambda x, t, s: F.l1_loss(x, s)),
    ("l1_loss input", lambda x, t, s: F.l1_loss(s, t, reduction="sum")),
    ("bce weight", lambda x, t, s: F.binary_cross_entropy_with_logits(x, t.sigmoid(), weight=s.detach())),
    ("bce pos_weight", lambda x, t, s: F.binary_cross_entropy_with_logits(x, t.sigmoid(), pos_weight=s.detach(),
                                                                          reduction="none")),
]


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("loss", [c[1] for c in ZERO_DIM_CASES], ids=[c[0] for c in ZERO_DIM_CASES])
def test_a_zero_dim_cpu_tensor_beside_cuda_tensors_matches_the_cpu(loss):
    leaves = [RNG.uniform(-2, 2, (3, 4)), RNG.uniform(-2, 2, (3, 4)), np.array(1.7)]
    _assert_same_run(loss, leaves, lambda i: "cpu" if i == 2 else "cuda")


def _cuda(*shape):
    return ag.tensor(RNG.uniform(0.5, 1.5, shape), device="cuda")


def _cpu(*shape):
    return ag.tensor(RNG.uniform(0.5, 1.5, shape))


LABELS = np.array([1, 0, 2, 1])
IMAGE = (2, 3, 5, 5)
# name, call with one tensor argument on the cpu beside cuda ones, the devices PyTorch's error names
MIXED_CASES = [
    ("nll_loss target", lambda: F.nll_loss(_cuda(4, 3), ag.tensor(LABELS)), ("cuda:0", "cpu")),
    ("nll_loss zero-dim target", lambda: F.nll_loss(_cuda(3), ag.tensor(1)), ("cuda:0", "cpu")),
    ("cross_entropy target", lambda: F.cross_entropy(_cuda(4, 3), ag.tensor(LABELS)), ("cuda:0", "cpu")),
    ("cross_entropy weight", lambda: F.cross_entropy(_cuda(4, 3), ag.tensor(LABELS, device="cuda"), _cpu(3)),
     ("cuda:0", "cpu")),
    ("cross_entropy cuda target, cpu input", lambda: F.cross_entropy(_cpu(4, 3), ag.tensor(LABELS, device="cuda")),
     ("cpu", "cuda:0")),
    ("bce pos_weight", lambda: F.binary_cross_entropy_with_logits(_cuda(4, 3), _cuda(4, 3), pos_weight=_cpu(3)),
     ("cuda:0", "cpu")),
    ("bce weight", lambda: F.binary_cross_entropy_with_logits(_cuda(4, 3), _cuda(4, 3), weight=_cpu(4, 1)),
     ("cuda:0", "cpu")),
    ("embedding cpu indices", lambda: F.embedding(ag.tensor([[0, 2], [1, 1]]), _cuda(3, 2)), ("cuda:0", "cpu")),
    ("embedding zero-dim cpu index", lambda: F.embedding(ag.tensor(1), _cuda(3, 2)), ("cuda:0", "cpu")),
    ("embedding cpu weight", lambda: F.embedding(ag.tensor([0, 2], device="cuda"), _cpu(3, 2)), ("cpu", "cuda:0")),
    ("conv1d weight", lambda: F.conv1d(_cuda(2, 3, 5), _cpu(4, 3, 2)), ("cuda:0", "cpu")),
    ("conv1d bias", lambda: F.conv1d(_cuda(3, 5), _cuda(4, 3, 2), _cpu(4)), ("cuda:0", "cpu")),
    ("conv2d weight", lambda: F.conv2d(_cuda(*IMAGE), _cpu(4, 3, 3, 3)), ("cuda:0", "cpu")),
    ("conv2d bias", lambda: F.conv2d(_cuda(*IMAGE), _cuda(4, 3, 3, 3), _cpu(4)), ("cuda:0", "cpu")),
    ("batch_norm running stats", lambda: F.batch_norm(_cuda(*IMAGE), _cpu(3), _cpu(3)), ("cuda:0", "cpu")),
    ("batch_norm running stats, training", lambda: F.batch_norm(_cuda(*IMAGE), _cpu(3), _cpu(3), training=True),
     ("cuda:0", "cpu")),
    ("batch_norm weight", lambda: F.batch_norm(_cuda(*IMAGE), None, None, _cpu(3), training=True),
     ("cuda:0", "cpu")),
    ("batch_norm bias", lambda: F.batch_norm(_cuda(*IMAGE), _cuda(3), _cuda(3), None, _cpu(3)), ("cuda:0", "cpu")),
    ("layer_norm weight", lambda: F.layer_norm(_cuda(4, 3), (3,), _cpu(3)), ("cuda:0", "cpu")),
    ("layer_norm bias", lambda: F.layer_norm(_cuda(4, 3), (3,), None, _cpu(3)), ("cuda:0", "cpu")),
]


@pytest.mark.parametrize("call, devices", [c[1:] for c in MIXED_CASES], ids=[c[0] for c in MIXED_CASES])
def test_arguments_on_two_devices_raise_pytorchs_error(call, devices):
    with pytest.raises(RuntimeError, match=MIXED.format(*devices)):
        call()
