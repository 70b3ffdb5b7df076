"""The general eigendecomposition: `actorgrad.linalg.eig` and `eigvals`, complex outputs for real or complex
matrices, with PyTorch's gradient (linalg_eig_backward) and its check that the loss does not depend on the
eigenvectors' phases.

numpy's eig returns real arrays when every eigenvalue is real; PyTorch always returns complex ones, so the results
are cast. On CUDA it runs CuPy's eig (CuPy 14's, on cuSOLVER's geev). As for the SVD and eigh, the rule takes the
factors its node saved, which a backward with create_graph=True gets as that node's outputs: a second backward
differentiates through the eigenvalues and eigenvectors both.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.linalg_decompositions import _mH, square_matrices
from actorgrad.ops.linalg_outputs import SavedFactors, record_outputs
from actorgrad.ops.linalg_spectral import (
    _diag_embed,
    _diagonal,
    _gaps,
    _i_imag,
    _row,
    check_phase_invariant,
)
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__: list[str] = []

EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])

EIG_PHASE = ("linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication by "
             "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")


def _eig_grad(ops: Any, g: tuple, self: Any, factors: SavedFactors) -> Any:
    """PyTorch's linalg_eig_backward: gA = V^-H (diag(gL) + offdiag((V^H gV - V^H V diag(Re diag(V^H gV))) / E*))
    V^H, E*_ij = conj(L_j - L_i); a real A takes its real part (the cast of every complex-to-real gradient)."""
    gL, gV = g
    values, vectors = factors.like(self)
    vectors_h = _mH(ops, vectors)
    inner = None if gL is None else _diag_embed(ops, gL)
    if gV is not None:
        VhgV = vectors_h @ gV
        diagonal = _diagonal(ops, VhgV)
        check_phase_invariant(EIG_PHASE, _i_imag(ops, diagonal))
        real_diagonal = diagonal - _i_imag(ops, diagonal)
        VhgV = VhgV - vectors_h @ (vectors * _row(ops, real_diagonal))
        off = VhgV / _gaps(ops, ops.conj(values))
        off = off - off * ops.eye(off.shape[-1], off)
        inner = off if inner is None else inner + off
    return ops.solve(vectors_h, inner @ vectors_h)


EIG = Rule("LinalgEigBackward0", (("self", "factors"), _eig_grad))


def _eig_arrays(xp: Any, x: Any, *, vectors: bool) -> Any:
    """eig (or eigvals) of a batch of square matrices on `xp`, complex whatever numpy returns."""
    if not hasattr(xp.linalg, "eig"):
        raise NotImplementedError("linalg.eig: this CuPy has no cupy.linalg.eig (CuPy 14 or later has it); move the "
                                  "tensor to the CPU with .cpu() for its eigendecomposition")
    complex_dtype = np.result_type(x.dtype, np.complex64)
    if vectors:
        values, vecs = xp.linalg.eig(x)
        return values.astype(complex_dtype, copy=False), vecs.astype(complex_dtype, copy=False)
    return xp.linalg.eigvals(x).astype(complex_dtype, copy=False)


def _check(op: str, A: Tensor) -> Any:
    """A's array after PyTorch's checks: square matrices, floating or complex, finite."""
    x = square_matrices(op, A)
    if x.dtype == np.float16:
        raise NotImplementedError("\"linalg_eig_out_cpu\" not implemented for 'Half'")
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"Unknown Complex ScalarType for {SCALAR_NAMES[x.dtype]}")
    if not bool(A._device.xp.isfinite(x).all()):
        raise RuntimeError(f"torch.{op}: input tensor should not contain infs or NaNs.")
    return x


def eig(A: Tensor) -> EigResult:
    """The eigenvalues and eigenvectors (unit columns) of each square matrix, complex as in PyTorch; they are not
    unique (each eigenvector's phase), so a loss must not depend on the phases to be differentiated."""
    require_tensors("linalg_eig", input=A)
    x = _check("linalg.eig", A)
    return EigResult(*record_outputs(EIG, _eig_arrays(A._device.xp, x, vectors=True), (A,), save_outputs=True))


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of each square matrix, complex."""
    require_tensors("linalg_eigvals", input=A)
    if A.requires_grad and _grad_enabled.get():
        return eig(A).eigenvalues  # as PyTorch's: output 0 of eig's node (whose backward needs V), eig's errors
    x = _check("linalg.eigvals", A)
    return record(EIG, _eig_arrays(A._device.xp, x, vectors=False), (A,))

