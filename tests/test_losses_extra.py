"""The margin, embedding and likelihood losses (margin_ranking ... multilabel_margin) and their modules as
PyTorch 2.13's: values against independent numpy references of PyTorch's documented formulas (inputs of a fixed
numpy seed) for every reduction, gradcheck in float64, output shapes, and error texts."""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn import loss as nn_loss
from actorgrad.ops import class_losses
from actorgrad.ops import composite_losses as losses

MULTILABEL_TARGET = [[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]]


def _inputs() -> dict:
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    sign = lambda *shape: np.where(rng.standard_normal(shape) > 0, 1.0, -1.0)  # noqa: E731
    return dict(a=normal(3, 4), b=normal(3, 4), c=normal(3, 4), s=sign(3, 4), s3=np.array([1.0, -1.0, 1.0]),
                pos=rng.uniform(0.5, 2.0, (3, 4)), counts=rng.uniform(0.0, 4.0, (3, 4)),
                var3=rng.uniform(0.5, 2, 3), w4=rng.uniform(0.5, 2, 4), bits=(rng.standard_normal((3, 4)) > 0) * 1.0)


INPUTS = _inputs()


def squared_distance(x, y):
    return ((x - y) ** 2).sum(-1)


# name: (function, [(input, requires grad)], keywords); t3 and mt are class targets, w4 a constant weight except
# for multilabel_soft_margin_loss (composed in Python in PyTorch, so its weight gets a gradient).
CASES = {
    "margin_ranking": ("margin_ranking_loss", [("a", 1), ("b", 1), ("s", 1)], dict(margin=0.3)),
    "hinge": ("hinge_embedding_loss", [("a", 1), ("s", 0)], dict(margin=0.8)),
    "soft_margin": ("soft_margin_loss", [("a", 1), ("s", 0)], {}),
    "cosine": ("cosine_embedding_loss", [("a", 1), ("b", 1), ("s3", 0)], dict(margin=-0.2)),
    "triplet": ("triplet_margin_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=1.5)),
    "triplet_p1_swap": ("triplet_margin_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=2.0, p=1, swap=True)),
    "triplet_distance": ("triplet_margin_with_distance_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=1.5)),
    "triplet_distance_swap": ("triplet_margin_with_distance_loss", [("a", 1), ("b", 1), ("c", 1)],
                              dict(margin=4.0, swap=True, distance_function=squared_distance)),
    "poisson": ("poisson_nll_loss", [("a", 1), ("counts", 1)], {}),
    "poisson_rates_full": ("poisson_nll_loss", [("pos", 1), ("counts", 1)], dict(log_input=False, full=True)),
    "gaussian": ("gaussian_nll_loss", [("a", 1), ("b", 1), ("pos", 1)], {}),
    "gaussian_row_var_full": ("gaussian_nll_loss", [("a", 1), ("b", 1), ("var3", 1)], dict(full=True)),
    "multilabel_soft_margin": ("multilabel_soft_margin_loss", [("a", 1), ("bits", 0)], dict(weight="w4")),
    "multi_margin": ("multi_margin_loss", [("a", 1), ("t3", 0)], {}),
    "multi_margin_p2_weight": ("multi_margin_loss", [("a", 1), ("t3", 0)], dict(p=2, margin=0.7, weight="w4")),
    "multilabel_margin": ("multilabel_margin_loss", [("a", 1), ("mt", 0)], {}),
}


def _case(name: str) -> tuple:
    """The case's loss function, its tensor arguments, its keywords and the tensors that require grad."""
    function, args, keywords = CASES[name]
    tensors = []
    for key, requires_grad in args:
        if key in ("t3", "mt"):
            tensors.append(ag.tensor([0, 2, 3] if key == "t3" else MULTILABEL_TARGET))
        else:
            tensors.append(ag.tensor(INPUTS[key], requires_grad=bool(requires_grad)))
    keywords = dict(keywords)
    if keywords.get("weight") == "w4":
        keywords["weight"] = ag.tensor(INPUTS["w4"], requires_grad=function == "multilabel_soft_margin_loss")
    leaves = [t for t in (*tensors, keywords.get("weight")) if t is not None and t.requires_grad]
    return getattr(losses, function, None) or getattr(class_losses, function), tensors, keywords, leaves


def raises(kind, text):
    return pytest.raises(kind, match=f"^{re.escape(text)}$")


# -- independent numpy references: PyTorch's documented formulas, per sample or element, before the reduction ------
def _pairwise_distance(x, y, p=2.0, eps=1e-6):
    return (np.abs(x - y + eps) ** p).sum(-1) ** (1 / p)


def _triplet(a, b, c, margin, p=2.0, swap=False, distance=None):
    distance = distance or (lambda x, y: _pairwise_distance(x, y, p))
    far = np.minimum(distance(a, c), distance(b, c)) if swap else distance(a, c)
    return np.maximum(distance(a, b) - far + margin, 0)


def _log_sigmoid(x):
    return -np.logaddexp(0, -x)


def _multi_margin(x, target, p=1, margin=1.0, weight=None):
    out = np.zeros(len(x))
    for i, (row, y) in enumerate(zip(x, target)):
        terms = [max(0.0, margin - row[y] + row[j]) ** p for j in range(len(row)) if j != y]
        out[i] = sum(terms) * (1.0 if weight is None else weight[y]) / len(row)
    return out


def _multilabel_margin(x, target):
    out = np.zeros(len(x))
    for i, (row, labels) in enumerate(zip(x, target)):
        labels = labels[:labels.index(-1)] if -1 in labels else labels  # up to the first -1, repeats counted
        others = [k for k in range(len(row)) if k not in labels]
        out[i] = sum(max(0.0, 1 - (row[j] - row[k])) for j in labels for k in others) / len(row)
    return out


def _cosine(a, b, y, margin):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    return np.where(y == 1, 1 - cos, np.maximum(0, cos - margin))


def _poisson_rates_full(rate, k):
    stirling = np.where(k > 1, k * np.log(np.where(k > 1, k, 1)) - k + 0.5 * np.log(2 * np.pi * np.where(k > 1, k, 1)),
                        0)
    return rate - k * np.log(rate + 1e-8) + stirling


IN = INPUTS
REFERENCE = {
    "margin_ranking": lambda: np.maximum(0, -IN["s"] * (IN["a"] - IN["b"]) + 0.3),
    "hinge": lambda: np.where(IN["s"] == 1, IN["a"], np.maximum(0, 0.8 - IN["a"])),
    "soft_margin": lambda: np.log1p(np.exp(-IN["s"] * IN["a"])),
    "cosine": lambda: _cosine(IN["a"], IN["b"], IN["s3"], -0.2),
    "triplet": lambda: _triplet(IN["a"], IN["b"], IN["c"], 1.5),
    "triplet_p1_swap": lambda: _triplet(IN["a"], IN["b"], IN["c"], 2.0, p=1, swap=True),
    "triplet_distance": lambda: _triplet(IN["a"], IN["b"], IN["c"], 1.5),  # its default distance is pairwise_distance
    "triplet_distance_swap": lambda: _triplet(IN["a"], IN["b"], IN["c"], 4.0, swap=True,
                                              distance=lambda x, y: ((x - y) ** 2).sum(-1)),
    "poisson": lambda: np.exp(IN["a"]) - IN["counts"] * IN["a"],
    "poisson_rates_full": lambda: _poisson_rates_full(IN["pos"], IN["counts"]),
    "gaussian": lambda: 0.5 * (np.log(IN["pos"]) + (IN["a"] - IN["b"]) ** 2 / IN["pos"]),
    "gaussian_row_var_full": lambda: 0.5 * (np.log(IN["var3"][:, None]) + (IN["a"] - IN["b"]) ** 2 / IN["var3"][:, None]
                                            + np.log(2 * np.pi)),
    "multilabel_soft_margin": lambda: -(IN["w4"] * (IN["bits"] * _log_sigmoid(IN["a"])
                                                   + (1 - IN["bits"]) * _log_sigmoid(-IN["a"]))).mean(-1),
    "multi_margin": lambda: _multi_margin(IN["a"], [0, 2, 3]),
    "multi_margin_p2_weight": lambda: _multi_margin(IN["a"], [0, 2, 3], p=2, margin=0.7, weight=IN["w4"]),
    "multilabel_margin": lambda: _multilabel_margin(IN["a"], MULTILABEL_TARGET),
}


def reference(name: str, reduction: str) -> np.ndarray:
    """The case's loss from REFERENCE, reduced as PyTorch does: a mean over every element (or sample)."""
    loss = REFERENCE[name]()
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


REDUCTIONS = ("none", "mean", "sum")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients(name, reduction):
    function, tensors, keywords, leaves = _case(name)
    loss = function(*tensors, reduction=reduction, **keywords)
    np.testing.assert_allclose(loss.detach().numpy(), reference(name, reduction), rtol=1e-12, atol=1e-14)
    upstream = ag.tensor(np.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape))
    weight = keywords.pop("weight", None)

    def weighted(*grads):
        args = iter(grads)
        inputs = [next(args) if t.requires_grad else t for t in tensors]
        w = next(args) if weight is not None and weight.requires_grad else weight
        out = function(*inputs, reduction=reduction, **keywords, **({} if weight is None else {"weight": w}))
        return out * upstream

    assert gradcheck(weighted, leaves)


# -- shapes and special values ---------------------------------------------------------------------------------------
def test_multi_margin_shapes_follow_the_target_for_vector_inputs():
    x = ag.tensor([0.3, -0.2, 0.9, 0.1], requires_grad=True)
    assert class_losses.multi_margin_loss(x, ag.tensor([2]), reduction="none").shape == (1,)
    assert class_losses.multi_margin_loss(x, ag.tensor(2), reduction="none").shape == ()
    assert class_losses.multi_margin_loss(x[0], ag.tensor(0), reduction="none").item() == 0.0
    empty = class_losses.multi_margin_loss(ag.zeros(0, 4), ag.zeros(0, dtype=ag.int64))
    assert empty.item() == 0.0  # PyTorch's kernel: a mean over no samples is 0
    assert class_losses.multi_margin_loss(ag.zeros(0, 4), ag.zeros(0, dtype=ag.int64), reduction="none").shape == (0,)


def test_multilabel_margin_counts_targets_up_to_the_first_minus_one():
    x = ag.tensor([[0.1, 0.2, 0.4, 0.8]])
    once = class_losses.multilabel_margin_loss(x, ag.tensor([[3, -1, 0, 0]]))
    twice = class_losses.multilabel_margin_loss(x, ag.tensor([[3, 3, -1, 0]]))  # PyTorch counts a repeat twice
    np.testing.assert_allclose([once.item(), twice.item()], [0.325, 0.65], rtol=1e-6)
    vector = class_losses.multilabel_margin_loss(x[0], ag.tensor([3, -1, 0, 0]), reduction="none")
    assert vector.shape == ()


def test_empty_means_are_nan():
    assert np.isnan(losses.soft_margin_loss(ag.zeros(0), ag.zeros(0)).item())
    assert np.isnan(losses.cosine_embedding_loss(ag.zeros(0, 3), ag.zeros(0, 3), ag.zeros(0)).item())


def test_gaussian_nll_clamps_var_at_eps_keeping_its_gradient():
    var = ag.tensor([1e-9, 2.0], dtype=ag.float64, requires_grad=True)
    input, target = ag.tensor([1.0, 1.0], dtype=ag.float64), ag.tensor([0.0, 0.0], dtype=ag.float64)
    loss = losses.gaussian_nll_loss(input, target, var, reduction="sum")
    loss.backward()
    clamped = np.array([1e-6, 2.0])  # var at least eps = 1e-6; the loss is 0.5 (log var + (input - target)^2 / var)
    np.testing.assert_allclose(loss.item(), np.sum(0.5 * (np.log(clamped) + 1 / clamped)), rtol=1e-12)
    np.testing.assert_allclose(var.grad.numpy(), 0.5 * (1 / clamped - 1 / clamped ** 2), rtol=1e-12)
    float_var = losses.gaussian_nll_loss(ag.tensor([1.0, 3.0], dtype=ag.float64), target, 2.0, reduction="none")
    np.testing.assert_allclose(float_var.numpy(), 0.5 * (math.log(2.0) + np.array([1.0, 9.0]) / 2), rtol=1e-12)


def test_soft_margin_keeps_the_input_dtype_and_broadcasts_the_target():
    loss = losses.soft_margin_loss(ag.ones(2, 3), ag.tensor([1.0, -1.0, 1.0], dtype=ag.float64), reduction="none")
    assert loss.dtype == ag.float32 and loss.shape == (2, 3)


def test_deprecated_size_average_and_reduce_pick_the_reduction():
    x, s = ag.tensor(INPUTS["a"]), ag.tensor(INPUTS["s"])
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        summed = losses.hinge_embedding_loss(x, s, size_average=False)
    assert summed.item() == losses.hinge_embedding_loss(x, s, reduction="sum").item()
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert losses.soft_margin_loss(x, s, reduce=False).shape == (3, 4)


# -- errors ----------------------------------------------------------------------------------------------------------
X, Y = ag.ones(3, 4), ag.zeros(3, 4)
T3 = ag.tensor([0, 2, 3])
ERRORS = [
    (lambda: losses.margin_ranking_loss(X, Y, X[0]), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: (3, 4), input2: "
     "(3, 4), target: (4,) "),
    (lambda: losses.margin_ranking_loss(X, Y, X, reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: losses.soft_margin_loss(X, ag.ones(3, 4, requires_grad=True)), RuntimeError,
     "The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input cannot "
     "have requires_grad True."),
    (lambda: losses.soft_margin_loss(X[0], X), RuntimeError,
     "output with shape [4] doesn't match the broadcast shape [3, 4]"),
    (lambda: losses.soft_margin_loss(X, ag.ones(3)), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1"),
    (lambda: losses.soft_margin_loss(ag.ones(3, dtype=ag.int64), ag.ones(3, dtype=ag.int64)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: losses.cosine_embedding_loss(X, Y, X), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: losses.cosine_embedding_loss(X[0], Y[0], ag.ones(3)), RuntimeError,
     "1D target tensor expects 2D input tensors, but found inputs with sizes [4] and [4]."),
    (lambda: losses.cosine_embedding_loss(X, Y, ag.tensor(1.0)), RuntimeError,
     "0D target tensor expects 1D input tensors, but found inputs with sizes [3, 4] and [3, 4]."),
    (lambda: losses.triplet_margin_loss(X, Y, Y[0]), RuntimeError,
     "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
     "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda: losses.triplet_margin_loss(X, Y, Y, margin=0), ValueError, "margin must be greater than 0, got 0"),
    (lambda: losses.triplet_margin_with_distance_loss(X, Y, Y, margin=-1), ValueError,
     "margin must be greater than 0, got -1"),
    (lambda: losses.triplet_margin_with_distance_loss(X, Y, Y, reduction="x"), ValueError,
     "x is not a valid value for reduction"),
    (lambda: losses.poisson_nll_loss(X, Y, reduction="bad"), ValueError, "bad is not a valid value for reduction"),
    (lambda: losses.gaussian_nll_loss(X, Y, -1.0), ValueError, "var has negative entry/entries"),
    (lambda: losses.gaussian_nll_loss(X, Y, -X), ValueError, "var has negative entry/entries"),
    (lambda: losses.gaussian_nll_loss(X, Y, ag.ones(3, 5)), ValueError, "var is of incorrect size"),
    (lambda: losses.gaussian_nll_loss(X, Y, ag.ones(1, 1)), ValueError, "var is of incorrect size"),
    (lambda: losses.gaussian_nll_loss(X, Y, X, reduction="x"), ValueError, "x is not valid"),
    (lambda: class_losses.multilabel_soft_margin_loss(X, Y, reduction="x"), ValueError, "x is not valid"),
    (lambda: class_losses.multilabel_soft_margin_loss(X[0, 0], Y[0, 0]), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: class_losses.multi_margin_loss(X, T3, p=3), ValueError, "only p == 1 and p == 2 supported"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(2, 2)), ValueError,
     "weight must be one-dimensional"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(4, requires_grad=True)), RuntimeError,
     "The function 'multi_margin_loss' is not differentiable with respect to argument 'weight'. This input cannot "
     "have requires_grad True."),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(3)), RuntimeError,
     "inconsistent weight size, expected 4 but got [3]"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(4, dtype=ag.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: class_losses.multi_margin_loss(X, ag.tensor([0, 4, 1])), RuntimeError, "target out of range"),
    (lambda: class_losses.multi_margin_loss(X, ag.tensor([0, 1])), RuntimeError,
     "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch size). "
     "Expected target size [3], but got [2]. Input has shape [3, 4]."),
    (lambda: class_losses.multi_margin_loss(ag.ones(2, 3, 4), T3), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"),
    (lambda: class_losses.multi_margin_loss(ag.ones(2, 0), ag.tensor([0, 0])), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 0]"),
    (lambda: class_losses.multi_margin_loss(X, T3.double()), RuntimeError,
     "expected scalar type Long but found Double"),
    (lambda: class_losses.multi_margin_loss(ag.ones(3, 4, dtype=ag.int64), T3), NotImplementedError,
     "\"multi_margin_loss_cpu_kernel\" not implemented for 'Long'"),
    (lambda: class_losses.multilabel_margin_loss(X, ag.zeros(3, 3, dtype=ag.int64)), RuntimeError,
     "inconsistent target size: [3, 3] for input of size: [3, 4]"),
    (lambda: class_losses.multilabel_margin_loss(X[0], ag.tensor([1, -1, 0])), RuntimeError,
     "inconsistent target size: [3] for input of size: [4]"),
    (lambda: class_losses.multilabel_margin_loss(X[:1], ag.tensor([[3, -1, 7, -5]])), RuntimeError,
     "argument #2 'target' is out of range"),
    (lambda: class_losses.multilabel_margin_loss(X, ag.tensor(MULTILABEL_TARGET).double()), RuntimeError,
     "expected scalar type Long but found Double"),
]


@pytest.mark.parametrize(("call", "kind", "text"), ERRORS)
def test_errors_match_pytorch(call, kind, text):
    with raises(kind, text):
        call()


# -- modules ---------------------------------------------------------------------------------------------------------
MODULES = [
    (nn_loss.MarginRankingLoss(margin=0.3, reduction="sum"), "margin_ranking"),
    (nn_loss.HingeEmbeddingLoss(margin=0.8), "hinge"),
    (nn_loss.SoftMarginLoss(reduction="none"), "soft_margin"),
    (nn_loss.CosineEmbeddingLoss(margin=-0.2), "cosine"),
    (nn_loss.TripletMarginLoss(margin=2.0, p=1, swap=True, reduction="sum"), "triplet_p1_swap"),
    (nn_loss.TripletMarginWithDistanceLoss(margin=1.5), "triplet_distance"),
    (nn_loss.TripletMarginWithDistanceLoss(distance_function=squared_distance, margin=4.0, swap=True),
     "triplet_distance_swap"),
    (nn_loss.PoissonNLLLoss(log_input=False, full=True, reduction="none"), "poisson_rates_full"),
    (nn_loss.GaussianNLLLoss(full=True), "gaussian_row_var_full"),
    (nn_loss.MultiLabelSoftMarginLoss(weight=ag.tensor(INPUTS["w4"])), "multilabel_soft_margin"),
    (nn_loss.MultiMarginLoss(p=2, margin=0.7, weight=ag.tensor(INPUTS["w4"]), reduction="sum"),
     "multi_margin_p2_weight"),
    (nn_loss.MultiLabelMarginLoss(reduction="none"), "multilabel_margin"),
]


@pytest.mark.parametrize(("module", "name"), MODULES)
def test_modules_give_their_functions_values(module, name):
    _, tensors, _, _ = _case(name)
    np.testing.assert_allclose(module(*tensors).detach().numpy(), reference(name, module.reduction), rtol=1e-12,
                               atol=1e-14)


def test_module_defaults_and_checks_are_pytorch_s():
    triplet = nn_loss.TripletMarginLoss()
    assert (triplet.margin, triplet.p, triplet.eps, triplet.swap, triplet.reduction) == (1.0, 2.0, 1e-6, False, "mean")
    poisson = nn_loss.PoissonNLLLoss()
    assert (poisson.log_input, poisson.full, poisson.eps) == (True, False, 1e-8)
    assert (nn_loss.GaussianNLLLoss().eps, nn_loss.HingeEmbeddingLoss().margin) == (1e-6, 1.0)
    multi = nn_loss.MultiMarginLoss(weight=ag.ones(4))
    assert (multi.p, multi.margin) == (1, 1.0) and list(multi.state_dict()) == ["weight"]
    assert list(nn_loss.MultiLabelSoftMarginLoss(weight=ag.ones(4)).state_dict()) == ["weight"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nn_loss.MarginRankingLoss().reduction == "mean"
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert nn_loss.SoftMarginLoss(reduce=False).reduction == "none"
    with raises(ValueError, "TripletMarginLoss: expected margin to be greater than 0, got 0 instead"):
        nn_loss.TripletMarginLoss(margin=0)
    with raises(ValueError, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1 instead"):
        nn_loss.TripletMarginWithDistanceLoss(margin=-1)
    with raises(ValueError, "only p == 1 and p == 2 supported"):
        nn_loss.MultiMarginLoss(p=3)
    with raises(ValueError, "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"):
        nn_loss.MultiMarginLoss(weight=ag.ones(2, 2))
