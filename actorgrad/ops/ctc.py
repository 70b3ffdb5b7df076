"""The connectionist temporal classification loss (PyTorch's ctc_loss): -log of a target label sequence's
probability, summed over every alignment of it to the input frames.

An alignment walks the extended target: the S labels with a blank before, between and after them (2 S + 1
positions, blanks at the even ones). Each frame stays on its position, steps to the next, or skips a blank between
two different labels (two equal labels need a blank between them). The forward (alpha) recursion sums the paths
that reach each position at each frame; the backward one sums the paths from there to the end. Both run in log
space, one step per frame, each step vectorized over the batch and the positions; samples of different lengths
mask what lies past their ends.

The gradient is the true one of the loss as a function of log_probs: -(the probability of the paths through class c
at frame t) / p. PyTorch's kernel returns exp(log_probs) plus that, the gradient of the logits when log_probs are a
log_softmax; both give the same gradient through log_softmax, and this one also matches finite differences on
log_probs that are not normalized. The gradient is computed on arrays: as PyTorch's, it cannot be differentiated
again (a backward with create_graph=True records a node that raises when a second backward reaches it).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.loss_arguments import kernel_reduction
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.ops.record import Rule, record
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


def _log_add(a: Any, b: Any, c: Any, xp: Any) -> Any:
    """log(exp(a) + exp(b) + exp(c)), elementwise; -inf where all three are."""
    top = xp.maximum(xp.maximum(a, b), c)
    top = xp.where(top == -np.inf, 0, top)  # all three -inf: no -inf - -inf
    with np.errstate(divide="ignore"):
        return xp.log(xp.exp(a - top) + xp.exp(b - top) + xp.exp(c - top)) + top


def _shifted(x: Any, k: int, fill: Any, xp: Any) -> Any:
    """x moved k places along its last axis (right for k > 0, left for k < 0), the places left open `fill`."""
    out = xp.full_like(x, fill)
    width = x.shape[-1]
    if abs(k) < width:
        if k > 0:
            out[:, k:] = x[:, :width - k]
        else:
            out[:, :width + k] = x[:, -k:]
    return out


def _extended(targets: Any, target_lengths: tuple, blank: int, xp: Any) -> tuple[Any, Any, Any]:
    """Each sample's extended target, (N, 2 S + 1) for the longest S: (the classes, which positions lie within the
    sample's 2 S_n + 1, where a path may skip from position s - 2 to s)."""
    lengths = np.asarray(target_lengths, dtype=np.int64).reshape(-1)
    width = 2 * int(lengths.max(initial=0)) + 1
    s = np.arange(width)
    valid = s < 2 * lengths[:, None] + 1
    is_label = valid & (s % 2 == 1)
    flat = targets.reshape(-1).astype(xp.int64)
    if targets.ndim == 1:  # concatenated: sample n's labels start after those of the samples before it
        starts = np.cumsum(lengths) - lengths
    else:  # padded: one row per sample
        starts = np.arange(len(lengths)) * targets.shape[1]
    # Blanks index one blank appended to the labels: a gather gives the whole extended target at once.
    where_from = np.where(is_label, starts[:, None] + (s - 1) // 2, flat.size)
    labels = xp.concatenate((flat, xp.full(1, blank, xp.int64)))[xp.asarray(where_from)]
    skips = xp.zeros(labels.shape, bool)
    skips[:, 2:] = labels[:, 2:] != labels[:, :-2]
    return labels, xp.asarray(valid), skips


def _log_alpha(lp_ext: Any, valid: Any, skips: Any, xp: Any) -> Any:
    """log alpha[t, n, s]: the log-probability of the paths over frames 0..t that end at position s."""
    frames = lp_ext.shape[0]
    alpha = xp.full_like(lp_ext, -np.inf)
    alpha[0, :, :2] = lp_ext[0, :, :2]  # a path starts on the first blank or the first label
    alpha[0] = xp.where(valid, alpha[0], -np.inf)
    for t in range(1, frames):
        prev = alpha[t - 1]
        jump = xp.where(skips, _shifted(prev, 2, -np.inf, xp), -np.inf)
        alpha[t] = xp.where(valid, _log_add(prev, _shifted(prev, 1, -np.inf, xp), jump, xp) + lp_ext[t], -np.inf)
    return alpha


def _log_beta(lp_ext: Any, valid: Any, skips: Any, input_lengths: Any, target_lengths: Any, xp: Any) -> Any:
    """log beta[t, n, s]: the log-probability of frames t+1..T_n-1 over the paths from position s at frame t to
    the end (frame t's own term left out, so alpha + beta counts each path's probability once); -inf past T_n."""
    frames, _, width = lp_ext.shape
    s = xp.arange(width)
    ends = valid & ((s == 2 * target_lengths[:, None]) | (s == 2 * target_lengths[:, None] - 1))
    last = input_lengths[:, None] - 1
    skips_ahead = _shifted(skips, -2, False, xp)
    beta = xp.full_like(lp_ext, -np.inf)
    for t in range(frames - 1, -1, -1):
        if t < frames - 1:
            ahead = beta[t + 1] + lp_ext[t + 1]
            jump = xp.where(skips_ahead, _shifted(ahead, -2, -np.inf, xp), -np.inf)
            paths = _log_add(ahead, _shifted(ahead, -1, -np.inf, xp), jump, xp)
        else:
            paths = beta[t]
        beta[t] = xp.where(last == t, xp.where(ends, 0, -np.inf), xp.where(last > t, paths, -np.inf))
    return beta


def _ctc_grad(ops: Any, g: Any, self: Any, targets: Any, input_lengths: tuple, target_lengths: tuple, blank: int,
              zero_infinity: bool, result: Any, result1: Any) -> Any:
    """d loss_n / d log_probs[t, n, c] = -exp(sum over positions s of class c of alpha + beta - log p_n), times g."""
    recorded = isinstance(g, Tensor)
    grad_out, log_probs, nll, alpha = (getattr(v, "_data", v) for v in (g, self, result, result1))
    xp = g._device.xp if recorded else ops.xp
    frames, batch, classes = log_probs.shape
    labels, valid, skips = _extended(targets, target_lengths, blank, xp)
    lp_ext = log_probs[:, xp.arange(batch)[:, None], labels]
    lengths = xp.asarray(np.asarray(input_lengths, dtype=np.int64))
    beta = _log_beta(lp_ext, valid, skips, lengths, xp.asarray(np.asarray(target_lengths, dtype=np.int64)), xp)
    with np.errstate(invalid="ignore"):  # an impossible target: -inf + inf, a NaN gradient, as PyTorch's
        share = xp.exp(alpha + beta + nll[:, None])
    kept = xp.arange(frames)[:, None] < lengths  # (T, N): the frames within each sample
    if zero_infinity:
        kept = kept & (nll != np.inf)
    share = xp.where(kept[:, :, None], share, 0)
    one_hot = (labels[:, :, None] == xp.arange(classes)).astype(log_probs.dtype)  # (N, L, C)
    through = xp.matmul(share.transpose(1, 0, 2), one_hot).transpose(1, 0, 2)  # (T, N, C)
    grad = -through * grad_out[:, None]
    if recorded:  # as PyTorch's, no derivative of the gradient: a node that raises when a backward reaches it
        return record(NO_DOUBLE_BACKWARD, grad, (g, self), message=NO_DOUBLE_BACKWARD_MESSAGE)
    return grad


def _raise(ops: Any, g: Any, message: str) -> Any:
    raise RuntimeError(message)


NO_DOUBLE_BACKWARD_MESSAGE = (
    "derivative for aten::_ctc_loss_backward is not implemented, as in PyTorch: ctc_loss differentiates once; "
    "take its gradient without create_graph=True, or differentiate the gradient of another loss twice"
)
NO_DOUBLE_BACKWARD = Rule("NotImplemented", (("message",), _raise), (("message",), _raise))
# The backward costs about 55 ns per (frame, sample, position) and 30 us of numpy calls per frame (measured on the
# dev machine: T = 50, N = 16, S = 20 took 3.9 ms; T = 200, N = 32, S = 40 took 33 ms).
CTC_LOSS = Rule(
    "CtcLossBackward0",
    (("self", "targets", "input_lengths", "target_lengths", "blank", "zero_infinity", "result", "result1"),
     _ctc_grad),
    cost=lambda data, params: 55 * params["result1"].size + 30_000 * params["result1"].shape[0],
)


def _lengths(name: str, lengths: Any) -> tuple[int, ...]:
    """Lengths given as a tensor of integers (any shape, as PyTorch reads them) or a sequence of ints."""
    if isinstance(lengths, Tensor):
        if lengths.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return tuple(int(v) for v in lengths._data.reshape(-1).tolist())
    try:
        return tuple(operator.index(v) for v in lengths)
    except TypeError:
        raise TypeError(f"ctc_loss(): argument '{name}' must be a tuple of ints or a Tensor of integers, not "
                        f"{type_name(lengths)}; for one sample, give (length,)") from None


def _check(log_probs: Tensor, targets: Tensor, input_lengths: tuple, target_lengths: tuple, blank: int) -> None:
    """PyTorch's checks of the arguments, on (T, N, C) log_probs, in its order and with its texts."""
    if log_probs.dtype not in (np.float32, np.float64):
        name = SCALAR_NAMES.get(log_probs.dtype, log_probs.dtype)
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{name}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if targets.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss(): expected targets of an integer dtype (int64 or int32), got "
                           f"{SCALAR_NAMES.get(targets.dtype, targets.dtype)}; targets are class indices")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for argument #2 "
                           f"'targets'{CHECKING}")
    frames, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"blank must be in label range (got blank={blank} for {classes} classes)")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if len(lengths) != batch:
            raise RuntimeError(f"{name} must be of size batch_size (got {len(lengths)} lengths for a batch of "
                               f"{batch})")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length}{CHECKING}")
    if targets.ndim == 1:
        if targets.shape[0] != sum(target_lengths):
            raise RuntimeError(f"Expected tensor to have size {sum(target_lengths)} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{CHECKING}")
    else:
        if targets.shape[0] != batch:
            raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{CHECKING}")
        longest = max(target_lengths, default=0)
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets'{CHECKING}")
    for length in input_lengths:
        if length < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {length}{CHECKING}")
        if length > frames:
            raise RuntimeError(f"Expected input_lengths to have value at most {frames}, but got value {length}"
                               f"{CHECKING}")


