"""What every gradient transform shares: a Level (the fresh tensors a transform differentiates with respect to,
and how its results are cut loose from them) and PyTorch's handling of argnums.

A transform is built on the tape: it calls the function on fresh tensors standing for the inputs (a new leaf for
an input that does not require grad, a view, so that gradients still reach it, for one that does) and takes
`actorgrad.autograd.grad` with respect to those. Its gradient passes record a graph (`create_graph=True`) only
when something outside the level could differentiate the result: grad mode was on when the transform was called,
and the outputs' graph reaches a leaf that is not one of the level's own (an enclosing transform's input, a
parameter the function closes over) or a tangent that requires grad. So `grad(grad(f))`, `jacrev(jacrev(f))` and
gradients of per-sample gradients work, while a lone `grad(f)(x)` records nothing it would throw away. Results
are detached unless their graph reaches outside the level, as PyTorch's unwrapped results are. No `.grad` is
touched: every pass is `autograd.grad`, never `backward`.
"""

from __future__ import annotations

import weakref
from typing import Any

from actorgrad.accumulate_grad import AccumulateGrad
from actorgrad.creation import zeros, zeros_like
from actorgrad.engine import grad_sync, refuse_inside_trio
from actorgrad.func.pytree import TreeSpec, tree_flatten, tree_map, tree_unflatten
from actorgrad.grad_mode import enable_grad, is_grad_enabled
from actorgrad.tensor import Tensor


def refuse_in_trio(name: str, async_name: str) -> None:
    """The transforms run the sync engine, so inside a trio app they are refused, as `autograd.grad` is."""
    refuse_inside_trio(f"actorgrad.func.{name}", async_name)


# Forward mode's cotangents, by id: J·t is the gradient with respect to them of an expression linear in them, so it
# does not depend on them, though its graph may reach them; they are constants to every transform, enclosing too.
_COTANGENTS: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()


