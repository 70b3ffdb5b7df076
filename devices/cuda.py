"""CUDA devices through CuPy, imported only when a CUDA device is first used.

CudaArrayOps fuses the rule helpers that numpy spells in several kernels into one CUDA kernel each: a launch
costs more host time than most small kernels take on the GPU.

A CudaStream wraps a `cupy.cuda.Stream`: `launch(kernel)` runs the kernel's Python on the calling thread with
the stream current, so the CuPy kernels it issues queue on that stream. Events are `cupy.cuda.Event`s; one is
awaited from trio by a host function queued after it on its stream (`launch_host_func`), which wakes the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.devices.array_ops import ArrayOps
from actorgrad.devices.cublas import row_sums_of
from actorgrad.devices.cuda_rows import RowKernels
from actorgrad.devices.device import Device

FUSED_DTYPES = "fd"  # dtype.char of float32 and float64 (dtype.name is a Python property, slow on this path)
# What CuPy's add.at adds in with integer indexes (cupy/_core/_routines_indexing.pyx, _scatter_op_single): dtype.char
# of int32, int64, float16, float32, float64, uint32, uint64
ADD_AT_DTYPES = "ilqefdILQ"


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError("CUDA devices need CuPy (pip install cupy-cuda12x or cupy-cuda13x)") from error
    if not cupy.cuda.is_available():
        raise RuntimeError("Torch not compiled with CUDA enabled: no CUDA driver or device found")
    return cupy


class CudaEvent:
    __slots__ = ("event", "stream")

    def __init__(self, stream: CudaStream) -> None:
        self.stream = stream
        self.event = stream.cupy.cuda.Event(block=True, disable_timing=True)  # block: synchronize() sleeps
        self.event.record(stream.stream)

    def query(self) -> bool:
        return self.event.done

    def synchronize(self) -> None:
        self.event.synchronize()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` from CUDA's host-function thread once the stream has passed this event."""
        self.stream.stream.launch_host_func(lambda _: callback(), None)


class CudaStream:
    """The default stream wraps CUDA's legacy default stream, which orders itself with every blocking stream, so
    backward kernels on it follow the forward's kernels; new streams are non-blocking."""

    issues_inline = True  # launch() runs the kernel's Python now: the arrays it returns are its outputs

    def __init__(self, device: Device, default: bool = False) -> None:
        self.device = device
        self.cupy = device.xp
        with self.cupy.cuda.Device(device.index):
            self.stream = self.cupy.cuda.Stream.null if default else self.cupy.cuda.Stream(non_blocking=True)

    def use(self) -> None:
        """Make this CuPy's current stream on this thread (forward ops inside `actorgrad.stream(s)` queue on it),
        on its own GPU (the null stream names none)."""
        with self.cupy.cuda.Device(self.device.index):
            self.stream.use()

    def launch(self, kernel: Callable[[], Any]) -> Any:
        """Run `kernel` now with this stream current; its CuPy kernels queue here. Returns what it returns.

        The stream current before is made current again after, not restored by CuPy's `with stream:`, whose exit
        makes its own stack's top current, forgetting a stream made current by `use()` (`actorgrad.stream`)."""
        cuda = self.cupy.cuda
        with cuda.Device(self.device.index):
            before = cuda.get_current_stream()
            self.stream.use()
            try:
                return kernel()
            finally:
                before.use()

    def enqueue(self, kernel: Callable[[], None]) -> None:
        self.launch(kernel)

    def wait_event(self, event: CudaEvent) -> None:
        self.stream.wait_event(event.event)

    def record_event(self) -> CudaEvent:
        return CudaEvent(self)

    def synchronize(self) -> None:
        self.stream.synchronize()


