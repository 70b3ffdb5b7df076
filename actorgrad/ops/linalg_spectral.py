"""Singular value, symmetric eigenvalue and QR decompositions, the pseudo-inverse and the numerical rank, with
PyTorch's gradient rules (`actorgrad.linalg.svd`, `svdvals`, `eigh`, `eigvalsh`, `qr`, `pinv`, `matrix_rank`).

A decomposition's outputs are the outputs of one node, as in PyTorch: its rule takes the tuple of their gradients,
None for one that got none, as PyTorch's formulas take undefined ones. The SVD's and eigh's rules take the factors
their node saved (as PyTorch's), which a backward with `create_graph=True` gets as that node's outputs, so a second
backward differentiates through them, complex singular vectors and eigenvectors too; qr's rule refactors the saved
input with `ops.qr`. The gradients assume distinct singular values (eigenvalues), as PyTorch's do.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_decompositions import (
    LinAlgError,
    _mH,
    _mT,
    batch_prefix,
    check_floating,
    check_square,
    host_matrices,
    square_matrices,
)
from actorgrad.ops.linalg_outputs import SavedFactors, record_outputs
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__: list[str] = []

SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
QrResult = namedtuple("linalg_qr", ["Q", "R"])


def _column(ops: Any, x: Any) -> Any:
    return ops.reshape(x, x.shape + (1,))


def _row(ops: Any, x: Any) -> Any:
    return ops.reshape(x, x.shape[:-1] + (1,) + x.shape[-1:])


def _narrow_last(ops: Any, g: Any, k: int) -> Any:
    """g's first k columns (a full_matrices factor's gradient, as PyTorch narrows it)."""
    return g if g.shape[-1] == k else ops.index(g, (slice(None),) * (g.ndim - 1) + (slice(0, k),), None)


def _gaps(ops: Any, values: Any) -> Any:
    """E[i, j] = values[j] - values[i], with ones on the diagonal (where the skew parts it divides are zero)."""
    return _row(ops, values) - _column(ops, values) + ops.eye(values.shape[-1], values)


def _diag_embed(ops: Any, values: Any) -> Any:
    """The diagonal matrices with `values` on their diagonals."""
    return ops.eye(values.shape[-1], values) * _row(ops, values)


SVD_PHASE = ("svd_backward: The singular vectors in the complex case are specified up to multiplication by e^{i phi}. "
             "The specified loss function depends on this phase term, making it ill-defined.")
EIGH_PHASE = ("linalg_eigh_backward: The eigenvectors in the complex case are specified up to multiplication by "
              "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")


def _diagonal(ops: Any, x: Any) -> Any:
    """The diagonals of a batch of square matrices."""
    return ops.sum(x * ops.eye(x.shape[-1], x), (-1,))


def _i_imag(ops: Any, x: Any) -> Any:
    """i Im(x), from the conjugate (a real x gives zeros)."""
    return (x - ops.conj(x)) * 0.5


def check_phase_invariant(message: str, im_u: Any, im_v: Any = None) -> None:
    """PyTorch's check that a complex loss does not depend on the phases of singular vectors (eigenvectors): the
    imaginary parts of diag(U^H gU) and -diag(V^H gV) (or zero) must agree, to PyTorch's tolerance of 1e-2."""
    u = getattr(im_u, "_data", im_u)
    v = 0 * u if im_v is None else -getattr(im_v, "_data", im_v)
    if not bool((abs(u - v) <= 1e-2 + 1e-2 * abs(v)).all()):
        raise RuntimeError(message)


def _svd_grad(ops: Any, g: tuple, self: Any, factors: SavedFactors) -> Any:
    """PyTorch's linalg_svd_backward, skipping the factors that got no gradient, with U and Vh narrowed to the k
    singular values (full_matrices). For complex matrices the loss must not depend on the singular vectors' phases
    (checked), and the diagonal of U^H gU adds i Im(.) / S."""
    gU, gS, gVh = g
    u, s, vh = factors.like(self)
    m, n = self.shape[-2:]
    k = s.shape[-1]
    u, vh = _narrow_last(ops, u, k), _mT(ops, _narrow_last(ops, _mT(ops, vh), k))
    if gU is None and gVh is None:
        return u @ (_column(ops, gS) * vh) if m >= n else (u * _row(ops, gS)) @ vh
    gA = UhgU = VhgV = None
    if gU is not None:
        gU = _narrow_last(ops, gU, k)
        UhgU = _mH(ops, u) @ gU
        gA = (UhgU - _mH(ops, UhgU)) * _row(ops, s)
    if gVh is not None:
        gVh = _mT(ops, _narrow_last(ops, _mT(ops, gVh), k))
        VhgV = vh @ _mH(ops, gVh)
        skew = _column(ops, s) * (VhgV - _mH(ops, VhgV))
        gA = skew if gA is None else gA + skew
    gA = gA / _gaps(ops, s * s)
    if gS is not None:
        gA = gA + _diag_embed(ops, gS)
    if self.dtype.kind == "c":
        im_u = None if UhgU is None else _i_imag(ops, _diagonal(ops, UhgU))
        im_v = None if VhgV is None else _i_imag(ops, _diagonal(ops, VhgV))
        check_phase_invariant(SVD_PHASE, im_v if im_u is None else im_u, None if im_u is None else im_v)
        if im_u is not None:
            gA = gA + _diag_embed(ops, im_u / s)
    if m > n and gU is not None:
        gUSinv = gU / _row(ops, s)
        return (u @ gA + gUSinv - u @ (_mH(ops, u) @ gUSinv)) @ vh
    if m < n and gVh is not None:
        SinvgVh = gVh / _column(ops, s)
        return u @ (gA @ vh + SinvgVh - (SinvgVh @ _mH(ops, vh)) @ vh)
    return u @ (gA @ vh) if m >= n else (u @ gA) @ vh


