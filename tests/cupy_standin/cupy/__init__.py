"""A stand-in for CuPy over numpy, so that CI (which has no GPU) runs the gpu tests through the CUDA path.

It checks what a GPU run would reject, not what a GPU computes: its arrays are not numpy arrays (numpy's
functions reach them only through `__array_function__` / `__array_ufunc__`, as CuPy's do), converting one to a
numpy array implicitly raises CuPy's error, a host array never mixes into a kernel, and every function, ufunc
keyword and method is checked against CuPy 14.2's signatures (`api.json`, written by `../dump_api.py`). The
kernels run on numpy; `ElementwiseKernel` and `ReductionKernel` know only actorgrad's fused kernels, by name.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as _np

from cupy import cuda  # noqa: F401 - cupy.cuda, as CuPy has it

_API = json.loads((Path(__file__).parent / "api.json").read_text())
_UFUNC_KEYWORDS = {"out", "casting", "dtype"}
_HOST_ARRAYS_ALLOWED = {"array", "asarray", "ascontiguousarray", "asanyarray"}
_signatures: dict = {}
_wrappers: dict = {}


def _signature(spec: Any) -> inspect.Signature | None:
    """A signature from api.json: a parameter list, or (for Cython methods) the docstring's first line."""
    if spec is None:
        return None
    if isinstance(spec, str):
        found = re.match(r"[\w.]+\((.*)\)", spec)
        namespace: dict = {}
        try:
            exec(f"def f({found.group(1)}): pass", {}, namespace)  # noqa: S102 - CuPy's own docstring
        except (AttributeError, SyntaxError, NameError):
            return None
        return inspect.signature(namespace["f"])
    empty = inspect.Parameter.empty
    return inspect.Signature([
        inspect.Parameter(name, getattr(inspect.Parameter, kind),
                          default=empty if required or kind.startswith("VAR") else None)
        for name, kind, required in spec
    ])


def _check_call(what: str, name: str, spec: Any, args: tuple, kwargs: dict, method: bool = False) -> None:
    key = (what, name)
    if key not in _signatures:
        _signatures[key] = _signature(spec)
    signature = _signatures[key]
    if signature is not None:
        try:
            signature.bind(*((None,) if method else ()), *args, **kwargs)
        except TypeError as error:
            raise TypeError(f"cupy {what} {name}{signature}: {error}") from None


def _reject_host_arrays(what: str, values: Any) -> None:
    """CuPy's kernels take device arrays and scalars, never host arrays (nor lists of them, as concatenate's)."""
    for value in values:
        if isinstance(value, list | tuple):
            _reject_host_arrays(what, value)
        elif isinstance(value, _np.ndarray):
            raise TypeError(f"Unsupported type {type(value)} (a host array passed to cupy's {what})")


def _wrap(x: Any) -> Any:
    """numpy results as stand-in arrays (one wrapper per numpy array, so `base` keeps its identity); numpy
    scalars become zero-dim arrays, as CuPy returns them."""
    if isinstance(x, _np.ndarray):
        ref = _wrappers.get(id(x))
        wrapper = ref() if ref is not None else None
        if wrapper is None or wrapper._a is not x:
            wrapper = ndarray(x)
            _wrappers[id(x)] = weakref.ref(wrapper)
        return wrapper
    if isinstance(x, _np.generic):
        return _wrap(_np.asarray(x))
    if isinstance(x, tuple | list):  # a numpy named tuple (slogdet's) comes back plain, as CuPy's results do
        return (list if isinstance(x, list) else tuple)(_wrap(v) for v in x)
    return x


def _unwrap(x: Any) -> Any:
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, tuple | list):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


