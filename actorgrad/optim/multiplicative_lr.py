"""MultiplicativeLR: LambdaLR's chained twin, each step multiplying the current lr by the function's value."""

from __future__ import annotations

from collections.abc import Callable

from actorgrad.optim.lr_scheduler import LambdaLR, _lrs
from actorgrad.optim.optimizer import Optimizer


class MultiplicativeLR(LambdaLR):
    """lr = lr * lr_lambda(epoch) at each step after the first (one function for all groups or one per group);
    saved and loaded as LambdaLR is (callable objects' `__dict__`, not functions)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        several = isinstance(lr_lambda, list | tuple)
        if not several or len(lr_lambda) == len(optimizer.param_groups):  # else LambdaLR refuses the count
            for fn in lr_lambda if several else [lr_lambda]:
                if not callable(fn):
                    raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups,
                                                                       strict=True)]
