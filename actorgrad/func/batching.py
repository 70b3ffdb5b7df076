"""vmap, as torch.func's in what it computes, not in how: actorgrad runs the function once per example (the
slices of the mapped inputs along their in_dims) and stacks the outputs along their out_dims, where PyTorch
batches each op. The results and their gradients are the same, the speed is that of a Python loop. That also makes
it more permissive than PyTorch's: `.item()` and data-dependent control flow work per example, and an output
given out_dims None is accepted when every example returns the same value (always so for a batch of one), where
PyTorch refuses any output that depends on the mapped inputs. A batch of size 0 is refused (no example to run).
An in-place change to an input that is not mapped over (in_dims None), or to a tensor the function captures (a
closure or global its code names, a keyword or partial argument, a module's parameters and buffers, such as
BatchNorm's running stats), is refused after the first example, since it would be made once per example.

Randomness: every random op of actorgrad draws from an actorgrad.Generator. With randomness='error' (the
default), a call that moves the default generator raises PyTorch's error, and the generator is put back;
'different' lets each example draw its own numbers; 'same' rewinds the default generator before each example, so
all draw the same. Draws from a generator passed explicitly (`generator=`) are not seen by either check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from actorgrad.func.pytree import TreeSpec, broadcast_prefix, tree_flatten, tree_unflatten
from actorgrad.nn.module import Module
from actorgrad.ops import equal, stack
from actorgrad.random import default_generator
from actorgrad.tensor import Tensor

__all__ = ["vmap"]

RANDOM_IN_ERROR_MODE = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' "
    "randomness flags on vmap or perform the randomness operation out of vmap"
)


def check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


@contextmanager
def refusing_random() -> Iterator[None]:
    """Raise PyTorch's error if the block draws from the default generator, whose state is then restored."""
    before = default_generator.get_state()
    yield
    after = default_generator.get_state()
    if not (bool(equal(after, before)) if isinstance(before, Tensor) else after == before):
        default_generator.set_state(before)
        raise RuntimeError(RANDOM_IN_ERROR_MODE)


