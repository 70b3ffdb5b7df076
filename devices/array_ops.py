"""Raw-array helpers that gradient rules use beside Python's operators (the fast path of a backward).

`TensorOps` in actorgrad mirrors this interface on Tensors, so the same rule also runs when a backward is
recorded (`create_graph=True`).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from actorgrad.devices import convolution, gamma, triangular
from actorgrad.devices.erf_float32 import erf_for_dtype
from actorgrad.devices.matrix_exp import matrix_exp as matrix_exp_kernel

# Measured here: np.broadcast_to costs about 2.5 µs (more when cold), filling a fresh array of 1280 elements
# about 0.5 µs; up to this many elements the copy wins.
SMALL_BROADCAST = 4096
# The integer type of each float's size, to handle floats as bits
SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def reduced_axes(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of `shape` to sum so that it broadcasts back to `target` (the inverse of broadcasting)."""
    lead = len(shape) - len(target)
    return tuple(range(lead)) + tuple(lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1)


def is_writeable(array: Any) -> bool:
    """May `array` be changed in place? A numpy array may be read-only (a broadcast view, a frozen buffer); a
    CuPy array has no such flag (its flags are only the contiguity ones and owndata) and always may."""
    return getattr(array.flags, "writeable", True)


def padded(xp: ModuleType, x: Any, pad: tuple[int, ...], value: Any) -> Any:
    """`x` padded as `torch.nn.functional.pad(x, pad, value=value)`: pairs from the last dim backwards;
    negative widths crop the input."""
    if not x.ndim:  # the only pad a 0-d array takes is (); numpy and CuPy refuse its empty pad widths
        return x.copy()
    crop = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        crop[d] = slice(max(-before, 0), x.shape[d] - max(-after, 0))
        widths[d] = (max(before, 0), max(after, 0))
    return xp.pad(x[tuple(crop)], widths, constant_values=value)


def kept_max(x: Any, dims: tuple[int, ...]) -> Any:
    """The max over `dims`, kept as size-1 dims; -inf where a dim is empty (CuPy's max takes no `initial=`)."""
    if all(x.shape[d] for d in dims):
        return x.max(axis=dims, keepdims=True)
    return x.sum(axis=dims, keepdims=True) - np.inf


def along(xp: ModuleType, indices: Any, dim: int) -> tuple:
    """The advanced index that picks `indices`' entries along `dim` and their own positions along the other dims
    (numpy's take_along_axis as an index, so it also assigns)."""
    return tuple(
        indices if d == dim else xp.arange(n).reshape((-1,) + (1,) * (indices.ndim - 1 - d))
        for d, n in enumerate(indices.shape)
    )


