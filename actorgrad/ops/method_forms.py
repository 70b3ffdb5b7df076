"""PyTorch's spellings of ops actorgrad already has: the top-level functions of in-place methods (`torch.exp_(x)` is
`x.exp_()`), rsub, sum_to_size, fill_diagonal_, conj_physical_, scalar_tensor, asarray, the top-level detach and
get_device, the `_copy` forms of the view ops (a copy of the view, as PyTorch's functionalized ops), the Tensor
methods of functions defined elsewhere (bernoulli, multinomial, prelu), and the augmented assignments (`x **= 2`,
`x %= 2`, `x //= 2`, `x &= m` ...) as the in-place methods they are in PyTorch, so that every name bound to the
tensor sees the change.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import device as as_device
from actorgrad.memory_formats import contiguous_format
from actorgrad.ops.arithmetic import SUB, SUB_ALPHA, _binary, _scaled
from actorgrad.ops.complex_parts import conj_physical
from actorgrad.ops.dim_activations import prelu
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operand_checks import check_subtraction
from actorgrad.ops.operands import SCALAR_NAMES, UnsupportedOperand, type_name
from actorgrad.ops.record import Rule
from actorgrad.ops.reductions import sum as summed
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import checked_numpy, copied_leaf, new_leaf

# The in-place methods PyTorch also has as functions of the tensor (nn's, such as relu_, live in nn.functional).
IN_PLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_",
    "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_",
    "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)
# PyTorch's `<view>_copy(input, ...)`: the view op's result as new memory, differentiable as the view is.
VIEW_COPIES = (
    "as_strided", "diagonal", "expand", "permute", "select", "split", "split_with_sizes", "squeeze", "t", "transpose",
    "unbind", "unfold", "unsqueeze", "view", "view_as_complex", "view_as_real",
)
# The augmented assignments PyTorch binds to in-place methods.
AUGMENTED = {
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_", "__ipow__": "pow_",
    "__imod__": "remainder_", "__ifloordiv__": "floor_divide_", "__iand__": "bitwise_and_", "__ior__": "bitwise_or_",
    "__ixor__": "bitwise_xor_", "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
}
__all__ = [
    "alias_copy", "asarray", "detach", "detach_copy", "get_device", "rsub", "scalar_tensor", "slice_copy",
    *IN_PLACE_FUNCTIONS, *(f"{name}_copy" for name in VIEW_COPIES),
]

# rsub(input, other) is other - alpha * input: sub's rules with its operands swapped, under PyTorch's names
RSUB = {(number, alpha): Rule(f"RsubBackward{int(number)}", *(SUB_ALPHA if alpha else SUB).grads, broadcasts=True)
        for number in (False, True) for alpha in (False, True)}


def _in_place_function(name: str) -> Any:
    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"`input.{name}(...)`."
    return function


globals().update({name: _in_place_function(name) for name in IN_PLACE_FUNCTIONS})


def _view_copy(name: str) -> Any:
    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        from actorgrad import ops  # the view ops of every family: at call time, once all are bound

        view = getattr(ops, name, None) or getattr(Tensor, name)  # view, expand, unfold are methods only
        view = view(input.contiguous() if name == "view" else input, *args, **kwargs)  # any layout, as PyTorch's
        if isinstance(view, tuple | list):  # row-major copies, as PyTorch's, whatever the view's strides
            return tuple(part.clone(memory_format=contiguous_format) for part in view)
        return view.clone(memory_format=contiguous_format)

    function.__name__ = function.__qualname__ = f"{name}_copy"
    function.__doc__ = f"`{name}(input, ...)` copied into new memory."
    return function


globals().update({f"{name}_copy": _view_copy(name) for name in VIEW_COPIES})


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Tensor:
    """`input[start:end:step]` along `dim`, copied into new row-major memory (as PyTorch's)."""
    if not input.ndim:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    index = (slice(None),) * single_dim(dim, input.ndim, "slice_copy") + (slice(start, end, step),)
    return input[index].clone(memory_format=contiguous_format)


def alias_copy(input: Tensor) -> Tensor:
    """A row-major copy of `input`, differentiable (PyTorch's copy of its alias op)."""
    return input.clone(memory_format=contiguous_format)


def detach(input: Tensor) -> Tensor:
    """`input.detach()`: the same memory, outside the graph."""
    return input.detach()


def detach_copy(input: Tensor) -> Tensor:
    """A row-major copy of `input` outside the graph."""
    return input.detach().clone(memory_format=contiguous_format)


def get_device(input: Tensor) -> int:
    """`input.get_device()`: the device's index, -1 on the cpu."""
    return input.get_device()


def _augmented(name: str) -> Any:
    """`x += y` runs `x.add_(y)`; an operand it cannot take gives NotImplemented, so Python falls back to
    `x = x + y` (and so to the other operand's `__radd__`), as PyTorch's augmented assignments do."""
    def method(self: Tensor, other: Any) -> Tensor:
        try:
            return getattr(self, name)(other)
        except UnsupportedOperand:
            return NotImplemented

    method.__name__ = method.__qualname__ = f"augmented_{name}"
    return method


def rsub(input: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """other - alpha * input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
    check_subtraction(input, other)
    rule = RSUB[not isinstance(other, Tensor), alpha != 1]
    if alpha == 1:
        return _binary("sub", other, input, rule)
    return _scaled("sub", rule, other, input, alpha)


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """The sum of this tensor down to `size`, a shape it expands to (the gradient of a broadcast)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else tuple(size)
    here = self.shape
    lead = len(here) - len(shape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(shape, here[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(here)}}}.")
    dims = tuple(range(lead)) + tuple(lead + d for d, n in enumerate(shape) if n == 1 and here[lead + d] != 1)
    if not dims:
        return self
    return summed(self, dims, keepdim=True).reshape(shape)


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """`fill_value` written on the main diagonal (all dims equal beyond 2-d); a tall matrix with `wrap` starts the
    diagonal again every columns + 1 rows, as PyTorch's (and numpy's)."""
    shape = self.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) > 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, np.bool_)
    np.fill_diagonal(mask, True, wrap=wrap)
    return self.masked_fill_(mask, fill_value)


