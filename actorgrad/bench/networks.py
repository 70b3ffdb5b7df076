"""W3 (an MLP) and W5 (a small CNN): forward + backward training steps in float32."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import actorgrad as ag
import actorgrad.nn.functional as agF
from actorgrad.bench.peers import anp, hips, torch
from actorgrad.bench.timing import CORES, Workload, check, timed, timed_trio

# A sample times a training loop of STEPS steps, as training runs; one step alone after a gc.collect() and a fresh
# trio.run measured mostly cold caches and page faults (actorgrad's first backward in a trio run took 2.6 ms here,
# its second 1.7 ms).
STEPS = 10


def per_step(step: Callable[[], Any]) -> Callable[[], float]:
    """An engine timing STEPS calls of `step`, in seconds per call."""
    def steps() -> None:
        for _ in range(STEPS):
            step()

    return lambda: timed(steps) / STEPS


def ag_training(loss: Callable[..., ag.Tensor], params: list, *inputs: np.ndarray) -> Callable[[], float]:
    """An engine timing STEPS actorgrad steps (clear the gradients, `await ag.backward(loss(leaves, *inputs))`)."""
    def run() -> float:
        leaves, tensors = [ag.tensor(p, requires_grad=True) for p in params], [ag.tensor(v) for v in inputs]

        async def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                await ag.backward(loss(leaves, *tensors))

        return timed_trio(steps) / STEPS

    return run


def torch_training(loss: Callable[..., Any], params: list, *inputs: np.ndarray) -> Callable[[], float]:
    """An engine timing STEPS torch steps (clear the gradients, `loss(leaves, *inputs).backward()`)."""
    def run() -> float:
        torch.set_num_threads(CORES)
        leaves, tensors = [torch.tensor(p, requires_grad=True) for p in params], [torch.from_numpy(v) for v in inputs]

        def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                loss(leaves, *tensors).backward()

        return timed(steps) / STEPS

    return run


def grad_error(what: str, loss: Callable[..., ag.Tensor], params: list, refs: list, *inputs: np.ndarray,
               tol: float = 1e-6) -> float:
    """The largest `check` error of actorgrad's gradients of `loss(leaves, *inputs)` against `refs`."""
    leaves = [ag.tensor(p, requires_grad=True) for p in params]
    loss(leaves, *[ag.tensor(v) for v in inputs]).backward()
    return max(check(f"{what} grad param {i}", leaf.grad.numpy(), ref, tol=tol)
               for i, (leaf, ref) in enumerate(zip(leaves, refs)))