class CudaArrayOps(ArrayOps):
    """ArrayOps on CuPy arrays, with fused kernels where numpy needs several (other dtypes take the generic
    path)."""

    def __init__(self, cupy: Any) -> None:
        super().__init__(cupy)
        self.row_sums = row_sums_of(cupy)
        self.rows = RowKernels(cupy)
        self._relu_grad = cupy.ElementwiseKernel("T g, T r", "T y", "y = r != 0 ? g : (T)0", "actorgrad_relu_grad")
        self._exp_sum = cupy.ReductionKernel(
            "T x, T m", "T s", "exp(x - m)", "a + b", "s = a", "0", "actorgrad_exp_sum"
        )
        self._shift_log = cupy.ElementwiseKernel(
            "T x, T m, T s", "T y", "y = x - m - log(s)", "actorgrad_log_softmax"
        )
        self._log_softmax_grad = cupy.ElementwiseKernel(
            "T g, T r, T s", "T y", "y = g - exp(r) * s", "actorgrad_log_softmax_grad"
        )

    @staticmethod
    def _fusable(first: Any, *others: Any) -> bool:
        """Arrays the fused kernels take: float32 or float64, all of one dtype (else the generic path)."""
        return first.dtype.char in FUSED_DTYPES and all(other.dtype == first.dtype for other in others)

    def sum_to(self, g: Any, shape: tuple[int, ...]) -> Any:
        if g.ndim == 2 and len(shape) == 1 and shape[0] == g.shape[1] and self.row_sums is not None:
            out = self.row_sums(g)
            if out is not None:
                return out
        return super().sum_to(g, shape)

    def broadcast_to(self, g: Any, shape: tuple[int, ...]) -> Any:
        """Always a view: numpy fills small copies as cheaper, but on a GPU the fill is a launch."""
        return g if g.shape == shape else self.xp.broadcast_to(g, shape)

    def add_at(self, a: Any, index: Any, values: Any) -> None:
        """Complex arrays add their real and imaginary parts, each a float view. Other integer and bool arrays
        add in int64 and are cast back: that wraps as their own addition does, and a bool is True where any was."""
        if a.dtype.char in ADD_AT_DTYPES:
            return super().add_at(a, index, values)
        if a.dtype.kind == "c":
            values = values.astype(a.dtype, copy=False)
            super().add_at(a.real, index, values.real)
            return super().add_at(a.imag, index, values.imag)
        wide = a.astype("int64")
        self.xp.add.at(wide, index, values.astype("int64", copy=False))
        a[...] = wide.astype(a.dtype)

    def accumulate(self, ufunc: str, x: Any, axis: int) -> Any:
        """CuPy's ufuncs accumulate only add and multiply (ufunc.accumulate in cupy/_core/_kernel.pyx), so this
        scans in log2(n) steps: each combines every element with the running value `step` places before it."""
        op = getattr(self.xp, ufunc)
        out = self.xp.moveaxis(x, axis, -1).copy()
        step = 1
        while step < out.shape[-1]:
            out[..., step:] = op(out[..., step:], out[..., :-step])
            step *= 2
        return self.xp.moveaxis(out, -1, axis)

    def relu_grad(self, g: Any, result: Any) -> Any:
        if not self._fusable(g, result):
            return super().relu_grad(g, result)
        return self._relu_grad(g, result)

    def log_softmax(self, x: Any, dims: tuple[int, ...]) -> Any:
        if not self._fusable(x) or not all(x.shape[d] for d in dims):
            return super().log_softmax(x, dims)
        if self.rows.applies(x, dims):
            return self.rows.log_softmax(x)
        shift = x.max(axis=dims, keepdims=True)
        total = self._exp_sum(x, self.xp.broadcast_to(shift, x.shape), axis=dims, keepdims=True)
        return self._shift_log(x, shift, total)

    def log_softmax_grad(self, g: Any, result: Any, dims: tuple[int, ...]) -> Any:
        if not self._fusable(g, result):
            return super().log_softmax_grad(g, result, dims)
        if self.rows.applies(g, dims) and result.flags.c_contiguous:
            return self.rows.log_softmax_grad(g, result)
        return self._log_softmax_grad(g, result, g.sum(axis=dims, keepdims=True))


def cuda_device(index: int) -> Device:
    cupy = _cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index}, {count} device(s) present)")
    return Device("cuda", index, cupy, CudaStream, CudaArrayOps(cupy))