class ndarray:  # noqa: N801 - CuPy's name
    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, array: _np.ndarray) -> None:
        self._a = array

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: _wrap(self._a.T))
    # views of a complex array's parts, as CuPy's properties (cupy/_core/_routines_math.pyx, _ndarray_real_getter)
    real = property(lambda self: _wrap(self._a.real))
    imag = property(lambda self: _wrap(self._a.imag))

    @property
    def base(self) -> Any:
        base = self._a.base
        while isinstance(base, _np.ndarray) and base.base is not None:
            base = base.base
        return _wrap(base) if isinstance(base, _np.ndarray) else None

    @property
    def data(self) -> Any:
        return _Pointer(self._a.__array_interface__["data"][0])

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__()  # the host array's capsule: `from_dlpack` below is its only reader

    def __dlpack_device__(self) -> tuple[int, int]:
        return _DLPACK_CUDA, 0

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
            "explicitly."
        )

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> _np.ndarray:
        return self._a.copy()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        if method == "__call__" and name in _API["funcs"]:  # matmul: a generalized ufunc in CuPy
            _check_call("function", name, _API["funcs"][name], inputs, kwargs)
        elif method == "at" or name not in _API["ufuncs"]:
            return NotImplemented  # CuPy dispatches neither np.add.at nor ufuncs it lacks
        elif method != "__call__" and method not in _API["ufuncs"][name]:
            return NotImplemented
        elif method != "__call__":
            _check_ufunc_method(name, method, inputs)
        elif method == "__call__" and set(kwargs) - _UFUNC_KEYWORDS:
            raise TypeError(f"cupy ufunc {name} takes no {sorted(set(kwargs) - _UFUNC_KEYWORDS)}")
        _reject_host_arrays(f"ufunc {name}", inputs)
        if method == "__call__":
            return _wrap(_call_ufunc(name, ufunc, _unwrap(inputs), _unwrap(kwargs)))
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        name = func.__name__
        table = _API["linalg"] if "linalg" in (func.__module__ or "") else _API["funcs"]
        if name not in table:
            return NotImplemented
        _check_call("function", name, table[name], args, kwargs)
        _check_sort(name, args[0], args[1:], kwargs)
        if name not in _HOST_ARRAYS_ALLOWED:
            _reject_host_arrays(name, args)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name: str) -> Any:
        if name not in _API["methods"]:
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        method = getattr(self._a, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            _check_call("method", name, _API["methods"][name], args, kwargs, method=True)
            _check_sort(name, self, args, kwargs, method=True)
            return _wrap(method(*_unwrap(args), **_unwrap(kwargs)))

        return call

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """A writeable view, as CuPy's (numpy's diagonal view is read-only)."""
        view = self._a.diagonal(offset, axis1, axis2)
        view.flags.writeable = self._a.flags.writeable
        return _wrap(view)

    def __getitem__(self, key: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        _reject_host_arrays("indexing", keys)
        found = self._a[_unwrap(key)]
        if isinstance(found, _np.generic) and all(isinstance(k, int | _np.integer) for k in keys):
            # an element is a 0-dim view, not a copy (cupy/_core/_routines_indexing.pyx, _ndarray_getitem takes
            # _view_getitem's view): writing the array changes it
            found = self._a[(*keys, Ellipsis)]
        return _wrap(found)

    def __setitem__(self, key: Any, value: Any) -> None:
        _reject_host_arrays("indexing", (*(key if isinstance(key, tuple) else (key,)), value))
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return iter(_wrap(list(self._a)))

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:  # but no __index__: CuPy's ndarray has none (cupy/_core/core.pyx)
        return int(self._a)

    def __repr__(self) -> str:
        return repr(self._a)


class _Flags:
    """CuPy's array flags: contiguity and owndata only (no `writeable`: a CuPy array is always writeable)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, array: _np.ndarray) -> None:
        self.c_contiguous = array.flags.c_contiguous
        self.f_contiguous = array.flags.f_contiguous
        self.owndata = array.base is None


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


def _operator(name: str) -> Any:
    def apply(self: ndarray, other: Any = None) -> Any:
        if other is None and name in ("__neg__", "__pos__", "__abs__", "__invert__"):
            return _wrap(getattr(self._a, name)())
        _reject_host_arrays(name, (other,))
        if name in _DIVISION_OPERATORS:
            ufunc, reflected = _DIVISION_OPERATORS[name]
            operands = (_unwrap(other), self._a) if reflected else (self._a, _unwrap(other))
            return _wrap(_call_ufunc(ufunc.__name__, ufunc, operands, {}))
        result = getattr(self._a, name)(_unwrap(other))
        return result if result is NotImplemented else _wrap(result)

    return apply


_DIVISION_OPERATORS = {"__floordiv__": (_np.floor_divide, False), "__rfloordiv__": (_np.floor_divide, True),
                       "__mod__": (_np.remainder, False), "__rmod__": (_np.remainder, True)}
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor"):
    for _form in ("__%s__", "__r%s__", "__i%s__"):
        setattr(ndarray, _form % _name, _operator(_form % _name))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__", "__pos__", "__abs__",
              "__invert__"):
    setattr(ndarray, _name, _operator(_name))


def _call_ufunc(name: str, ufunc: Any, args: tuple, kwargs: dict) -> Any:
    """numpy's ufunc, but for CuPy's float floor_divide and remainder, floor(x / y) and x - floor(x / y) * y
    (cupy/_core/_routines_math.pyx, _floor_divide and _remainder; include/cupy/carray.cuh, _floor_divide), where
    numpy derives both from fmod: CuPy's 1.0 // 0.1 is 10.0 (numpy's 9.0) and its 5.0 % inf is NaN (numpy's 5.0)."""
    if name not in ("floor_divide", "remainder") or kwargs or _np.result_type(*args).kind != "f":
        return ufunc(*args, **kwargs)
    with _np.errstate(all="ignore"):
        quotient = _np.floor(_np.true_divide(*args))
        return quotient if name == "floor_divide" else args[0] - quotient * args[1]


class _Ufunc:
    def __init__(self, name: str) -> None:
        self.__name__ = name
        self._ufunc = getattr(_np, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if set(kwargs) - _UFUNC_KEYWORDS:
            raise TypeError(f"cupy ufunc {self.__name__} takes no {sorted(set(kwargs) - _UFUNC_KEYWORDS)}")
        _reject_host_arrays(f"ufunc {self.__name__}", args)
        return _wrap(_call_ufunc(self.__name__, self._ufunc, _unwrap(args), _unwrap(kwargs)))

    def __getattr__(self, method: str) -> Any:
        if method not in _API["ufuncs"][self.__name__]:
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            _check_ufunc_method(self.__name__, method, args)
            return _wrap(getattr(self._ufunc, method)(*_unwrap(args), **_unwrap(kwargs)))

        return call


# Every ufunc has reduce, accumulate, reduceat and at, but only these implement them (cupy/_core/_kernel.pyx,
# ufunc.reduce/accumulate/reduceat/at: the others raise NotImplementedError); `at` with integer array indices
# takes only these dtypes (cupy/_core/_routines_indexing.pyx, _scatter_op_single).
_UFUNC_METHODS = {"reduce": {"add", "multiply"}, "accumulate": {"add", "multiply"}, "reduceat": {"add"}}
_SCATTER_DTYPES = {
    "add": "int32 int64 float16 float32 float64 uint32 uint64", "subtract": "int32 uint32",
    "maximum": "int32 int64 float32 float64 uint32 uint64", "minimum": "int32 int64 float32 float64 uint32 uint64",
    "bitwise_and": "int32 int64 uint32 uint64", "bitwise_or": "int32 int64 uint32 uint64",
    "bitwise_xor": "int32 int64 uint32 uint64",
}


def _check_ufunc_method(name: str, method: str, args: tuple) -> None:
    if method == "at":
        if name not in _SCATTER_DTYPES:
            raise NotImplementedError(f"`cupy_{name}.at` is not supported yet")
        a, indices = args[0], args[1]
        indices = indices if isinstance(indices, tuple) else (indices,)
        if (any(isinstance(i, ndarray) and i.dtype.kind in "iu" for i in indices)
                and a.dtype.name not in _SCATTER_DTYPES[name].split()):
            raise TypeError(f"cupy.{name}.at only supports {_SCATTER_DTYPES[name]} as data type")
    elif method in _UFUNC_METHODS and name not in _UFUNC_METHODS[method]:
        raise NotImplementedError(f"`cupy_{name}.{method}` is not supported yet")


def _check_sort(name: str, a: Any, args: tuple, kwargs: dict, method: bool = False) -> None:
    """CuPy's sorts are stable and take no other `kind` (cupy/_core/core.pyx, ndarray._check_kind_sort); its
    in-place sort and partition refuse views that are not C-contiguous (cupy/_core/_routines_sorting.pyx,
    _ndarray_sort and _ndarray_partition; the functions sort and partition copies)."""
    if name not in ("sort", "argsort", "partition"):
        return
    kind = kwargs.get("kind", args[1] if len(args) > 1 and name != "partition" else None)
    if kind not in (None, "stable"):
        raise ValueError("kind can only be None or 'stable'")
    if method and name != "argsort" and isinstance(a, ndarray) and not a._a.flags.c_contiguous:
        raise NotImplementedError("Sorting non-contiguous array is not supported.")


def _function(name: str, spec: Any, implementation: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        _check_call("function", name, spec, args, kwargs)
        if args:
            _check_sort(name, args[0], args[1:], kwargs)
        if name not in _HOST_ARRAYS_ALLOWED:
            _reject_host_arrays(name, args)
        if name == "polyval" and not isinstance(args[0], ndarray):
            raise TypeError("p must be 1d ndarray or poly1d object")
        if (name == "unique" and kwargs.get("axis") is not None and args[0].dtype == bool
                and args[0].shape[kwargs["axis"]] > 1):  # its sort subtracts slices (cupy/_manipulation/add_remove.py)
            raise TypeError("cupy boolean subtract, the `-` operator, is deprecated, use the bitwise_xor, the `^` "
                            "operator, or the logical_xor function instead.")
        if name == "lexsort" and (not isinstance(args[0], ndarray) or args[0].ndim != 2):
            # cupy/_sorting/sort.py, lexsort: keys.ndim (so no tuple of keys); one key gives array(0), three dims raise
            raise NotImplementedError("the stand-in takes lexsort's keys as one 2-D array only, as CuPy sorts them")
        kwargs.pop("blocking", None)
        if name == "unique" and kwargs.get("axis") is not None:
            return _wrap(_unique_slices(*_unwrap(args), **_unwrap(kwargs)))
        return _wrap(implementation(*_unwrap(args), **_unwrap(kwargs)))

    call.__name__ = name
    return call


def _unique_slices(ar: _np.ndarray, return_index: bool = False, return_inverse: bool = False,
                   return_counts: bool = False, axis: int = 0, **_: Any) -> Any:
    """CuPy's unique along an axis, step for step (cupy/_manipulation/add_remove.py, unique): a quicksort whose
    comparison is the first nonzero entry of `left - right`, so signed ints wrap (int8: 100 - -100 is -56, "less")
    and inf - inf, being NaN, is never less; unsigned ints are compared as intp."""
    ar = _np.moveaxis(ar, axis, 0)
    orig_shape = ar.shape
    ar = _np.ascontiguousarray(ar.reshape(orig_shape[0], -1))
    ar_cmp = ar.astype(_np.intp) if ar.dtype.kind == "u" else ar

    def less(i: int, j: int) -> bool:
        with _np.errstate(over="ignore", invalid="ignore"):
            comp = _np.trim_zeros(ar_cmp[i] - ar_cmp[j], "f")
        return bool(comp[0] < 0) if comp.shape[0] else False

    sorted_indices = _np.empty(orig_shape[0], _np.intp)
    queue = [(list(range(orig_shape[0])), 0)]
    while queue:
        current, off = queue.pop(0)
        if not current:
            continue
        left = [i for i in current[1:] if less(i, current[0])]
        right = [i for i in current[1:] if not less(i, current[0])]
        queue += [(left, off), (right, off + len(left) + 1)]
        sorted_indices[off + len(left)] = current[0]
    ar = ar[sorted_indices]
    mask = _np.ones(ar.shape[0], bool)
    if ar.size:
        mask[1:] = (ar[1:] != ar[:-1]).any(axis=1)
    else:
        mask[1:] = False
    ret = (_np.moveaxis(ar[mask].reshape(int(mask.sum()), *orig_shape[1:]), 0, axis),)
    if return_index:
        ret += (sorted_indices[mask],)
    if return_inverse:
        inverse = _np.empty(mask.shape, _np.intp)
        inverse[sorted_indices] = _np.cumsum(mask) - 1
        ret += (inverse,)
    if return_counts:
        ret += (_np.diff(_np.append(_np.flatnonzero(mask), mask.size)),)
    return ret if len(ret) > 1 else ret[0]


def __getattr__(name: str) -> Any:
    if name in _API["ufuncs"]:
        value = _Ufunc(name)
    elif name in _API["funcs"]:
        value = _function(name, _API["funcs"][name], getattr(_np, name))
    elif isinstance(getattr(_np, name, None), type) or not callable(getattr(_np, name, len)):
        value = getattr(_np, name)  # dtypes, constants
    else:
        raise AttributeError(f"module 'cupy' has no attribute '{name}'")
    setattr(sys.modules[__name__], name, value)
    return value


class _MemoryPool:
    """CuPy's memory pool, as far as actorgrad.cuda asks it: the stand-in's arrays are numpy's, so it holds none."""

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass


_MEMORY_POOL = _MemoryPool()


def get_default_memory_pool() -> _MemoryPool:
    return _MEMORY_POOL


_DLPACK_CUDA = 2  # DLPack's kDLCUDA


class _HostCapsule:
    """Hands numpy's from_dlpack a stand-in array's (host) capsule under the host device it really lives on."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.x.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return 1, 0  # kDLCPU


def from_dlpack(x: Any, *, device: Any = None, copy: Any = None) -> ndarray:
    """CuPy's: a view of a CUDA array of another library, sharing its memory; a host array is refused."""
    if x.__dlpack_device__()[0] != _DLPACK_CUDA:
        raise RuntimeError("CuPy can only import CUDA arrays through DLPack here")
    return _wrap(_np.from_dlpack(_HostCapsule(x)))


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> _np.ndarray:
    return a.get() if isinstance(a, ndarray) else _np.asarray(a)


class _Linalg:
    def __getattr__(self, name: str) -> Any:
        if name not in _API["linalg"]:
            raise AttributeError(name)
        implementation = getattr(_np.linalg, name)
        if name in _UNCHECKED_LINALG:
            implementation = _unchecked(implementation, name)
        return _function(name, _API["linalg"][name], implementation)


# CuPy's inv, solve and cholesky raise LinAlgError for a singular or not positive-definite matrix only inside
# cupyx.errstate(linalg="raise"); by default they return what the factorization left (cupy/linalg/_util.py,
# _check_cusolver_dev_info_if_synchronization_allowed and _check_cublas_info_array_if_synchronization_allowed, which
# cupy/linalg/_solve.py and _decomposition.py call). The stand-in returns NaN there.
_UNCHECKED_LINALG = {"inv", "solve", "cholesky"}


def _unchecked(implementation: Any, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        import cupyx

        try:
            return implementation(*args, **kwargs)
        except _np.linalg.LinAlgError:
            if cupyx.get_config_linalg() == "raise":
                raise
            out = args[1] if name == "solve" else args[0]
            return _np.full(out.shape, _np.nan, _np.result_type(out.dtype, _np.float32))

    return call


class _Fft:
    def __getattr__(self, name: str) -> Any:
        if name not in _API["fft"]:
            raise AttributeError(name)
        return _function(name, _API["fft"][name], getattr(_np.fft, name))


class _StrideTricks:
    @staticmethod
    def as_strided(x: ndarray, shape: Any = None, strides: Any = None) -> ndarray:
        return _wrap(_np.lib.stride_tricks.as_strided(x._a, shape, strides))


class _Lib:
    stride_tricks = _StrideTricks


linalg = _Linalg()
fft = _Fft()
lib = _Lib()

# actorgrad's fused kernels (devices/cuda.py), by name, as numpy computes them
_KERNELS = {
    "actorgrad_relu_grad": lambda g, r: _np.where(r != 0, g, _np.zeros((), g.dtype)),
    "actorgrad_log_softmax": lambda x, m, s: x - m - _np.log(s),
    "actorgrad_log_softmax_grad": lambda g, r, s: g - _np.exp(r) * s,
}
_REDUCTIONS = {"actorgrad_exp_sum": lambda x, m, axis, keepdims: _np.exp(x - m).sum(axis=axis, keepdims=keepdims)}
# actorgrad's raw kernels (devices/cuda_rows.py), by name: each gets the number of threads launched, then its
# arguments as numpy values; it writes only the rows those threads cover (a warp, 32 threads, per row), so a launch
# too small leaves rows unwritten.
def _rows_covered(threads: int, rows: int) -> int:
    return min(int(rows), threads // 32)


def _log_softmax_rows(threads: int, x: Any, y: Any, rows: Any, cols: Any) -> None:
    done = _rows_covered(threads, rows)
    row_major = x.reshape(rows, cols)[:done]
    shift = row_major.max(axis=1, keepdims=True)
    y.reshape(rows, cols)[:done] = row_major - shift - _np.log(_np.exp(row_major - shift).sum(axis=1, keepdims=True))


def _log_softmax_grad_rows(threads: int, g: Any, r: Any, y: Any, rows: Any, cols: Any) -> None:
    done = _rows_covered(threads, rows)
    grads = g.reshape(rows, cols)[:done]
    y.reshape(rows, cols)[:done] = grads - _np.exp(r.reshape(rows, cols)[:done]) * grads.sum(axis=1, keepdims=True)


_RAW_KERNELS = {"actorgrad_log_softmax_rows": _log_softmax_rows,
                "actorgrad_log_softmax_grad_rows": _log_softmax_grad_rows}
_C_SCALARS = {"float": _np.float32, "double": _np.float64, "int": _np.int32, "long long": _np.int64}

# What a kernel's C source may name besides its parameters and type placeholders: CUDA math functions the fused
# kernels use (float and double overloads) and C words. Anything else would fail NVRTC's compile on a GPU.
_CUDA_WORDS = {"exp", "log", "log1p", "expm1", "sqrt", "fabs", "fmax", "fmin", "tanh", "isnan", "isinf", "true",
               "false"}


def _kernel_params(params: str, is_input: bool) -> list[tuple[str, str]]:
    """(type, name) of each parameter, by CuPy's grammar (cupy/_core/_kernel.pyx, _get_param_info and
    ParameterInfo): comma-separated `[raw] [_non_const] type name`, the type one letter (a placeholder bound at
    the call) or a numpy dtype name."""
    found = []
    for param in params.strip().split(",") if params else ():
        words = param.split()
        if len(words) < 2:
            raise Exception(f"Syntax error: {param}")
        for word in words[:-2]:
            if word not in ("raw", "_non_const"):
                raise Exception(f'Unknown keyword "{word}"')
        kind, name = words[-2:]
        if len(kind) > 1:
            _np.dtype(kind)  # CuPy's get_dtype: a TypeError for a name numpy does not know
        found.append((kind, name))
    return found


def _check_source(what: str, source: str, names: set) -> None:
    """Every identifier in a kernel's C source is declared, a placeholder type or a CUDA word (number literals
    such as 1e-5f dropped first); else NVRTC's compile fails when the kernel is first called on a GPU."""
    for word in re.findall(r"[A-Za-z_]\w*", re.sub(r"(?<![\w.])[0-9.][\w.]*(?:[eE][-+]\d+\w*)?", " ", source)):
        if word not in names and word not in _CUDA_WORDS:
            raise Exception(f"{what} names '{word}', which is no parameter, type or known CUDA function: {source!r}")


def _check_kernel_name(name: str) -> None:
    if not re.match(r"[a-zA-Z_][a-zA-Z_0-9]*\Z", name):  # cupy/cuda/compiler.py, is_valid_kernel_name
        raise ValueError(f'Invalid kernel name: "{name}"')


def _bind_types(name: str, params: list, args: tuple) -> None:
    """A placeholder takes one dtype across its arrays; a named dtype takes only itself (cupy/_core/_kernel.pyx,
    _decide_params_type_core: 'Type is mismatched')."""
    bound: dict = {}
    for (kind, param), arg in zip(params, args):
        if not isinstance(arg, ndarray):
            continue
        want = bound.setdefault(kind, arg.dtype) if len(kind) == 1 else _np.dtype(kind)
        if arg.dtype != want:
            raise TypeError(f"Type is mismatched. {param} {arg.dtype.type} {want.type} {kind} (kernel {name})")


class ElementwiseKernel:
    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel", **options: Any):
        _check_kernel_name(name)
        self._in, self._out = _kernel_params(in_params, True), _kernel_params(out_params, False)
        if "i" in {p for _, p in self._in + self._out}:
            raise ValueError("Can not use 'i' as a parameter name")
        _check_source(name, operation, {word for param in self._in + self._out for word in param} | {"i"})
        self._name, self._run = name, _KERNELS[name]

    def __call__(self, *args: Any, **kwargs: Any) -> ndarray:
        if set(kwargs) - {"size", "stream", "block_size"}:
            raise TypeError(f"Wrong arguments {kwargs}")
        if len(args) not in (len(self._in), len(self._in) + len(self._out)):
            raise TypeError(f"Wrong number of arguments for {self._name!r}")
        _reject_host_arrays("ElementwiseKernel", args)
        _bind_types(self._name, self._in + self._out, args)
        return _wrap(self._run(*_unwrap(args)))


class ReductionKernel:
    """map_expr reads the inputs; reduce_expr combines `a` and `b`; post_map_expr writes the outputs from `a`
    (cupy/_core/_reduction.pyx, _create_reduction_function_code: REDUCE(a, b) and POST_MAP(a) are macros)."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
                 identity: str, name: str = "reduce_kernel", **options: Any):
        _check_kernel_name(name)
        self._in, self._out = _kernel_params(in_params, True), _kernel_params(out_params, False)
        types = {kind for kind, _ in self._in + self._out}
        _check_source(name, map_expr, types | {p for _, p in self._in})
        _check_source(name, reduce_expr, types | {"a", "b"})
        _check_source(name, post_map_expr, types | {"a"} | {p for _, p in self._out})
        _check_source(name, str(identity), types)
        self._name, self._run = name, _REDUCTIONS[name]

    def __call__(self, *args: Any, out: Any = None, axis: Any = None, keepdims: bool = False,
                 stream: Any = None) -> ndarray:
        if len(args) not in (len(self._in), len(self._in) + len(self._out)):
            raise TypeError(f"Wrong number of arguments for {self._name}")
        _reject_host_arrays("ReductionKernel", args)
        _bind_types(self._name, self._in + self._out, args)
        return _wrap(self._run(*_unwrap(args), axis=axis, keepdims=keepdims))


class RawKernel:
    """A kernel in CUDA C: its source must define `name` as an `extern "C" __global__` function; a call passes
    device arrays for its pointer parameters (of the element type the source names) and numpy scalars of each
    scalar parameter's exact C type (a Python int would be passed as a C long long, whatever the parameter)."""

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, *, enable_cooperative_groups: bool = False,
                 jitify: bool = False) -> None:
        _check_kernel_name(name)
        found = re.search(r'extern "C" __global__ void ' + name + r"\(([^)]*)\)", code)
        if found is None:
            raise Exception(f'the source defines no extern "C" __global__ function {name}')
        types = dict((alias, c) for c, alias in re.findall(r"typedef (\w+) (\w+);", code))
        self._params = []
        for param in found.group(1).split(","):
            kind = " ".join(param.replace("const ", "").split()[:-1])
            pointer = kind.endswith("*")
            c_type = types.get(kind.rstrip("* "), kind.rstrip("* "))
            self._params.append((pointer, _np.dtype(_C_SCALARS[c_type])))
        self._name, self._run = name, _RAW_KERNELS[name]

    def __call__(self, grid: tuple, block: tuple, args: tuple, *, shared_mem: int = 0) -> None:
        if len(args) != len(self._params):
            raise TypeError(f"{self._name} takes {len(self._params)} arguments, got {len(args)}")
        _reject_host_arrays("RawKernel", args)
        for i, ((pointer, dtype), arg) in enumerate(zip(self._params, args)):
            if pointer and not (isinstance(arg, ndarray) and arg.dtype == dtype):
                raise TypeError(f"{self._name}: argument {i} must be a device array of {dtype}, got {arg!r}")
            if not pointer and not (isinstance(arg, _np.generic) and arg.dtype == dtype):
                raise TypeError(f"{self._name}: argument {i} must be a numpy {dtype} scalar, got {arg!r}")
        threads = int(_np.prod(grid)) * int(_np.prod(block))
        self._run(threads, *_unwrap(tuple(args)))
