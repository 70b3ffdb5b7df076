"""A complex tensor's parts and the tensors made of them: real, imag, angle, conj, conj_physical, polar, complex,
view_as_real, view_as_complex, and the conjugate and negative bits PyTorch keeps (resolve_conj, is_conj, ...).

Gradients follow PyTorch's convention for complex tensors: a real loss L's gradient in z is dL/d(re z) + i dL/d(im
z), so each rule below is the adjoint of its op over the reals. As in PyTorch, `real` and `imag` are views made by
view_as_real and a select (SelectBackward0 after ViewAsRealBackward0), and writing into them writes the complex
tensor. Unlike PyTorch, `conj` makes its result at once (actorgrad keeps no lazy conjugate bit: `is_conj()` is always
False and `resolve_conj` returns its input), so a write into `conj(z)` does not reach z.

An in-place op that needs a gradient through a view of another dtype (view_as_real, view_as_complex, real, imag of a
complex tensor) is refused: actorgrad replays such writes onto the base's history by element positions, which
these views do not share with their base. Change them under `no_grad()`, or clone them first.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.aliases import select
from actorgrad.ops.inplace_recording import CUSTOM_FUNCTION_VIEWS
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, floating, require_tensors
from actorgrad.ops.record import Rule, common_device, record, zeros_grad
from actorgrad.ops.spectral import complex_dtype, real_dtype
from actorgrad.tensor import Tensor

# `complex` is left out, so that `from actorgrad import *` keeps the builtin; actorgrad/__init__.py names it.
__all__ = [
    "angle", "conj", "conj_physical", "imag", "is_conj", "is_neg", "polar", "real", "resolve_conj",
    "resolve_neg", "view_as_complex", "view_as_real",
]

DTYPE_VIEW = (
    "Output {nr} of {name} is a view and {what}. It views its base as another dtype, and actorgrad cannot replay an "
    "in-place change of such a view onto its base's history. Change it under no_grad(), or clone() it first."
)
_NAMES = {**SCALAR_NAMES, np.dtype(np.complex64): "ComplexFloat", np.dtype(np.complex128): "ComplexDouble"}


# -- the parts of a gradient, raw or recorded ----------------------------------------------------------------------
def _re(g: Any) -> Any:
    return real(g) if isinstance(g, Tensor) else g.real


def _im(g: Any) -> Any:
    return imag(g) if isinstance(g, Tensor) else g.imag


def _joined(ops: Any, re: Any, im: Any) -> Any:
    """re + i im, as one complex gradient."""
    if isinstance(re, Tensor):
        return complex(re, im)
    return _assembled(ops.xp, re.shape, re, im)


def _assembled(xp: Any, shape: tuple, re: Any, im: Any) -> Any:
    """The complex array re + i im of `shape` (the parts broadcast), written part by part (CuPy's and numpy's
    `.imag` are views)."""
    out = xp.empty(shape, complex_dtype(re.dtype))
    out[...] = re
    out.imag[...] = im
    return out


def _pairs_as_complex(ops: Any, g: Any) -> Any:
    """view_as_real's gradient: the (re, im) pairs of its last dim as complex numbers."""
    if isinstance(g, Tensor):
        return view_as_complex(g.contiguous())
    return _joined(ops, g[..., 0], g[..., 1])


def _complex_as_pairs(ops: Any, g: Any) -> Any:
    """view_as_complex's gradient: each complex number as its (re, im) pair."""
    return view_as_real(g) if isinstance(g, Tensor) else _real_view(g)


def _conjugated(ops: Any, g: Any) -> Any:
    return conj_physical(g) if isinstance(g, Tensor) else ops.xp.conj(g)


def _angle_grad(ops: Any, g: Any, self: Any) -> Any:
    """d angle(z) = (x dy - y dx) / |z|^2: g i z / |z|^2, zero at z = 0 (PyTorch's angle_backward)."""
    x, y = _re(self), _im(self)
    r2 = x * x + y * y
    zero = r2 == 0
    scaled = ops.where(zero, 0.0, g / ops.where(zero, 1.0, r2))
    return _joined(ops, -scaled * y, scaled * x)


def _polar_abs_grad(ops: Any, g: Any, self: Any, other: Any) -> Any:
    """d out / d abs = e^(i angle): the gradient is Re(conj(g) e^(i angle)); 0 where abs is 0, as PyTorch's
    Re(conj(g) sgn(out)). (Where abs is negative, outside polar's domain, PyTorch's formula negates the derivative;
    this keeps it.)"""
    return ops.where(self == 0, 0, _re(g) * ops.cos(other) + _im(g) * ops.sin(other))


def _polar_angle_grad(ops: Any, g: Any, self: Any, other: Any) -> Any:
    """d out / d angle = i abs e^(i angle): the gradient is abs (Im(g) cos(angle) - Re(g) sin(angle))."""
    return self * (_im(g) * ops.cos(other) - _re(g) * ops.sin(other))


VIEW_AS_REAL = Rule("ViewAsRealBackward0", ((), _pairs_as_complex))
VIEW_AS_COMPLEX = Rule("ViewAsComplexBackward0", ((), _complex_as_pairs))
CONJ = Rule("ConjBackward0", ((), _conjugated))
CONJ_PHYSICAL = Rule("ConjPhysicalBackward0", ((), _conjugated))
ANGLE = Rule("AngleBackward0", (("self",), _angle_grad))
ANGLE_OF_REAL = Rule("AngleBackward0", ((), zeros_grad))
POLAR = Rule("PolarBackward0", (("self", "other"), _polar_abs_grad), (("self", "other"), _polar_angle_grad),
             broadcasts=True)
