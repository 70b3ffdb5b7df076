"""einsum with explicit or implicit subscripts, and its gradient: each operand's gradient is itself an einsum of
the output's gradient and the other operands, so a recorded backward differentiates again.

Repeated subscripts within one operand (diagonals) and '...' are refused with a clear error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.linalg import MACS_PER_NS
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor

__all__ = ["einsum"]


def _operand_grad(k: int) -> Any:
    def formula(ops: Any, g: Any, spec: tuple, *others: Any) -> Any:
        subs, out, shapes = spec
        rest = [s for j, s in enumerate(subs) if j != k]
        target = subs[k]
        present = set(out).union(*rest)
        kept = "".join(c for c in target if c in present)
        grad = ops.einsum(f"{','.join([out, *rest])}->{kept}", g, *others)
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


def _parse(equation: str, arrays: list[np.ndarray]) -> tuple[list[str], str, dict[str, int]]:
    """The operands' subscripts, the output's, and each letter's size."""
    equation = equation.replace(" ", "")
    if "." in equation:
        raise RuntimeError("einsum(): '...' (ellipsis) is not supported by actorgrad; name every dimension")
    lhs, arrow, out = equation.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(arrays):
        more = "more" if len(arrays) > len(subs) else "fewer"
        raise RuntimeError(f"einsum(): {more} operands were provided than specified in the equation")
    sizes: dict[str, int] = {}
    for k, (s, a) in enumerate(zip(subs, arrays)):
        if not all(c.isalpha() for c in s):
            raise RuntimeError(f"einsum(): invalid subscript given in the equation for operand {k}: '{s}'")
        if len(s) != a.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({a.ndim}) for operand {k} and no ellipsis was given")
        if len(set(s)) != len(s):
            letter = next(c for c in s if s.count(c) > 1)
            raise RuntimeError(f"einsum(): subscript '{letter}' is repeated in operand {k}; diagonals are not "
                               f"supported by actorgrad")
        for c, n in zip(s, a.shape):
            if sizes.setdefault(c, n) != n:
                raise RuntimeError(f"einsum(): subscript '{c}' has size {n} for operand {k} but size {sizes[c]} "
                                   f"for an earlier operand")
    if not arrow:
        out = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    elif len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise RuntimeError(f"einsum(): output subscripts '{out}' must be distinct letters of the inputs")
    return subs, out, sizes


def einsum(equation: str, *operands: Any) -> Tensor:
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    common_device(operands)  # PyTorch's error for operands on two devices, before a kernel mixes them
    arrays = [t._data for t in operands]
    subs, out, sizes = _parse(equation, arrays)
    data = np.einsum(f"{','.join(subs)}->{out}", *arrays, optimize=len(arrays) > 2)
    spec = (tuple(subs), out, tuple(a.shape for a in arrays))
    saved = {f"operand{k}": t for k, t in enumerate(operands)}
    return record(_rule(len(operands)), data, tuple(operands), spec=spec, macs=int(np.prod(list(sizes.values()))),
                  **saved)


METHODS: dict[str, Any] = {}
