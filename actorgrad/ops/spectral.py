"""The one differentiable op behind `actorgrad.fft`: a chain of linear steps on raw arrays (crop or zero-pad,
complex-to-complex, real-to-complex and complex-to-real transforms, conj, real part), recorded as one node.

Every step is linear over the reals, so its gradient is its adjoint, and a chain's adjoint is its steps' adjoints
in reverse order: the node's backward runs that chain, which in a backward with create_graph=True is itself one
recorded node, so FFTs differentiate any number of times. Gradients of complex tensors follow PyTorch's convention
(dL/d(re z) + i dL/d(im z) for a real loss L), under which the adjoint of a transform with matrix F is F^H.

The transforms carry PyTorch's normalization (none, 1/sqrt(n) or 1/n, whatever the direction) rather than numpy's
norm names; the kernels are the array module's (`numpy.fft`, `cupy.fft`), their results cast to the input's
precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from actorgrad.devices.array_ops import padded
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

NO_SCALE, BY_ROOT_N, BY_N = 0, 1, 2
# numpy's norm for each scale, for a transform in the forward (exp(-2 pi i jk / n)) and the inverse direction
FORWARD_NORMS = ("backward", "ortho", "forward")
INVERSE_NORMS = ("forward", "ortho", "backward")


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """complex64 for float32 (and complex64), complex128 for float64 (and complex128)."""
    return np.result_type(dtype, np.complex64)


def real_dtype(dtype: np.dtype) -> np.dtype:
    return np.finfo(dtype).dtype


@dataclass(frozen=True, slots=True)
class Resize:
    """Crop or zero-pad each of `dims` at its end, from its size in `before` to its size in `after`."""

    dims: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]

    def apply(self, xp: Any, x: Any) -> Any:
        growth = dict(zip(self.dims, (new - old for old, new in zip(self.before, self.after))))
        return padded(xp, x, tuple(w for d in reversed(range(x.ndim)) for w in (0, growth.get(d, 0))), 0)

    def adjoint(self) -> tuple:
        return (Resize(self.dims, self.after, self.before),)


@dataclass(frozen=True, slots=True)
class C2C:
    """A complex transform over `dims`, forward or inverse, scaled by `scale`."""

    dims: tuple[int, ...]
    scale: int
    forward: bool

    def apply(self, xp: Any, x: Any) -> Any:
        if not self.dims:  # fftn over no dims: the input itself
            return x.copy()
        kernel = xp.fft.fftn if self.forward else xp.fft.ifftn
        norm = (FORWARD_NORMS if self.forward else INVERSE_NORMS)[self.scale]
        return kernel(x, axes=self.dims, norm=norm).astype(x.dtype, copy=False)

    def adjoint(self) -> tuple:
        return (C2C(self.dims, self.scale, not self.forward),)


@dataclass(frozen=True, slots=True)
class R2C:
    """A forward transform of a real array over `dims`; `onesided` keeps only the first n // 2 + 1 bins along the
    last (whose length is n)."""

    dims: tuple[int, ...]
    scale: int
    onesided: bool
    n: int

    def apply(self, xp: Any, x: Any) -> Any:
        kernel = xp.fft.rfftn if self.onesided else xp.fft.fftn
        return kernel(x, axes=self.dims, norm=FORWARD_NORMS[self.scale]).astype(complex_dtype(x.dtype), copy=False)

    def adjoint(self) -> tuple:
        """The dropped bins' gradient is zero: pad it back, transform back, and keep the real part (the input's
        imaginary part is held at zero)."""
        back = (C2C(self.dims, self.scale, forward=False), Real())
        if not self.onesided:
            return back
        return (Resize(self.dims[-1:], (self.n // 2 + 1,), (self.n,)),) + back


@dataclass(frozen=True, slots=True)
class C2R:
    """The inverse transform over `dims` of a one-sided spectrum (n // 2 + 1 bins in the last dim) to a real array
    of n along the last dim, taking the other half by Hermitian symmetry (the imaginary parts of the bins that are
    their own mirror, 0 and n / 2, are ignored)."""

    dims: tuple[int, ...]
    scale: int
    n: int

    def apply(self, xp: Any, x: Any) -> Any:
        sizes = [x.shape[d] for d in self.dims[:-1]] + [self.n]
        out = xp.fft.irfftn(x, s=sizes, axes=self.dims, norm=INVERSE_NORMS[self.scale])
        return out.astype(real_dtype(x.dtype), copy=False)

    def adjoint(self) -> tuple:
        """Each bin between 0 and n / 2 stands for itself and its mirror: the forward transform's bins, with
        those doubled (PyTorch's fft_c2r_backward)."""
        return (R2C(self.dims, self.scale, True, self.n), Double(self.dims[-1], self.n - (self.n // 2 + 1)))


@dataclass(frozen=True, slots=True)
class Double:
    """Multiply bins 1 to `count` along `dim` by 2."""

    dim: int
    count: int

    def apply(self, xp: Any, x: Any) -> Any:
        if self.count <= 0:
            return x
        factor = xp.ones(x.shape[self.dim], dtype=real_dtype(x.dtype))
        factor[1:1 + self.count] = 2
        return x * factor.reshape((-1,) + (1,) * (x.ndim - 1 - self.dim))

    def adjoint(self) -> tuple:
        return (self,)


@dataclass(frozen=True, slots=True)
class Conj:
    def apply(self, xp: Any, x: Any) -> Any:
        return x.conj()

    def adjoint(self) -> tuple:
        return (self,)


@dataclass(frozen=True, slots=True)
class Real:
    """The real part (the gradient of a real input that a transform took as complex)."""

    def apply(self, xp: Any, x: Any) -> Any:
        return x.real.copy()

    def adjoint(self) -> tuple:
        return (Complex(),)


@dataclass(frozen=True, slots=True)
class Complex:
    """A real array as complex (PyTorch's promotion of a real input to a complex transform)."""

    def apply(self, xp: Any, x: Any) -> Any:
        return x.astype(complex_dtype(x.dtype))

    def adjoint(self) -> tuple:
        return (Real(),)


def apply(xp: Any, x: Any, steps: tuple) -> Any:
    for step in steps:
        x = step.apply(xp, x)
    return x


def adjoint(steps: tuple) -> tuple:
    return tuple(back for step in reversed(steps) for back in step.adjoint())


def _backward(ops: Any, g: Any, steps: tuple) -> Any:
    back = adjoint(steps)
    if isinstance(g, Tensor):  # a recorded backward: the adjoint chain is one more node
        return transform(g, back)
    return apply(ops.xp, g, back)


# A chain's node is named, as in PyTorch, for its last transform (PyTorch's grad_fn is its last op).
RULES = {kind: Rule(name, (("steps",), _backward)) for kind, name in (
    (C2C, "FftC2CBackward0"), (R2C, "FftR2CBackward0"), (C2R, "FftC2RBackward0"),
)}


def transform(input: Tensor, steps: tuple) -> Tensor:
    """`steps` applied to the input's array, recorded as one node."""
    rule = next(RULES[type(step)] for step in reversed(steps) if type(step) in RULES)
    return record(rule, apply(input._device.xp, input._data, steps), (input,), steps=steps)
