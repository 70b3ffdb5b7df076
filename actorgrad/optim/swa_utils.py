"""`actorgrad.optim.swa_utils`, as PyTorch's: a running average of a model's weights (SWA, Izmailov et al., 2018,
or an exponential moving average), the lr schedule that goes with it, and recomputing BatchNorm statistics for
the averaged weights.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from actorgrad.grad_mode import no_grad
from actorgrad.nn.module import Module
from actorgrad.nn.normalization import _BatchNorm, _InstanceNorm
from actorgrad.optim.cyclic_schedulers import _format_param
from actorgrad.optim.lr_scheduler import LRScheduler
from actorgrad.optim.optimizer import Optimizer
from actorgrad.tensor import Tensor, int64
from actorgrad.tensor_construction import tensor

__all__ = [
    "SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn", "get_swa_multi_avg_fn",
    "update_bn",
]

MultiAvgFn = Callable[[list[Tensor], list[Tensor], "Tensor | int"], None]
AvgFn = Callable[[Tensor, Tensor, "Tensor | int"], Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place update of a list of averages: ema = decay * ema + (1 - decay) * current (a lerp for floats)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params: list[Tensor], current_params: list[Tensor], num_averaged: Tensor | int) -> None:
        for ema, current in zip(ema_params, current_params, strict=True):
            if ema.is_floating_point():
                ema.lerp_(current, 1 - decay)
            else:
                ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place update of a list of averages to the equal-weight mean of `num_averaged + 1` models."""

    @no_grad()
    def swa_update(averaged_params: list[Tensor], current_params: list[Tensor], num_averaged: Tensor | int) -> None:
        # From a Tensor count the weight is a float32 Tensor, as in PyTorch, whose lerp then uses it so rounded.
        weight = float(1 / (num_averaged + 1))
        for averaged, current in zip(averaged_params, current_params, strict=True):
            if averaged.is_floating_point():
                averaged.lerp_(current, weight)
            elif isinstance(num_averaged, Tensor):
                averaged.copy_(averaged + (current - averaged) / (num_averaged + 1))
            else:
                averaged.add_(current - averaged, alpha=weight)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """One parameter's new exponential moving average: decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """One parameter's new equal-weight mean: averaged + (current - averaged) / (num_averaged + 1)."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` (on `device`, if given) whose parameters (and buffers, with `use_buffers`) are a running
    average of the model's at each `update_parameters(model)`: the equal-weight mean by default, or what `avg_fn`
    (one tensor at a time) or `multi_avg_fn` (lists, in place) computes. The first update copies the model.
    Calling it runs the copy; `n_averaged` is a buffer, so it is saved with the averages."""

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current weights into the averages; without `use_buffers` its buffers are copied as they
        are (BatchNorm statistics then describe the model's weights, not the averages: see `update_bn`)."""
        if self.use_buffers:
            ours = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            ours, theirs = list(self.parameters()), list(model.parameters())
        pairs = [(mine.detach(), other.detach().to(mine.device)) for mine, other in zip(ours, theirs)]
        n_averaged = self.n_averaged
        if int(n_averaged) == 0:
            for mine, other in pairs:
                mine.copy_(other)
        elif self.avg_fn is not None:
            for mine, other in pairs:
                mine.copy_(self.avg_fn(mine, other, n_averaged.to(mine.device)))
        else:
            self._average_by_group(pairs)
        if not self.use_buffers:
            for mine, other in zip(self.module.buffers(), model.buffers(), strict=True):
                mine.detach().copy_(other.detach().to(mine.device))
        self.n_averaged += 1

    def _average_by_group(self, pairs: list[tuple[Tensor, Tensor]]) -> None:
        """`multi_avg_fn`, or the equal-weight mean, on the tensors of each device and dtype together, as PyTorch
        groups them; the mean is a lerp on CUDA (its foreach kernel) and a division elsewhere, as in PyTorch."""
        groups: dict[tuple, list[tuple[Tensor, Tensor]]] = {}
        for mine, other in pairs:
            groups.setdefault((str(mine.device), mine.dtype), []).append((mine, other))
        for group in groups.values():
            device = group[0][0].device
            n_averaged = self.n_averaged.to(device)
            mine, theirs = [p for p, _ in group], [q for _, q in group]
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, n_averaged)
            elif device.type == "cuda":
                get_swa_multi_avg_fn()(mine, theirs, n_averaged)
            else:
                average = get_swa_avg_fn()
                for p, q in group:
                    p.copy_(average(p, q, n_averaged))


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of `model`'s BatchNorm layers with one pass over `loader` (batches, or
    lists or tuples whose first item is the batch), each batch weighing the same (a cumulative average)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, list | tuple):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to `swa_lr` over `anneal_epochs` epochs ("cos" or "linear"), then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The lr the annealing started from, given the current lr at annealing fraction `alpha`."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        starts = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) for group in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, starts, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the annealing function (restored from its name)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
