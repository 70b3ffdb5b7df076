"""einsum with explicit or implicit subscripts, the sublist form, and its gradient rules: operand k's gradient is
itself an einsum of the output's gradient with the other operands, so a recorded backward differentiates again.

einsum reads its equation as PyTorch does (`einsum_labels.py`): ellipses, diagonals and size-1 broadcasting become
views of the operands before one contraction. The other contractions live in `contraction.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.contraction import _dtype_name
from actorgrad.ops.diagonals import diagonal
from actorgrad.ops.einsum_labels import equation_from_sublists, operand_labels, output_labels
from actorgrad.ops.linalg import MACS_PER_NS
from actorgrad.ops.operands import promote_types, require_tensor_elements
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.shape import expand, to_dtype
from actorgrad.tensor import Tensor

__all__ = ["einsum"]


def _operand_grad(k: int) -> Any:
    def formula(ops: Any, g: Any, spec: tuple, *others: Any) -> Any:
        subs, out, shapes = spec
        rest = [s for j, s in enumerate(subs) if j != k]
        target = subs[k]
        present = set(out).union(*rest)
        kept = "".join(c for c in target if c in present)
        grad = ops.einsum(f"{','.join([out, *rest])}->{kept}", g, *(ops.conj(x) for x in others))
        if kept != target:  # letters summed within operand k alone: its gradient is constant along them
            shape = tuple(n if c in present else 1 for c, n in zip(target, shapes[k]))
            grad = ops.broadcast_to(ops.reshape(grad, shape), shapes[k])
        return grad

    return formula


def _cost(data: Any, params: dict) -> float:
    return len(params["spec"][0]) * params["macs"] / MACS_PER_NS


_RULES: dict[int, Rule] = {}


def _rule(count: int) -> Rule:
    """One rule per number of operands: operand k's formula reads every other operand."""
    if count not in _RULES:
        grads = [(("spec", *(f"operand{j}" for j in range(count) if j != k)), _operand_grad(k)) for k in range(count)]
        _RULES[count] = Rule("EinsumBackward0", *grads, cost=_cost, multithreaded=True)
    return _RULES[count]


def _take_diagonals(k: int, operand: Tensor, term: str) -> tuple[Tensor, str]:
    """A letter repeated within operand k names its diagonal: taken (as a view, last) until each letter is once."""
    while len(set(term)) != len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        if operand.shape[first] != operand.shape[second]:
            raise RuntimeError(f"einsum(): subscript {letter} is repeated for operand {k} but the sizes don't match, "
                               f"{operand.shape[second]} != {operand.shape[first]}")
        operand = diagonal(operand, 0, first, second)
        term = term[:first] + term[first + 1:second] + term[second + 1:] + letter
    return operand, term


def _broadcast_sizes(operands: list[Tensor], terms: list[str], ellipsis: str) -> dict[str, int]:
    """Each letter's size; a size-1 dim broadcasts against the others (expanded here), as in PyTorch."""
    sizes: dict[str, int] = {}
    for k, (t, term) in enumerate(zip(operands, terms)):
        for c, n in zip(term, t.shape):
            seen = sizes.setdefault(c, n)
            if seen == 1:
                sizes[c] = n
            elif n not in (1, seen):
                if c in ellipsis:
                    dim = ellipsis.index(c)
                    raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {k}has size {n} "
                                       f"which does not broadcast with previously seen ellipsis with size {seen} "
                                       "for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {seen}")
    for k, (t, term) in enumerate(zip(operands, terms)):
        shape = tuple(sizes[c] for c in term)
        if shape != t.shape:
            operands[k] = expand(t, shape)
    return sizes


def _integer_operands(arrays: list, terms: list[str], out: str) -> list:
    """PyTorch's einsum sums one operand's own letters with sum (integers and booleans summed in int64) and
    contracts shared ones with bmm (which refuses booleans)."""
    summed = set("".join(terms)) - set(out)
    if len(terms) > 1 and arrays[0].dtype.kind == "b" and any(sum(c in t for t in terms) > 1 for c in summed):
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return [arrays[0].astype(np.int64)] if len(terms) == 1 and summed else arrays


def _common_dtype(operands: list[Tensor], terms: list[str], out: str) -> np.dtype:
    """The dtype einsum computes in: PyTorch contracts two operands with bmm, which takes one dtype, but multiplies
    them (promoting) when no letter is summed over both (a size-1 dim is summed in its operand alone)."""
    first = operands[0]
    mixed = next((t for t in operands if t.dtype != first.dtype), None)
    if mixed is None:
        return first.dtype
    if len(operands) == 2:
        sizes = [dict(zip(term, t.shape)) for term, t in zip(terms, operands)]
        shared = set(terms[0]) & set(terms[1]) - set(out)
        if all(1 in (sizes[0][c], sizes[1][c]) for c in shared):
            return promote_types(first.dtype, mixed.dtype)
    raise RuntimeError(f"expected scalar type {_dtype_name(first)} but found {_dtype_name(mixed)}")


def einsum(*args: Any) -> Tensor:
    """einsum(equation, *operands), einsum(equation, [operands]) or the sublist form (op0, [0, 1], op1, ...)."""
    if autocast_state.get() is not None:
        return autocast_call(einsum, "einsum", *args)
    if args and isinstance(args[0], Tensor):
        equation, operands = equation_from_sublists(args)
    else:
        equation, *operands = args
        if len(operands) == 1 and isinstance(operands[0], list | tuple):
            operands = list(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    require_tensor_elements(operands, 1)
    common_device(operands)  # PyTorch's error for operands on two devices, before a kernel mixes them
    terms, ellipsis, written = operand_labels(equation, [t.shape for t in operands])
    out = output_labels(written, terms, ellipsis)
    dtype = _common_dtype(operands, terms, out)
    operands = [t if t.dtype == dtype else to_dtype(t, dtype) for t in operands]
    for k, (t, term) in enumerate(zip(operands, terms)):
        operands[k], terms[k] = _take_diagonals(k, t, term)
    sizes = _broadcast_sizes(operands, terms, ellipsis)
    arrays = [t._data for t in operands]
    if dtype.kind in "biu":
        arrays = _integer_operands(arrays, terms, out)
    data = operands[0]._device.xp.einsum(f"{','.join(terms)}->{out}", *arrays, optimize=len(arrays) > 2)
    spec = (tuple(terms), out, tuple(a.shape for a in arrays))
    saved = {f"operand{k}": t for k, t in enumerate(operands)}
    return record(_rule(len(operands)), data, tuple(operands), spec=spec, macs=int(np.prod(list(sizes.values()))),
                  **saved)


METHODS: dict[str, Any] = {}
