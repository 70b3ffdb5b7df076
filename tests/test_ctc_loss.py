"""ctc_loss and CTCLoss: the loss is -log of the summed probability of every alignment path that collapses to the
target (checked against enumerating the paths), its gradient is the loss's true gradient wrt log_probs (checked
by finite differences, directly and through log_softmax), and its arguments get PyTorch's checks."""

from __future__ import annotations

import itertools
import re
from functools import cache

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(7)


@cache
def _paths(frames: int, classes: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Every path of `frames` symbols over `classes`, and what each collapses to with blank 0 ... classes - 1:
    {blank: labels}, repeats merged first, then the blanks dropped."""
    paths = np.array(list(itertools.product(range(classes), repeat=frames)), dtype=np.int64)
    paths = paths.reshape(classes**frames, frames)
    merged = [[c for i, c in enumerate(p) if i == 0 or c != p[i - 1]] for p in paths.tolist()]
    collapsed = {blank: [tuple(c for c in m if c != blank) for m in merged] for blank in range(classes)}
    return paths, collapsed


def brute_force_nll(lp: np.ndarray, target: list[int], blank: int = 0) -> float:
    """-log sum over the paths of lp (T, C) that collapse to the target of exp(sum of their log_probs)."""
    frames, classes = lp.shape
    paths, collapsed = _paths(frames, classes)
    scores = lp[np.arange(frames), paths].sum(1)
    hits = np.array([c == tuple(target) for c in collapsed[blank]])
    return -np.logaddexp.reduce(scores[hits]) if hits.any() else np.inf


def brute_force_batch(lp: np.ndarray, targets: list[list[int]], input_lengths: list[int], blank: int = 0):
    return np.array([brute_force_nll(lp[:t, n], targets[n], blank) for n, t in enumerate(input_lengths)])


def log_softmax(x: np.ndarray) -> np.ndarray:
    return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


def padded(targets: list[list[int]], width: int | None = None, fill: int = 0) -> np.ndarray:
    width = max(map(len, targets)) if width is None else width
    return np.array([t + [fill] * (width - len(t)) for t in targets], dtype=np.int64)


def concatenated(targets: list[list[int]]) -> np.ndarray:
    return np.array([c for t in targets for c in t], dtype=np.int64)


# (T, C, blank, targets, input lengths): repeats, empty targets, shorter inputs, a blank other than 0
CASES = {
    "mixed lengths": (5, 4, 0, [[1, 2], [3], [], [2, 2, 1]], [5, 4, 3, 5]),
    "repeated labels": (5, 3, 0, [[1, 1], [2, 2], [1, 1, 2]], [5, 3, 5]),
    "blank last": (4, 3, 2, [[0, 1], [1, 1], [0]], [4, 4, 2]),
    "no frames": (3, 3, 0, [[], [1]], [0, 0]),
}


@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("name", list(CASES))
def test_each_loss_is_minus_log_of_the_paths_that_collapse_to_its_target(name: str, layout: str) -> None:
    frames, classes, blank, targets, lengths = CASES[name]
    lp = log_softmax(RNG.normal(size=(frames, len(targets), classes)))
    t = padded(targets, fill=1) if layout == "padded" else concatenated(targets)
    loss = F.ctc_loss(ag.tensor(lp), ag.tensor(t), lengths, [len(x) for x in targets], blank=blank, reduction="none")
    assert loss.shape == (len(targets),) and loss.dtype == ag.float64
    np.testing.assert_allclose(loss.numpy(), brute_force_batch(lp, targets, lengths, blank), rtol=1e-12, atol=1e-12)


def test_log_probs_need_not_be_normalized() -> None:
    lp = RNG.normal(size=(4, 2, 3))  # no log_softmax: the paths' summed scores all the same
    targets = [[1, 2], [2]]
    loss = F.ctc_loss(ag.tensor(lp), ag.tensor(padded(targets)), [4, 4], [2, 1], reduction="none")
    np.testing.assert_allclose(loss.numpy(), brute_force_batch(lp, targets, [4, 4]), rtol=1e-12)


def test_repeated_labels_need_a_blank_between_them() -> None:
    lp = log_softmax(RNG.normal(size=(3, 1, 3)))
    one, two = ag.tensor([[1, 1]]), ag.tensor([[1, 2]])
    # Two frames hold 1, 2 but not 1, 1, which needs a blank between: 1 _ 1 is its only path in three frames.
    assert F.ctc_loss(ag.tensor(lp[:2]), one, [2], [2], reduction="sum").item() == np.inf
    assert np.isfinite(F.ctc_loss(ag.tensor(lp[:2]), two, [2], [2], reduction="sum").item())
    only_path = -(lp[0, 0, 1] + lp[1, 0, 0] + lp[2, 0, 1])
    assert F.ctc_loss(ag.tensor(lp), one, [3], [2], reduction="sum").item() == pytest.approx(only_path, rel=1e-12)


TARGETS = [[1, 2], [3, 3, 1, 1], [], [2]]  # the second needs 6 frames (blanks between repeats), it has 4
INPUT_LENGTHS = [5, 4, 3, 2]


def _batch(requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(RNG.normal(size=(5, 4, 4)), requires_grad=requires_grad)


def _ctc(x: ag.Tensor, reduction: str = "none", zero_infinity: bool = False) -> ag.Tensor:
    return F.ctc_loss(F.log_softmax(x, 2), ag.tensor(padded(TARGETS)), INPUT_LENGTHS, [len(t) for t in TARGETS],
                      reduction=reduction, zero_infinity=zero_infinity)


def test_an_impossible_target_has_an_infinite_loss_and_zero_infinity_makes_it_zero() -> None:
    x = _batch()
    expected = brute_force_batch(F.log_softmax(x, 2).numpy(), TARGETS, INPUT_LENGTHS)
    assert expected[1] == np.inf
    np.testing.assert_allclose(_ctc(x).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(_ctc(x, zero_infinity=True).numpy(), np.where(expected == np.inf, 0, expected),
                               rtol=1e-12)
    assert _ctc(x, "sum").item() == np.inf and _ctc(x, "mean").item() == np.inf


def test_zero_infinity_zeroes_the_impossible_samples_gradient_and_keeps_the_others() -> None:
    x = _batch(requires_grad=True)
    _ctc(x, "sum", zero_infinity=True).backward()
    kept = x.grad.numpy()
    assert np.all(kept[:, 1] == 0) and np.isfinite(kept).all() and np.abs(kept[:, 0]).max() > 0.01
    x.grad = None
    _ctc(x, "sum").backward()  # as PyTorch's: the impossible sample's gradient is NaN within its frames
    within = INPUT_LENGTHS[1]
    assert np.isnan(x.grad.numpy()[:within, 1]).all() and np.all(x.grad.numpy()[within:, 1] == 0)
    np.testing.assert_allclose(np.delete(x.grad.numpy(), 1, axis=1), np.delete(kept, 1, axis=1), rtol=1e-12)


def test_the_reductions_sum_and_average_over_target_lengths_clamped_to_one() -> None:
    x = _batch()
    losses = brute_force_batch(F.log_softmax(x, 2).numpy(), TARGETS, INPUT_LENGTHS)
    losses[1] = 0.0  # zero_infinity
    lengths = np.array([2, 4, 0, 1])
    assert _ctc(x, "sum", True).item() == pytest.approx(losses.sum(), rel=1e-12)
    assert _ctc(x, "mean", True).item() == pytest.approx(np.mean(losses / np.maximum(lengths, 1)), rel=1e-12)


def test_padded_and_concatenated_targets_and_any_lengths_form_agree() -> None:
    x = _batch(requires_grad=True)
    lengths = [len(t) for t in TARGETS]
    forms = [
        (ag.tensor(padded(TARGETS, width=6, fill=3)), INPUT_LENGTHS, lengths),
        (ag.tensor(concatenated(TARGETS)), tuple(INPUT_LENGTHS), tuple(lengths)),
        (ag.tensor(concatenated(TARGETS), dtype=ag.int32), ag.tensor(INPUT_LENGTHS, dtype=ag.int32),
         ag.tensor(lengths)),
    ]
    results = []
    for targets, ins, outs in forms:
        loss = F.ctc_loss(F.log_softmax(x, 2), targets, ins, outs, reduction="sum", zero_infinity=True)
        (grad,) = ag.autograd.grad(loss, x)
        results.append((loss.item(), grad.numpy()))
    for value, grad in results[1:]:
        assert value == results[0][0]
        np.testing.assert_array_equal(grad, results[0][1])


def test_an_unbatched_input_is_one_sample() -> None:
    lp = log_softmax(RNG.normal(size=(5, 4)))
    target = [3, 3, 1]
    for lengths in [((5,), (3,)), (ag.tensor(5), ag.tensor(3))]:
        loss = F.ctc_loss(ag.tensor(lp), ag.tensor(target), *lengths, reduction="none")
        assert loss.shape == ()
        assert loss.item() == pytest.approx(brute_force_nll(lp, target), rel=1e-12)
        mean = F.ctc_loss(ag.tensor(lp), ag.tensor(target), *lengths)
        assert mean.item() == pytest.approx(brute_force_nll(lp, target) / 3, rel=1e-12)


def test_float32_log_probs_give_float32_losses_and_gradients() -> None:
    x = ag.tensor(RNG.normal(size=(5, 4, 4)), dtype=ag.float32, requires_grad=True)
    loss = F.ctc_loss(F.log_softmax(x, 2), ag.tensor(padded(TARGETS)), INPUT_LENGTHS, [2, 4, 0, 1],
                      reduction="none", zero_infinity=True)
    assert loss.dtype == ag.float32
    loss.sum().backward()
    assert x.grad.dtype == ag.float32
    expected = brute_force_batch(log_softmax(x.detach().numpy().astype(np.float64)), TARGETS, INPUT_LENGTHS)
    np.testing.assert_allclose(loss.detach().numpy(), np.where(expected == np.inf, 0, expected), rtol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_the_gradient_through_log_softmax_matches_finite_differences(reduction: str) -> None:
    x = ag.tensor(RNG.normal(size=(5, 4, 4)), requires_grad=True)
    assert gradcheck(lambda x: _ctc(x, reduction, zero_infinity=True), (x,))


def test_the_gradient_is_the_true_one_for_log_probs_that_are_not_normalized() -> None:
    # PyTorch's kernel adds exp(log_probs) (right only through log_softmax); finite differences on free
    # log_probs catch that.
    lp = ag.tensor(RNG.normal(size=(5, 3, 3)), requires_grad=True)
    targets = ag.tensor(concatenated([[1, 1], [2], [1, 2]]))
    assert gradcheck(lambda lp: F.ctc_loss(lp, targets, [5, 3, 4], [2, 1, 2], blank=0, reduction="none"), (lp,))
    assert gradcheck(lambda lp: F.ctc_loss(lp, targets, [5, 3, 4], [2, 1, 2], blank=2, reduction="sum"), (lp,))


def test_the_gradient_is_zero_past_each_input_length() -> None:
    x = _batch(requires_grad=True)
    _ctc(x, "sum", zero_infinity=True).backward()
    grad = x.grad.numpy()
    for n, length in enumerate(INPUT_LENGTHS):
        assert np.all(grad[length:, n] == 0)
        if n != 1:  # the impossible sample's is zero everywhere (zero_infinity)
            assert np.all(np.abs(grad[:length, n]).sum(1) > 1e-3)


def test_the_node_is_ctc_loss_backward_and_its_gradient_differentiates_no_further() -> None:
    x = _batch(requires_grad=True)
    lp = F.log_softmax(x, 2)
    loss = _ctc(x)
    assert loss.grad_fn.name() == "CtcLossBackward0"
    assert _ctc(x, "mean").grad_fn.name() == "MeanBackward0"
    (grad,) = ag.autograd.grad(F.ctc_loss(lp, ag.tensor([[1]] * 4), [5] * 4, [1] * 4), lp, create_graph=True)
    with pytest.raises(RuntimeError, match=re.escape("derivative for aten::_ctc_loss_backward is not implemented")):
        grad.sum().backward()


def test_log_probs_changed_in_place_after_the_loss_refuse_the_backward() -> None:
    lp = F.log_softmax(_batch(requires_grad=True), 2)
    loss = F.ctc_loss(lp, ag.tensor([[1]] * 4), [5] * 4, [1] * 4)
    lp.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_the_module_is_the_functional() -> None:
    x = _batch(requires_grad=True)
    lp = F.log_softmax(x, 2)
    targets, lengths = ag.tensor(padded(TARGETS)), ag.tensor([len(t) for t in TARGETS])
    for options in [{}, {"blank": 3, "reduction": "sum", "zero_infinity": True}, {"reduction": "none"}]:
        module = nn.CTCLoss(**options)
        got = module(lp, targets, ag.tensor(INPUT_LENGTHS), lengths)
        expected = F.ctc_loss(lp, targets, INPUT_LENGTHS, lengths, **options)
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    assert (nn.CTCLoss().blank, nn.CTCLoss().reduction, nn.CTCLoss().zero_infinity) == (0, "mean", False)


LP = ag.tensor(log_softmax(np.zeros((5, 2, 4))))
T2 = ag.tensor([[1, 2], [3, 1]])
CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: F.ctc_loss(LP, T2, [5, 5], [2, 2], blank=4), RuntimeError, "blank must be in label range"),
    (lambda: F.ctc_loss(LP, T2, [5, 5], [2, 2], blank=-1), RuntimeError, "blank must be in label range"),
    (lambda: F.ctc_loss(LP, T2, [5], [2, 2]), RuntimeError, "input_lengths must be of size batch_size"),
    (lambda: F.ctc_loss(LP, T2, [5, 5], [2, 2, 2]), RuntimeError, "target_lengths must be of size batch_size"),
    (lambda: F.ctc_loss(LP, T2.float(), [5, 5], [2, 2]), RuntimeError, "expected targets of an integer dtype"),
    (lambda: F.ctc_loss(LP, T2[None], [5, 5], [2, 2]), RuntimeError,
     "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'" + CHECKING),
    (lambda: F.ctc_loss(LP[0, 0], T2, [5], [2]), RuntimeError,
     "Expected 3-dimensional tensor, but got 1-dimensional tensor for argument #1 'log_probs'"),
    (lambda: F.ctc_loss(LP[None], T2, [5, 5], [2, 2]), RuntimeError,
     "Expected 3-dimensional tensor, but got 4-dimensional tensor for argument #1 'log_probs'"),
    (lambda: F.ctc_loss(LP.long(), T2, [5, 5], [2, 2]), NotImplementedError,
     "\"ctc_loss_cpu\" not implemented for 'Long'"),
    (lambda: F.ctc_loss(LP[:, :0], T2[:0], [], []), RuntimeError, "log_probs tensor must not be empty"),
    (lambda: F.ctc_loss(LP, T2, [5, 5], [2, -1]), RuntimeError,
     "Expected target_lengths to have value at least 0, but got value -1" + CHECKING),
    (lambda: F.ctc_loss(LP, T2, [6, 5], [2, 2]), RuntimeError,
     "Expected input_lengths to have value at most 5, but got value 6" + CHECKING),
    (lambda: F.ctc_loss(LP, T2, [-1, 5], [2, 2]), RuntimeError,
     "Expected input_lengths to have value at least 0, but got value -1" + CHECKING),
    (lambda: F.ctc_loss(LP, T2.reshape(-1), [5, 5], [2, 1]), RuntimeError,
     "Expected tensor to have size 3 at dimension 0, but got size 4 for argument #2 'targets'" + CHECKING),
    (lambda: F.ctc_loss(LP, T2, [5, 5], [3, 1]), RuntimeError,
     "Expected tensor to have size at least 3 at dimension 1, but got size 2 for argument #2 'targets'" + CHECKING),
    (lambda: F.ctc_loss(LP, T2[:1], [5, 5], [2, 2]), RuntimeError,
     "Expected tensor to have size 2 at dimension 0, but got size 1 for argument #2 'targets'" + CHECKING),
    (lambda: F.ctc_loss(LP, T2, ag.tensor([5.0, 5.0]), [2, 2]), RuntimeError, "input_lengths must be integral"),
    (lambda: F.ctc_loss(LP, T2, [5, 5], ag.tensor([True, True])), RuntimeError, "target_lengths must be integral"),
    (lambda: F.ctc_loss(LP, T2, 5, [2, 2]), TypeError,
     "argument 'input_lengths' must be a tuple of ints or a Tensor of integers, not int"),
    (lambda: F.ctc_loss(LP, T2, [5, 5], [2, 2], reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: F.ctc_loss(LP, ag.tensor([[1, 4], [3, 1]]), [5, 5], [2, 2]), IndexError,
     "target 4 is out of range for 4 classes"),
    (lambda: F.ctc_loss(1.0, T2, [5, 5], [2, 2]), TypeError,
     "ctc_loss(): argument 'log_probs' (position 1) must be Tensor, not float"),
])
def test_bad_arguments_get_pytorchs_errors(call, error, text) -> None:
    with pytest.raises(error, match=re.escape(text)):
        call()


def test_padding_past_a_targets_length_is_never_read() -> None:
    # An out-of-range class in the padding is no error: only each sample's first target_lengths[n] are labels.
    loss = F.ctc_loss(LP, ag.tensor([[1, 99], [3, 1]]), [5, 5], [1, 2], reduction="none")
    np.testing.assert_allclose(loss.numpy(), brute_force_batch(LP.numpy(), [[1], [3, 1]], [5, 5]), rtol=1e-12)


@pytest.mark.gpu
def test_on_cuda_the_losses_and_gradients_are_the_cpus(cupy) -> None:
    data = RNG.normal(size=(5, 4, 4))
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(data, device=device, requires_grad=True)
        targets = ag.tensor(concatenated(TARGETS))  # on the cpu: moved to log_probs' device, as in PyTorch
        lengths = ag.tensor(INPUT_LENGTHS, device=device)
        losses = F.ctc_loss(F.log_softmax(x, 2), targets, lengths, [len(t) for t in TARGETS], reduction="none",
                            zero_infinity=True)
        losses.sum().backward()
        assert losses.device == x.device and x.grad.device == x.device
        results.append((losses.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    expected = brute_force_batch(log_softmax(data), TARGETS, INPUT_LENGTHS)
    np.testing.assert_allclose(results[1][0], np.where(expected == np.inf, 0, expected), rtol=1e-12)
    x = ag.tensor(data, device="cuda", requires_grad=True)
    assert gradcheck(lambda x: _ctc(x, "mean", zero_infinity=True), (x,))
