"""How autograd.functional's algorithms take their arguments and give back their results, after PyTorch's
torch/autograd/functional.py: a Tensor or a tuple of Tensors in and out, fresh tensor objects for the inputs, the
vector v checked against what it multiplies, and strict mode's refusals of outputs or gradients that do not
depend on the inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.creation import zeros_like
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import tensor


def as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether `value` was a tuple, its Tensors as a tuple), with PyTorch's error for anything but Tensors."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but {where} has "
                f"type {type(v)}."
            )
    return is_tuple, values


def unpack(result: tuple, is_tuple: bool | tuple[bool, bool]) -> Any:
    """Undo `as_tuple` on a result (a pair of flags for a tuple of tuples: outer, inner)."""
    if isinstance(is_tuple, tuple):
        if not is_tuple[1]:
            result = tuple(r[0] for r in result)
        is_tuple = is_tuple[0]
    return result if is_tuple else result[0]


def preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the inputs, so that the function's use of the given tensors stays distinct;
    differentiably linked to them only under `create_graph`."""
    return tuple(
        x.view(x.shape) if create_graph and x.requires_grad else x.detach().requires_grad_(need_graph)
        for x in inputs
    )


def postprocess(values: tuple, create_graph: bool) -> tuple:
    """The results (a tuple, or a tuple of tuples) detached, unless the caller asked for a graph."""
    if values and isinstance(values[0], tuple):
        return tuple(postprocess(v, create_graph) for v in values)
    return values if create_graph else tuple(v.detach() for v in values)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(v) != len(other):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.shape} but got {el_v.shape}.")


def check_outputs_require_grad(outputs: tuple, strict: bool) -> None:
    """Strict mode: every output of the function must depend differentiably on the inputs."""
    for i, out in enumerate(outputs):
        if strict and not out.requires_grad:
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The outputs must be "
                f"computed in a differentiable manner from the input when running in strict mode."
            )


def check_grads_require_grad(grads: tuple, strict: bool, what: str) -> None:
    """Strict mode: every first-pass gradient must exist and depend on what the second pass differentiates."""
    if not strict:
        return
    for i, g in enumerate(grads):
        if g is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is not allowed in "
                f"strict mode."
            )
        if not g.requires_grad:
            raise RuntimeError(what.format(i=i))


_STRICT_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                  "mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros for the gradients the engine found unused (an error in strict mode)."""
    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MISSING[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            which = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {which} of the user-provided function is independent of input {i}. This is not allowed in "
                f"strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def onehot(like: Tensor, k: int) -> Tensor:
    """The output gradient that picks element k of `like` (flat, C order), on `like`'s device."""
    flat = np.zeros(like.numel(), like.dtype)
    flat[k] = 1
    return tensor(flat.reshape(like.shape), dtype=like.dtype, device=like.device)


def checked_vector(v: Any, other: tuple, is_other_tuple: bool, create_graph: bool, fn_name: str,
                   none_message: str) -> tuple | None:
    """v as a tuple of fresh tensors checked against `other`, what it multiplies; None only where `other` is one
    single-element tensor (else `none_message`)."""
    if v is None:
        if len(other) != 1 or other[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = as_tuple(v, "v", fn_name)
    v = preprocess(v, create_graph, need_graph=False)
    _validate_v(v, other, is_other_tuple)
    return v


def scalar_output(func: Callable, inputs: tuple, strict: bool, fn_name: str) -> Tensor:
    """func(*inputs), which the Hessian's algorithms need to be a single one-element Tensor."""
    out = func(*inputs)
    is_tuple, outputs = as_tuple(out, "outputs of the user-provided function", fn_name)
    check_outputs_require_grad(outputs, strict)
    if is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return out


JACOBIAN_CONSTANT = (
    "While computing the hessian, found that the jacobian of the user-provided function with respect to input {i} "
    "is independent of the input. This is not allowed in strict mode. You should ensure that your function is "
    "twice differentiable and that the jacobian depends on the inputs (this would be violated by a linear "
    "function for example)."
)