# --- W3: MLP 784-512-512-10, float32, batch 128, forward + backward ----------------------------------------
def w3(batch: int = 128) -> Workload:
    rng = np.random.default_rng(3)
    f32 = np.float32
    X = rng.normal(size=(batch, 784)).astype(f32)
    Y = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
    params: list[np.ndarray] = []
    for fan_in, fan_out in [(784, 512), (512, 512), (512, 10)]:
        params += [(rng.normal(size=(fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(f32),
                   (rng.normal(size=fan_out) * 0.01).astype(f32)]

    def mlp(x: Any, y: Any, p: list, relu: Callable[[Any], Any], log_softmax: Callable[[Any], Any]) -> Any:
        """Cross-entropy from log_softmax and a one-hot matrix (no indexing needed)."""
        h = relu(relu(x @ p[0] + p[1]) @ p[2] + p[3])
        return -(log_softmax(h @ p[4] + p[5]) * y).sum() / batch

    def ag_loss(leaves: list, x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
        return mlp(x, y, leaves, lambda v: v.relu(), lambda v: v.log_softmax(1))

    def floor_grads() -> list:
        W1, b1, W2, b2, W3, b3 = params
        a1 = np.maximum(X @ W1 + b1, 0)
        a2 = np.maximum(a1 @ W2 + b2, 0)
        z = a2 @ W3 + b3
        shifted = z - z.max(1, keepdims=True)
        ls = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        _loss = -(ls * Y).sum() / batch
        g = -Y / f32(batch)
        gz = g - np.exp(ls) * g.sum(1, keepdims=True)
        ga2 = (gz @ W3.T) * (a2 > 0)
        ga1 = (ga2 @ W2.T) * (a1 > 0)
        return [X.T @ ga1, ga1.sum(0), a1.T @ ga2, ga2.sum(0), a2.T @ gz, gz.sum(0)]

    def hips_loss(p: list) -> Any:
        z = anp.maximum(anp.maximum(X @ p[0] + p[1], 0) @ p[2] + p[3], 0) @ p[4] + p[5]
        shifted = z - anp.max(z, 1, keepdims=True)
        return -anp.sum((shifted - anp.log(anp.sum(anp.exp(shifted), 1, keepdims=True))) * Y) / batch

    def torch_loss(leaves: list, x: Any, y: Any) -> Any:
        return mlp(x, y, leaves, torch.relu, lambda v: torch.log_softmax(v, 1))

    def verify() -> float:
        return grad_error("W3", ag_loss, params, floor_grads(), X, Y)

    engines = {"ag": ag_training(ag_loss, params, X, Y), "floor": per_step(floor_grads),
               "torch": torch_training(torch_loss, params, X, Y),
               "hips": per_step(lambda: hips.grad(hips_loss)(params))}
    return engines, verify


# --- W5: CNN on 1x28x28, float32, batch 32, forward + backward ---------------------------------------------
# conv(1->16, 3x3, pad 1), relu, max_pool 2, conv(16->32, 3x3, pad 1), relu, max_pool 2, linear(1568 -> 10),
# cross_entropy. The floor is a hand-written im2col + BLAS forward and backward that keeps activations
# channel-major, (C, N, H, W), so each convolution is one matmul with no layout copies; timed like W3 (STEPS).
def floor_conv3x3(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 3x3 convolution with padding 1 on a channel-major (C, N, H, W) input: the (O, N, H, W) output and the
    im2col matrix (C*9, N*H*W), kept for the backward."""
    c, n, h, wd = x.shape
    padded = np.zeros((c, n, h + 2, wd + 2), x.dtype)
    padded[:, :, 1:-1, 1:-1] = x
    s0, s1, s2, s3 = padded.strides
    windows = np.lib.stride_tricks.as_strided(padded, (c, 3, 3, n, h, wd), (s0, s2, s3, s1, s2, s3))
    cols = windows.reshape(c * 9, n * h * wd)
    y = w.reshape(w.shape[0], -1) @ cols + b[:, None]
    return y.reshape(-1, n, h, wd), cols


def floor_conv3x3_backward(gy: np.ndarray, cols: np.ndarray, w: np.ndarray, need_input: bool) -> tuple:
    """(grad input or None, grad weight, grad bias) of floor_conv3x3; col2im loops over the 9 kernel offsets."""
    o, n, h, wd = gy.shape
    gmat = gy.reshape(o, -1)
    gw = (gmat @ cols.T).reshape(w.shape)
    gx = None
    if need_input:
        gcols = (w.reshape(o, -1).T @ gmat).reshape(-1, 3, 3, n, h, wd)
        padded = np.zeros((gcols.shape[0], n, h + 2, wd + 2), gy.dtype)
        for i in range(3):
            for j in range(3):
                padded[:, :, i:i + h, j:j + wd] += gcols[:, i, j]
        gx = padded[:, :, 1:-1, 1:-1]
    return gx, gw, gmat.sum(1)


POOL_OFFSETS = ((0, 0), (0, 1), (1, 0), (1, 1))  # row-major: the first maximum wins ties, as in torch


def floor_pool2(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 max pooling: a running max over the 4 offsets, and which offset won each window."""
    views = [x[..., a::2, b::2] for a, b in POOL_OFFSETS]
    out, arg = views[0].copy(), np.zeros(views[0].shape, np.uint8)
    for k, v in enumerate(views[1:], 1):
        np.maximum(arg, (v > out).view(np.uint8) * np.uint8(k), out=arg)
        np.maximum(out, v, out=out)
    return out, arg


def floor_unpool2(g: np.ndarray, arg: np.ndarray) -> np.ndarray:
    out = np.empty((*g.shape[:-2], 2 * g.shape[-2], 2 * g.shape[-1]), g.dtype)
    for k, (a, b) in enumerate(POOL_OFFSETS):
        np.multiply(g, arg == k, out=out[..., a::2, b::2])
    return out


def w5(batch: int = 32) -> Workload:
    rng = np.random.default_rng(5)
    f32 = np.float32
    X = rng.normal(size=(batch, 1, 28, 28)).astype(f32)
    labels = rng.integers(0, 10, batch)
    params = [(rng.normal(size=(16, 1, 3, 3)) * np.sqrt(2 / 9)).astype(f32), np.zeros(16, f32),
              (rng.normal(size=(32, 16, 3, 3)) * np.sqrt(2 / 144)).astype(f32), np.zeros(32, f32),
              (rng.normal(size=(10, 32 * 7 * 7)) * np.sqrt(2 / 1568)).astype(f32), np.zeros(10, f32)]

    def cnn(x: Any, y: Any, p: list, F: Any) -> Any:
        """The same code for actorgrad.nn.functional and torch.nn.functional."""
        h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=1)), 2)
        return F.cross_entropy(F.linear(h.reshape(batch, -1), p[4], p[5]), y)

    def floor_grads() -> list:
        W1, b1, W2, b2, W3, b3 = params
        c1, cols1 = floor_conv3x3(X.transpose(1, 0, 2, 3), W1, b1)
        p1, arg1 = floor_pool2(np.maximum(c1, 0))
        c2, cols2 = floor_conv3x3(p1, W2, b2)
        p2, arg2 = floor_pool2(np.maximum(c2, 0))
        flat = p2.transpose(1, 0, 2, 3).reshape(batch, -1)
        z = flat @ W3.T + b3
        e = np.exp(z - z.max(1, keepdims=True))
        gz = e / e.sum(1, keepdims=True)
        gz[np.arange(batch), labels] -= 1
        gz /= batch
        gp2 = (gz @ W3).reshape(batch, *p2.shape[:1], *p2.shape[2:]).transpose(1, 0, 2, 3)
        gp1, gW2, gb2 = floor_conv3x3_backward(floor_unpool2(gp2, arg2) * (c2 > 0), cols2, W2, True)
        _, gW1, gb1 = floor_conv3x3_backward(floor_unpool2(gp1, arg1) * (c1 > 0), cols1, W1, False)
        return [gW1, gb1, gW2, gb2, gz.T @ flat, gz.sum(0)]

    def ag_loss(leaves: list, x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
        return cnn(x, y, leaves, agF)

    def torch_loss(leaves: list, x: Any, y: Any) -> Any:
        return cnn(x, y, leaves, torch.nn.functional)

    def verify() -> float:
        return grad_error("W5", ag_loss, params, floor_grads(), X, labels, tol=1e-4)

    engines = {"ag": ag_training(ag_loss, params, X, labels), "floor": per_step(floor_grads),
               "torch": torch_training(torch_loss, params, X, labels)}
    return engines, verify
