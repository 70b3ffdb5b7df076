"""The matrix exponential: torch.linalg.matrix_exp, and its aliases torch.matrix_exp and Tensor.matrix_exp, one
node LinalgMatrixExpBackward0 as PyTorch's (the kernel, scaling and squaring with a Padé approximant, is in
`actorgrad.devices.matrix_exp`).

exp's gradient is the adjoint of its Fréchet derivative at A applied to g, which is the upper-right block of
exp([[A^H, g], [0, A^H]]) (C. Van Loan, "Computing integrals involving the matrix exponential", 1978): one more
matrix exponential, of twice the size. Through `ops.matrix_exp` it is a recorded matrix_exp under
`create_graph=True`, so the backward differentiates again.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.linalg_decompositions import check_floating, square_matrices
from actorgrad.ops.operands import require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["matrix_exp"]


def _matrix_exp_grad(ops: Any, g: Any, self: Any) -> Any:
    n = self.shape[-1]
    transposed = ops.conj(ops.swapaxes(self, -1, -2))
    block = ops.concatenate((
        ops.concatenate((transposed, g), -1),
        ops.concatenate((ops.zeros_like(g), transposed), -1),
    ), -2)
    upper_right = (slice(None),) * (self.ndim - 2) + (slice(0, n), slice(n, 2 * n))
    return ops.index(ops.matrix_exp(block), upper_right, None)


MATRIX_EXP = Rule("LinalgMatrixExpBackward0", (("self",), _matrix_exp_grad))


def linalg_matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = sum of A^k / k! for each square matrix of A, of shape (*, n, n)."""
    require_tensors("linalg_matrix_exp", A=A)
    x = square_matrices("linalg.matrix_exp", A)
    if x.dtype.kind not in "fc":
        check_floating("linalg.matrix_exp", x)  # PyTorch's kernel takes float16, so only other dtypes are checked
    return record(MATRIX_EXP, A._device.ops.matrix_exp(x), (A,))


def matrix_exp(input: Tensor) -> Tensor:
    """torch.matrix_exp: linalg.matrix_exp."""
    require_tensors("matrix_exp", input=input)
    return linalg_matrix_exp(input)


METHODS: dict[str, Any] = {"matrix_exp": matrix_exp}
