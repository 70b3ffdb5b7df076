"""einsum's equation, read as PyTorch reads it: '...' spans the dims no letter names (right-aligned and broadcast
across operands), a letter repeated within an operand takes its diagonal, an omitted output lists the ellipsis
dims then the letters seen once in ASCII order, and the sublist form (operand, [0, 1, ...], ...) names labels by
number. The result is one plain letter per dim, which contraction's einsum then contracts."""

from __future__ import annotations

import string
from typing import Any

__all__ = ["equation_from_sublists", "operand_labels", "output_labels"]

LETTERS = string.ascii_uppercase + string.ascii_lowercase  # PyTorch's sublist numbers 0..51, in this order


def equation_from_sublists(args: tuple) -> tuple[str, tuple]:
    """einsum(op0, sublist0, op1, sublist1, ..., [output sublist]) as an equation and its operands."""
    pairs, output = (args, None) if len(args) % 2 == 0 else (args[:-1], args[-1])
    equation = ",".join(_sublist_term(s) for s in pairs[1::2])
    if output is not None:
        equation += "->" + _sublist_term(output)
    return equation, tuple(pairs[0::2])


def _sublist_term(sublist: Any) -> str:
    labels = []
    for s in sublist:
        if s is Ellipsis:
            labels.append("...")
        elif not 0 <= s < len(LETTERS):
            raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        else:
            labels.append(LETTERS[s])
    return "".join(labels)


def _split_ellipsis(term: str, where: str) -> tuple[str, str] | None:
    """The letters before and after a term's one '...', or None without one; PyTorch's errors for stray dots."""
    if "." not in term:
        return None
    start = term.index(".")
    output = where == "output"
    if term[start:start + 3] != "...":
        raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis"
                           + (" (...)" if output else ""))
    rest = term[start + 3:]
    if "." in rest:
        raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found" if output else
                           f"einsum(): found '.' for {where} for which an ellipsis was already found")
    return term[:start], rest


def operand_labels(equation: str, shapes: list[tuple]) -> tuple[list[str], str, str | None]:
    """One letter per dim of each operand (an ellipsis's dims get fresh letters, right-aligned), the letters of
    the ellipsis's widest span, and the output term as written (None without '->')."""
    arrow = equation.find("->")
    for index, c in enumerate(equation):
        if not (c in string.ascii_letters or c in " ,." or arrow >= 0 and index in (arrow, arrow + 1)):
            raise RuntimeError(f"einsum(): invalid subscript given at index {index} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
    equation = equation.replace(" ", "")
    lhs, arrow, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        more = "more" if len(shapes) > len(terms) else "fewer"
        raise RuntimeError(f"einsum(): {more} operands were provided than specified in the equation")
    split = [_split_ellipsis(term, f"operand {k}") for k, term in enumerate(terms)]
    spans = []
    for k, (term, parts, shape) in enumerate(zip(terms, split, shapes)):
        named = len(term) if parts is None else len(parts[0]) + len(parts[1])
        if parts is None and named != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {k} and no ellipsis was given")
        if named > len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                               f"number of dimensions ({len(shape)}) for operand {k}")
        spans.append(len(shape) - named)
    width = max(spans, default=0)
    fresh = "".join(c for c in LETTERS if c not in equation)[:width]
    if len(fresh) < width:
        raise RuntimeError(f"einsum(): the ellipsis spans {width} dims but only {len(fresh)} letters are unused")
    labels = [term if parts is None else parts[0] + fresh[width - span:] + parts[1]
              for term, parts, span in zip(terms, split, spans)]
    return labels, fresh, (out if arrow else None)


def output_labels(out: str | None, terms: list[str], ellipsis: str) -> str:
    """The output's letters: as written (its '...' the ellipsis's letters), or, with no '->', the ellipsis's then
    the letters that occur once in the equation, in ASCII order (capitals first), as PyTorch orders them."""
    seen = "".join(terms)
    if out is None:
        return ellipsis + "".join(sorted(c for c in set(seen) if c not in ellipsis and seen.count(c) == 1))
    parts = _split_ellipsis(out, "output")
    letters = out if parts is None else parts[0] + parts[1]
    for c in letters:
        if letters.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        if c not in seen:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                               "operand")
    return letters if parts is None else parts[0] + ellipsis + parts[1]
