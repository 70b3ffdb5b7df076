"""Tensor: an array plus what autograd needs to know about it (requires_grad, grad, grad_fn)."""

from __future__ import annotations

import copy
import warnings
import weakref
from typing import Any

import numpy as np

from actorgrad.devices import Device, cpu
from actorgrad.grad_mode import INFERENCE, _inference_mode
from actorgrad.memory_formats import checked_format, is_laid_out
from actorgrad.tensor_protocol import PythonProtocols
from actorgrad.tensor_repr import format_tensor
from actorgrad.version_counter import VersionCounter, mark_detached, version_counter

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)


DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
    "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() "
    "cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution."
)
DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you "
    "were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see "
    "https://github.com/pytorch/pytorch/pull/103001"
)
# The leaves whose `grad_dtype` was set, by id (entries leave with their tensor): a dtype their `.grad` takes, or
# None for any; a leaf not here takes its own dtype. Empty in most programs, so the commit tests it once per leaf.
grad_dtypes: dict[int, Any] = {}
GRAD_DTYPE_MISMATCH = (
    "attempting to assign a gradient with dtype '{got}' to a tensor with grad_dtype '{want}'. The gradient must "
    "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute "
    "with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
    "tensor and its gradient may break downstream systems that assume they match."
)
NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, "
    "use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
    "the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


