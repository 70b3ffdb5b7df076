"""Autocast: inside an enabled region, the ops of PyTorch's lists run in the dtype their list gives.

The state is per context, as PyTorch's is per thread: `_settings` (a ContextVar) holds each device type's enabled
flag and dtype, so `with autocast(...)` in one trio task or thread never changes another's ops; a task started
inside a region inherits it, as a trio task inherits every ContextVar, and a new thread starts without it.
`autocast_state` is the one value a listed op reads while autocast is off: None unless some device type is
enabled in this context. Ops off the lists read nothing. A listed op's hook is two lines at its top:

    if autocast_state.get() is not None:
        return autocast_call(matmul, "matmul", input, other)

`autocast_call` casts the op's tensors by its row in `POLICIES` and runs the op's body with autocast off, as
PyTorch runs a listed op's kernel (ops it calls inside do not cast again); the hook passes every parameter on, so
a parameter added to a listed op goes into its hook too. The rows are PyTorch 2.13's lists for the ops actorgrad
has: CUDA's from its op reference and autocast_mode.h, CPU's from its kernels (its linear algebra, FFT, padding
and 3-d pooling rows are left out; cat and stack promote mixed inputs by themselves). A cast is a recorded
`.to(dtype)`, so gradients flow back through it and a leaf's gradient keeps the leaf's dtype. As in PyTorch, only
float16/float32 tensors on the region's device type are cast (float64 ones never are), an op given an explicit
`dtype=` or `out=` is not cast, and a float32 leaf that requires grad is cast once per region (the weight cache; a
cached copy is made again after the leaf changes in place).
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.tensor import Tensor, float16, float32

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"
DEVICE_TYPES = ("cpu", "cuda")

# The ops of both device types' lower-precision lists, then each device type's own rows.
_LOWER_BOTH = (
    "addbmm addmm baddbmm bmm chain_matmul conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d "
    "conv_transpose3d convolution einsum linear matmul mm multi_dot prelu scaled_dot_product_attention vecdot"
)
_CUDA = {
    LOWER: _LOWER_BOTH + " addmv addr mv lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell",
    FP32: (
        "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus layer_norm "
        "group_norm cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss "
        "hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
        "multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
        "binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp interpolate prod softmax log_softmax "
        "cumprod cumsum vector_norm matrix_norm sum norm cross_entropy softmin normalize"
    ),
    PROMOTE: "addcdiv addcmul atan2 bilinear cross dot vdot grid_sample index_put tensordot scatter_add",
    BANNED: "binary_cross_entropy",
}
_CPU = {
    LOWER: _LOWER_BOTH,
    FP32: (
        "binary_cross_entropy grid_sample prod cdist mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss "
        "poisson_nll_loss smooth_l1_loss cross_entropy l1_loss huber_loss margin_ranking_loss soft_margin_loss "
        "triplet_margin_loss multi_margin_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits"
    ),
    PROMOTE: "index_copy",
}
# device type -> op name -> policy
POLICIES: dict[str, dict[str, str]] = {
    device_type: {op: policy for policy, ops in rows.items() for op in ops.split()}
    for device_type, rows in (("cuda", _CUDA), ("cpu", _CPU))
}

BANNED_ERROR = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)
SET_ENABLED_FORMS = (
    "set_autocast_enabled() received an invalid combination of arguments - got (), but expected one of:\n"
    " * (str device_type, bool enabled)\n * (bool enabled)\n"
)
NO_BFLOAT16 = (
    "CPU autocast defaults to bfloat16, which actorgrad lacks (numpy has no bfloat16 dtype): pass "
    "dtype=actorgrad.float16, which PyTorch's CPU autocast also takes"
)


class Settings(NamedTuple):
    """One context's autocast settings: per device type whether it is on and its dtype (None: CPU's bfloat16
    default, which actorgrad lacks), whether leaves are cached, how many regions are open and their cache."""

    enabled: dict[str, bool]
    dtypes: dict[str, Any]
    cache_enabled: bool
    nesting: int
    cache: dict[int, tuple[Tensor, int, Tensor]]


_DEFAULT = Settings({"cpu": False, "cuda": False}, {"cpu": None, "cuda": float16}, True, 0, {})
_settings: ContextVar[Settings] = ContextVar("actorgrad_autocast_settings")
# The settings while some device type is enabled in this context, else None: the listed ops' one check.
autocast_state: ContextVar[Settings | None] = ContextVar("actorgrad_autocast_state", default=None)


def _set(settings: Settings) -> None:
    _settings.set(settings)
    autocast_state.set(settings if any(settings.enabled.values()) else None)


def _checked_device_type(device_type: Any) -> str:
    """`device_type` if autocast knows it, else PyTorch's error for it."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type in DEVICE_TYPES:
        return device_type
    if device_type == "async_cpu":
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    raise RuntimeError(f"Expected one of cpu, cuda, async_cpu device type at start of device string: {device_type}")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast runs on `device_type` ("cpu" and "cuda"; "async_cpu", the test device, has none)."""
    try:
        return _checked_device_type(device_type) in DEVICE_TYPES
    except RuntimeError:
        if device_type == "async_cpu":
            return False
        raise


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether ops on `device_type` autocast in this context."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_autocast_enabled(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    return _settings.get(_DEFAULT).enabled[_checked_device_type(device_type)]


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype `device_type`'s lower-precision ops run in; None for CPU until set (PyTorch's default there,
    bfloat16, has no counterpart in actorgrad)."""
    return _settings.get(_DEFAULT).dtypes[_checked_device_type(device_type)]