def _losses(log_probs: Tensor, targets: Tensor, input_lengths: tuple, target_lengths: tuple, blank: int,
            zero_infinity: bool) -> Tensor:
    """The (N,) negative log-likelihoods of (T, N, C) log_probs, recorded as one CtcLossBackward0 node."""
    _check(log_probs, targets, input_lengths, target_lengths, blank)
    device = log_probs._device
    if targets._device is not device:  # PyTorch moves the targets to log_probs' device, as a service
        targets = targets.to(device)
    xp = device.xp
    lp, t = log_probs._data, targets._data
    frames, batch, classes = lp.shape
    labels, valid, skips = _extended(t, target_lengths, blank, xp)
    outside = valid & ((labels < 0) | (labels >= classes))
    if bool(outside.any()):
        raise IndexError(f"ctc_loss(): target {int(labels[outside][0])} is out of range for {classes} classes "
                         f"(targets are class indices in [0, {classes}))")
    lp_ext = lp[:, xp.arange(batch)[:, None], labels]  # (T, N, 2 S + 1): each position's class's log_probs
    alpha = _log_alpha(lp_ext, valid, skips, xp)
    ins = np.asarray(input_lengths, dtype=np.int64)
    outs = np.asarray(target_lengths, dtype=np.int64)
    at_end = alpha[xp.asarray(np.maximum(ins - 1, 0)), xp.arange(batch)]  # (N, 2 S + 1) at each sample's last frame
    last_blank = xp.take_along_axis(at_end, xp.asarray(2 * outs)[:, None], 1)[:, 0]
    last_label = xp.take_along_axis(at_end, xp.asarray(np.maximum(2 * outs - 1, 0))[:, None], 1)[:, 0]
    last_label = xp.where(xp.asarray(outs > 0), last_label, -np.inf)
    log_p = xp.logaddexp(last_blank, last_label)
    # No frames: the empty target is certain, any other impossible.
    log_p = xp.where(xp.asarray(ins == 0), xp.asarray(np.where(outs == 0, 0.0, -np.inf), dtype=lp.dtype), log_p)
    return record(CTC_LOSS, -log_p, (log_probs,), targets=t, input_lengths=input_lengths,
                  target_lengths=target_lengths, blank=blank, zero_infinity=zero_infinity, result1=alpha)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of log_probs (T, N, C), or (T, C) unbatched, against targets padded (N, S) or concatenated
    (sum(target_lengths),), or (S,) unbatched; the lengths as tensors of integers or tuples of ints. 'mean' divides
    each loss by its target length (at least 1) and averages them; zero_infinity gives an impossible target (an
    infinite loss) a loss and gradient of 0."""
    if zero_infinity.__class__ is not bool:
        raise not_bool("ctc_loss", "zero_infinity", zero_infinity)
    reduction = kernel_reduction(reduction)
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional tensor for argument "
                           f"#1 'log_probs'{CHECKING}; log_probs are (T, N, C), or (T, C) for one sample")
    batched = log_probs.ndim == 3
    ins = _lengths("input_lengths", input_lengths)
    outs = _lengths("target_lengths", target_lengths)
    losses = _losses(log_probs if batched else log_probs.unsqueeze(1), targets, ins, outs, blank, zero_infinity)
    if zero_infinity:
        losses = where(Tensor(losses._data != np.inf, device=losses._device), losses, 0.0)
    if reduction == "mean":
        xp = losses._device.xp
        divisors = xp.asarray(np.maximum(np.asarray(outs, dtype=np.int64), 1), dtype=losses.dtype)
        return (losses / Tensor(divisors, device=losses._device)).mean()
    if reduction == "sum":
        return losses.sum()
    return losses if batched else losses.squeeze(0)
