"""The pruning methods behind `nn.utils.prune` (importable from there, as in PyTorch): each computes a mask for a
tensor, and is the forward pre-hook that applies it to the pruned module's parameter. The functional API that
prunes modules with them is in `prune.py`.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import actorgrad as ag
from actorgrad.nn.module import Module
from actorgrad.tensor import Tensor

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
    "RandomStructured", "RandomUnstructured",
]


class BasePruningMethod(ABC):
    """A way to compute a pruning mask; also the forward pre-hook that applies it to `module.<_tensor_name>`."""

    _tensor_name: str | None = None
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for `t`: `default_mask` (the mask so far) with more entries set to zero."""

    def apply_mask(self, module: Module) -> Tensor:
        """`<name>_orig * <name>_mask`: the pruned tensor, differentiable in `<name>_orig`."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune `module.<name>` with `cls(*args, **kwargs)`, on top of any pruning it already has."""
        old_keys = [key for key, hook in module._forward_pre_hooks.items()
                    if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
        if len(old_keys) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_keys:
            old = module._forward_pre_hooks[old_keys[0]]
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container

        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig

        if not old_keys:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ag.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()

        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not old_keys:
                # Put the parameter back as it was, so a failed first pruning leaves the module untouched.
                orig = getattr(module, name + "_orig")
                del module._parameters[name + "_orig"]
                module.__dict__.pop(name, None)
                module.register_parameter(name, orig)
            raise
        for key in old_keys:
            del module._forward_pre_hooks[key]
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """`t` times the mask this method computes for it (by `importance_scores` when given)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ag.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: `<name>_orig` takes the masked values and becomes `<name>` again."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning methods on one parameter: the newest computes its mask only over the entries (or, for
    structured methods, the channels) the earlier ones kept."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            kept = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     "`dim` defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            kept = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif method.PRUNING_TYPE == "global":
            kept = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a way to give a parameter the pruning attributes)."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries (a count, or a fraction of them) chosen at random."""

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _prune_lowest(ag.rand_like(t), self.amount, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> RandomUnstructured:
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries (a count, or a fraction of them) of smallest absolute value."""

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _prune_lowest(ag.abs(t), self.amount, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,
              importance_scores: Tensor | None = None) -> L1Unstructured:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels (slices along `dim`) chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _channels_to_prune(t, self.amount, self.dim)
        if channels == 0:
            return default_mask
        prob = ag.rand(t.shape[self.dim])
        threshold = ag.kthvalue(prob, k=channels).values
        return _channel_mask(t, self.dim, prob > threshold) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> RandomStructured:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels (slices along `dim`) of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _channels_to_prune(t, self.amount, self.dim)
        if channels == 0:
            return default_mask
        dim = self.dim % t.dim()
        norm = ag.norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        keep = ag.topk(norm, k=t.shape[dim] - channels, largest=True).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
              importance_scores: Tensor | None = None) -> LnStructured:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> CustomFromMask:
        return super().apply(module, name, mask=mask)

def _prune_lowest(scores: Tensor, amount: int | float, default_mask: Tensor) -> Tensor:
    """`default_mask` with zeros at the entries of the `amount` lowest `scores` (PyTorch counts every entry,
    pruned already or not: the container passes only the kept ones)."""
    count = _count_to_prune(amount, scores.numel())
    mask = default_mask.contiguous().clone()
    if count != 0:
        lowest = ag.topk(scores.reshape(-1), k=count, largest=False).indices
        mask.view(-1)[lowest] = 0
    return mask


def _channels_to_prune(t: Tensor, amount: int | float, dim: int) -> int:
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return _count_to_prune(amount, t.shape[dim])


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Ones in the channels along `dim` that `keep` (a bool mask or indices of them) selects, zeros elsewhere."""
    mask = ag.zeros_like(t)
    mask[tuple(keep if d == dim % t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask


def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount: int | float, size: int) -> int:
    """`amount` itself when it is a count (at most `size`); a fraction of `size`, rounded half to even, as
    PyTorch's."""
    if not isinstance(amount, numbers.Integral):
        return round(amount * size)
    if amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    # A numpy integer counts as PyTorch's do; a bool stays one, which topk refuses there as here.
    return amount if isinstance(amount, bool) else int(amount)