COMPLEX = Rule("ComplexBackward0", ((), lambda ops, g: _re(g)), ((), lambda ops, g: _im(g)), broadcasts=True)


# -- views of another dtype ----------------------------------------------------------------------------------------
def _real_view(z: Any) -> Any:
    """A complex array's (re, im) pairs along a new last dim, viewing its memory (any strides)."""
    return z[..., None].view(real_dtype(z.dtype))


def _dtype_view(out: Tensor) -> Tensor:
    """Mark `out`, a view of its input as another dtype, as one whose in-place change with a gradient is refused
    (and whose history is refused once its base changed in place)."""
    if out._grad_fn is not None:
        CUSTOM_FUNCTION_VIEWS[out._grad_fn] = {0: DTYPE_VIEW}
    return out


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as real pairs (re, im) along a new last dim of size 2, viewing its memory."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _dtype_view(record(VIEW_AS_REAL, _real_view(input._data), (input,)))


def view_as_complex(input: Tensor) -> Tensor:
    """A real tensor whose last dim holds (re, im) pairs as a complex tensor without that dim, viewing its memory;
    PyTorch's conditions on the layout (a last dim of size 2 and stride 1, even strides and offset)."""
    x = input._data
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {_NAMES.get(x.dtype, x.dtype)}")
    if not x.ndim:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s, n in zip(strides[:-1], x.shape) if n != 1):  # a size-1 dim's stride is never used
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    data = x.view(complex_dtype(x.dtype))[..., 0] if x.size else input._device.xp.empty(x.shape[:-1],
                                                                                         complex_dtype(x.dtype))
    return _dtype_view(record(VIEW_AS_COMPLEX, data, (input,)))


# -- parts ---------------------------------------------------------------------------------------------------------
def real(input: Tensor) -> Tensor:
    """The real part (a view); a real tensor is its own."""
    if input._data.dtype.kind != "c":
        return input
    return _dtype_view(select(view_as_real(input), -1, 0))


def imag(input: Tensor) -> Tensor:
    """The imaginary part (a view); only complex tensors have one."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _dtype_view(select(view_as_real(input), -1, 1))


def _set_part(part: Any) -> Any:
    """The setter of `Tensor.real` / `Tensor.imag`: the value copied into the part, as PyTorch's."""

    def setter(self: Tensor, value: Any) -> None:
        part(self).copy_(value)

    return setter


def angle(input: Tensor) -> Tensor:
    """The argument of each element, in (-pi, pi]; for a real tensor pi where it is negative, else 0 (nan stays)."""
    x = input._data
    xp = input._device.xp
    if x.dtype.kind == "c":
        return record(ANGLE, xp.angle(x).astype(real_dtype(x.dtype), copy=False), (input,))
    dtype = floating(x.dtype)
    out = xp.where(x < 0, math.pi, xp.where(x == x, 0.0, math.nan)).astype(dtype)
    return record(ANGLE_OF_REAL, out, (input,)) if x.dtype.kind == "f" else Tensor(out, device=input._device)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate; a real tensor is its own. Made at once, not as PyTorch's lazy view (see above)."""
    if input._data.dtype.kind != "c":
        return input
    return record(CONJ, input._device.xp.conj(input._data), (input,))


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed; a real tensor is its own."""
    if input._data.dtype.kind != "c":
        return input
    return record(CONJ_PHYSICAL, input._device.xp.conj(input._data), (input,))


def resolve_conj(input: Tensor) -> Tensor:
    """The input: actorgrad never leaves a conjugate unapplied."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """The input: actorgrad never leaves a negation unapplied."""
    return input


def is_conj(input: Tensor) -> bool:
    """False: actorgrad's conj computes the conjugate, it sets no bit."""
    require_tensors("is_conj", input=input)
    return False


def is_neg(input: Tensor) -> bool:
    """False: actorgrad keeps no negative bit."""
    require_tensors("is_neg", input=input)
    return False


# -- complex tensors from real ones --------------------------------------------------------------------------------
def _real_pair(op: str, first: Tensor, second: Tensor, names: tuple[str, str]) -> tuple[Any, Any, tuple, Any]:
    """The arrays of polar's and complex's two float operands (of one dtype), broadcast; and their device."""
    require_tensors(op, **dict(zip(names, (first, second))))
    a, b = first._data, second._data
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {_NAMES[a.dtype]} and "
                           f"{_NAMES[b.dtype]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_NAMES[a.dtype]} but got scalar type {_NAMES[b.dtype]} "
                           "for second argument")
    if a.dtype.itemsize < 4:
        if op == "polar":  # PyTorch's complex makes a complex32 tensor, its polar has no Half kernel
            raise NotImplementedError(f"\"polar_{first._device.type}\" not implemented for 'Half'")
        raise RuntimeError(f"{op}: actorgrad has no complex dtype for Half inputs (complex32); use float or double")
    device = common_device((first, second))
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise broadcast_error(op, a.shape, b.shape) from None
    return a, b, shape, device


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """abs * (cos(angle) + i sin(angle))."""
    r, theta, shape, device = _real_pair("polar", abs, angle, ("abs", "angle"))
    xp = device.xp
    return record(POLAR, _assembled(xp, shape, r * xp.cos(theta), r * xp.sin(theta)), (abs, angle))


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """real + i imag."""
    a, b, shape, device = _real_pair("complex", real, imag, ("real", "imag"))
    return record(COMPLEX, _assembled(device.xp, shape, a, b), (real, imag))


METHODS = {
    "real": property(real, _set_part(real)), "imag": property(imag, _set_part(imag)), "angle": angle,
    "conj": conj, "conj_physical": conj_physical, "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "is_conj": is_conj, "is_neg": is_neg,
}
