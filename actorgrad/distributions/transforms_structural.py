"""Transforms that rearrange or combine other transforms (PyTorch's IndependentTransform, ReshapeTransform,
CatTransform and StackTransform): they change which dims make an event, or apply a transform per block or slice
of a dim. `transforms` re-exports them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from actorgrad.distributions import constraints
from actorgrad.distributions.transform_base import Transform
from actorgrad.distributions.utils import sum_rightmost
from actorgrad.ops.joining import cat, stack
from actorgrad.tensor import Tensor

__all__ = ["CatTransform", "IndependentTransform", "ReshapeTransform", "StackTransform"]


class IndependentTransform(Transform):
    """`base_transform` with `reinterpreted_batch_ndims` more dims on the right in its event: the map is the
    same, its log-Jacobian is summed over those dims."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _swap_event_shape(shape: Sequence[int], old: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with its rightmost dims, which must be `old`, replaced by `new`."""
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if tuple(shape[cut:]) != old:
        raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {old}")
    return tuple(shape[:cut]) + new


class ReshapeTransform(Transform):
    """Events of shape `in_shape` reshaped to `out_shape` (the same number of entries): a unit Jacobian."""

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0) -> None:
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape(x.shape[: x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape(y.shape[: y.dim() - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(x.shape[: x.dim() - len(self.in_shape)])

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return _swap_event_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return _swap_event_shape(shape, self.out_shape, self.in_shape)


def _check_transforms(tseq: Sequence[Transform], cache_size: int) -> list[Transform]:
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


def _check_size(value: Tensor, name: str, dim: int, size: int, what: str, called: str = "") -> None:
    """PyTorch's checks that `dim` is a dim of `value` (x or y, `called` so in the first message) of size `size`."""
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {called or name} with {value.dim()} dimensions")
    if value.shape[dim] != size:
        raise AssertionError(f"{name}.size({dim}) = {value.shape[dim]} must equal {what} {size}")


class CatTransform(Transform):
    """`tseq[i]` applied to the i-th block of `lengths[i]` entries along `dim` (each 1 by default), the results
    joined by `cat`."""

    def __init__(
        self, tseq: Sequence[Transform], dim: int = 0, lengths: Sequence[int] | None = None, cache_size: int = 0
    ) -> None:
        tseq = _check_transforms(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(tseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _blocks(self, value: Tensor) -> list[Tensor]:
        starts = [0]
        for length in self.lengths[:-1]:
            starts.append(starts[-1] + length)
        return [value.narrow(self.dim, start, length) for start, length in zip(starts, self.lengths)]

    def _call(self, x: Tensor) -> Tensor:
        _check_size(x, "x", self.dim, self.length, "length", "tensor")
        return cat([t(block) for t, block in zip(self.transforms, self._blocks(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        _check_size(y, "y", self.dim, self.length, "length", "tensor")
        return cat([t.inv(block) for t, block in zip(self.transforms, self._blocks(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The blocks' terms, each summed over the event dims it treats as batch dims; joined by `cat` where
        `dim` is a batch dim, added up where it is an event dim."""
        _check_size(x, "x", self.dim, self.length, "length")
        _check_size(y, "y", self.dim, self.length, "length")
        event_dim = self.event_dim
        terms = [
            sum_rightmost(t.log_abs_det_jacobian(x_block, y_block), event_dim - t.event_dim)
            for t, x_block, y_block in zip(self.transforms, self._blocks(x), self._blocks(y))
        ]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + event_dim
        if dim < 0:
            return cat(terms, dim)
        return sum(terms[1:], terms[0])

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The blocks' shapes through their transforms, joined along `dim` (PyTorch keeps `shape`, which is wrong
        for parts that change a size)."""
        return self._join_shapes(shape, [t.forward_shape for t in self.transforms])

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._join_shapes(shape, [t.inverse_shape for t in self.transforms])

    def _join_shapes(self, shape: Sequence[int], maps: list[Any]) -> tuple[int, ...]:
        if not -len(shape) <= self.dim < len(shape):
            raise ValueError("Too few dimensions on input")
        dim = self.dim % len(shape)
        blocks = [m(tuple(shape[:dim]) + (length,) + tuple(shape[dim + 1:])) for m, length in zip(maps, self.lengths)]
        dim = self.dim % len(blocks[0])  # a part may change the number of dims
        return blocks[0][:dim] + (sum(block[dim] for block in blocks),) + blocks[0][dim + 1:]

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """`tseq[i]` applied to the i-th slice along `dim`, the results joined by `stack`."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        tseq = _check_transforms(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, value: Tensor) -> list[Tensor]:
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        _check_size(x, "x", self.dim, len(self.transforms), "len(transforms)", "tensor")
        return stack([t(part) for t, part in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        _check_size(y, "y", self.dim, len(self.transforms), "len(transforms)", "tensor")
        return stack([t.inv(part) for t, part in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The slices' terms, each summed over the event dims it treats as batch dims; stacked at `dim` where it is a
        batch dim, added up where it is an event dim (PyTorch stacks them at `dim` whatever it is)."""
        _check_size(x, "x", self.dim, len(self.transforms), "len(transforms)")
        _check_size(y, "y", self.dim, len(self.transforms), "len(transforms)")
        part_event_dim = max(t.event_dim for t in self.transforms)
        terms = [
            sum_rightmost(t.log_abs_det_jacobian(x_part, y_part), part_event_dim - t.event_dim)
            for t, x_part, y_part in zip(self.transforms, self._slices(x), self._slices(y))
        ]
        if self.domain.event_dim == part_event_dim:
            return stack(terms, self.dim % x.dim())
        return sum(terms[1:], terms[0])

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """A slice's shape through the transforms, with `dim` put back (PyTorch keeps `shape`, which is wrong for
        parts that change a size)."""
        return self._stack_shape(shape, [t.forward_shape for t in self.transforms])

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._stack_shape(shape, [t.inverse_shape for t in self.transforms])

    def _stack_shape(self, shape: Sequence[int], maps: list[Any]) -> tuple[int, ...]:
        if not -len(shape) <= self.dim < len(shape):
            raise ValueError("Too few dimensions on input")
        dim = self.dim % len(shape)
        part = maps[0](tuple(shape[:dim]) + tuple(shape[dim + 1:]))
        dim = self.dim % (len(part) + 1)
        return part[:dim] + (shape[self.dim],) + part[dim:]

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
