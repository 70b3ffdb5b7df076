"""log_softmax and its gradient over the last dim of a C-contiguous array, in one CUDA kernel launch each.

Why: through CuPy's reductions log_softmax takes three launches (max, sum of exponentials, the shift) and its
gradient two, and on the GPU machine those cost the host 84 and 38 µs (W3's (4096, 10) logits); a kernel of our
own costs one launch. One warp per row: its 32 lanes stride along the row (reads coalesce), then combine their
maximum and sum by warp shuffles. Rows longer than LONGEST_ROW take CuPy's reductions, which spread a row over
more threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LONGEST_ROW = 4096
THREADS = 256  # a block: 8 warps, so 8 rows
C_TYPES = {"f": "float", "d": "double"}

SOURCES = {
    # The maximum starts at the row's first element (no infinity constant needed); `v != v` lets NaN win, as
    # CuPy's max does, so a row holding NaN gives NaN throughout, as on the cpu.
    "actorgrad_log_softmax_rows": """
extern "C" __global__ void actorgrad_log_softmax_rows(const T* x, T* y, long long rows, int cols) {
    long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* in = x + row * cols;
    T m = in[0];
    for (int c = lane; c < cols; c += 32) { T v = in[c]; m = (v > m || v != v) ? v : m; }
    for (int step = 16; step; step >>= 1) {
        T o = __shfl_xor_sync(0xffffffffu, m, step);
        m = (o > m || o != o) ? o : m;
    }
    T s = 0;
    for (int c = lane; c < cols; c += 32) s += exp(in[c] - m);
    for (int step = 16; step; step >>= 1) s += __shfl_xor_sync(0xffffffffu, s, step);
    T l = log(s);
    for (int c = lane; c < cols; c += 32) y[row * cols + c] = in[c] - m - l;
}
""",
    "actorgrad_log_softmax_grad_rows": """
extern "C" __global__ void actorgrad_log_softmax_grad_rows(const T* g, const T* r, T* y, long long rows, int cols) {
    long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    long long start = row * cols;
    T s = 0;
    for (int c = lane; c < cols; c += 32) s += g[start + c];
    for (int step = 16; step; step >>= 1) s += __shfl_xor_sync(0xffffffffu, s, step);
    for (int c = lane; c < cols; c += 32) y[start + c] = g[start + c] - exp(r[start + c]) * s;
}
""",
}


class RowKernels:
    """The kernels above for float32 and float64, compiled on first use (CuPy caches them on disk)."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self.kernels: dict[tuple[str, str], Any] = {}

    @staticmethod
    def applies(x: Any, dims: tuple[int, ...]) -> bool:
        """Over the last dim only, of a C-contiguous non-empty array with rows of at most LONGEST_ROW."""
        return dims == (x.ndim - 1,) and x.flags.c_contiguous and x.shape[-1] <= LONGEST_ROW and x.size > 0

    def launch(self, name: str, arrays: tuple, out: Any) -> Any:
        cols = out.shape[-1]
        rows = out.size // cols
        kernel = self.kernels.get((name, out.dtype.char))
        if kernel is None:
            source = f"typedef {C_TYPES[out.dtype.char]} T;\n" + SOURCES[name]
            kernel = self.kernels[name, out.dtype.char] = self.cupy.RawKernel(source, name)
        rows_per_block = THREADS // 32
        kernel(((rows + rows_per_block - 1) // rows_per_block,), (THREADS,),
               (*arrays, out, np.int64(rows), np.int32(cols)))
        return out

    def log_softmax(self, x: Any) -> Any:
        return self.launch("actorgrad_log_softmax_rows", (x,), self.cupy.empty(x.shape, x.dtype))

    def log_softmax_grad(self, g: Any, result: Any) -> Any:
        return self.launch("actorgrad_log_softmax_grad_rows", (g, result), self.cupy.empty(g.shape, g.dtype))
