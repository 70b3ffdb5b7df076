"""The rules of `out=` for the index and order ops (`actorgrad.gather(x, 1, i, out=y)`), as PyTorch's.

`actorgrad.ops.out_arguments` writes `out` for these as for the elementwise ops: the op runs as it would without
`out` and its result is written into `out`, resized to the result's shape first (with PyTorch's deprecation warning
when `out` had elements). Each kernel takes `out` only in its result's dtype, refused in that kernel's own words;
those with a derivative refuse autograd through `out=`, those without (searchsorted, bucketize, nonzero, histc)
do not. Tensor methods take no `out`, so `x.gather(1, i)` pays nothing; a public name pays one `is None` test.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.out_arguments import EXPECTED, Check, exact_dtype
from actorgrad.tensor import int32

__all__: list[str] = []


def _same_scalar_type(op: str) -> Check:
    return exact_dtype(f"{op}(): self and result must have the same scalar type")


def _searchsorted(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """searchsorted and bucketize give int32 indices with `out_int32=True`, int64 ones otherwise, and take only
    that dtype for `out`."""
    if out == result:
        return None
    return ("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
            "depending on whether out_int32 flag is True, but we got output tensor's dtype "
            f"{SCALAR_NAMES[out]} and out_int32 flag is {result == int32}")


# Each public name's rule for `out`.
INDEX_OUT: dict[str, Check] = {
    **dict.fromkeys(("gather", "take_along_dim", "scatter", "scatter_add", "scatter_reduce", "index_add",
                     "index_copy", "index_reduce", "msort", "argsort"), EXPECTED),
    **{name: _same_scalar_type(name) for name in ("index_select", "masked_select")},
    "take": exact_dtype("take(): self and out expected to have the same dtype, but got self.dtype = {r} and "
                        "out.dtype = {o}"),
    **dict.fromkeys(("searchsorted", "bucketize"), _searchsorted),
    "nonzero": exact_dtype("nonzero: Expected out tensor to have scalar type {r} but got scalar type{o}"),
    "histc": exact_dtype("torch.histogram: input tensor and hist tensor should have the same dtype, but got input "
                         "{cr} and hist {co}"),
}
