"""`actorgrad.autograd.functional`: vjp, jvp, jacobian, hessian, vhp and hvp of a function, sync, as PyTorch's.

Each algorithm is written once, as a generator of the gradient passes it needs: it yields a `GradRequest` and is
sent back the gradients. `run_steps` answers with the sync engine (these functions, for scripts);
`actorgrad.functional` answers with `await actorgrad.grad` (the awaitable twins, for trio apps). jvp and hvp
use the double-vjp trick (the vjp of a vjp with respect to its cotangent), as PyTorch's do: two reverse passes.
jacobian and hessian take one reverse pass per output element, or with `strategy="forward-mode"` two per input
element (`vectorize=True` is accepted, as forward mode requires, and runs the same loop: actorgrad's vmap,
`actorgrad.func.vmap`, runs a function once per example too, so it would batch nothing).
How the algorithms take their arguments and give back their results lives in functional_arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from actorgrad.autograd.forward_ad import check_floating_dual
from actorgrad.autograd.functional_arguments import (
    JACOBIAN_CONSTANT,
    as_tuple,
    check_grads_require_grad,
    check_outputs_require_grad,
    checked_vector,
    fill_in_zeros,
    onehot,
    postprocess,
    preprocess,
    scalar_output,
    unpack,
)
from actorgrad.creation import zeros, zeros_like
from actorgrad.engine import grad_sync, refuse_inside_trio
from actorgrad.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from actorgrad.ops import stack
from actorgrad.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


class GradRequest(NamedTuple):
    """One gradient pass an algorithm needs: `grad(outputs, inputs, grad_outputs, ...)`, unused inputs None."""

    outputs: tuple
    inputs: tuple
    grad_outputs: list
    create_graph: bool
    retain_graph: bool | None

    def answer(self, grad_fn: Callable) -> Any:
        """`grad_fn` (the sync `grad_sync` or the awaitable `grad`) called for this pass."""
        return grad_fn(self.outputs, self.inputs, self.grad_outputs, retain_graph=self.retain_graph,
                       create_graph=self.create_graph, allow_unused=True)


Steps = Generator[GradRequest, tuple, Any]


def run_steps(steps: Steps) -> Any:
    """Run an algorithm, answering each of its gradient passes with the sync engine."""
    try:
        request = steps.send(None)
        while True:
            request = steps.send(request.answer(grad_sync))
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, *, create_graph: bool = False,
           retain_graph: bool | None = None) -> Steps:
    """`grad` that skips outputs which are None or do not require grad (all None if none is left)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return (yield GradRequest(tuple(o for o, _ in pairs), inputs, [g for _, g in pairs], create_graph,
                              retain_graph))


# -- the algorithms ------------------------------------------------------------------------------------------------

_V_NONE_FOR_INPUTS = (
    "The vector v can only be None if the input to the user-provided function is a single Tensor with a single "
    "element."
)


def vjp_steps(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool) -> Steps:
    with enable_grad():
        is_inputs_tuple, inputs = as_tuple(inputs, "inputs", "vjp")
        inputs = preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        check_outputs_require_grad(outputs, strict)
        v = checked_vector(v, outputs, is_outputs_tuple, create_graph, "vjp", "The vector v can only be None if the "
                           "user-provided function returns a single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = yield from _grads(outputs, inputs, v, create_graph=create_graph)
        result = fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (unpack(postprocess(outputs, create_graph), is_outputs_tuple),
            unpack(postprocess(result, create_graph), is_inputs_tuple))


def jvp_steps(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool) -> Steps:
    with enable_grad():
        is_inputs_tuple, inputs = as_tuple(inputs, "inputs", "jvp")
        inputs = preprocess(inputs, create_graph, need_graph=True)
        v = checked_vector(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_NONE_FOR_INPUTS)
        is_outputs_tuple, outputs = as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        check_outputs_require_grad(outputs, strict)
        # The vjp is linear in its cotangent, so zeros serve: they never reach the result.
        cotangents = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        vjps = yield from _grads(outputs, inputs, cotangents, create_graph=True)
        check_grads_require_grad(vjps, strict, "The gradient with respect to input {i} is independent of the "
                                  "inputs of the user-provided function. This is not allowed in strict mode.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = yield from _grads(vjps, cotangents, v, create_graph=create_graph)
        result = fill_in_zeros(grads, outputs, strict, create_graph, "back_trick")
    return (unpack(postprocess(outputs, create_graph), is_outputs_tuple),
            unpack(postprocess(result, create_graph), is_outputs_tuple))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> Steps:
    """d outputs[i] / d inputs[j] of shape outputs[i].shape + inputs[j].shape, one reverse pass per output
    element; None outputs count as independent of every input."""
    jacobian = []
    for i, out in enumerate(outputs):
        rows: list[list] = [[] for _ in inputs]
        size = 0 if out is None else out.numel()
        for k in range(size):
            grads = yield from _grads((out,), inputs, (onehot(out, k),),
                                      retain_graph=True, create_graph=create_graph)
            for j, (g, x) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           f"This is not allowed in strict mode.")
                    g = zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       f"This is not allowed in strict mode when create_graph=True.")
                rows[j].append(g)
        shape = () if out is None else out.shape
        jacobian.append(tuple(
            stack(r).reshape(shape + x.shape) if r else zeros(shape + x.shape, dtype=x.dtype, device=x.device)
            for r, x in zip(rows, inputs)
        ))
    return tuple(jacobian)


