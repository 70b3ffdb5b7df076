"""actorgrad: reverse-mode autograd whose backward pass is a network of async actors inside trio.

The entry points that run the engine are awaitable (`await actorgrad.backward(...)`,
`await actorgrad.grad(...)`); the sync mirrors live where PyTorch has them (`loss.backward()`,
`actorgrad.autograd.grad(...)`).
"""

import numpy as np

from actorgrad import (
    amp,
    autograd,
    backends,
    creation,
    cuda,
    distributions,
    fft,
    interop,
    linalg,
    ops,
    random_tensors,
    settings,
    special,
    windows,
)
from actorgrad.accumulate_grad import AccumulateGrad
from actorgrad.amp import autocast, get_autocast_dtype, is_autocast_enabled
from actorgrad.amp.autocast import (
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    is_autocast_cache_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from actorgrad.amp.deprecated_state import *  # noqa: F403
from actorgrad.autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from actorgrad.creation import *  # noqa: F403
from actorgrad.default_device import get_default_device, set_default_device
from actorgrad.default_dtype import get_default_dtype, set_default_dtype
from actorgrad.devices import Device, device, stream
from actorgrad.dtype_info import finfo, iinfo
from actorgrad.engine import backward, grad
from actorgrad.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from actorgrad.interop import *  # noqa: F403
from actorgrad.interop import range as range  # not in __all__: keeps the builtin
from actorgrad.legacy_types import LEGACY_TYPES, set_default_tensor_type
from actorgrad.memory_formats import *  # noqa: F403
from actorgrad.node import Node
from actorgrad.ops import *  # noqa: F403
from actorgrad.ops.complex_parts import complex as complex  # not in __all__: keeps the builtin
from actorgrad.ops.storage_methods import Layout, strided
from actorgrad.print_options import set_printoptions
from actorgrad.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from actorgrad.random_binomial import binomial
from actorgrad.random_tensors import *  # noqa: F403
from actorgrad.scheduler import get_num_workers, profile, set_num_workers
from actorgrad.serialization import load, save
from actorgrad.settings import *  # noqa: F403
from actorgrad.storage import is_storage
from actorgrad.tensor import Tensor, bool_, float16, float32, float64, int32, int64
from actorgrad.tensor_construction import tensor
from actorgrad.windows import *  # noqa: F403

uint8, int8, int16 = np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)
# PyTorch's shell dtypes: tensors hold and convert them; arithmetic keeps to one of them (no promotion), as PyTorch's
uint16, uint32, uint64 = np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
cfloat, cdouble = complex64, complex128
# PyTorch's names; left out of __all__, so that `import *` keeps the builtins
bool, float, double, half, long, int = bool_, float32, float64, float16, int64, int32
# PyTorch's constants (math's and numpy's) and type names (a dtype is numpy's, a shape a tuple), also outside __all__
e, inf, nan, newaxis, pi = np.e, np.inf, np.nan, None, np.pi
dtype, Size, layout = np.dtype, tuple, Layout
globals().update(LEGACY_TYPES)  # FloatTensor, LongTensor ...

__all__ = [
    "AccumulateGrad", "Device", "Generator", "Node", "Tensor", "amp", "autocast", "autograd", "backends",
    "get_autocast_dtype", "is_autocast_enabled", "autocast_decrement_nesting", "autocast_increment_nesting",
    "clear_autocast_cache", "is_autocast_cache_enabled", "set_autocast_cache_enabled", "set_autocast_dtype",
    "set_autocast_enabled", *amp.deprecated_state.__all__, "set_anomaly_enabled", "is_storage", "backward", "bool_",
    "complex128",
    "complex64", "cuda", "device", "distributions",
    "enable_grad", "fft", "finfo", "iinfo", "float16", "float32", "float64", "func", "functional", "get_default_dtype",
    "get_num_workers",
    "grad", "initial_seed", "set_default_dtype",
    "int8",
    "int16", "int32", "int64", "is_grad_enabled", "inference_mode", "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled", "is_inference_mode_enabled", "linalg", "manual_seed", "nn", "no_grad", "ops", "optim",
    "profile", "set_grad_enabled", "set_num_workers", "special", "stream", "tensor", "testing", "uint8", "uint16",
    "uint32", "uint64", "utils",
    *ops.__all__, *creation.__all__, *random_tensors.__all__, *windows.__all__, "binomial",
    "default_generator", "get_default_device", "get_rng_state", "load", "save", "seed", "set_default_device",
    "set_printoptions", "set_default_tensor_type", "set_rng_state", "strided", *interop.__all__, *settings.__all__,
]

# Last: nn and optim build on the whole package above.
from actorgrad import func, functional, functional_aliases, nn, optim, testing, utils  # noqa: E402
from actorgrad.functional_aliases import *  # noqa: E402, F403  (torch.kl_div ...: built on nn.functional)
from actorgrad.nn import recurrent_functions  # noqa: E402
from actorgrad.nn.recurrent_functions import *  # noqa: E402, F403  (torch.lstm ...: nn's stacked layers)

__all__ += functional_aliases.__all__ + recurrent_functions.__all__
vmap = func.vmap  # PyTorch's top-level name for torch.func.vmap
