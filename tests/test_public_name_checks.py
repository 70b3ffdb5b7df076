"""The public names check what the ops behind them take for granted: a Tensor first argument gets PyTorch's
TypeError, never an AttributeError from inside the op, and a warning names the caller's line, however many
frames of actorgrad lie between (a public name's check, a Tensor method, an nn module)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import Tensor, user_warnings
from actorgrad.ops.public_names import checked_tensors

NAMESPACES = {"actorgrad": ag, "functional": F, "special": ag.special, "linalg": ag.linalg}
CHECKED = [
    (f"{label}.{name}", getattr(module, name))
    for label, module in NAMESPACES.items()
    for name in module.__all__
    if getattr(getattr(module, name), "__wrapped__", None) is not None
    and getattr(module, name).__code__.co_name == "checked"
]


def test_every_op_with_a_tensor_first_parameter_is_checked() -> None:
    names = {name for name, _ in CHECKED}
    assert {"actorgrad.exp", "actorgrad.sum", "functional.relu", "functional.linear", "special.expit",
            "linalg.pinv", "actorgrad.tensordot"} <= names
    assert len(names) > 250


@pytest.mark.parametrize(("name", "fn"), CHECKED, ids=[name for name, _ in CHECKED])
@pytest.mark.parametrize("value", [1.0, [1.0]], ids=["float", "list"])
def test_a_number_or_a_list_in_place_of_the_tensor_gets_a_type_error(name: str, fn: Callable, value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(value)
        except TypeError:
            pass
        except AttributeError as error:
            pytest.fail(f"{name}({value!r}) raised {error!r}")
        except Exception:  # noqa: BLE001 -- another check of the op's own (a missing dim, say) may go first
            pass


X = ag.tensor([[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.exp(1.0), "exp(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.sum([1.0]), "sum(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ag.sigmoid(1.0), "sigmoid(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.flatten(1.0), "flatten(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.square(2.0), "square(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.clamp(1.0, 0.0, 0.5), "clamp(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.relu(1.0), "relu(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.gelu(1.0), "gelu(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.linear(1.0, ag.ones(2, 2)), "linear(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.special.expit(1.0), "special_expit(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.special.erf(1.0), "special_erf(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.inv(1.0), "linalg_inv(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.cholesky(1.0), "linalg_cholesky(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.cdist(1.0, ag.ones(2, 2)), "cdist(): argument 'x1' (position 1) must be Tensor, not float"),
    (lambda: ag.searchsorted(1.0, ag.ones(2)),
     "searchsorted(): argument 'sorted_sequence' (position 1) must be Tensor, not float"),
    (lambda: ag.mm(X, 1.0), "mm(): argument 'mat2' (position 2) must be Tensor, not float"),
    (lambda: ag.matmul(X, 1.0), "matmul(): argument 'other' (position 2) must be Tensor, not float"),
    (lambda: ag.mv(X, 1.0), "mv(): argument 'vec' (position 2) must be Tensor, not float"),
    (lambda: F.linear(X, 1.0), "linear(): argument 'weight' (position 2) must be Tensor, not float"),
    (lambda: F.linear(X, X, 1.0), "linear(): argument 'bias' (position 3) must be Tensor, not float"),
    (lambda: F.conv2d(ag.ones(1, 1, 3, 3), 1.0), "conv2d(): argument 'weight' (position 2) must be Tensor, not float"),
    (lambda: F.layer_norm(X, (2,), 1.0), "layer_norm(): argument 'weight' (position 3) must be Tensor, not float"),
    (lambda: F.mse_loss(X, np.ones((2, 2))),
     "mse_loss(): argument 'target' (position 2) must be Tensor, not numpy.ndarray"),
    (lambda: ag.tensordot(X, 1.0), "tensordot(): argument 'b' (position 2) must be Tensor, not float"),
    (lambda: ag.gather(X, 0, [[0]]), "gather(): argument 'index' (position 3) must be Tensor, not list"),
    (lambda: ag.index_select(X, 0, 1.0), "index_select(): argument 'index' (position 3) must be Tensor, not float"),
    (lambda: ag.einsum("ij,jk", X, 1.0), "expected Tensor as element 1 in argument 1, but got float"),
    (lambda: ag.cartesian_prod(1.0), "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.meshgrid(1.0, indexing="ij"), "expected Tensor as element 0 in argument 0, but got float"),
    (lambda: ag.meshgrid(ag.ones(2), 3, indexing="ij"), "expected Tensor as element 1 in argument 0, but got int"),
])
def test_pytorchs_text_names_the_op_and_the_argument(call: Callable, text: str) -> None:
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == text


def test_a_keyword_input_is_checked_and_a_missing_one_gets_pythons_error() -> None:
    t = ag.tensor([0.0, 1.0])
    assert ag.exp(input=t).tolist() == pytest.approx([1.0, np.e])
    assert ag.sum(input=t, dim=0).item() == 1.0
    with pytest.raises(TypeError, match=r"^sum\(\): argument 'input' \(position 1\) must be Tensor, not float$"):
        ag.sum(input=1.0, dim=0)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'input'"):
        ag.exp()


def test_an_attribute_error_from_a_tensor_argument_passes_unchanged() -> None:
    def broken(input: Tensor, other: Tensor | None = None) -> None:
        raise AttributeError("the op's own")

    with pytest.raises(AttributeError, match="the op's own"):
        checked_tensors(broken, "broken")(ag.ones(1))
    with pytest.raises(TypeError, match=r"^broken\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
        checked_tensors(broken, "broken")(3)
    with pytest.raises(TypeError, match=r"^broken\(\): argument 'other' \(position 2\) must be Tensor, not str$"):
        checked_tensors(broken, "broken")(ag.ones(1), other="x")
    with pytest.raises(AttributeError, match="the op's own"):
        checked_tensors(broken, "broken")(ag.ones(1), None)  # an optional tensor may be None


def test_public_names_keep_their_signature_and_docs() -> None:
    assert ag.exp.__name__ == "exp" and ag.exp.__wrapped__ is ag.ops.arithmetic_unary.exp
    assert ag.sum.__doc__ == ag.ops.reductions.sum.__doc__
    assert ag.Tensor.exp is ag.ops.arithmetic_unary.exp  # methods call the op itself: their self is a Tensor


WARNINGS = [
    (lambda: F.softmax(X), "Implicit dimension choice for softmax"),
    (lambda: F.log_softmax(X), "Implicit dimension choice for log_softmax"),
    (lambda: ag.nn.Softmax()(X), "Implicit dimension choice for softmax"),
    (lambda: ag.meshgrid(X[0], X[1]), "it will be required to pass the indexing argument"),
    (lambda: ag.var(ag.ones(1)), "degrees of freedom is <= 0"),
    (lambda: ag.ones(1).var(), "degrees of freedom is <= 0"),
    (lambda: F.mse_loss(X, ag.ones(2)), "Using a target size"),
    (lambda: F.mse_loss(X, X, size_average=False), "size_average and reduce args will be deprecated"),
    (lambda: ag.nn.MSELoss(size_average=False)(X, X), "size_average and reduce args will be deprecated"),
    (lambda: F.kl_div(X, X), "reduction: 'mean' divides the total loss"),
    (lambda: ag.ones(2, 2, 2).T, "The use of `x.T` on tensors of dimension other than 2"),
    (lambda: ag.tensor(1.0).mT, "Tensor.mT is deprecated on 0-D tensors"),
    (lambda: X.new_tensor(X), "To copy construct from a tensor"),
]


@pytest.mark.parametrize(("call", "text"), WARNINGS, ids=[text for _, text in WARNINGS])
def test_a_warning_names_the_callers_line(call: Callable, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_warnings, "_warned_once", set())  # some warn once per process, as PyTorch's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    ours = [w for w in caught if text in str(w.message)]
    assert ours and all(w.filename == __file__ for w in ours), [(str(w.message), w.filename) for w in caught]


# -- top-level forms that take other arguments than their nn.functional namesakes (torch 2.13) -------------------
def test_top_level_batch_norm_takes_weight_and_bias_before_the_running_statistics() -> None:
    x = ag.tensor([[1.0, 2.0], [3.0, 6.0]])
    mean, var = ag.tensor([0.5, 1.0]), ag.tensor([1.0, 4.0])
    out = ag.batch_norm(x, ag.tensor([2.0, 3.0]), ag.tensor([0.0, 1.0]), mean, var, True, 0.5, 0.0, False)
    np.testing.assert_allclose(out.numpy(), [[-2.0, -2.0], [2.0, 4.0]])
    np.testing.assert_allclose(mean.numpy(), [1.25, 2.5])
    np.testing.assert_allclose(var.numpy(), [1.5, 6.0])  # the unbiased batch variance (2, 8) averaged in
    evaluated = ag.batch_norm(x, None, None, ag.tensor([1.0, 2.0]), ag.tensor([4.0, 16.0]), False, 0.1, 0.0, True)
    np.testing.assert_allclose(evaluated.numpy(), [[0.0, 0.0], [1.0, 1.0]])


def test_top_level_embedding_takes_the_weight_first() -> None:
    weight = ag.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], requires_grad=True)
    rows = ag.embedding(weight, ag.tensor([0, 2, 0]), 0)
    assert rows.tolist() == [[0.0, 1.0], [4.0, 5.0], [0.0, 1.0]]
    rows.sum().backward()
    assert weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]  # padding_idx 0 gets no gradient
    weight.grad = None
    ag.embedding(weight, ag.tensor([0, 0])).sum().backward()  # -1, the default: no padding row
    assert weight.grad.tolist() == [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]


def test_top_level_binary_cross_entropy_with_logits_takes_an_int_reduction_and_defaults_to_none() -> None:
    x, t = ag.tensor([0.0, 2.0]), ag.tensor([1.0, 0.0])
    elementwise = [np.log(2.0), np.log1p(np.exp(2.0))]  # log(1 + e^-x) for target 1, log(1 + e^x) for target 0
    np.testing.assert_allclose(ag.binary_cross_entropy_with_logits(x, t).numpy(), elementwise, rtol=1e-6)
    np.testing.assert_allclose(ag.binary_cross_entropy_with_logits(x, t, None, None, 3).numpy(), elementwise,
                               rtol=1e-6)
    assert ag.binary_cross_entropy_with_logits(x, t, None, None, 1).item() == pytest.approx(sum(elementwise) / 2)
    weighted = ag.binary_cross_entropy_with_logits(x, t, ag.tensor([2.0, 0.0]), ag.tensor([3.0, 1.0]), 2)
    assert weighted.item() == pytest.approx(2 * 3 * elementwise[0])
    with pytest.raises(TypeError, match=r"argument 'reduction' must be int, not str"):
        ag.binary_cross_entropy_with_logits(x, t, reduction="mean")
    assert F.binary_cross_entropy_with_logits(x, t).item() == pytest.approx(sum(elementwise) / 2)
