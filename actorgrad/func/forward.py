"""The forward-mode transforms: jvp, linearize, jacfwd and hessian, as torch.func's.

Jacobian-vector products use the double-vjp trick on a Level, not actorgrad.autograd.forward_ad: that module
computes its tangents by the same trick, but allows one dual level at a time, and the transforms must nest
(`jacfwd(jacrev(f))`, `jvp` of a `jvp`). With cotangents u (zeros that require grad), the vjps
g = uᵀ·∂f/∂x are recorded once (`create_graph=True`); being linear in u, their gradient with respect to u along
a tangent t is J·t whatever u holds. So `linearize` calls the function once, and each later push of a tangent
costs one reverse pass; jacfwd pushes one basis vector per input element.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from actorgrad.autograd.forward_ad import check_floating_dual
from actorgrad.creation import zeros, zeros_like
from actorgrad.func.batching import check_randomness, refusing_random
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
from actorgrad.func.pytree import tree_flatten, tree_unflatten
from actorgrad.func.reverse import jacrev
from actorgrad.grad_mode import enable_grad, is_grad_enabled
from actorgrad.ops import stack
from actorgrad.tensor import Tensor

__all__ = ["hessian", "jacfwd", "jvp", "linearize"]

_JVP_API = "jvp(f, primals, tangents)"


class _Linearization:
    """`func` called once on fresh primals (those at `argnums`, or all for None), with the vjps that turn
    tangents of the primals into tangents of the outputs."""

    def __init__(self, func: Callable, args: tuple, argnums: Any, has_aux: bool, api: str) -> None:
        self.level = Level()
        diff = args if argnums is None else slice_argnums(args, argnums)
        flat, self.primals_spec = tree_flatten(diff)
        _check_floating(flat, "primal")
        self.primals = [self.level.differentiable(x) for x in flat]
        new = tree_unflatten(self.primals, self.primals_spec)
        with enable_grad():
            output = func(*(new if argnums is None else replace_args(args, argnums, new)))
            output, self.aux = split_aux(output, has_aux, api)
            self.outputs, self.output_spec = tree_flatten(output)
            check_tensor_outputs(self.outputs, api)
            # one cotangent per distinct output: an output returned twice has one tangent
            self.cotangents = {id(o): self.level.cotangent(o) for o in self.outputs
                               if o.requires_grad and o.dtype.kind in "fc"}
            distinct = list({id(o): o for o in self.outputs if id(o) in self.cotangents}.values())
            vjps = self.level.gradients(distinct, self.primals, [self.cotangents[id(o)] for o in distinct],
                                        create_graph=True, materialize=False) if distinct else []
        self.vjps = [(i, g) for i, g in enumerate(vjps) if g is not None and g.requires_grad]

    def push(self, flat_tangents: list, strict: bool = False) -> list[Tensor]:
        """J·t for each output, t one tangent per primal (None for a zero one)."""
        pairs = [(g, flat_tangents[i]) for i, g in self.vjps if flat_tangents[i] is not None]
        found: dict[int, Tensor] = {}
        if pairs:
            create_graph = is_grad_enabled() and (any(self.level.reaches_outside(o) for o in self.outputs)
                                                  or any(t.requires_grad for _, t in pairs))
            grads = self.level.gradients([g for g, _ in pairs], list(self.cotangents.values()),
                                         [t for _, t in pairs], create_graph=create_graph, materialize=False)
            found = {key: g for key, g in zip(self.cotangents, grads) if g is not None}
        tangents = []
        for out in self.outputs:
            tangent = found.get(id(out))
            if tangent is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of "
                                       "the inputs. This is not allowed with strict=True.")
                tangent = zeros_like(out)
            tangents.append(self.level.unwrap(tangent))
        return tangents


def _check_floating(flat: list, what: str) -> None:
    for value in flat:
        if isinstance(value, Tensor):
            check_floating_dual(value, what)


def _check_tensors(flat: list, what: str) -> None:
    if not flat:
        raise RuntimeError(f"{_JVP_API}: Expected {what} to contain at least one Tensor.")
    for value in flat:
        if not isinstance(value, Tensor):
            raise RuntimeError(f"{_JVP_API}: Expected {what} to only contain Tensors, got {type(value)}")


def jvp(func: Callable, primals: tuple, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """(`func(*primals)`, the Jacobian-vector product along `tangents`), or with `has_aux` (output, jvp, aux);
    `tangents` is shaped as `primals`. With `strict`, an output that does not depend on the primals is an error."""
    refuse_in_trio("jvp", "actorgrad.functional.jvp")
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP_API}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{_JVP_API}: Expected primals and tangents to have the same python structure. For example, if primals "
            f"is a tuple of 3 tensors, tangents also must be. Got primals with structure {primals_spec} and tangents "
            f"with structure {tangents_spec}"
        )
    _check_tensors(flat_primals, "primals")
    _check_tensors(flat_tangents, "tangents")
    for p, t in zip(flat_primals, flat_tangents):
        if t.shape != p.shape:
            raise RuntimeError(
                f"Trying to set a forward gradient that has a different size than that of the original Tensor, this "
                f"is not supported. Tensor is of size {list(p.shape)} while the given forward gradient is of size "
                f"{list(t.shape)}."
            )
    _check_floating(flat_primals, "primal")
    _check_floating(flat_tangents, "tangent")
    lin = _Linearization(func, primals, None, has_aux, _JVP_API)
    output = lin.level.unwrap(tree_unflatten(lin.outputs, lin.output_spec))
    pushed = tree_unflatten(lin.push(flat_tangents, strict), lin.output_spec)
    return (output, pushed, lin.level.unwrap_aux(lin.aux)) if has_aux else (output, pushed)


def _check_tangents(flat: list, primals: list) -> None:
    for idx, (t, p) in enumerate(zip(flat, primals)):
        for what in ("shape", "device", "dtype"):
            if getattr(t, what) != getattr(p, what):
                raise RuntimeError(f"tangent:{idx} with {what} {getattr(t, what)} in flattened pytree doesn't match "
                                   f"the {what} {getattr(p, what)} of the corresponding primal.")


def linearize(func: Callable, *primals: Any) -> tuple:
    """(`func(*primals)`, jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product at the primals. `func` runs
    once (PyTorch's runs it twice); each jvp_fn call is one reverse pass over what it recorded."""
    refuse_in_trio("linearize", "actorgrad.functional.jvp")
    lin = _Linearization(func, primals, None, False, "linearize(func, *primals)")

    def jvp_fn(*tangents: Any) -> Any:
        refuse_in_trio("linearize", "actorgrad.functional.jvp")
        flat, spec = tree_flatten(tangents)
        if spec != lin.primals_spec:
            raise RuntimeError(f"Expected the tangents {spec} to have the same argspec as the primals "
                               f"{lin.primals_spec}")
        _check_tangents(flat, lin.primals)
        return tree_unflatten(lin.push(flat), lin.output_spec)

    return lin.level.unwrap(tree_unflatten(lin.outputs, lin.output_spec)), jvp_fn


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """A function returning the Jacobian of `func` with respect to the arguments at `argnums`, a column per
    input element, nested as jacrev's. `func` runs once, unless randomness='different', where (as PyTorch's
    vmap over the basis would) each column gets a fresh call with its own random draws; with 'error', a call
    that draws random numbers raises."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        refuse_in_trio("jacfwd", "actorgrad.functional.jacobian")
        check_randomness(randomness)
        refuse_complex("jacfwd", tree_flatten(args)[0], is_input=True)
        wrapped = wrap_argnums(argnums, len(args))
        with refusing_random() if randomness == "error" else nullcontext():
            lin = _Linearization(func, args, wrapped, has_aux, _JVP_API)
        refuse_complex("jacfwd", lin.outputs, is_input=False)
        columns: list[list[list[Tensor]]] = [[[] for _ in lin.primals] for _ in lin.outputs]
        for i, primal in enumerate(lin.primals):
            for k in range(primal.numel()):
                tangents = [None] * len(lin.primals)
                tangents[i] = onehot(primal, k)
                source = _Linearization(func, args, wrapped, has_aux, _JVP_API) if randomness == "different" else lin
                for j, pushed in enumerate(source.push(tangents)):
                    columns[j][i].append(pushed)
        blocks = [[
            stack(cols, dim=-1).reshape(tuple(out.shape) + tuple(p.shape)) if cols
            else zeros(tuple(out.shape) + tuple(p.shape), dtype=out.dtype, device=out.device)
            for cols, p in zip(per_output, lin.primals)
        ] for per_output, out in zip(columns, lin.outputs)]
        result = nest_jacobian(blocks, lin.primals_spec, wrapped, lin.output_spec)
        return (result, lin.level.unwrap_aux(lin.aux)) if has_aux else result

    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """A function returning the Hessian of `func` with respect to the arguments at `argnums`: as PyTorch's,
    `jacfwd(jacrev(func, argnums), argnums)`."""
    return jacfwd(jacrev(func, argnums), argnums)