class Level:
    """One transform's call: its own leaves and what it has learnt about which graph nodes reach outside them."""

    def __init__(self) -> None:
        self.outer_grad = is_grad_enabled()
        self._own: dict[int, Tensor] = {}  # id -> leaf, kept alive so that ids stay unique
        self._outside: dict[Any, bool] = {}  # node -> whether it leads to a leaf not our own

    def differentiable(self, value: Any) -> Tensor:
        """A fresh tensor that stands for `value` inside the function."""
        if not isinstance(value, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
        with enable_grad():
            if value.requires_grad:
                return value.view(value.shape)
            fresh = value.detach().requires_grad_()
        self._own[id(fresh)] = fresh
        return fresh

    def cotangent(self, output: Tensor) -> Tensor:
        """Zeros shaped as `output` that require grad: the cotangent u of the double-vjp trick, a leaf of ours."""
        fresh = zeros_like(output, requires_grad=True)
        self._own[id(fresh)] = _COTANGENTS[id(fresh)] = fresh
        return fresh

    def _node_reaches_outside(self, root: Any) -> bool:
        known = self._outside
        stack = [root]
        while stack:
            node = stack[-1]
            if node in known:
                stack.pop()
            elif isinstance(node, AccumulateGrad):
                known[node] = id(node.variable) not in self._own and id(node.variable) not in _COTANGENTS
                stack.pop()
            else:
                pending = [n for n, _ in node.next_functions if n is not None and n not in known]
                if pending:
                    stack.extend(pending)
                else:
                    known[node] = any(known[n] for n, _ in node.next_functions if n is not None)
                    stack.pop()
        return known[root]

    def reaches_outside(self, value: Any) -> bool:
        """Whether a tensor depends differentiably on something other than this level's own leaves."""
        if not isinstance(value, Tensor) or not value.requires_grad:
            return False
        if value.grad_fn is None:
            return id(value) not in self._own and id(value) not in _COTANGENTS
        return self._node_reaches_outside(value.grad_fn)

    def unwrap(self, tree: Any) -> Any:
        """`tree` with each tensor detached unless a graph outside this level can use it (and grad mode was on
        when the transform was called)."""
        keep = self.outer_grad
        return tree_map(lambda v: v if not isinstance(v, Tensor) or keep and self.reaches_outside(v) else v.detach(),
                        tree)

    def unwrap_aux(self, aux: Any) -> Any:
        """A has_aux function's aux, unwrapped; as in PyTorch, its leaves must all be tensors."""
        for leaf in tree_flatten(aux)[0]:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
        return self.unwrap(aux)

    def gradients(self, outputs: list, inputs: list, grad_outputs: list | None = None, *,
                  create_graph: bool | None = None, retain_graph: bool | None = True,
                  materialize: bool = True) -> list:
        """d outputs / d inputs (zeros, or None without `materialize`, for an input the outputs do not depend on),
        recording a graph where an enclosing computation could use it, or as `create_graph` says."""
        if grad_outputs is None:
            grad_outputs = [None] * len(outputs)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        if create_graph is None:
            create_graph = is_grad_enabled() and (
                any(self.reaches_outside(o) for o, _ in pairs)
                or any(isinstance(g, Tensor) and g.requires_grad for _, g in pairs))
        grads: tuple = (None,) * len(inputs)
        if pairs:
            seeds = None if all(g is None for _, g in pairs) else [g for _, g in pairs]
            with enable_grad():
                grads = grad_sync([o for o, _ in pairs], inputs, seeds, retain_graph=retain_graph,
                                  create_graph=create_graph, allow_unused=True)
        if not materialize:
            return list(grads)
        return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


# -- argnums, as PyTorch's --------------------------------------------------------------------------------------

def _wrap_argnum(argnum: Any, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def wrap_argnums(argnums: Any, num_args: int) -> int | tuple[int, ...]:
    """`argnums` checked against the number of positional arguments, negative ones counted from the end."""
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {wrapped}")
    return wrapped


def slice_argnums(args: tuple, argnums: int | tuple[int, ...]) -> tuple:
    """The arguments at `argnums`, as a tuple (one element for an int)."""
    if isinstance(argnums, int):
        return (args[argnums],)
    return tuple(args[i] for i in argnums)


def replace_args(args: tuple, argnums: int | tuple[int, ...], new: tuple) -> tuple:
    positions = (argnums,) if isinstance(argnums, int) else argnums
    replaced = list(args)
    for i, value in zip(positions, new):
        replaced[i] = value
    return tuple(replaced)


def split_aux(output: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    """(output, aux) of a function called with has_aux, with PyTorch's error for anything but a pair."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def check_tensor_outputs(flat: list, api: str) -> None:
    """PyTorch's refusal of an empty output or one with other things than tensors."""
    if len(flat) < 1 or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for value in flat:
        if not isinstance(value, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(value)}")


def refuse_complex(api: str, flat: list, is_input: bool) -> None:
    """jacrev and jacfwd take real functions only, as PyTorch's."""
    for i, value in enumerate(flat):
        if isinstance(value, Tensor) and value.dtype.kind == "c":
            what = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex tensor at flattened "
                               f"input idx: {i}")


def onehot(out: Tensor, k: int) -> Tensor:
    """Zeros shaped as `out` but for a one at flat index k: a row (or column) of the identity."""
    seed = zeros(out.numel(), dtype=out.dtype, device=out.device)
    seed[k] = 1
    return seed.reshape(out.shape)


def nest_jacobian(blocks: list[list[Tensor]], primals_spec: TreeSpec, argnums: Any, output_spec: TreeSpec) -> Any:
    """torch.func's nesting of Jacobian blocks (blocks[output][primal], both flat)."""
    per_output = [tree_unflatten(row, primals_spec) for row in blocks]
    if isinstance(argnums, int):
        per_output = [nested[0] for nested in per_output]
    return tree_unflatten(per_output, output_spec)
