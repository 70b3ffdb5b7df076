"""gradcheck and gradgradcheck: an op's gradients against central finite differences, as PyTorch checks them.

`gradcheck` builds the whole Jacobian twice, once from the engine (one vector-Jacobian product per output
element) and once numerically (two forwards per input element), and compares them. `gradgradcheck` runs
gradcheck on the function that returns the first gradients taken with `create_graph=True`, so it checks the
recorded backward, that is the second derivatives. Use float64 inputs, small shapes, and points away from kinks.
Inputs may be on any device, as in PyTorch: they are perturbed there, and the Jacobians compared on the host.

Complex inputs and outputs are checked as PyTorch checks them: a complex output is checked twice, through its real
part and through its imaginary part, so every Jacobian the backward is compared on has real outputs; a complex input's
numerical column is then ds/dx + i ds/dy (perturbing the real and the imaginary part in turn), which is the gradient
PyTorch's convention gives a real s. Forward mode instead takes the real and the imaginary parts of the complex inputs
as real inputs in turn.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from actorgrad.autograd import forward_ad
from actorgrad.autograd.functional_arguments import onehot
from actorgrad.creation import zeros_like
from actorgrad.devices import cpu
from actorgrad.engine import grad_sync
from actorgrad.ops.complex_parts import imag, real
from actorgrad.tensor import Tensor, float64


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when an analytical gradient disagrees with the numerical one."""


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _requiring_grad(inputs: tuple) -> list[int]:
    """The positions of the inputs whose gradients are checked."""
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _checked_outputs(result: Any) -> tuple:
    """The function's outputs as a flat tuple, refusing results that would hide tensors from the check: a nested
    container, or a result that is neither a Tensor nor a tuple (None, a number); PyTorch fails on these too."""
    if not isinstance(result, Tensor | tuple | list):
        raise TypeError(f"gradcheck: the function returned a {type(result).__name__}; it must return a Tensor or a "
                        f"tuple of Tensors")
    outputs = _as_tuple(result)
    for j, o in enumerate(outputs):
        if isinstance(o, tuple | list | dict):
            raise TypeError(f"gradcheck: output {j} of the function is a {type(o).__name__}, whose tensors would go "
                            f"unchecked; return a flat tuple of Tensors")
    return outputs


