"""nn.utils.prune: which entries each method masks (checked against numpy sorts and norms), the reparametrization
PyTorch uses (name_orig, name_mask, a pre-hook recomputing name), gradients through the mask, iterative pruning
through PruningContainer, remove, global pruning, seeded random pruning and PyTorch's errors."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn.utils import prune


def linear(seed=0, shape=(4, 6)):
    """A Linear layer whose weights have distinct absolute values, so the smallest ones are unambiguous."""
    layer = nn.Linear(shape[1], shape[0])
    rng = np.random.default_rng(seed)
    values = rng.permutation(np.arange(1, shape[0] * shape[1] + 1)) * rng.choice([-1.0, 1.0], size=shape[0] * shape[1])
    with ag.no_grad():
        layer.weight.copy_(ag.tensor(values.reshape(shape) / 10, dtype=ag.float32))
    return layer


def zeros_of(mask):
    return set(zip(*np.nonzero(mask.numpy() == 0)))


def test_l1_unstructured_masks_the_smallest_absolute_values():
    layer = linear()
    w = layer.weight.detach().numpy().copy()
    prune.l1_unstructured(layer, "weight", amount=7)
    smallest = np.argsort(np.abs(w), axis=None)[:7]
    assert zeros_of(layer.weight_mask) == set(zip(*np.unravel_index(smallest, w.shape)))
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w * layer.weight_mask.numpy())


@pytest.mark.parametrize(("amount", "pruned"), [(0.3, 7), (0.25, 6), (0.0, 0), (1.0, 24), (0, 0), (24, 24)])
def test_fractions_round_to_the_nearest_count(amount, pruned):
    layer = linear()
    prune.l1_unstructured(layer, "weight", amount=amount)
    assert int((layer.weight_mask == 0).sum()) == pruned


def test_reparametrization_matches_pytorch_names():
    layer = linear()
    weight = layer.weight
    prune.l1_unstructured(layer, "weight", amount=3)
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_orig"]
    assert [name for name, _ in layer.named_buffers()] == ["weight_mask"]
    assert layer.weight_orig is weight and isinstance(layer.weight_orig, nn.Parameter)
    assert not isinstance(layer.weight, nn.Parameter)
    assert layer.weight_mask.dtype == weight.dtype and not layer.weight_mask.requires_grad
    assert prune.is_pruned(layer) and prune.is_pruned(nn.Sequential(layer))


def test_gradient_reaches_orig_only_where_the_mask_keeps_it():
    layer = linear()
    prune.l1_unstructured(layer, "weight", amount=10)
    x = ag.randn(5, 6)
    layer(x).sum().backward()
    # d/dW of sum(x @ W.T + b) is, in every row, the column sums of x.
    expected = layer.weight_mask.numpy() * x.numpy().sum(0)
    np.testing.assert_allclose(layer.weight_orig.grad.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert np.all(layer.weight_orig.grad.numpy()[layer.weight_mask.numpy() == 0] == 0)


def test_the_pre_hook_recomputes_weight_from_the_latest_orig():
    layer = linear()
    prune.l1_unstructured(layer, "weight", amount=5)
    with ag.no_grad():
        layer.weight_orig.add_(1.0)
    layer(ag.randn(1, 6))
    expected = (layer.weight_orig.detach().numpy()) * layer.weight_mask.numpy()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), expected)


@pytest.mark.parametrize(("n", "dim"), [(2, 0), (1, 0), (2, 1), (1, -1), (float("inf"), 0)])
def test_ln_structured_prunes_the_channels_of_smallest_norm(n, dim):
    layer = linear(seed=3)
    w = layer.weight.detach().numpy().astype(np.float64)
    prune.ln_structured(layer, "weight", amount=2, n=n, dim=dim)
    other = 1 - dim % 2
    norms = np.max(np.abs(w), axis=other) if n == float("inf") else (np.abs(w) ** n).sum(axis=other) ** (1 / n)
    dropped = set(np.argsort(norms)[:2])
    mask = layer.weight_mask.numpy()
    for channel in range(w.shape[dim % 2]):
        values = np.take(mask, channel, axis=dim % 2)
        assert np.all(values == (0 if channel in dropped else 1))


def test_random_pruning_is_repeatable_under_manual_seed():
    masks = []
    for _ in range(2):
        ag.manual_seed(5)
        layer = linear()
        prune.random_unstructured(layer, "weight", amount=0.5)
        masks.append(layer.weight_mask.numpy())
    np.testing.assert_array_equal(masks[0], masks[1])
    assert int((masks[0] == 0).sum()) == 12
    ag.manual_seed(6)
    other = linear()
    prune.random_unstructured(other, "weight", amount=0.5)
    assert not np.array_equal(other.weight_mask.numpy(), masks[0])


def test_random_structured_zeroes_whole_channels():
    ag.manual_seed(1)
    layer = linear()
    prune.random_structured(layer, "weight", amount=2, dim=1)
    mask = layer.weight_mask.numpy()
    columns = mask.sum(0)
    assert sorted(columns.tolist()) == [0, 0, 4, 4, 4, 4]


def test_iterative_pruning_prunes_only_among_the_kept_entries():
    layer = linear()
    w = np.abs(layer.weight.detach().numpy())
    prune.l1_unstructured(layer, "weight", amount=5)
    first = zeros_of(layer.weight_mask)
    prune.l1_unstructured(layer, "weight", amount=4)
    hooks = [h for h in layer._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    assert all(isinstance(m, prune.L1Unstructured) for m in hooks[0])
    # The second pass sees the 19 kept entries and drops their 4 smallest: the 9 smallest overall.
    smallest = np.argsort(w, axis=None)[:9]
    assert first < zeros_of(layer.weight_mask) == set(zip(*np.unravel_index(smallest, w.shape)))


def test_structured_after_unstructured_keeps_earlier_zeros_and_ignores_dead_channels():
    layer = linear(seed=2)
    column = np.zeros((4, 6))
    column[:, 2] = 1
    prune.custom_from_mask(layer, "weight", mask=ag.tensor(1 - column, dtype=ag.float32))
    w = layer.weight_orig.detach().numpy() * (1 - column)
    prune.ln_structured(layer, "weight", amount=1, n=2, dim=1)
    mask = layer.weight_mask.numpy()
    norms = np.linalg.norm(w, axis=0)
    norms[2] = np.inf  # column 2 is already pruned: the container picks among the other five
    assert np.all(mask[:, 2] == 0) and np.all(mask[:, np.argmin(norms)] == 0)
    assert int((mask.sum(0) == 0).sum()) == 2


def test_importance_scores_choose_what_to_prune():
    layer = linear()
    scores = ag.arange(24.0).reshape(4, 6)
    prune.l1_unstructured(layer, "weight", amount=3, importance_scores=scores)
    assert zeros_of(layer.weight_mask) == {(0, 0), (0, 1), (0, 2)}


def test_identity_and_custom_from_mask():
    layer = linear()
    prune.identity(layer, "bias")
    assert np.all(layer.bias_mask.numpy() == 1)
    mask = ag.tensor([[1, 0, 1, 0, 1, 0]] * 4)
    prune.custom_from_mask(layer, "weight", mask)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), mask.numpy().astype(np.float32))


def test_remove_makes_pruning_permanent():
    layer = linear()
    prune.l1_unstructured(layer, "weight", amount=6)
    masked = layer.weight.detach().numpy().copy()
    prune.remove(layer, "weight")
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad
    assert list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_array_equal(layer.weight.detach().numpy(), masked)
    assert not prune.is_pruned(layer)
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned before pruning can be "
                                         "removed"):
        prune.remove(layer, "weight")


def test_global_unstructured_prunes_the_smallest_entries_across_modules():
    first, second = linear(seed=0), linear(seed=1, shape=(3, 6))
    with ag.no_grad():
        second.weight.mul_(0.5)
    values = np.concatenate([np.abs(first.weight.detach().numpy()).ravel(),
                             np.abs(second.weight.detach().numpy()).ravel()])
    prune.global_unstructured([(first, "weight"), (second, "weight")], pruning_method=prune.L1Unstructured,
                              amount=10)
    zeros = np.concatenate([first.weight_mask.numpy().ravel(), second.weight_mask.numpy().ravel()]) == 0
    assert set(np.nonzero(zeros)[0]) == set(np.argsort(values)[:10])
    assert int((first.weight_mask == 0).sum()) != int((second.weight_mask == 0).sum())


def test_pruning_a_pruned_parameter_globally_keeps_its_mask():
    layer = linear()
    prune.l1_unstructured(layer, "weight", amount=4)
    before = zeros_of(layer.weight_mask)
    prune.global_unstructured([(layer, "weight")], pruning_method=prune.RandomUnstructured, amount=3)
    assert before < zeros_of(layer.weight_mask) and len(zeros_of(layer.weight_mask)) == 7


def test_prune_method_on_a_bare_tensor():
    t = ag.tensor([3.0, -1.0, 2.0, -4.0])
    np.testing.assert_array_equal(prune.L1Unstructured(amount=2).prune(t).numpy(), [3.0, 0.0, 0.0, -4.0])


@pytest.mark.parametrize(("amount", "error", "text"), [
    (-1, ValueError, r"amount=-1 should either be a float in the range \[0, 1\] or a non-negative integer"),
    (1.5, ValueError, r"amount=1.5 should either be a float in the range \[0, 1\] or a non-negative integer"),
    ("a", TypeError, "Invalid type for amount: a. Must be int or float."),
])
def test_bad_amounts(amount, error, text):
    with pytest.raises(error, match=text):
        prune.L1Unstructured(amount)


def test_too_many_to_prune_leaves_the_module_as_it_was():
    layer = linear()
    weight = layer.weight
    with pytest.raises(ValueError, match="amount=30 should be smaller than the number of parameters to prune=24"):
        prune.l1_unstructured(layer, "weight", amount=30)
    assert layer.weight is weight and list(layer.state_dict()) == ["bias", "weight"]  # re-registered, as PyTorch
    assert not prune.is_pruned(layer)


def test_structured_errors():
    layer = linear()
    with pytest.raises(ValueError, match=r"Structured pruning can only be applied to multidimensional tensors. "
                                         r"Found tensor of shape \(4,\) with 1 dims"):
        prune.ln_structured(layer, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match=r"Invalid index 2 for tensor of size \(4, 6\)"):
        prune.random_structured(layer, "weight", amount=1, dim=2)


def test_container_and_global_errors():
    method = prune.L1Unstructured(1)
    method._tensor_name = "weight"
    container = prune.PruningContainer(method)
    other = prune.L1Unstructured(1)
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter named 'weight'"):
        container.add_pruning_method(other)
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container.add_pruning_method("l1")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(linear(), "weight")], pruning_method=prune.LnStructured, amount=1, n=2)
    with pytest.raises(TypeError, match="parameters is not an Iterable"):
        prune.global_unstructured(3, pruning_method=prune.L1Unstructured, amount=1)


@pytest.mark.gpu
def test_pruning_on_cuda_keeps_mask_and_gradient_on_the_device(cupy):
    layer = linear().to("cuda:0")
    w = np.abs(layer.weight.detach().cpu().numpy())
    prune.l1_unstructured(layer, "weight", amount=5)
    prune.ln_structured(layer, "weight", amount=1, n=2, dim=0)
    assert layer.weight_mask.device == ag.device("cuda:0")
    layer(ag.ones(2, 6, device="cuda:0")).sum().backward()
    mask = layer.weight_mask.cpu().numpy()
    assert set(np.argsort(w, axis=None)[:5]) <= set(np.nonzero(mask.ravel() == 0)[0])
    np.testing.assert_allclose(layer.weight_orig.grad.cpu().numpy(), 2 * mask)