def _jacobian_columns(outputs: tuple, inputs: tuple, strict: bool) -> Steps:
    """The blocks of `_jacobian_rows`, built a column at a time (forward mode): by the double-vjp trick, the
    Jacobian of the vjps with respect to their cotangents, transposed. Two reverse passes per input element.
    An integer or bool output has no cotangent (none can require grad): its blocks are zeros of its dtype, the
    tangents PyTorch's forward mode gives it."""
    floating = tuple(out for out in outputs if out.dtype.kind in "fc")
    cotangents = tuple(zeros_like(out, requires_grad=True) for out in floating)
    vjps = yield from _grads(floating, inputs, cotangents, create_graph=True)
    vjps = tuple(zeros_like(x) if g is None else g for g, x in zip(vjps, inputs))
    columns = yield from _jacobian_rows(vjps, cotangents, False, strict)
    blocks = []
    i = 0  # the output's index among the floating ones
    for out in outputs:
        if out.dtype.kind in "fc":
            blocks.append(tuple(_move_leading_dims_last(columns[j][i], x.ndim) for j, x in enumerate(inputs)))
            i += 1
        else:
            blocks.append(tuple(zeros(out.shape + x.shape, dtype=out.dtype, device=out.device) for x in inputs))
    return tuple(blocks)


def _move_leading_dims_last(block: Tensor, count: int) -> Tensor:
    return block.permute((*range(count, block.ndim), *range(count)))  # a tuple: () for a 0-d block


# PyTorch's texts, naming actorgrad's path (hessian's errors name jacobian, which runs its outer Jacobian there);
# the missing space in "isonly" is PyTorch's too.
_FORWARD_NO_CREATE_GRAPH = (
    'actorgrad.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not supported '
    'together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
)
_FORWARD_NO_STRICT = (
    'actorgrad.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported together '
    '(yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
)
_FORWARD_NEEDS_VECTORIZE = (
    "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for `vectorize=True`."
)
_VECTORIZE_NO_STRICT = (
    "actorgrad.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. Please "
    "either set `strict=False` or `vectorize=False`."
)


def _check_forward_mode(inputs: Any, create_graph: bool, strict: bool, vectorize: bool) -> None:
    """PyTorch's refusals for `strategy="forward-mode"`, in its order: the inputs are checked before `vectorize`."""
    if create_graph:
        raise NotImplementedError(_FORWARD_NO_CREATE_GRAPH)
    if strict:
        raise RuntimeError(_FORWARD_NO_STRICT)
    _, inputs = as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(_FORWARD_NEEDS_VECTORIZE)
    for x in inputs:  # PyTorch makes a dual of each input, so make_dual's refusal comes before the function runs
        check_floating_dual(x, "primal")


def _refuse_complex_rows(outputs: tuple) -> None:
    """PyTorch's row loop (reverse mode, `vectorize=False`) takes each output element's gradient without a seed,
    which a complex element refuses (its batched, vectorized path seeds one-hot vectors, as actorgrad's loop does)."""
    for out in outputs:
        if out is not None and out.requires_grad and out.numel() and out.is_complex():
            raise RuntimeError(
                f"grad can be implicitly created only for real scalar outputs but got actorgrad.{out.dtype}"
            )