def _differentiable_outputs(outputs: tuple) -> list[tuple[int, Tensor]]:
    return [(j, o) for j, o in enumerate(outputs) if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _outputs_requiring_grad(func: Callable, args: tuple) -> list[Tensor]:
    """The floating outputs of `func(*args)` that a backward can start from."""
    return [o for _, o in _differentiable_outputs(_as_tuple(func(*args))) if o.requires_grad]


def _numerical_jacobians(func: Callable, inputs: tuple, wrt: list[int], eps: float) -> dict:
    """(output j, input i) -> d out_j / d in_i as an (out_j.size, in_i.size) matrix, by central differences; for
    a complex input the column is ds/dx + i ds/dy, perturbing the element's real and imaginary parts in turn.
    `func` runs with grad mode on and the inputs requiring grad as given, as it may take gradients itself.
    The inputs are perturbed on their own device; the matrices are on the host."""
    arrays = [x._data.copy() if isinstance(x, Tensor) else x for x in inputs]

    def evaluate() -> dict[int, np.ndarray]:
        args = [Tensor(a, requires_grad=x.requires_grad, device=x._device) if isinstance(x, Tensor) else a
                for a, x in zip(arrays, inputs)]
        return {j: _host(o).ravel() for j, o in _differentiable_outputs(_as_tuple(func(*args)))}

    def difference(a: Any, idx: tuple, step: Any) -> dict[int, np.ndarray]:
        orig = a[idx].copy()  # CuPy's a[idx] is a 0-dim view, which the writes below would change
        a[idx] = orig + step
        hi = evaluate()
        a[idx] = orig - step
        lo = evaluate()
        a[idx] = orig
        return {j: (hi[j] - lo[j]) / (2 * eps) for j in hi}

    first = evaluate()
    jacobians: dict = {}
    for i in wrt:
        a = arrays[i]
        is_complex = a.dtype.kind == "c"
        for j, out in first.items():
            jacobians[j, i] = np.zeros((out.size, a.size), np.complex128 if is_complex else out.dtype)
        for k, idx in enumerate(np.ndindex(a.shape)):  # C order, as the analytical rows are raveled
            columns = difference(a, idx, eps)
            if is_complex:
                along_imag = difference(a, idx, eps * 1j)
                columns = {j: column + 1j * along_imag[j] for j, column in columns.items()}
            for j, column in columns.items():
                jacobians[j, i][:, k] = column
    return jacobians


def _host(t: Tensor) -> np.ndarray:
    """A tensor's values on the host in double precision (complex128 for a complex tensor)."""
    return cpu.asarray(t._data).astype(np.complex128 if t.dtype.kind == "c" else np.float64)


def _analytical_jacobians(func: Callable, inputs: tuple, wrt: list[int], check_grad_dtypes: bool) -> tuple[dict, dict]:
    """(output j, input i) -> the same matrices from the engine, on the host, for the outputs that require grad:
    row r is the gradient for the one-hot output gradient at r; and output j -> its shape."""
    outputs = _as_tuple(func(*inputs))
    targets = [inputs[i] for i in wrt]
    jacobians: dict = {}
    shapes: dict = {}
    for j, out in _differentiable_outputs(outputs):
        if not out.requires_grad:
            continue
        shapes[j] = out.shape
        rows = {i: np.zeros((out._data.size, inputs[i]._data.size), _host(inputs[i]).dtype) for i in wrt}
        jacobians.update({(j, i): rows[i] for i in wrt})
        for r in range(out._data.size):
            grads = grad_sync(out, targets, onehot(out, r), retain_graph=True, allow_unused=True)
            for i, g in zip(wrt, grads):
                if g is None:
                    continue
                if g.shape != inputs[i].shape:
                    raise GradcheckError("Analytical gradient has incorrect size")
                if check_grad_dtypes and g.dtype != inputs[i].dtype:
                    raise GradcheckError("Gradient has dtype mismatch")
                rows[i][r] = cpu.asarray(g._data).ravel()
    return jacobians, shapes


def _forward_jacobians(func: Callable, inputs: tuple, wrt: list[int], outputs: dict) -> dict:
    """(output j, input i) -> the same matrices from forward-mode AD, for the outputs in `outputs` (j -> output):
    column k is output j's tangent for the one-hot tangent at element k of input i (a real input's)."""
    jacobians = {(j, i): np.zeros((o._data.size, inputs[i]._data.size), _host(o).dtype) for j, o in outputs.items()
                 for i in wrt}
    for i in wrt:
        x = inputs[i]
        for k in range(x._data.size):
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(x.detach(), onehot(x, k))
                results = _as_tuple(func(*args))
                for j in outputs:
                    tangent = forward_ad.unpack_dual(results[j]).tangent
                    if tangent is not None:
                        jacobians[j, i][:, k] = cpu.asarray(tangent._data).ravel()
    return jacobians


def _check_backward_mul_by_grad_output(func: Callable, inputs: tuple, wrt: list[int]) -> None:
    """Zero output gradients must give zero input gradients (PyTorch's check that backward multiplies by them)."""
    outputs = _outputs_requiring_grad(func, inputs)
    zeros = [zeros_like(o) for o in outputs]
    grads = grad_sync(outputs, [inputs[i] for i in wrt], zeros, allow_unused=True)
    if any(g is not None and np.any(cpu.asarray(g._data) != 0) for g in grads):
        raise GradcheckError("backward not multiplied by grad_output")


def _worst_mismatch(analytical: np.ndarray, numerical: np.ndarray, j: int, output_shape: tuple, i: int,
                    input_shape: tuple, atol: float, rtol: float) -> str:
    """The entry of d out_j / d in_i that misses the tolerance by the most (a NaN first), in words."""
    excess = np.abs(analytical - numerical) - (atol + rtol * np.abs(numerical))
    r, k = np.unravel_index(np.argmax(excess), excess.shape)
    out_index = tuple(int(v) for v in np.unravel_index(r, output_shape))
    in_index = tuple(int(v) for v in np.unravel_index(k, input_shape))
    n, a = numerical[r, k].item(), analytical[r, k].item()
    return (
        f"worst mismatch: output {j} element {out_index}, input {i} element {in_index}: numerical {n!r}, "
        f"analytical {a!r} (difference {abs(a - n)!r}, allowed {atol + rtol * abs(n)!r})"
    )


def _check_jacobians(kind: str, found: dict, numerical: dict, shapes: dict, inputs: tuple, atol: float,
                     rtol: float, complex_part: tuple[str, str, list[int]] | None = None) -> None:
    """Raise for the first pair whose Jacobians differ; `complex_part` (part, "inputs" or "outputs", indices)
    names the part of the complex inputs or outputs being checked, as PyTorch's message does."""
    for (j, i), a in found.items():
        n = numerical[j, i]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            worst = _worst_mismatch(a, n, j, shapes[j], i, inputs[i].shape, atol, rtol)
            prefix = ""
            if complex_part is not None and (i if complex_part[1] == "inputs" else j) in complex_part[2]:
                prefix = f"While considering the {complex_part[0]} part of complex {complex_part[1]} only, "
            raise GradcheckError(
                f"{prefix}Jacobian {kind}mismatch for output {j} with respect to input {i},\n{worst}\n"
                f"numerical:{n}\nanalytical:{a}\n"
            )


def _refuse_contradictions(options: dict[str, Any], either: tuple[str, str], *needs: tuple[str, str]) -> None:
    """PyTorch's refusals of contradictory options: one of `either` must be set, and each (flag, needed) in
    `needs` may be set only with `needed` set too."""
    if not any(options[name] for name in either):
        raise AssertionError(f"Expected at least one of {either[0]} or {either[1]} to be True")
    for flag, needed in needs:
        if options[flag] and not options[needed]:
            raise AssertionError(f"Setting {flag}=True requires {needed} to be True")


FAILED_NONDET = (
    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives "
    "different values, although analytical gradient matches numerical gradient.The tolerance for nondeterminism "
    "was {}.\n\nNOTE: if the backward relies on non-deterministic operations, this failure might be expected: "
    "call gradcheck/gradgradcheck with `nondet_tol=<tol>`."
)


def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of `func(*inputs)` with respect to every input tensor that requires grad, with
    PyTorch's options: `check_backward_ad` (the engine's Jacobian, computed twice, the two within `nondet_tol`),
    `check_forward_ad` (forward_ad's), `check_grad_dtypes`. A function none of whose outputs requires grad must have
    a zero numerical gradient.

    Deviations from PyTorch: `fast_mode` runs the full check (the same answer, not faster); `masked` changes nothing
    (there are no sparse tensors); `check_undefined_grad` adds nothing to the check that zero output gradients give
    zero input gradients (a node that receives no gradient passes on none); `check_batched_grad` and
    `check_batched_forward_grad` raise NotImplementedError: they test a batching rule per op, and actorgrad's
    `func.vmap` has none (it runs the function once per example), so there is nothing for them to check.
    """
    _refuse_contradictions(locals(), ("check_forward_ad", "check_backward_ad"),
                           ("check_batched_grad", "check_backward_ad"),
                           ("check_batched_forward_grad", "check_forward_ad"))
    if check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError(
            "gradcheck: check_batched_grad and check_batched_forward_grad test per-op batching rules, which "
            "actorgrad's vmap does not have (it runs the function once per example); "
            "leave them False"
        )
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol, check_grad_dtypes, check_forward_ad,
                          check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func: Callable, inputs: tuple, eps: float, atol: float, rtol: float, nondet_tol: float,
               check_grad_dtypes: bool, check_forward_ad: bool, check_backward_ad: bool) -> bool:
    wrt = _requiring_grad(inputs)
    for i in wrt:
        if inputs[i].dtype not in (float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or complex. This check "
                f"will likely fail if all the inputs are not of double precision floating point or complex. ",
                stacklevel=3,
            )
    if not wrt:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True."
        )
    outputs = {j: o for j, o in _differentiable_outputs(_checked_outputs(func(*inputs))) if o.requires_grad}
    if not outputs:
        if any(np.any(n != 0) for n in _numerical_jacobians(func, inputs, wrt, eps).values()):
            raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    if check_forward_ad:
        complex_inputs = [i for i in wrt if inputs[i].dtype.kind == "c"]
        if not complex_inputs:
            _check_forward(func, inputs, wrt, eps, atol, rtol, None)
        for part in ("imaginary", "real") if complex_inputs else ():
            parts, part_of_inputs = _parts_of_inputs(func, inputs, complex_inputs, part)
            _check_forward(part_of_inputs, parts, wrt, eps, atol, rtol, (part, "inputs", complex_inputs))
    if check_backward_ad:
        complex_outputs = [j for j, o in outputs.items() if o.dtype.kind == "c"]
        if not complex_outputs:
            _check_backward(func, inputs, wrt, eps, atol, rtol, nondet_tol, check_grad_dtypes, None)
        for part, take in (("imaginary", imag), ("real", real)) if complex_outputs else ():
            def part_of_outputs(*args: Any, take: Callable = take) -> tuple:
                return tuple(take(o) if isinstance(o, Tensor) and o.dtype.kind == "c" else o
                             for o in _as_tuple(func(*args)))

            _check_backward(part_of_outputs, inputs, wrt, eps, atol, rtol, nondet_tol, check_grad_dtypes,
                            (part, "outputs", complex_outputs))
    return True


def _parts_of_inputs(func: Callable, inputs: tuple, complex_inputs: list[int], part: str) -> tuple[tuple, Callable]:
    """PyTorch's _real_and_imag_input: the real (or imaginary) parts of the complex inputs as real inputs, and the
    function of them that rebuilds each complex input with its other part held at its value."""
    take = np.real if part == "real" else np.imag
    parts = tuple(Tensor(take(x._data).copy(), requires_grad=x.requires_grad, device=x._device)
                  if i in complex_inputs else x for i, x in enumerate(inputs))
    held = {i: inputs[i].detach() for i in complex_inputs}

    def rebuilt(*args: Any) -> Any:
        return func(*(((a + imag(held[i]) * 1j) if part == "real" else (real(held[i]) + a * 1j))
                      if i in held else a for i, a in enumerate(args)))

    return parts, rebuilt


def _check_forward(func: Callable, inputs: tuple, wrt: list[int], eps: float, atol: float, rtol: float,
                   complex_part: tuple | None) -> None:
    numerical = _numerical_jacobians(func, inputs, wrt, eps)
    outputs = {j: o for j, o in _differentiable_outputs(_as_tuple(func(*inputs))) if o.requires_grad}
    forward = _forward_jacobians(func, inputs, wrt, outputs)
    _check_jacobians("computed with forward mode ", forward, numerical, {j: o.shape for j, o in outputs.items()},
                     inputs, atol, rtol, complex_part)


def _check_backward(func: Callable, inputs: tuple, wrt: list[int], eps: float, atol: float, rtol: float,
                    nondet_tol: float, check_grad_dtypes: bool, complex_part: tuple | None) -> None:
    numerical = _numerical_jacobians(func, inputs, wrt, eps)
    analytical, shapes = _analytical_jacobians(func, inputs, wrt, check_grad_dtypes)
    again, _ = _analytical_jacobians(func, inputs, wrt, check_grad_dtypes)
    if any(a.size and np.abs(a - again[key]).max() > nondet_tol for key, a in analytical.items()):
        raise GradcheckError(FAILED_NONDET.format(nondet_tol))
    _check_jacobians("", analytical, numerical, shapes, inputs, atol, rtol, complex_part)
    _check_backward_mul_by_grad_output(func, inputs, wrt)


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
    seed: int = 0,
) -> bool:
    """Check the second derivatives of `func`: gradcheck of the first gradients (taken with
    `create_graph=True`) with respect to the inputs and to random output gradients drawn with `seed` (made
    non-contiguous with `gen_non_contig_grad_outputs`). `check_rev_over_rev` and `check_fwd_over_rev` are
    gradcheck's `check_backward_ad` and `check_forward_ad` on the first gradients; the other options go to gradcheck
    as they are."""
    _refuse_contradictions(locals(), ("check_fwd_over_rev", "check_rev_over_rev"),
                           ("check_undefined_grad", "check_rev_over_rev"),
                           ("check_batched_grad", "check_rev_over_rev"))
    inputs = _as_tuple(inputs)
    wrt = _requiring_grad(inputs)
    outputs = _outputs_requiring_grad(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(_random_like(o, rng, gen_non_contig_grad_outputs) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_gradients(*args: Any) -> tuple:
        outs = _outputs_requiring_grad(func, args[:n])
        if not outs:
            return ()
        grads = grad_sync(outs, [args[i] for i in wrt], list(args[n:]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_gradients, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
        nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev, fast_mode=fast_mode, masked=masked,
    )


def _random_like(out: Tensor, rng: np.random.Generator, non_contiguous: bool) -> Tensor:
    """A random output gradient (complex for a complex output) that requires grad; with `non_contiguous`, a strided
    view (every other element of a wider array), as PyTorch's `make_tensor(noncontiguous=True)` gives."""
    values = rng.standard_normal(out.shape)
    if out.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(out.shape)
    values = values.astype(out.dtype)
    if non_contiguous and values.size > 1:
        values = np.repeat(values[..., None], 2, axis=-1)[..., 0]
    return Tensor(out.device.asarray(values), requires_grad=True, device=out.device)
