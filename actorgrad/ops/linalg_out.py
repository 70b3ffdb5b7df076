"""The rules of `out=` for the matrix products, `actorgrad.linalg` and `actorgrad.fft` (`actorgrad.mm(a, b, out=c)`).

`actorgrad.ops.out_arguments` writes `out` for these as for the elementwise ops: the op runs as it would without
`out` and its result is written into `out`, resized to the result's shape first (with PyTorch's deprecation warning
when `out` had elements); no autograd through `out=`. Which dtypes `out` may have is each kernel's own rule, in its
own words: most take only the result's dtype, some any dtype the result casts to within or up its category, the
transforms a complex (or, for the real inverse ones, a real floating) `out`. Tensor methods and operators take no
`out`, so `a @ b` and `a.mm(b)` pay nothing; a public name pays one `is None` test in the call frame that checks
its tensor arguments. The decompositions and solves that return several tensors take a tuple of them
(`linalg.qr(A, out=(Q, R))`), each with its own rule.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.out_arguments import CASTABLE, EXPECTED, Check, Outputs, castable_dtype, exact_dtype

__all__: list[str] = []


def _kind(kinds: str, template: str) -> Check:
    """A transform's `out`: complex ('c') or real floating ('f'), any precision."""
    def check(op: str, result: Any, out: Any, operands: tuple) -> str | None:
        return None if out.kind in kinds else template.format(o=SCALAR_NAMES[out])

    return check


TENSORDOT = exact_dtype(
    "tensordot: Expected the output tensor to have dtype {r}, but got an output tensor with dtype {o}"
)
MULTI_DOT = exact_dtype("multi_dot(): expected out tensor to have dtype {cr} but got {co}")


def _safely(op: str, what: str = "result") -> Check:
    return castable_dtype(
        f"{op}: Expected {what} to be safely castable from {{r}} dtype, but got {what} with dtype {{o}}"
    )


def _either(first: Check, second: Check) -> Check:
    """`first`'s refusal, else `second`'s."""
    return lambda *arguments: first(*arguments) or second(*arguments)


def _any_dtype(op: str, result: Any, out: Any, operands: tuple) -> None:
    """lstsq's rank and singular values, which PyTorch writes into an `out` of any dtype."""


def _expected(count: int, autograd_name: str = "") -> Outputs:
    """`count` outputs each in its result's dtype; `autograd_name` as Outputs'."""
    return Outputs((EXPECTED,) * count, autograd_name)


# Each public name's rule for `out`, per namespace.
PRODUCTS: dict[str, Check | Outputs] = {
    **dict.fromkeys(("matmul", "mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "cross", "inverse", "tril", "triu"),
                    EXPECTED),
    **dict.fromkeys(("outer", "ger", "addr", "kron"), CASTABLE),
    **dict.fromkeys(("dot", "vdot"), exact_dtype("result dtype {o} does not match input dtype {r}")),
    **dict.fromkeys(("inner", "tensordot"), TENSORDOT),
    "addbmm": exact_dtype("self and mat2 must have the same dtype, but got {o} and {r}"),
    "chain_matmul": MULTI_DOT,
    "cholesky": _safely("cholesky"),
    "cholesky_solve": _safely("cholesky_solve"),
    "cholesky_inverse": _safely("cholesky_inverse"),
    "slogdet": _expected(2, "_linalg_slogdet"),
    "qr": _expected(2, "linalg_qr"),
    "svd": _expected(3, "_linalg_svd"),
    "geqrf": Outputs((_safely("torch.geqrf", "a"), _safely("torch.geqrf", "tau"))),
    "triangular_solve": _expected(2),
    "lu_unpack": _expected(3),
}
LINALG: dict[str, Check | Outputs] = {
    **dict.fromkeys(("matmul", "cross", "inv", "det", "solve", "vector_norm", "svdvals", "eigvalsh",
                     "cholesky", "lu_solve"), EXPECTED),
    **{name: _safely(name) for name in ("tensorinv", "tensorsolve")},
    **{name: _safely(f"linalg.{name}") for name in ("pinv", "cond")},
    **{name: exact_dtype(f"linalg.{name} expected out tensor dtype {{r}} but got: {{o}}")
       for name in ("matrix_norm", "norm")},
    "householder_product": _safely("torch.linalg.householder_product"),
    "eigvals": _safely("torch.linalg.eigvals", "eigenvalues"),
    "vecdot": exact_dtype("linalg.vecdot: Expected out of dtype{r} but found {o}"),
    "multi_dot": MULTI_DOT,
    "solve_triangular": exact_dtype("expected scalar type {r} but found {o}"),
    "matrix_rank": _safely("torch.linalg.matrix_rank"),
    "matrix_power": _either(_safely("matrix_power"), EXPECTED),
    # the decompositions and solves that return several tensors
    "eigh": _expected(2, "_linalg_eigh"),
    "eig": Outputs((_safely("torch.linalg.eig", "eigenvalues"), _safely("torch.linalg.eig", "eigenvectors"))),
    "svd": _expected(3, "_linalg_svd"),
    "qr": _expected(2),
    "slogdet": _expected(2, "_linalg_slogdet"),
    "lu_factor": _expected(2, "linalg_lu_factor_ex"),
    "lu_factor_ex": _expected(3),
    "lu": _expected(3),
    "lstsq": Outputs((_safely("torch.linalg.lstsq", "solution"), _safely("torch.linalg.lstsq", "residuals"),
                      _any_dtype, _any_dtype)),
    "inv_ex": _expected(2),
    "cholesky_ex": _expected(2),
    "solve_ex": _expected(2, "_linalg_solve_ex"),
}
_COMPLEX_OUT = ("fft", "ifft", "rfft", "ihfft", "fftn", "ifftn", "rfftn", "ihfftn")
_REAL_OUT = ("irfft", "hfft", "irfftn", "hfftn")
# PyTorch names the n-d kernel for a 2-d transform.
FFT: dict[str, Check] = {
    **{name: _kind("c", f"{name} expects a complex output tensor, but got {{o}}") for name in _COMPLEX_OUT},
    **{name: _kind("f", f"{name} expects a floating point output tensor, but got {{o}}") for name in _REAL_OUT},
}
FFT.update({name[:-1] + "2": FFT[name] for name in _COMPLEX_OUT + _REAL_OUT if name.endswith("n")})
