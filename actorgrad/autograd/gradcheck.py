"""gradcheck and gradgradcheck: an op's gradients against central finite differences, as PyTorch checks them.

`gradcheck` builds the whole Jacobian twice, once from the engine (one vector-Jacobian product per output
element) and once numerically (two forwards per input element), and compares them. `gradgradcheck` runs
gradcheck on the function that returns the first gradients taken with `create_graph=True`, so it checks the
recorded backward, that is the second derivatives. Use float64 inputs, small shapes, and points away from kinks.
Inputs may be on any device, as in PyTorch: they are perturbed there, and the Jacobians compared on the host.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from actorgrad.autograd.functional import _onehot
from actorgrad.devices import cpu
from actorgrad.engine import grad_sync
from actorgrad.tensor import Tensor, float64, tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when an analytical gradient disagrees with the numerical one."""


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _differentiable_outputs(outputs: tuple) -> list[tuple[int, Tensor]]:
    return [(j, o) for j, o in enumerate(outputs) if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _outputs_requiring_grad(func: Callable, args: tuple) -> list[Tensor]:
    """The floating outputs of `func(*args)` that a backward can start from."""
    return [o for _, o in _differentiable_outputs(_as_tuple(func(*args))) if o.requires_grad]


def _numerical_jacobians(func: Callable, inputs: tuple, wrt: list[int], eps: float) -> dict:
    """(output j, input i) -> d out_j / d in_i as an (out_j.size, in_i.size) matrix, by central differences.
    `func` runs with grad mode on and the inputs requiring grad as given, as it may take gradients itself.
    The inputs are perturbed on their own device; the matrices are on the host."""
    arrays = [x._data.copy() if isinstance(x, Tensor) else x for x in inputs]

    def evaluate() -> dict[int, np.ndarray]:
        args = [Tensor(a, requires_grad=x.requires_grad, device=x._device) if isinstance(x, Tensor) else a
                for a, x in zip(arrays, inputs)]
        return {j: cpu.asarray(o._data).astype(np.float64).ravel()
                for j, o in _differentiable_outputs(_as_tuple(func(*args)))}

    sizes = {j: out.size for j, out in evaluate().items()}
    jacobians: dict = {}
    for i in wrt:
        a = arrays[i]
        for j, size in sizes.items():
            jacobians[j, i] = np.zeros((size, a.size))
        for k, idx in enumerate(np.ndindex(a.shape)):  # C order, as the analytical rows are raveled
            orig = a[idx]
            a[idx] = orig + eps
            hi = evaluate()
            a[idx] = orig - eps
            lo = evaluate()
            a[idx] = orig
            for j in sizes:
                jacobians[j, i][:, k] = (hi[j] - lo[j]) / (2 * eps)
    return jacobians


def _analytical_jacobians(func: Callable, inputs: tuple, wrt: list[int]) -> tuple[dict, dict]:
    """(output j, input i) -> the same matrices from the engine, on the host: row r is the gradient for the
    one-hot output gradient at r; and output j -> its shape."""
    outputs = _as_tuple(func(*inputs))
    targets = [inputs[i] for i in wrt]
    jacobians: dict = {}
    shapes: dict = {}
    for j, out in _differentiable_outputs(outputs):
        shapes[j] = out.shape
        rows = {i: np.zeros((out._data.size, inputs[i]._data.size)) for i in wrt}
        jacobians.update({(j, i): rows[i] for i in wrt})
        if not out.requires_grad:
            continue
        for r in range(out._data.size):
            grads = grad_sync(out, targets, _onehot(out, r), retain_graph=True, allow_unused=True)
            for i, g in zip(wrt, grads):
                if g is None:
                    continue
                x = inputs[i]
                if g.shape != x.shape or g.dtype != x.dtype:
                    raise GradcheckError(
                        f"the gradient of input {i} has shape {g.shape} and dtype {g.dtype}, but the input has "
                        f"shape {x.shape} and dtype {x.dtype}"
                    )
                rows[i][r] = cpu.asarray(g._data).ravel()
    return jacobians, shapes


def _worst_mismatch(analytical: np.ndarray, numerical: np.ndarray, j: int, output_shape: tuple, i: int,
                    input_shape: tuple, atol: float, rtol: float) -> str:
    """The entry of d out_j / d in_i that misses the tolerance by the most (a NaN first), in words."""
    excess = np.abs(analytical - numerical) - (atol + rtol * np.abs(numerical))
    r, k = np.unravel_index(np.argmax(excess), excess.shape)
    out_index = tuple(int(v) for v in np.unravel_index(r, output_shape))
    in_index = tuple(int(v) for v in np.unravel_index(k, input_shape))
    n, a = float(numerical[r, k]), float(analytical[r, k])
    return (
        f"worst mismatch: output {j} element {out_index}, input {i} element {in_index}: numerical {n!r}, "
        f"analytical {a!r} (difference {abs(a - n)!r}, allowed {atol + rtol * abs(n)!r})"
    )


def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Check the gradients of `func(*inputs)` with respect to every input tensor that requires grad."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True."
        )
    for i in wrt:
        if inputs[i].dtype != float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point; the finite "
                f"differences will be too coarse to check it", stacklevel=2,
            )
    analytical, output_shapes = _analytical_jacobians(func, inputs, wrt)
    numerical = _numerical_jacobians(func, inputs, wrt, eps)
    for (j, i), a in analytical.items():
        n = numerical[j, i]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            worst = _worst_mismatch(a, n, j, output_shapes[j], i, inputs[i].shape, atol, rtol)
            raise GradcheckError(
                f"Jacobian mismatch for output {j} with respect to input {i},\n{worst}\nnumerical:{n}\n"
                f"analytical:{a}\n"
            )
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
) -> bool:
    """Check the second derivatives of `func`: gradcheck of the first gradients (taken with
    `create_graph=True`) with respect to the inputs and to random output gradients drawn with `seed`."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _outputs_requiring_grad(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(
            tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_gradients(*args: Any) -> tuple:
        outs = _outputs_requiring_grad(func, args[:n])
        if not outs:
            return ()
        grads = grad_sync(outs, [args[i] for i in wrt], list(args[n:]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_gradients, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception
    )
