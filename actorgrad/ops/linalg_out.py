"""`out=` for the matrix products, `actorgrad.linalg` and `actorgrad.fft` (`actorgrad.mm(a, b, out=c)`), as PyTorch's.

As with the elementwise ops' `out=` (`actorgrad.ops.out_arguments`), the op runs as it would without `out` and its
result is written into `out`, resized to the result's shape first (with PyTorch's deprecation warning when `out`
had elements); no autograd through `out=`. Which dtypes `out` may have is each kernel's own rule, in its own words:
most take only the result's dtype, some any dtype the result casts to within or up its category, the transforms a
complex (or, for the real inverse ones, a real floating) `out`. Tensor methods and operators take no `out`, so
`a @ b` and `a.mm(b)` pay nothing; a public name pays one `is None` test in the call frame that checks its tensor
arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.ops.operands import SCALAR_NAMES, category
from actorgrad.ops.out_arguments import check_out, store_out
from actorgrad.ops.public_names import give_out as out_for_public_names
from actorgrad.tensor import Tensor

__all__: list[str] = []

Check = Callable[[Any, Any], "str | None"]


def _same(template: str) -> Check:
    """Only the result's dtype: `template` names the dtypes with `{r}`/`{o}` (PyTorch's Double...) or `{cr}`/`{co}`
    (the C++ names: double ...)."""
    def check(result: Any, out: Any) -> str | None:
        if out == result:
            return None
        return template.format(r=SCALAR_NAMES[result], o=SCALAR_NAMES[out], cr=TYPE_META_NAMES[result],
                               co=TYPE_META_NAMES[out])

    return check


def _castable(template: str) -> Check:
    """Any dtype the result casts to within or up its category (bool < integer < floating < complex)."""
    def check(result: Any, out: Any) -> str | None:
        if category(result) <= category(out):
            return None
        return template.format(r=SCALAR_NAMES[result], o=SCALAR_NAMES[out])

    return check


def _kind(kinds: str, template: str) -> Check:
    """A transform's `out`: complex ('c') or real floating ('f'), any precision."""
    def check(result: Any, out: Any) -> str | None:
        return None if out.kind in kinds else template.format(o=SCALAR_NAMES[out])

    return check


EXPECTED = _same("Expected out tensor to have dtype {cr}, but got {co} instead")
ITERATOR = _castable("result type {r} can't be cast to the desired output type {o}")
TENSORDOT = _same("tensordot: Expected the output tensor to have dtype {r}, but got an output tensor with dtype {o}")
MULTI_DOT = _same("multi_dot(): expected out tensor to have dtype {cr} but got {co}")


def _safely(op: str, what: str = "result") -> Check:
    return _castable(f"{op}: Expected {what} to be safely castable from {{r}} dtype, but got {what} with dtype {{o}}")


def _either(first: Check, second: Check) -> Check:
    """`first`'s refusal, else `second`'s."""
    return lambda result, out: first(result, out) or second(result, out)


# Each public name's rule for `out`, per namespace.
PRODUCTS: dict[str, Check] = {
    **dict.fromkeys(("matmul", "mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "cross", "inverse", "tril", "triu"),
                    EXPECTED),
    **dict.fromkeys(("outer", "ger", "addr", "kron"), ITERATOR),
    **dict.fromkeys(("dot", "vdot"), _same("result dtype {o} does not match input dtype {r}")),
    **dict.fromkeys(("inner", "tensordot"), TENSORDOT),
    "addbmm": _same("self and mat2 must have the same dtype, but got {o} and {r}"),
    "chain_matmul": MULTI_DOT,
    "cholesky": _safely("cholesky"),
    "cholesky_solve": _safely("cholesky_solve"),
    "cholesky_inverse": _safely("cholesky_inverse"),
}
LINALG: dict[str, Check] = {
    **dict.fromkeys(("matmul", "cross", "inv", "det", "solve", "vector_norm", "svdvals", "eigvalsh",
                     "cholesky", "lu_solve"), EXPECTED),
    **{name: _safely(name) for name in ("tensorinv", "tensorsolve")},
    **{name: _safely(f"linalg.{name}") for name in ("pinv", "cond")},
    **{name: _same(f"linalg.{name} expected out tensor dtype {{r}} but got: {{o}}")
       for name in ("matrix_norm", "norm")},
    "householder_product": _safely("torch.linalg.householder_product"),
    "eigvals": _safely("torch.linalg.eigvals", "eigenvalues"),
    "vecdot": _same("linalg.vecdot: Expected out of dtype{r} but found {o}"),
    "multi_dot": MULTI_DOT,
    "solve_triangular": _same("expected scalar type {r} but found {o}"),
    "matrix_rank": _safely("torch.linalg.matrix_rank"),
    "matrix_power": _either(_safely("matrix_power"), EXPECTED),
}
_COMPLEX_OUT = ("fft", "ifft", "rfft", "ihfft", "fftn", "ifftn", "rfftn", "ihfftn")
_REAL_OUT = ("irfft", "hfft", "irfftn", "hfftn")
# PyTorch names the n-d kernel for a 2-d transform.
FFT: dict[str, Check] = {
    **{name: _kind("c", f"{name} expects a complex output tensor, but got {{o}}") for name in _COMPLEX_OUT},
    **{name: _kind("f", f"{name} expects a floating point output tensor, but got {{o}}") for name in _REAL_OUT},
}
FFT.update({name[:-1] + "2": FFT[name] for name in _COMPLEX_OUT + _REAL_OUT if name.endswith("n")})


# PyTorch's name for each op given `out=` here (`linalg_inv`) -> its kernel's rule for `out`'s dtype
_CHECKS: dict[str, Check] = {}


def write_out(op: str, fn: Callable[..., Tensor], args: tuple, kwargs: dict, out: Any) -> Tensor:
    """`fn(*args, **kwargs)` written into `out`, with PyTorch's refusals; returns `out`."""
    operands = (*args, *kwargs.values())
    check_out(op, out, tuple(v for operand in operands  # multi_dot's tensors come as a list
                             for v in (operand if isinstance(operand, list | tuple) else (operand,))))
    result = fn(*args, **kwargs)
    refusal = _CHECKS[op](result.dtype, out.dtype)
    if refusal is not None:
        raise RuntimeError(refusal)
    return store_out(result, out)


def give_out(namespace: dict, rules: dict[str, Check], prefix: str = "") -> None:
    """Give each name of `rules` in `namespace` (a module's public names) PyTorch's `out=`, checked by its rule;
    `prefix` is the one PyTorch puts before the name in its errors (linalg_inv())."""
    _CHECKS.update({prefix + name: check for name, check in rules.items()})
    out_for_public_names(namespace, rules, write_out, prefix)