class Tensor(PythonProtocols):
    """An n-dimensional array that can record the operations applied to it.

    A leaf is a tensor the user made (no `grad_fn`); its gradients accumulate into `.grad`. A tensor made by
    an op on tensors that require grad carries the backward Node that made it in `grad_fn`.
    """

    __slots__ = (
        "_data",
        "_requires_grad",
        "_grad_fn",
        "_output_nr",
        "_grad",
        "_accumulator",
        "_vc",
        "_base",
        "_hooks",
        "_device",
        "__weakref__",
    )
    # Make numpy defer to Tensor's reflected operators (`ndarray * tensor` -> Tensor.__rmul__).
    __array_ufunc__ = None

    def __init__(
        self, data: Any, requires_grad: bool = False, grad_fn: Any = None, output_nr: int = 0, device: Device = cpu
    ):
        self._data = data
        self._device = device
        self._grad_fn = grad_fn
        self._output_nr = output_nr
        self._grad: Tensor | None = None
        self._accumulator: weakref.ref | None = None
        # Made on the first in-place change or view, until then version 0; INFERENCE for an inference tensor (set by
        # whatever makes one: reading inference mode here would cost every op).
        self._vc: VersionCounter | None = None
        self._base: Tensor | None = None  # the tensor whose storage this view's array views
        self._hooks: Any = None  # a leaf's NodeHooks (actorgrad.hooks), once a hook is registered on it
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    # -- autograd attributes -------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        if self._requires_grad or self._grad_fn is not None:
            return True
        base = self._base  # a view made in no_grad mode has no history, yet requires grad as its base does
        return base is not None and base.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not isinstance(value, bool):  # as PyTorch: a truthy 1 or None is refused, not read as a flag
            raise RuntimeError("requires_grad must be a bool")
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def _set_requires_grad(self, value: bool, not_floating: str) -> None:
        """The flag's checks, as PyTorch's; `not_floating` is the text of the refusal for an integer or bool tensor,
        which PyTorch words differently for the setter, `requires_grad_()` and the factory functions."""
        if self._grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables." if value else
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError(not_floating)
        if value and self._vc is INFERENCE and _inference_mode.get() is None:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad in place; on a non-leaf only True is allowed (it requires grad already), as in
        PyTorch."""
        if not isinstance(requires_grad, bool):
            kind = type(requires_grad)
            name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
            raise TypeError(f"requires_grad_(): argument 'requires_grad' must be bool, not {name}")
        if not (requires_grad and self._grad_fn is not None):
            self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated into this leaf (or retained for this non-leaf); reading it on a non-leaf that
        retains none and was given none warns, as in PyTorch."""
        if self._grad_fn is not None and self._grad is None and not self.retains_grad:
            warnings.warn(NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        """Checked as PyTorch checks it, so that a later backward never meets a `.grad` it cannot add into."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value is self:  # backward would add into the leaf's own values
                raise RuntimeError("can't assign Variable as its own grad")
            allowed = grad_dtypes.get(id(self), self.dtype) if grad_dtypes else self.dtype
            if allowed is not None and value.dtype != allowed:  # checked before the size, as PyTorch does
                raise RuntimeError(GRAD_DTYPE_MISMATCH.format(got=value.dtype, want=allowed))
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
                )
            if value._device is not self._device:
                here, there = self._device, value._device
                if here.type != there.type:
                    raise RuntimeError(
                        f"attempting to assign a gradient with device type '{there.type}' to a tensor with device "
                        f"type '{here.type}'. Please ensure that the gradient and the tensor are on the same device"
                    )
                raise RuntimeError(
                    f"attempting to assign a gradient located on device with index '{there.index}' to a tensor "
                    f"located on device with index '{here.index}'. Please ensure that the gradient and the tensor "
                    f"are on the same device"
                )
        self._grad = value

    @property
    def grad_fn(self) -> Any:
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        """Which output of its grad_fn this tensor is (0 for a leaf)."""
        return self._output_nr

    def is_inference(self) -> bool:
        """Was this tensor made in inference mode (and is no view of a normal tensor)?"""
        return self._vc is INFERENCE

    @property
    def retains_grad(self) -> bool:
        fn = self._grad_fn
        return fn is not None and fn.retained is not None and self._output_nr in fn.retained

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in `.grad` after backward (leaves always keep theirs)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self._grad_fn
        if fn is None:
            return
        if fn.retained is None:
            fn.retained = {}
        fn.retained[self._output_nr] = weakref.ref(self)

    def detach(self) -> Tensor:
        """The same data, cut from the graph; it shares the version counter, so changing it in place is caught
        by a backward that saved this tensor (`.data` does not share it, as in PyTorch)."""
        out = Tensor(self._data, device=self._device)
        out._vc = version_counter(self)
        return out

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that does not require grad. A view is
        refused, as in PyTorch, since its base's history would still run through it."""
        if self._base is not None:
            raise RuntimeError(DETACH_VIEW)
        if self._grad_fn is not None:  # a node that saved it can no longer use it
            mark_detached(self)
        self._grad_fn, self._output_nr, self._requires_grad = None, 0, False
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A new leaf with copies of the data and `.grad` and the same requires_grad, as PyTorch's deepcopy; it
        shares nothing with this tensor (no hooks, gradient accumulator, version counter or view base). A tensor
        with a history has no copy: its graph cannot be copied."""
        if self._grad_fn is not None:
            raise RuntimeError(DEEPCOPY_NON_LEAF)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        Tensor.__init__(new, self._copied_data(memo), device=self._device)
        version_counter(new).value = 1  # PyTorch's deepcopy fills the new tensor in place: one change
        new._requires_grad = self.requires_grad
        new._grad = copy.deepcopy(self._grad, memo)
        if hasattr(self, "__dict__"):  # a subclass's own attributes
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def _copied_data(self, memo: dict) -> Any:
        """A deep copy of this tensor's array. As PyTorch copies a storage once per deepcopy (memo), the copy views
        the copy of the memory this array views, so tensors that shared memory (a base and its views, a `detach()`)
        still share it, each at its offset and strides (as plain tensors: no view base, as in PyTorch)."""
        x = self._data
        root = memory_owner(self)
        if root is x:  # memoized, so the copies of views of this tensor view this copy
            return copy.deepcopy(x, memo)
        copied = copy.deepcopy(root, memo)
        if root.dtype != x.dtype or copied.strides != root.strides:  # memory no offset and strides can address
            return copy.deepcopy(x, memo)
        offset = array_address(x) - array_address(root)
        if isinstance(x, np.ndarray):
            if not copied.flags.c_contiguous:  # a fresh copy, so dense: its memory as one row from its first element
                copied = np.lib.stride_tricks.as_strided(copied, (copied.size,), (copied.itemsize,))
            out = np.ndarray(x.shape, x.dtype, buffer=copied, offset=offset, strides=x.strides)
            # a view made read-only of writable memory (expand's repeated elements) stays so; the copied memory
            # itself is writable, as numpy's deepcopy of it
            out.flags.writeable = x.flags.writeable or not root.flags.writeable
            return out
        flat = copied.reshape(-1, order="A")  # CuPy: the memory in its own order
        return self._device.xp.lib.stride_tricks.as_strided(flat[offset // x.itemsize:], x.shape, x.strides)

    @property
    def _version(self) -> int:
        vc = self._vc
        if vc is INFERENCE:
            raise RuntimeError("Inference tensors do not track version counter.")
        return 0 if vc is None else vc.value

    def _is_view(self) -> bool:
        return self._base is not None

    # -- data access -----------------------------------------------------------------------------------------
    @property
    def data(self) -> Tensor:
        return Tensor(self._data, device=self._device)

    @data.setter
    def data(self, value: Tensor) -> None:
        """Give this tensor `value`'s array (shared, any shape or dtype), unseen by autograd, as PyTorch's
        `tensor.data = value`."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self.requires_grad and value._data.dtype.kind not in "fc":
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data, self._device = value._data, value._device

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in memory in row-major order with no gaps (size-1 dims' strides aside), or in
        the order of the given memory format (channels last)."""
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        return is_laid_out(self._data, checked_format("is_contiguous", memory_format))

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    def size(self, dim: int | None = None) -> Any:
        shape = self._data.shape
        return shape if dim is None else shape[_checked_dim(dim, len(shape), "size")]

    def stride(self, dim: int | None = None) -> Any:
        """Elements (not bytes, as numpy counts) to step in memory for one step along each dim."""
        x = self._data
        if x.size:
            strides = tuple(step // x.itemsize for step in x.strides)
        else:  # numpy gives an empty array zero strides; PyTorch, a new tensor's row-major ones
            strides = tuple(int(np.prod([max(n, 1) for n in x.shape[d + 1:]])) for d in range(x.ndim))
        return strides if dim is None else strides[_checked_dim(dim, x.ndim, "stride")]

    def storage_offset(self) -> int:
        """Where this tensor's first element lies in the memory it shares with its views, in elements."""
        x = self._data
        return (array_address(x) - array_address(memory_owner(self))) // x.itemsize

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    @property
    def device(self) -> Device:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's memory as a numpy array. `force=True` gives it whatever the tensor, as PyTorch's: also one
        that requires grad, and a host copy of one on a device."""
        if force:
            x = self._data
            return x if isinstance(x, np.ndarray) else x.get()  # a device array's get() is a host copy
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._device.type == "cuda":
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                f"host memory first."
            )
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """`np.asarray(t)`: the tensor's memory, as `numpy()` gives it, and refused where that is."""
        array = self.numpy()
        if dtype is not None and array.dtype != dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while creating an array as requested (a {array.dtype} "
                                 f"tensor as {np.dtype(dtype)}).")
            return array.astype(dtype)
        return array.copy() if copy else array

    def __repr__(self) -> str:
        return format_tensor(self)

    __hash__ = object.__hash__


def _checked_dim(dim: Any, ndim: int, op: str) -> int:
    """`dim` as an index into a shape (an integer 0-d tensor too, as PyTorch takes one), refused with PyTorch's
    errors when it is no int or out of range."""
    if isinstance(dim, Tensor) and dim.ndim == 0 and dim.dtype.kind in "iu":
        dim = dim.item()
    if not isinstance(dim, int | np.integer) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return int(dim)


def array_storage(array: Any) -> Any:
    """The array that owns `array`'s memory. Numpy and CuPy views name the array they view as `base` (a numpy
    array's base may also be a buffer of another kind, such as bytes, which ends the walk)."""
    kind = array.__class__
    while isinstance(array.base, kind):
        array = array.base
    return array


def memory_owner(t: Tensor) -> Any:
    """The array owning the memory `t`'s array views (itself when it views none)."""
    return array_storage(t._data if t._base is None else t._base._data)  # CuPy's as_strided arrays name no base


def array_address(array: Any) -> int:
    """The address of an array's first element: numpy's, or a device array's (CuPy's `data.ptr`)."""
    return array.ctypes.data if isinstance(array, np.ndarray) else array.data.ptr