SVD = Rule("LinalgSvdBackward0", (("self", "factors"), _svd_grad))


def converged(op: str, function: Any, x: Any, **kwargs: Any) -> Any:
    """function(x) (xp.linalg's svd, eigh or eigvalsh), with PyTorch's LinAlgError where it does not converge
    rather than numpy's."""
    try:
        return function(x, **kwargs)
    except np.linalg.LinAlgError:
        raise _not_converged(op, x) from None


def _not_converged(op: str, x: Any) -> LinAlgError:
    """PyTorch's error, naming the first matrix of a batch that holds a NaN; LAPACK's error code, which PyTorch
    adds where no NaN is to blame (and for eigh), is not known here."""
    host = host_matrices(x)
    with_nan = np.flatnonzero(np.isnan(host).any(axis=(-2, -1)))
    prefix = batch_prefix(x, int(with_nan[0])) if with_nan.size else ""
    if with_nan.size and op == "linalg.svd":
        return LinAlgError(f"{op}: {prefix}The algorithm failed to converge because the input matrix contained "
                           "non-finite values.")
    values = "singular values" if op == "linalg.svd" else "eigenvalues"
    return LinAlgError(f"{op}: {prefix}The algorithm failed to converge because the input matrix is ill-conditioned "
                       f"or has too many repeated {values}.")


def _check_matrices(op: str, A: Tensor) -> Any:
    x = A._data
    if x.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if x.dtype.kind != "c":
        check_floating(op, x)
    return x


def _check_driver(A: Tensor, driver: str | None) -> None:
    """PyTorch takes a cuSOLVER driver name for CUDA tensors only; the factors do not depend on it."""
    if driver is not None and A._device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SvdResult:
    """U, S, Vh with A = U diag(S) Vh, S descending (U and Vh square with `full_matrices`)."""
    check_flags("linalg_svd", full_matrices=full_matrices)
    require_tensors("linalg_svd", A=A)
    x = _check_matrices("linalg.svd", A)
    _check_driver(A, driver)
    outputs = converged("linalg.svd", A._device.xp.linalg.svd, x, full_matrices=full_matrices)
    return SvdResult(*record_outputs(SVD, outputs, (A,), save_outputs=True))


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of each matrix, descending."""
    require_tensors("linalg_svdvals", A=A)
    x = _check_matrices("linalg.svd", A)  # PyTorch's svdvals names the svd it calls
    _check_driver(A, driver)
    if A.requires_grad and _grad_enabled.get():  # as PyTorch: output 1 of the SVD's node, whose backward needs U, Vh
        return svd(A, full_matrices=False).S
    return record(SVD, converged("linalg.svd", A._device.xp.linalg.svd, x, compute_uv=False), (A,))


def _eigh_grad(ops: Any, g: tuple, self: Any, factors: SavedFactors) -> Any:
    """PyTorch's linalg_eig_backward (hermitian): V (skew(V^H gV) / 2 / E + diag(gL)) V^H; for complex matrices
    the loss must not depend on the eigenvectors' phases (checked)."""
    gL, gV = g
    values, vectors = factors.like(self)
    if gV is None:
        return vectors @ (_column(ops, gL) * _mH(ops, vectors))
    VhgV = _mH(ops, vectors) @ gV
    if self.dtype.kind == "c":
        check_phase_invariant(EIGH_PHASE, _i_imag(ops, _diagonal(ops, VhgV)))
    inner = (VhgV - _mH(ops, VhgV)) * 0.5 / _gaps(ops, values)
    if gL is not None:
        inner = inner + _diag_embed(ops, gL)
    return vectors @ inner @ _mH(ops, vectors)


