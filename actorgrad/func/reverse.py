"""The reverse-mode transforms: grad, grad_and_value, vjp and jacrev, as torch.func's, each one call of the
function and `actorgrad.autograd.grad` passes on a Level (see levels)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from actorgrad.creation import zeros
from actorgrad.func.levels import (
    Level,
    check_tensor_outputs,
    nest_jacobian,
    onehot,
    refuse_complex,
    refuse_in_trio,
    replace_args,
    slice_argnums,
    split_aux,
    wrap_argnums,
)
from actorgrad.func.pytree import tree_flatten, tree_pprint, tree_unflatten
from actorgrad.grad_mode import enable_grad
from actorgrad.ops import stack
from actorgrad.tensor import Tensor

__all__ = ["grad", "grad_and_value", "jacrev", "vjp"]

_GRAD_API = "grad_and_value(f)(*args)"


def _grad_and_value(func: Callable, argnums: Any, has_aux: bool, args: tuple, kwargs: dict) -> tuple:
    level = Level()
    argnums = wrap_argnums(argnums, len(args))
    flat_diff, spec = tree_flatten(args[argnums] if isinstance(argnums, int) else slice_argnums(args, argnums))
    fresh = [level.differentiable(x) for x in flat_diff]
    new = tree_unflatten(fresh, spec)
    with enable_grad():
        output = func(*replace_args(args, argnums, (new,) if isinstance(argnums, int) else new), **kwargs)
        output, aux = split_aux(output, has_aux, _GRAD_API)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{_GRAD_API}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{_GRAD_API}: Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
    grads = level.gradients([output], fresh, retain_graph=None)  # kept only where a graph is recorded
    gradient = level.unwrap(tree_unflatten(grads, spec))
    return gradient, (level.unwrap(output), level.unwrap_aux(aux) if has_aux else None)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning (gradient of `func`'s scalar output with respect to the arguments at `argnums`,
    `func`'s output); with `has_aux`, `func` returns (output, aux) and the value is (output, aux)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        refuse_in_trio("grad_and_value", "actorgrad.grad")
        gradient, (output, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (gradient, (output, aux)) if has_aux else (gradient, output)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of `func`'s scalar output with respect to the arguments at `argnums`
    (a pytree of them each, a tuple of those for a tuple of argnums); with `has_aux`, (gradient, aux)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        refuse_in_trio("grad", "actorgrad.grad")
        gradient, (_, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (gradient, aux) if has_aux else gradient

    return wrapper


class _Vjp:
    """`func` called once on fresh primals; its vector-Jacobian products taken on demand."""

    def __init__(self, func: Callable, args: tuple, argnums: Any, has_aux: bool) -> None:
        self.level = Level()
        if argnums is None:
            diff, self.argnums = args, None
        else:
            self.argnums = wrap_argnums(argnums, len(args))
            diff = slice_argnums(args, self.argnums)
        flat, self.primals_spec = tree_flatten(diff)
        self.primals = [self.level.differentiable(x) for x in flat]
        new = tree_unflatten(self.primals, self.primals_spec)
        with enable_grad():
            output = func(*(new if argnums is None else replace_args(args, self.argnums, new)))
            output, self.aux = split_aux(output, has_aux, "vjp(f, *primals)")
        self.outputs, self.output_spec = tree_flatten(output)
        check_tensor_outputs(self.outputs, "vjp(f, *primals)")
        for out in self.outputs:
            if out.dtype.kind not in "fc":
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {out.dtype}")
        self.output = output

    def flat_vjp(self, flat_cotangents: list, create_graph: bool | None = None, retain_graph: bool = True) -> list:
        grads = self.level.gradients(self.outputs, self.primals, flat_cotangents, create_graph=create_graph,
                                     retain_graph=retain_graph)
        # unwrapped even under create_graph: the graph stays only where it reaches outside this level
        return [self.level.unwrap(g) for g in grads]

    def vjp_fn(self, cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> Any:
        """The vjp with `cotangents` (a pytree shaped as the output), as a tuple over the primals."""
        refuse_in_trio("vjp", "actorgrad.functional.vjp")
        flat, spec = tree_flatten(cotangents)
        if spec != self.output_spec:
            raise RuntimeError(
                f"Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {tree_pprint(spec)}, primal output: {tree_pprint(self.output_spec)}"
            )
        return tree_unflatten(self.flat_vjp(flat, create_graph, retain_graph), self.primals_spec)


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(`func(*primals)`, vjp_fn), or with `has_aux` (output, vjp_fn, aux): vjp_fn(cotangents) gives the
    vector-Jacobian products with respect to each primal; it may be called many times."""
    refuse_in_trio("vjp", "actorgrad.functional.vjp")
    state = _Vjp(func, primals, None, has_aux)
    output = state.level.unwrap(state.output)
    if has_aux:
        return output, state.vjp_fn, state.level.unwrap_aux(state.aux)
    return output, state.vjp_fn


def _jacobian_blocks(state: _Vjp) -> list[list[Tensor]]:
    """blocks[i][j] = d output_i / d primal_j, of shape output_i.shape + primal_j.shape: one reverse pass per
    output element."""
    blocks = []
    for out in state.outputs:
        rows: list[list[Tensor]] = [[] for _ in state.primals]
        for k in range(out.numel()):
            grads = state.level.gradients([out], state.primals, [onehot(out, k)])
            for row, g in zip(rows, grads):
                row.append(state.level.unwrap(g))
        blocks.append([
            stack(row).reshape(tuple(out.shape) + tuple(p.shape)) if row
            else zeros(tuple(out.shape) + tuple(p.shape), dtype=p.dtype, device=p.device)
            for row, p in zip(rows, state.primals)
        ])
    return blocks


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """A function returning the Jacobian of `func` with respect to the arguments at `argnums`, by reverse mode:
    one pass per output element. The result nests as torch.func's: the output's structure, then (for a tuple of
    argnums) one entry per argnum, then each argument's structure. `chunk_size` (how many rows PyTorch batches
    at once) is checked and accepted; the rows are taken one at a time either way."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        refuse_in_trio("jacrev", "actorgrad.functional.jacobian")
        refuse_complex("jacrev", tree_flatten(args)[0], is_input=True)
        state = _Vjp(func, args, argnums, has_aux)
        refuse_complex("jacrev", state.outputs, is_input=False)
        result = nest_jacobian(_jacobian_blocks(state), state.primals_spec, state.argnums, state.output_spec)
        return (result, state.level.unwrap_aux(state.aux)) if has_aux else result

    return wrapper