def is_autocast_cache_enabled() -> bool:
    return _settings.get(_DEFAULT).cache_enabled


def set_autocast_enabled(device_type: str | bool | None = None, enabled: bool | None = None) -> None:
    """Turn autocast on `device_type` on or off in this context, outside any `with` (nothing restores it).
    PyTorch's older form `set_autocast_enabled(enabled)` sets CUDA's."""
    position = 2
    if enabled is None:
        device_type, enabled, position = "cuda", device_type, 1
    elif device_type is None:
        device_type, position = "cuda", 1
    if enabled is None:
        raise TypeError(SET_ENABLED_FORMS)
    if enabled.__class__ is not bool:
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position {position}) must be bool, not "
                        f"{type(enabled).__name__}")
    old = _settings.get(_DEFAULT)
    device_type = _checked_device_type(device_type)
    if enabled and old.dtypes[device_type] is None:
        raise RuntimeError(NO_BFLOAT16)
    cache = old.cache if old.nesting else {}
    _set(old._replace(enabled={**old.enabled, device_type: enabled}, cache=cache))


def is_dtype(dtype: Any) -> bool:
    """Whether `dtype` names a dtype as actorgrad's are named: a numpy dtype or scalar type."""
    return isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic))


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """The dtype autocast on `device_type` runs its lower-precision ops in, from now on in this context."""
    if not is_dtype(dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    old = _settings.get(_DEFAULT)
    _set(old._replace(dtypes={**old.dtypes, _checked_device_type(device_type): np.dtype(dtype)}))


def set_autocast_cache_enabled(enabled: bool) -> None:
    if enabled.__class__ is not bool:
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _set(_settings.get(_DEFAULT)._replace(cache_enabled=enabled))


def autocast_increment_nesting() -> int:
    """Count one more open region, as `with autocast` does on entry; the new count. The leaf cache lives while
    the count is not 0."""
    old = _settings.get(_DEFAULT)
    _set(old._replace(nesting=old.nesting + 1, cache=old.cache if old.nesting else {}))
    return old.nesting + 1


def autocast_decrement_nesting() -> int:
    """Count one region fewer (PyTorch lets the count go below 0); the new count. The cache stays until
    `clear_autocast_cache`, as in PyTorch, whose `autocast.__exit__` clears it when the count reaches 0."""
    old = _settings.get(_DEFAULT)
    _set(old._replace(nesting=old.nesting - 1))
    return old.nesting - 1


def clear_autocast_cache() -> None:
    """Drop the casts of leaves cached in this context's open regions."""
    _settings.get(_DEFAULT).cache.clear()


class autocast:
    """Run the ops of a region (a `with` block or a decorated function) in mixed precision on `device_type`.

    `dtype` is the lower precision (default: the current setting, float16 for CUDA; CPU's default is PyTorch's
    bfloat16, which actorgrad lacks, so CPU regions need dtype=float16). Regions nest; leaving one restores the
    settings it found, also when an exception leaves it."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: bool | None = None):
        self.device = _checked_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else np.dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if self.device == "cuda":
                from actorgrad import cuda

                if not cuda.is_available():
                    warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype is None:
                raise RuntimeError(NO_BFLOAT16)
            elif self.fast_dtype != float16:
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast only "
                    "supports dtypes of actorgrad.float16 currently (PyTorch's bfloat16 has no counterpart here).",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self._prev = old = _settings.get(_DEFAULT)
        cache = old.cache if old.nesting else {}
        _set(Settings(
            {**old.enabled, self.device: self._enabled}, {**old.dtypes, self.device: self.fast_dtype},
            self._cache_enabled, old.nesting + 1, cache,
        ))
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._prev.nesting:  # the outermost region: its cached casts go
            _settings.get(_DEFAULT).cache.clear()
        _set(self._prev)

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use "
                f"autocast as a context manager? For example:\n    with actorgrad.autocast(device_type=...):\n"
                f"        output = model(input)"
            )

        @functools.wraps(func)
        def in_region(*args: Any, **kwargs: Any) -> Any:
            with copy.copy(self):  # a region of its own per call: calls may nest or run on several threads
                return func(*args, **kwargs)

        return in_region


def autocast_call(fn: Callable, op: str, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` with its tensors cast as `op`'s row for their device type says (if autocast is on
    for that type) and its body run with autocast off, as PyTorch runs a listed op's kernel: ops it calls inside
    do not cast again."""
    values = (*args, *kwargs.values())
    settings = _settings.get(_DEFAULT)
    device_type = _device_type(values)
    policy = None if device_type is None or not settings.enabled[device_type] else POLICIES[device_type].get(op)
    if policy is not None:
        if policy == BANNED:
            raise RuntimeError(BANNED_ERROR)
        if policy == LOWER:
            target = settings.dtypes[device_type]
        elif policy == FP32:
            target = float32
        else:
            target = _widest(values, settings.dtypes[device_type], device_type)
        cache = settings.cache if policy == LOWER and settings.cache_enabled and _grad_enabled.get() else None
        args, kwargs = _cast(args, target, device_type, cache), _cast(kwargs, target, device_type, cache)
    outside = autocast_state.set(None)
    try:
        return fn(*args, **kwargs)
    finally:
        autocast_state.reset(outside)


def _tensors(args: Any) -> Any:
    """The tensors of `args` and of the lists and tuples among them (cat's, multi_dot's, an LSTM state)."""
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _device_type(args: tuple) -> str | None:
    """The device type an op on `args` runs on: the first non-cpu tensor's, else cpu (None without tensors or
    on a device type without autocast)."""
    found = None
    for t in _tensors(args):
        found = t._device.type
        if found != "cpu":
            break
    return found if found in DEVICE_TYPES else None


def _eligible(t: Tensor, device_type: str) -> bool:
    return t._data.dtype in (float16, float32) and t._device.type == device_type


def _widest(args: tuple, lower: Any, device_type: str) -> Any:
    """The promote list's dtype: the autocast dtype promoted with each eligible tensor's."""
    widest = lower
    for t in _tensors(args):
        if _eligible(t, device_type):
            widest = np.promote_types(widest, t._data.dtype)
    return widest


def _cast(value: Any, dtype: Any, device_type: str, cache: dict | None = None) -> Any:
    """`value`'s eligible tensors, and those inside its lists, tuples and dicts, cast to `dtype`; with `cache`, a
    leaf that requires grad is cast once per region (again after it changes in place)."""
    if isinstance(value, dict):
        return {k: _cast(v, dtype, device_type, cache) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype, device_type, cache) for v in value)
    if not isinstance(value, Tensor) or not _eligible(value, device_type) or value._data.dtype == dtype:
        return value
    if cache is None or not (value._requires_grad and value._grad_fn is None and value._base is None):
        return value.to(dtype)
    key = id(value)
    version = value._version
    entry = cache.get(key)
    if entry is None or entry[0] is not value or entry[1] != version or entry[2].dtype != dtype:
        entry = cache[key] = (value, version, value.to(dtype))
    return entry[2]


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None) -> Callable:
    """Decorate a custom Function's `forward`: with `cast_inputs`, inside an enabled region its floating
    arguments are cast to that dtype and it runs with autocast off; without, it runs in the region's state.
    Either way `custom_bwd` gives `backward` the state `forward` ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        if cast_inputs is None or not enabled:
            ctx._fwd_used_autocast = enabled and cast_inputs is None
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, cast_inputs, device_type), **_cast(kwargs, cast_inputs, device_type))

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorate a custom Function's `backward` (after `custom_fwd` on its forward): it runs in the autocast
    state its forward ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
