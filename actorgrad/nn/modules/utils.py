"""PyTorch's `nn.modules.utils`: the argument normalizers layer code imports (`_pair(3)` is `(3, 3)`) and
`consume_prefix_in_state_dict_if_present`, which strips a wrapper's prefix (`module.`) from a checkpoint's keys."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A function that repeats a single value `n` times and passes an iterable through as a tuple."""

    def parse(x: Any) -> tuple:
        return tuple(x) if isinstance(x, Iterable) else (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """`t` reversed with each element repeated `n` times: a conv's padding in `F.pad`'s order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> list[int]:
    """An adaptive pooling's output size with None entries taken from the input's trailing sizes."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = defaults[-len(out_size):]
    return [default if size is None else size for size, default in zip(out_size, tail, strict=True)]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip `prefix` from the keys of `state_dict` (and of its `_metadata`) that start with it, in place."""
    for key in [key for key in state_dict if key.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        # the wrapper's own entry ('module' for the prefix 'module.') becomes the root's ('')
        for key in [key for key in metadata if key and (key == prefix.replace(".", "") or key.startswith(prefix))]:
            metadata[key[len(prefix):]] = metadata.pop(key)
