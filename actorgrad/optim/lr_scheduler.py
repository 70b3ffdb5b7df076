"""Learning-rate schedulers in PyTorch's shape: each `step()` writes a new `lr` into every parameter group.

As in PyTorch, a scheduler's constructor takes its first step (epoch 0), the rules are chained (each step scales
the group's current `lr`, so the values match PyTorch's to the last bit), and `step(epoch)` switches to the closed
form. The scheduler wraps its optimizer's `step` to warn when `scheduler.step()` comes first.
"""

from __future__ import annotations

import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from actorgrad.grad_mode import no_grad
from actorgrad.optim.optimizer import Optimizer
from actorgrad.tensor import Tensor

__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR",
    "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
    "ReduceLROnPlateau", "SequentialLR", "StepLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use "
    "`scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed "
    "form is used instead of the new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose."
)
HOW_TO_ADJUST = "See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"


def _lrs(optimizer: Optimizer, key: str = "lr") -> list[float | Tensor]:
    """Each group's `key`, a Tensor one copied (as PyTorch's), so a later in-place change leaves the list as it is."""
    return [group[key].clone() if isinstance(group[key], Tensor) else group[key] for group in optimizer.param_groups]


def set_group_value(group: dict, key: str, value: float | Tensor) -> None:
    """Write a scheduled value into a group: a Tensor option (`lr=tensor(0.1)`) is filled in place, as PyTorch
    does, so the Tensor the optimizer (and its user) holds follows the schedule; a number is replaced."""
    if isinstance(group[key], Tensor):
        with no_grad():
            group[key].fill_(value.reshape(()) if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _track_step_called(optimizer: Optimizer) -> None:
    """Wrap `optimizer.step` (once) so the scheduler can tell whether it ran before the scheduler's first step;
    the wrapper holds the optimizer weakly, so it makes no reference cycle."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = weakref.ref(optimizer)
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class LRScheduler:
    """Base class: subclasses define `get_lr()` (the chained rule) and, for `step(epoch)`, `_get_closed_form_lr()`.

    `last_epoch=-1` starts a schedule (each group's `initial_lr` is set from its `lr`); a larger value resumes
    one, which needs the groups' `initial_lr` (restored with the optimizer's state).
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from a "
                        "checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch >= 0 "
                        "for a fresh training run (not recommended)"
                    )
        self.base_lrs: list[float | Tensor] = _lrs(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """The constructor's step to epoch 0 (SequentialLR repeats it when a scheduler's turn comes)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` set, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The next learning rates (called by `step()`; use `get_last_lr()` to read the current ones)."""
        raise NotImplementedError

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning, stacklevel=3,
            )

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (call it after `optimizer.step()`); `epoch` (deprecated) jumps to that epoch."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. "
                    "Please, make sure to call `optimizer.step()` before `lr_scheduler.step()`. " + HOW_TO_ADJUST,
                    UserWarning, stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, "
                    "you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
                    "Failure to do this will result in PyTorch skipping the first value of the learning rate "
                    "schedule. " + HOW_TO_ADJUST,
                    UserWarning, stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Write the next epoch's lrs (or, given `epoch`, that epoch's closed form) into the groups."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)


class _LRScheduler(LRScheduler):
    """LRScheduler's older name, which schedulers written for older PyTorch versions still subclass."""


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), one function for all groups or one per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, list | tuple):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base's, with each lambda's `__dict__` where it is a callable object (functions are not saved)."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update({key: value for key, value in state_dict.items() if key != "lr_lambdas"})
        for fn, saved in zip(self.lr_lambdas, state_dict["lr_lambdas"]):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class _ScalingLR(LRScheduler):
    """A scheduler whose chained rule multiplies every group's current lr by one factor per step."""

    def _factor(self) -> float | None:
        """This step's factor, or None where the step leaves the lrs as they are."""
        raise NotImplementedError

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        factor = self._factor()
        return _lrs(self.optimizer) if factor is None else [lr * factor for lr in _lrs(self.optimizer)]


class StepLR(_ScalingLR):
    """Multiply the lr by `gamma` every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return None
        return self.gamma

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(_ScalingLR):
    """Multiply the lr by `gamma` at each milestone epoch (a milestone listed twice multiplies twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        if self.last_epoch not in self.milestones:
            return None
        return self.gamma ** self.milestones[self.last_epoch]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class LinearLR(_ScalingLR):
    """Scale the lr by a factor going linearly from `start_factor` to `end_factor` over `total_iters` epochs."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        if self.last_epoch == 0:
            return self.start_factor
        if self._is_initial or self.last_epoch > self.total_iters:
            return None
        change = self.end_factor - self.start_factor
        return 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)

    def _get_closed_form_lr(self) -> list[float]:
        # PyTorch's order of operations (the change times the epochs, then divided), which rounds differently from
        # the change times the fraction of epochs: so `step(epoch)` gives its values to the last bit.
        change = self.end_factor - self.start_factor
        return [base_lr * (self.start_factor + change * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(_ScalingLR):
    """Multiply the lr by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        return None if self._is_initial else self.gamma

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class ConstantLR(_ScalingLR):
    """Scale the lr by `factor` for the first `total_iters` epochs, then give it back its full value."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        if self.last_epoch == 0:
            return self.factor
        return 1.0 / self.factor if self.last_epoch == self.total_iters else None

    def _get_closed_form_lr(self) -> list[float]:
        scale = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base_lr * scale for base_lr in self.base_lrs]


class PolynomialLR(_ScalingLR):
    """Decay the lr to 0 over `total_iters` epochs: initial_lr * (1 - epoch / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _factor(self) -> float | None:
        if self._is_initial or self.last_epoch > self.total_iters:
            return None
        remaining = 1.0 - self.last_epoch / self.total_iters
        return (remaining / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed by PyTorch's recurrence (so
    an lr changed from outside is followed), and rising again after T_max."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return self._get_closed_form_lr()
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            rise = (1 - math.cos(math.pi / self.T_max)) / 2
            return [lr + (base_lr - self.eta_min) * rise
                    for base_lr, lr in zip(self.base_lrs, _lrs(self.optimizer), strict=True)]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        )
        return [ratio * (lr - self.eta_min) + self.eta_min for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


from actorgrad.optim.combined_schedulers import ChainedScheduler, SequentialLR  # noqa: E402
from actorgrad.optim.cyclic_schedulers import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: E402
from actorgrad.optim.multiplicative_lr import MultiplicativeLR  # noqa: E402
from actorgrad.optim.plateau_scheduler import ReduceLROnPlateau  # noqa: E402