EIGH = Rule("LinalgEighBackward0", (("self", "factors"), _eigh_grad))


def _check_uplo(UPLO: str) -> str:
    """'L' or 'U', either case as PyTorch takes it."""
    if UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def _eigh_input(A: Tensor) -> Any:
    """The array of a batch of square float32/64 or complex matrices, with PyTorch's errors (its kernel's name for
    other dtypes); eigvalsh checks under eigh's name, as PyTorch's."""
    x = square_matrices("linalg.eigh", A)
    if x.dtype.kind not in "fc" or x.dtype == np.float16:
        raise NotImplementedError(f"\"linalg_eigh_{A._device.type}\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return x


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """The ascending eigenvalues and orthonormal eigenvectors of each symmetric matrix; only the triangle UPLO
    names is read."""
    require_tensors("linalg_eigh", input=A)
    x = _eigh_input(A)
    uplo = _check_uplo(UPLO)
    outputs = converged("linalg.eigh", A._device.xp.linalg.eigh, x, UPLO=uplo)
    return EighResult(*record_outputs(EIGH, outputs, (A,), save_outputs=True))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The ascending eigenvalues of each symmetric matrix."""
    require_tensors("linalg_eigvalsh", input=A)
    x = _eigh_input(A)
    uplo = _check_uplo(UPLO)
    if A.requires_grad and _grad_enabled.get():  # as PyTorch: output 0 of eigh's node, whose backward needs V
        return eigh(A, uplo).eigenvalues
    return record(EIGH, converged("linalg.eigh", A._device.xp.linalg.eigvalsh, x, UPLO=uplo), (A,))


def _copyltu(ops: Any, M: Any) -> Any:
    """The Hermitian matrix with M's strict lower triangle and the real part of its diagonal (the symmetric one
    with M's lower triangle, for a real M): half of T + T^H, T = tril(M) + tril(M, -1)."""
    twice_lower = ops.tril(M, 0) + ops.tril(M, -1)
    return (twice_lower + _mH(ops, twice_lower)) * 0.5


def _qr_square_grad(ops: Any, q: Any, r: Any, gQ: Any, gR: Any) -> Any:
    """For m >= n (A = Q R, R invertible): (gQ + Q copyltu(M)) R^-H with M = R gR^H - gQ^H Q."""
    M = (r @ _mH(ops, gR) if gR is not None else 0) - (_mH(ops, gQ) @ q if gQ is not None else 0)
    b = q @ _copyltu(ops, M)
    if gQ is not None:
        b = b + gQ
    return _mH(ops, ops.solve(r, _mH(ops, b)))


def _qr_grad(ops: Any, self: Any, mode: str, gQ: Any, gR: Any) -> Any:
    m, n = self.shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    q, r = ops.qr(self)
    if m >= n:
        return _qr_square_grad(ops, q, r, gQ, gR)
    # A = [X | Y] with X = Q R1 square and Y = Q R2: Y only moves R2, and X also sees Y through Q.
    columns = (slice(None),) * (self.ndim - 2)
    r1 = ops.index(r, columns + (slice(None), slice(0, m)), None)
    y = ops.index(self, columns + (slice(None), slice(m, n)), None)
    gR1 = None if gR is None else ops.index(gR, columns + (slice(None), slice(0, m)), None)
    gR2 = None if gR is None else ops.index(gR, columns + (slice(None), slice(m, n)), None)
    gQx = gQ if gR2 is None else (y @ _mH(ops, gR2) if gQ is None else gQ + y @ _mH(ops, gR2))
    gX = _qr_square_grad(ops, q, r1, gQx, gR1)
    gY = ops.zeros_like(y) if gR2 is None else q @ gR2
    return ops.concatenate((gX, gY), -1)


QR = Rule("LinalgQrBackward0", (("self", "mode"), lambda ops, g, self, mode: _qr_grad(ops, self, mode, *g)))


def qr(A: Tensor, mode: str = "reduced") -> QrResult:
    """Q with orthonormal columns and upper-triangular R, A = Q R ('complete': Q square; 'r': R only, Q empty)."""
    require_tensors("linalg_qr", A=A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    x = _check_matrices("linalg.qr", A)
    xp = A._device.xp
    q, r = xp.linalg.qr(x, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = xp.empty((0,), x.dtype)
    return QrResult(*record_outputs(QR, (q, r), (A,), mode=mode))


def _pinv_grad(ops: Any, g: Any, self: Any, result: Any) -> Any:
    """PyTorch's pinv_backward, in the products of the smaller dimension."""
    m, n = self.shape[-2:]
    pinvAh, gh = _mH(ops, result), _mH(ops, g)
    if m <= n:
        K = gh @ result
        KpinvAh = K @ pinvAh
        return -_mH(ops, result @ K) + KpinvAh - (self @ result) @ KpinvAh + (pinvAh @ result) @ (gh - K @ self)
    K = result @ gh
    pinvAhK = pinvAh @ K
    return -_mH(ops, K @ result) + (gh - self @ K) @ result @ pinvAh + pinvAhK - pinvAhK @ result @ self


PINV = Rule("LinalgPinvBackward0", (("self", "result"), _pinv_grad))


def _tolerance(xp: Any, x: Any, s: Any, atol: Any, rtol: Any) -> Any:
    """max(atol, rtol * the largest of `s` (singular values or absolute eigenvalues)) per matrix, rtol defaulting
    to eps * max(m, n) where atol is not above 0, as PyTorch. Either may be a tensor, one value per matrix of the
    batch (broadcasting against the batch dims)."""
    atol, rtol = (t._data if isinstance(t, Tensor) else t for t in (atol, rtol))
    if rtol is None:
        default = np.finfo(x.dtype).eps * max(x.shape[-2:])
        rtol = default if atol is None else xp.where(xp.asarray(atol) > 0, 0.0, default)
    largest = s.max(-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
    atol, rtol = (xp.asarray(0.0 if t is None else t, dtype=s.dtype)[..., None] for t in (atol, rtol))
    return xp.maximum(atol, rtol * largest)


def _deprecated_tolerance(op: str, name: str, value: Any, atol: Any, rtol: Any) -> tuple[Any, Any]:
    """PyTorch's older positional tolerance: pinv's rcond is an rtol, matrix_rank's tol an atol (the other 0)."""
    if value is None:
        return atol, rtol
    if atol is not None or rtol is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: {name} with atol or rtol; pass "
                        "atol and rtol alone")
    return (0.0, value) if name == "rcond" else (value, 0.0)


def _reciprocals_above(xp: Any, values: Any, magnitudes: Any, tolerance: Any) -> Any:
    """1 / values where their magnitudes are above the tolerance, else 0 (treated as zero values)."""
    kept = magnitudes > tolerance
    return xp.where(kept, 1 / xp.where(kept, values, 1), 0).astype(values.dtype, copy=False)


def pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: Any = None, rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse: singular values at or below the tolerance count as zero. With `hermitian`
    it comes from the eigendecomposition of the symmetric matrix A's lower triangle gives (absolute eigenvalues
    for singular values), as PyTorch's; its gradient is the general one either way, as PyTorch's."""
    check_flags("linalg_pinv", hermitian=hermitian)
    atol, rtol = _deprecated_tolerance("linalg_pinv", "rcond", rcond, atol, rtol)
    x = A._data
    if x.ndim < 2 or x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise RuntimeError(f"linalg.pinv({SCALAR_NAMES[x.dtype]}{{{list(x.shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    xp = A._device.xp
    if hermitian:
        check_square("linalg.eigh", A, complex_ok=True)
        values, vectors = converged("linalg.eigh", xp.linalg.eigh, x)
        magnitudes = xp.abs(values)
        inverse = _reciprocals_above(xp, values, magnitudes, _tolerance(xp, x, magnitudes, atol, rtol))
        return record(PINV, (vectors * inverse[..., None, :]) @ xp.swapaxes(vectors, -1, -2).conj(), (A,))
    u, s, vh = converged("linalg.svd", xp.linalg.svd, x, full_matrices=False)
    inverse = _reciprocals_above(xp, s, s, _tolerance(xp, x, s, atol, rtol))
    return record(PINV, (xp.swapaxes(vh, -1, -2).conj() * inverse[..., None, :]) @ xp.swapaxes(u, -1, -2).conj(),
                  (A,))


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None, rtol: Any = None) -> Tensor:
    """The number of singular values (absolute eigenvalues with `hermitian`) above the tolerance, as int64; complex
    matrices too, their tolerance from the eps of their real dtype."""
    check_flags("linalg_matrix_rank", hermitian=hermitian)
    atol, rtol = _deprecated_tolerance("linalg_matrix_rank", "tol", tol, atol, rtol)
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    xp = A._device.xp
    if hermitian and x.size:  # an empty batch is PyTorch's to count whatever its matrices' shape
        square_matrices("linalg.eigh", A)
        s = xp.flip(xp.sort(xp.abs(converged("linalg.eigh", xp.linalg.eigvalsh, x)), axis=-1), -1)
    else:
        s = converged("linalg.svd", xp.linalg.svd, x, compute_uv=False)
    rank = (s > _tolerance(xp, x, s, atol, rtol)).sum(-1).astype(np.int64)
    return Tensor(xp.asarray(rank), device=A._device)  # one matrix's sum is a numpy scalar


METHODS: dict[str, Any] = {}