def jacobian_steps(func: Callable, inputs: Any, create_graph: bool, strict: bool, vectorize: bool,
                   strategy: str) -> Steps:
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        _check_forward_mode(inputs, create_graph, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = as_tuple(inputs, "inputs", "jacobian")
        inputs = preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        check_outputs_require_grad(outputs, strict)
        if vectorize and strict:  # refused only now, after the function ran, as in PyTorch
            raise RuntimeError(_VECTORIZE_NO_STRICT)
        if strategy == "forward-mode":
            result = yield from _jacobian_columns(outputs, inputs, strict)
        else:
            if not vectorize:
                _refuse_complex_rows(outputs)
            result = yield from _jacobian_rows(outputs, inputs, create_graph, strict)
    return unpack(postprocess(result, create_graph), (is_outputs_tuple, is_inputs_tuple))


def hessian_steps(func: Callable, inputs: Any, create_graph: bool, strict: bool, vectorize: bool,
                  outer_jacobian_strategy: str) -> Steps:
    is_inputs_tuple, inputs = as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if outer_jacobian_strategy == "forward-mode":
        _check_forward_mode(inputs, create_graph, strict, vectorize)
    with enable_grad():
        inputs = preprocess(inputs, create_graph, need_graph=True)
        out = scalar_output(func, inputs, strict, "hessian").reshape(())
        gradients = yield from _grads((out,), inputs, create_graph=True)
        # PyTorch's inner jacobian is not strict: a gradient the output does not reach is zeros of the input's
        # shape (so its Hessian blocks are too), and only then refused in strict mode, as a constant jacobian
        gradients = tuple(zeros_like(x) if g is None else g for g, x in zip(gradients, inputs))
        check_grads_require_grad(gradients, strict, JACOBIAN_CONSTANT)
        if vectorize and strict:  # PyTorch's outer jacobian refuses it once the gradients are taken
            raise RuntimeError(_VECTORIZE_NO_STRICT)
        if outer_jacobian_strategy == "forward-mode":
            result = yield from _jacobian_columns(gradients, inputs, strict)
        else:
            if not vectorize:
                _refuse_complex_rows(gradients)
            result = yield from _jacobian_rows(gradients, inputs, create_graph, strict)
    return unpack(postprocess(result, create_graph), (is_inputs_tuple, is_inputs_tuple))


def _second_order_setup(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool,
                        fn_name: str) -> Steps:
    is_inputs_tuple, inputs = as_tuple(inputs, "inputs", fn_name)
    inputs = preprocess(inputs, create_graph, need_graph=True)
    v = checked_vector(v, inputs, is_inputs_tuple, create_graph, fn_name, _V_NONE_FOR_INPUTS)
    out = scalar_output(func, inputs, strict, fn_name)
    gradients = yield from _grads((out,), inputs, create_graph=True)
    check_grads_require_grad(gradients, strict, JACOBIAN_CONSTANT)
    return is_inputs_tuple, inputs, v, out, gradients


def vhp_steps(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool) -> Steps:
    with enable_grad():
        is_inputs_tuple, inputs, v, out, gradients = yield from _second_order_setup(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = yield from _grads(gradients, inputs, v, create_graph=create_graph)
        result = fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return (postprocess((out,), create_graph)[0], unpack(postprocess(result, create_graph), is_inputs_tuple))


def hvp_steps(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool) -> Steps:
    with enable_grad():
        is_inputs_tuple, inputs, v, out, gradients = yield from _second_order_setup(
            func, inputs, v, create_graph, strict, "hvp")
        cotangents = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double_back = yield from _grads(gradients, inputs, cotangents, create_graph=True)
        check_grads_require_grad(double_back, strict, JACOBIAN_CONSTANT)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = yield from _grads(double_back, cotangents, v, create_graph=create_graph)
        result = fill_in_zeros(grads, inputs, strict, create_graph, "double_back_trick")
    return (postprocess((out,), create_graph)[0], unpack(postprocess(result, create_graph), is_inputs_tuple))


# -- the sync entry points -----------------------------------------------------------------------------------------

def _sync(name: str, steps: Steps) -> Any:
    refuse_inside_trio(name, f"actorgrad.functional.{name}")
    return run_steps(steps)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), vᵀ·J): the vector-Jacobian product at `inputs`."""
    return _sync("vjp", vjp_steps(func, inputs, v, create_graph, strict))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J·v): the Jacobian-vector product at `inputs`, by the double-vjp trick."""
    return _sync("jvp", jvp_steps(func, inputs, v, create_graph, strict))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """d func / d inputs: a Tensor, a tuple per input or per output, or a tuple of tuples, as PyTorch's."""
    return _sync("jacobian", jacobian_steps(func, inputs, create_graph, strict, vectorize, strategy))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: a Tensor for one input, a tuple of tuples for a tuple of inputs."""
    return _sync("hessian", hessian_steps(func, inputs, create_graph, strict, vectorize, outer_jacobian_strategy))


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), vᵀ·H) for a scalar function."""
    return _sync("vhp", vhp_steps(func, inputs, v, create_graph, strict))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H·v) for a scalar function, by the double-vjp trick."""
    return _sync("hvp", hvp_steps(func, inputs, v, create_graph, strict))