def _conj_physical_in_place(self: Tensor) -> Tensor:
    """The conjugate written in place, with its gradient (the conjugate's), as PyTorch's; a real tensor is its own."""
    if self._data.dtype.kind != "c":
        return self
    return write_in_place(self, conj_physical, (), False)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A zero-dim tensor holding the number `s`, in the default float dtype unless `dtype` is given."""
    from actorgrad.creation import full  # creation imports the ops package: at call time, not import time
    from actorgrad.default_dtype import default_float

    if isinstance(s, Tensor) and s.ndim == 0:
        s = s.item()
    if not isinstance(s, bool | int | float | np.number | np.bool_):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type_name(s)}")
    return full((), s, dtype=default_float() if dtype is None else dtype, device=device, requires_grad=requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """`obj` as a tensor, sharing its memory where it can: a tensor comes back itself (converted, recorded, when
    `dtype` or `device` differ; cloned with `copy=True`), a numpy array of the dtype shares its memory unless
    `copy=True`; other data is copied as by `tensor()`. `copy=False` refuses a conversion, and a NumPy scalar or
    Python data (lists, numbers), which it would copy. `requires_grad` defaults to the tensor's own, as in
    PyTorch."""
    if requires_grad is not None and requires_grad.__class__ is not bool:
        raise not_bool("asarray", "requires_grad", requires_grad)
    target = None if dtype is None else np.dtype(dtype)
    if isinstance(obj, Tensor):
        where = obj._device if device is None else as_device(device)
        converted = (target is not None and target != obj.dtype) or where is not obj._device
        if converted and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{SCALAR_NAMES[obj.dtype]}' into dtype "
                             f"'{SCALAR_NAMES[target if target is not None else obj.dtype]}'.")
        out = obj.to(dtype=target, device=where) if converted else obj.clone() if copy else obj
        if requires_grad is False and out.requires_grad:
            return out.detach()
        return out if not requires_grad or out.requires_grad else out.detach().requires_grad_()
    if copy is False and isinstance(obj, np.generic):
        raise RuntimeError("can't alias NumPy scalars. Either remove copy=False or transform it in a ndarray. ")
    if isinstance(obj, np.ndarray | np.generic) and (device is None or as_device(device).type == "cpu"):
        array = checked_numpy(np.asarray(obj))
        if target is not None and target != array.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{SCALAR_NAMES.get(array.dtype, array.dtype)}' into "
                                 f"dtype '{SCALAR_NAMES[target]}'.")
            array = array.astype(target)
        elif copy:
            array = array.copy(order="K")  # the array's layout, as PyTorch's copy keeps it
        return new_leaf(array, bool(requires_grad))
    if copy is False and isinstance(obj, list | tuple | int | float | complex):
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return copied_leaf(obj, target, device, bool(requires_grad))


def _bernoulli(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    from actorgrad.random_tensors import bernoulli  # random_tensors imports creation: at call time

    return bernoulli(self, *args, **kwargs)


def _multinomial(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    from actorgrad.random_tensors import multinomial  # random_tensors imports creation: at call time

    return multinomial(self, *args, **kwargs)


METHODS: dict[str, Any] = {
    "sum_to_size": sum_to_size, "fill_diagonal_": fill_diagonal_, "conj_physical_": _conj_physical_in_place,
    "bernoulli": _bernoulli, "multinomial": _multinomial, "prelu": prelu,
    **{dunder: _augmented(name) for dunder, name in AUGMENTED.items()},
}