class ArrayOps:
    """Gradient-rule helpers on raw arrays of one array module (numpy; cupy for CUDA devices)."""

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp

    @staticmethod
    def unpack(values: tuple, node: Any) -> list:
        """Saved values as raw arrays: tensors and saved outputs give their data, other values pass through."""
        return [getattr(v, "_data", v) for v in values]

    @staticmethod
    def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
        if g.shape == shape:
            return g
        axes = reduced_axes(g.shape, shape)
        if len(axes) == g.ndim - len(shape):  # leading dims only (a bias): the sum has the shape, and no base
            return g.sum(axis=axes)
        return g.sum(axis=axes, keepdims=True).reshape(shape)

    def broadcast_to(self, g: Any, shape: tuple[int, ...]) -> Any:
        if g.shape == shape:
            return g
        if math.prod(shape) > SMALL_BROADCAST:
            return self.xp.broadcast_to(g, shape)  # a view: no memory for large shapes
        out = self.xp.empty(shape, g.dtype)  # small: a filled copy is several times cheaper than the view
        out[...] = g
        return out

    @staticmethod
    def reshape(g: Any, shape: tuple[int, ...]) -> Any:
        return g if g.shape == shape else g.reshape(shape)

    @staticmethod
    def swapaxes(g: Any, dim0: int, dim1: int) -> Any:
        return g.swapaxes(dim0, dim1)

    @staticmethod
    def permute(g: Any, dims: tuple[int, ...]) -> Any:
        return g.transpose(dims)

    @staticmethod
    def sum(g: Any, dim: tuple[int, ...] | None, keepdim: bool = False) -> Any:
        return g.sum(axis=dim, keepdims=keepdim)

    def conj(self, x: Any) -> Any:
        """The complex conjugate; a real array is its own (no copy), so the rules that conjugate, as PyTorch's do
        for complex inputs, cost real ones next to nothing. The test is `.real is x` (numpy's and CuPy's `.real`
        of a real array is the array itself): measured with callgrind, the MLP benchmark's step, 7 calls, costs
        0.1% more with it, 0.4% with `x.dtype.kind == "c"` (two attribute lookups). Python numbers (a zero-dim
        host operand saved beside CuPy arrays, `Device.kernel_operand`) answer both the same way."""
        return x if x.real is x else x.conjugate()

    def exp(self, x: Any) -> Any:
        return self.xp.exp(x)

    def log(self, x: Any) -> Any:
        return self.xp.log(x)

    @staticmethod
    def relu_grad(g: Any, result: Any) -> Any:
        """`g` where relu's output is not 0 (positive, or NaN: PyTorch's threshold_backward passes the gradient
        through NaN), and 0 where it is, even where `g` is inf or NaN: PyTorch picks, it does not multiply (inf * 0
        is NaN). Masking the gradient's bits costs less than the multiply by the mask did (19.6 µs on W3's
        (128, 512) float32, against 20.0; np.where costs 90)."""
        bits = SAME_SIZE_INT.get(g.dtype.itemsize) if g.dtype.kind == "f" else None
        if bits is None:
            return g * (result != 0)
        keep = (-(result != 0).view(np.int8)).astype(bits)  # -1 widens to all bits set
        keep &= g.view(bits)
        return keep.view(g.dtype)

    def log_softmax(self, x: Any, dims: tuple[int, ...]) -> Any:
        """log(softmax(x)) over `dims`, shifted by the max; a row of -inf gives nan, as in PyTorch."""
        with np.errstate(invalid="ignore"):
            shifted = x - kept_max(x, dims)
            return shifted - self.xp.log(self.xp.exp(shifted).sum(axis=dims, keepdims=True))

    def log_softmax_grad(self, g: Any, result: Any, dims: tuple[int, ...]) -> Any:
        return g - self.xp.exp(result) * g.sum(axis=dims, keepdims=True)

    @staticmethod
    def equal_mask(x: Any, y: Any) -> Any:
        return (x == y).astype(x.dtype)

    def cast(self, g: Any, target: Any) -> Any:
        """`g` in the dtype `target`, or, for a `(dtype, device)` pair, in that dtype on that device."""
        if target.__class__ is tuple:
            target, where = target
            g = self.to_device(g, where)
        if g.dtype.kind == "c" and np.dtype(target).kind != "c":
            g = g.real  # a real input of a complex op: the real part, as PyTorch's handle_r_to_c
        return g.astype(target, copy=False)

    def zeros_like(self, x: Any) -> Any:
        return self.xp.zeros_like(x)

    def zeros(self, shape: tuple[int, ...], like: Any) -> Any:
        """Zeros of `shape` in `like`'s dtype (the gradient of a piece that got none, beside one that got one)."""
        return self.xp.zeros(shape, like.dtype)

    def prod_others(self, x: Any, dims: tuple[int, ...]) -> Any:
        """For each element, the product of the other elements of its slice over `dims`, without dividing:
        exact where x holds zeros. Exclusive running products from both ends, multiplied."""
        xp = self.xp
        if x.size == 0:
            return xp.ones_like(x)
        order = [d for d in range(x.ndim) if d not in dims] + list(dims)
        moved = x.transpose(order)
        n = math.prod(x.shape[d] for d in dims)
        flat = moved.reshape(moved.shape[: x.ndim - len(dims)] + (n,))
        ones = xp.ones(flat.shape[:-1] + (1,), x.dtype)
        before = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([flat[..., 1:], ones], axis=-1), -1), axis=-1), -1)
        return (before * after).reshape(moved.shape).transpose(sorted(range(x.ndim), key=order.__getitem__))

    def add_at(self, a: Any, index: Any, values: Any) -> None:
        """Add `values` into `a` at the advanced `index`, in place; repeated positions add up."""
        self.xp.add.at(a, index, values)

    def accumulate(self, ufunc: str, x: Any, axis: int) -> Any:
        """The running `ufunc` (maximum, minimum, logaddexp) along `axis`: cummax's, cummin's, logcumsumexp's."""
        return getattr(self.xp, ufunc).accumulate(x, axis=axis)

    def reverse_cumsum(self, g: Any, dim: int) -> Any:
        """The running sum along `dim` from the far end: cumsum's gradient."""
        xp = self.xp
        return xp.flip(xp.cumsum(xp.flip(g, dim), axis=dim), dim)

    def scatter_along(self, g: Any, indices: Any, dim: int, shape: tuple[int, ...]) -> Any:
        """A zero array of `shape` holding g at `indices` along `dim` (g and indices keep `dim` as size 1)."""
        positions = self.xp.arange(shape[dim]).reshape((-1,) + (1,) * (len(shape) - dim - 1))
        return (positions == indices) * g

    def where(self, condition: Any, x: Any, y: Any) -> Any:
        """x where condition holds, else y (either may be a Python number, which keeps the other's dtype). The
        condition may be a Python bool, from comparing numbers: CuPy's where takes arrays only."""
        if condition.__class__ is bool:
            condition = np.bool_(condition)
        return self.xp.where(condition, x, y)

    def convolution(self, x: Any, weight: Any, geometry: Any) -> Any:
        return convolution.convolution(self.xp, x, weight, geometry)

    def convolution_input_grad(self, g: Any, weight: Any, input_shape: tuple[int, ...], geometry: Any) -> Any:
        """The adjoint of a convolution in its input (a transposed convolution of g)."""
        return convolution.convolution_input_grad(self.xp, g, weight, input_shape, geometry)

    def convolution_weight_grad(self, x: Any, g: Any, weight_shape: tuple[int, ...], geometry: Any) -> Any:
        """The adjoint of a convolution in its weight (a convolution of x with g)."""
        return convolution.convolution_weight_grad(self.xp, x, g, weight_shape, geometry)

    def sign(self, x: Any) -> Any:
        """NaN gives 0, as PyTorch's sgn does (so abs passes no NaN gradient); z / |z| for a complex z, 0 at 0 (as
        PyTorch's sgn; older array modules give the sign of the real part)."""
        xp = self.xp
        if x.dtype.kind == "c":
            magnitude = xp.abs(x)
            zero = magnitude == 0
            return xp.where(zero, 0, x / xp.where(zero, 1, magnitude))
        return xp.nan_to_num(xp.sign(x))

    def trunc(self, x: Any) -> Any:
        return self.xp.trunc(x)

    def index(self, g: Any, basic: tuple, advanced: tuple | None) -> Any:
        """`g[basic][advanced]`: basic indexing (ints, slices, None) first, then advanced, as PyTorch does."""
        out = g[basic]
        if advanced is not None:
            out = out[advanced]
        return self.xp.asarray(out)  # one selected element comes back as a numpy scalar

    def index_put_zeros(self, g: Any, shape: tuple[int, ...], basic: tuple, advanced: tuple | None) -> Any:
        """Zeros of `shape` with `g` written through `index(., basic, advanced)`; repeated advanced indexes add."""
        out = self.xp.zeros(shape, g.dtype)
        if advanced is None:
            out[basic] = g
        else:
            self.add_at(out[basic], advanced, g)  # out[basic] is a view: the sums land in out
        return out

    def flip(self, g: Any, dims: tuple[int, ...]) -> Any:
        return self.xp.flip(g, dims)

    def roll(self, g: Any, shifts: tuple[int, ...], dims: tuple[int, ...] | None) -> Any:
        return self.xp.roll(g, shifts, dims)

    def pad(self, g: Any, pad: tuple[int, ...]) -> Any:
        return padded(self.xp, g, pad, 0)

    def sin(self, x: Any) -> Any:
        return self.xp.sin(x)

    def cos(self, x: Any) -> Any:
        return self.xp.cos(x)

    def tanh(self, x: Any) -> Any:
        return self.xp.tanh(x)

    def sigmoid(self, x: Any) -> Any:
        """1 / (1 + exp(-x)), from exp(-|x|) so that it never underflows to 0 far left (the tanh form rounds
        sigmoid(-50) to 0, where PyTorch gives 2e-22, and log(sigmoid) to -inf)."""
        xp = self.xp
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1, e) / (1 + e)

    def erf(self, x: Any) -> Any:
        return erf_for_dtype(self.xp, x).astype(x.dtype, copy=False)

    def polygamma(self, n: int, x: Any) -> Any:
        """The n-th derivative of digamma (n = 0: digamma itself), in x's dtype."""
        return gamma.polygamma(self.xp, n, x).astype(x.dtype, copy=False)

    def erfinv(self, x: Any) -> Any:
        return gamma.erfinv(self.xp, x).astype(x.dtype, copy=False)

    def gather_last(self, x: Any, index: Any) -> Any:
        """x's elements at `index` along its last axis (the other axes align)."""
        return self.xp.take_along_axis(x, index, -1)

    def scatter_add_last(self, g: Any, index: Any, size: int) -> Any:
        """The adjoint of gather_last: g's elements summed into `size` slots along the last axis; repeated
        indices accumulate (one bincount over all rows at once)."""
        rows = math.prod(g.shape[:-1])
        offsets = (self.xp.arange(rows) * size).reshape(*g.shape[:-1], 1)
        sums = self.xp.bincount((index + offsets).ravel(), weights=g.ravel(), minlength=rows * size)
        return sums.astype(g.dtype, copy=False).reshape(*g.shape[:-1], size)

    def einsum(self, equation: str, *operands: Any) -> Any:
        return self.xp.einsum(equation, *operands)

    def embedding_backward(self, g: Any, indices: Any, num_weights: int, padding_idx: int | None) -> Any:
        """Each gradient row added into its index's weight row (duplicates accumulate); padding_idx's row stays 0."""
        rows = g.reshape(-1, g.shape[-1])
        out = self.xp.zeros((num_weights, rows.shape[1]), g.dtype)
        self.add_at(out, indices.ravel(), rows)
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    @staticmethod
    def embedding_rows(weight: Any, indices: Any, padding_idx: int | None) -> Any:
        """The adjoint of embedding_backward: weight's rows at indices, zero where the index is padding_idx."""
        rows = weight[indices]
        if padding_idx is not None:
            rows[indices == padding_idx] = 0
        return rows

    def same_mask(self, x: Any, y: Any) -> Any:
        """1 where x equals y or both are NaN, else 0, in x's dtype: where a NaN extreme came from."""
        xp = self.xp
        return ((x == y) | (xp.isnan(x) & xp.isnan(y))).astype(x.dtype)

    def put_along(self, g: Any, indices: Any, dim: int, shape: tuple[int, ...]) -> Any:
        """Zeros of `shape` with g added at `indices` along `dim` (repeated indices, as cummax's, accumulate): the
        adjoint of taking `indices` along `dim`."""
        out = self.xp.zeros(shape, g.dtype)
        self.add_at(out, along(self.xp, indices, dim), g)
        return out

    def cumprod_grad(self, g: Any, x: Any, result: Any, dim: int) -> Any:
        """cumprod's gradient: sum over j >= i of g_j times the product of x_k for k <= j but k != i. Without
        zeros that is reverse_cumsum(g * result) / x; with one, each product is taken with x_i replaced by 1
        (n x the memory, n the length along dim, only for inputs holding zeros). The products conjugated for
        complex inputs."""
        xp = self.xp
        if bool(xp.all(x != 0)):
            return self.reverse_cumsum(g * self.conj(result), dim) / self.conj(x)
        moved, gm = xp.moveaxis(x, dim, -1), xp.moveaxis(g, dim, -1)
        n = moved.shape[-1]
        eye = xp.eye(n, dtype=bool)
        others = xp.where(eye, 1, moved[..., None, :])  # row i: x with x_i replaced by 1
        later = xp.triu(xp.ones((n, n), dtype=bool))  # j >= i
        grad = (self.conj(xp.cumprod(others, axis=-1)) * later * gm[..., None, :]).sum(axis=-1)
        return xp.moveaxis(grad.astype(x.dtype, copy=False), -1, dim)

    def to_device(self, g: Any, device: Any) -> Any:
        """g on `device`: host devices share numpy arrays, so only a move to or from a GPU copies."""
        return g if device.xp is self.xp else device.asarray(g)

    def inv(self, x: Any) -> Any:
        """The inverse of each matrix of a batch. A singular one gives the infinities and NaNs of LAPACK's solves with
        its LU factors, not an error: PyTorch's gradients at a singular matrix (slogdet's, logdet's) read so."""
        try:
            return self.xp.linalg.inv(x)
        except np.linalg.LinAlgError:
            return triangular.inverse_by_lu(self.xp, x)

    def solve(self, a: Any, b: Any) -> Any:
        """x with a x = b, for batches of matrices whose batch dims broadcast (CuPy's solve takes equal ones)."""
        xp = self.xp
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))

    def tril(self, x: Any, diagonal: int) -> Any:
        """The lower triangle of each matrix of a batch, from `diagonal` down."""
        return self.xp.tril(x, diagonal)

    def solve_triangular(self, a: Any, b: Any, upper: bool, left: bool, unitriangular: bool) -> Any:
        """x with a x = b (x a = b when not `left`), reading only a's triangle, batch dims broadcast."""
        return triangular.solve_triangular(self.xp, a, b, upper=upper, left=left, unitriangular=unitriangular)

    def cholesky_solve(self, b: Any, factor: Any, upper: bool) -> Any:
        return triangular.cholesky_solve(self.xp, b, factor, upper)

    def det(self, x: Any) -> Any:
        return self.xp.linalg.det(x).astype(x.dtype, copy=False)

    def svd(self, x: Any) -> tuple:
        """U, S, Vh of each matrix of a batch (reduced: k = min(m, n) columns of U, rows of Vh)."""
        return tuple(self.xp.linalg.svd(x, full_matrices=False))

    def eigh(self, x: Any, uplo: str) -> tuple:
        return tuple(self.xp.linalg.eigh(x, UPLO=uplo))

    def qr(self, x: Any) -> tuple:
        return tuple(self.xp.linalg.qr(x, mode="reduced"))

    def eye(self, n: int, like: Any) -> Any:
        return self.xp.eye(n, dtype=like.dtype)

    def matrix_exp(self, x: Any) -> Any:
        """The exponential of each matrix of a batch."""
        return matrix_exp_kernel(self.xp, x)

    def concatenate(self, xs: tuple, dim: int) -> Any:
        return self.xp.concatenate(xs, axis=dim)

    @staticmethod
    def any_zero(x: Any) -> bool:
        """Does x hold a zero? A host check (it waits for a GPU), for rules that branch on singular inputs."""
        return bool((x == 0).any())