def _name(func: Callable) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _mapped_inputs(func: Callable, in_dims: Any, args: tuple) -> tuple[int, list, list, TreeSpec]:
    """(batch size, flat in_dims (None or non-negative), flat args, args' structure), with PyTorch's errors."""
    if not isinstance(in_dims, int | tuple):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_prefix(in_dims, spec)
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if flat_dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    for i, (arg, dim) in enumerate(zip(flat_args, flat_dims)):
        if dim is None:
            continue
        if not isinstance(dim, int):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but in_dim must be either an integer dimension "
                             f"or None.")
        if not isinstance(arg, Tensor):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type {type(arg)}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -arg.dim() <= dim < arg.dim():
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a Tensor of "
                             f"dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        flat_dims[i] = dim % arg.dim()
    sizes = [arg.shape[dim] for arg, dim in zip(flat_args, flat_dims) if dim is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError("vmap: actorgrad's vmap runs the function once per example, so it cannot map over a batch "
                         "of size 0 (it would not know the outputs' shapes)")
    return sizes[0], flat_dims, flat_args, spec


def _check_out_dims(func: Callable, out_dims: Any) -> None:
    for dim in tree_flatten(out_dims)[0]:
        if dim is not None and not isinstance(dim, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             f"python collection of ints representing where in the outputs the vmapped dimension "
                             f"should appear.")


def _flat_out_dims(func: Callable, out_dims: Any, output: Any, spec: TreeSpec) -> list:
    if isinstance(output, Tensor):  # PyTorch's edge case: a lone tensor takes out_dims=(d,) too
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        flat = None
    else:
        flat = broadcast_prefix(out_dims, spec)
    if flat is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                         f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {spec}.")
    return flat


def _same(value: Any, first: Any) -> bool:
    """Whether an example's output equals the first example's: what out_dim None asks of an unbatched output."""
    if isinstance(value, Tensor) or isinstance(first, Tensor):
        return (isinstance(value, Tensor) and isinstance(first, Tensor) and value.shape == first.shape
                and bool(equal(value, first)))
    return value is first or value == first


def _combine(func: Callable, values: list, out_dim: int | None) -> Any:
    """One output's per-example values joined: stacked at `out_dim`, or for None the one unbatched value."""
    name = _name(func)
    if out_dim is None:
        first = values[0]
        if not all(_same(v, first) for v in values):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return first
    for v in values:
        if not isinstance(v, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. Did you mean "
                             f"to set out_dims= to None for output?")
    return stack(values, dim=out_dim)


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


def _captured_tensors(func: Any, kwargs: dict, seen: set[int]) -> list[Tensor]:
    """The tensors `func` reaches without their being mapped: keyword arguments, a partial's bound arguments, and
    the closure cells and globals its code names (through the functions found there, as a nested vmap's)."""
    if id(func) in seen:
        return []
    seen.add(id(func))
    found = [leaf for leaf in tree_flatten(kwargs)[0] if isinstance(leaf, Tensor)]
    owner = getattr(func, "__self__", func)  # a module, or a module's bound method: its state (BatchNorm's stats)
    if isinstance(owner, Module):
        found += [*owner.parameters(), *owner.buffers()]
        if owner is func:
            return found + _captured_tensors(owner.forward, {}, seen)
    if isinstance(func, functools.partial):
        return found + _captured_tensors(func.func, {"args": func.args, "keywords": func.keywords}, seen)
    code = getattr(func, "__code__", None)
    values = [_contents(cell) for cell in getattr(func, "__closure__", None) or ()]
    if code is not None:
        scope = getattr(func, "__globals__", {})
        values += [scope[name] for name in code.co_names if name in scope]
    for value in values:
        if isinstance(value, Tensor):
            found.append(value)
        elif isinstance(value, Module):
            found += _captured_tensors(value, {}, seen)
        elif callable(value) and (hasattr(value, "__code__") or isinstance(value, functools.partial)):
            found += _captured_tensors(value, {}, seen)
    return found


def _unmapped_versions(func: Callable, kwargs: dict, flat_args: list, flat_dims: list) -> list[tuple[Tensor, int]]:
    """The version of every tensor an example can reach that is not mapped over (nor shares a mapped input's
    memory, whose slices an example may change): the unmapped inputs and the tensors `func` captures."""
    unmapped = [a for a, d in zip(flat_args, flat_dims) if d is None and isinstance(a, Tensor)]
    mapped = [a for a, d in zip(flat_args, flat_dims) if d is not None]
    roots = {id(a._base if a._base is not None else a) for a in mapped}
    captured = [t for t in _captured_tensors(func, kwargs, set())
                if id(t._base if t._base is not None else t) not in roots]
    return [(t, t._version) for t in {id(t): t for t in unmapped + captured}.values() if not t.is_inference()]


def _refuse_unmapped_changes(func: Callable, versions: list[tuple[Tensor, int]], flat_args: list) -> None:
    """Run once per example, an in-place change to an unmapped input or a captured tensor would be made once per
    example where PyTorch makes it once (or refuses it, when mapped values are written into it): refuse it instead
    of repeating it."""
    for tensor, version in versions:
        if tensor._version != version:
            name = _name(func)
            what = ("an input that is not mapped over (in_dims None)" if any(tensor is a for a in flat_args) else
                    "a tensor it captures (a closure, global, bound or keyword argument, a module's state) that is not "
                    "mapped over")
            raise RuntimeError(
                f"vmap({name}, ...): `{name}` modified in place {what}. "
                f"actorgrad's vmap runs the function once per example, so the change would be made once per "
                f"example; use out-of-place operators on that input, or map over it."
            )


def vmap(func: Callable, in_dims: int | tuple = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """`func` mapped over the dimension `in_dims` of its inputs (an int for all, or a pytree of ints and Nones
    shaped as the positional arguments; None for an argument passed to every example whole), its outputs stacked
    at `out_dims`. Keyword arguments go to every example unmapped. `chunk_size` (how many examples PyTorch batches
    at once) is checked and accepted: here the examples run one at a time anyway."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        check_randomness(randomness)
        _check_out_dims(func, out_dims)
        size, flat_dims, flat_args, spec = _mapped_inputs(func, in_dims, args)
        start = default_generator.get_state() if randomness == "same" else None
        versions = _unmapped_versions(func, kwargs, flat_args, flat_dims) if size > 1 else []
        outputs = []
        for i in range(size):
            example = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_dims)]
            if start is not None:
                default_generator.set_state(start)
            if randomness == "error":
                with refusing_random():
                    outputs.append(func(*tree_unflatten(example, spec), **kwargs))
            else:
                outputs.append(func(*tree_unflatten(example, spec), **kwargs))
            if i == 0:
                _refuse_unmapped_changes(func, versions, flat_args)
        flattened = [tree_flatten(out) for out in outputs]
        output_spec = flattened[0][1]
        for _, other in flattened[1:]:
            if other != output_spec:
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` returned outputs of different structures "
                                 f"for different examples: {output_spec} and {other}")
        columns = [flat for flat, _ in flattened]
        dims = _flat_out_dims(func, out_dims, outputs[0], output_spec)
        joined = [_combine(func, [column[j] for column in columns], dim) for j, dim in enumerate(dims)]
        return tree_unflatten(joined, output_spec)

    return wrapper
