"""Schedulers made of schedulers, as PyTorch's: SequentialLR hands the optimizer from one to the next at given
milestones, ChainedScheduler steps them all each epoch so their factors multiply."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from actorgrad.optim.lr_scheduler import LRScheduler, _lrs, set_group_value
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.plateau_scheduler import ReduceLROnPlateau


class _SchedulerOfSchedulers(LRScheduler):
    """What both share: the check of the schedulers given, and a state dict holding each one's state dict."""

    _schedulers: Sequence[LRScheduler]

    def _check_schedulers(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer) -> None:
        name = type(self).__name__
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
                    f"specified when calling `step`, but got one at index {i} in the given schedulers sequence."
                )
            if optimizer != scheduler.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                    f"{type(scheduler).__name__} at index {i} has {scheduler.optimizer}, which is different from "
                    f"{type(optimizer).__name__}."
                )

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer, with `_schedulers` as the list of their state dicts."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update({key: value for key, value in state_dict.items() if key != "_schedulers"})
        for scheduler, saved in zip(self._schedulers, state_dict["_schedulers"]):
            scheduler.load_state_dict(saved)


class SequentialLR(_SchedulerOfSchedulers):
    """Run `schedulers[i]` from `milestones[i - 1]` on; each starts from the groups' initial lrs at its milestone."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        self._check_schedulers(schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                f"milestone points, but got number of schedulers {len(schedulers)} and the number of milestones to "
                f"be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the first step each scheduler took when it was made, then take it again for the first one only.
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched: LRScheduler | None = None) -> None:
        """Take one epoch back from every scheduler, those inside nested combinations included."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for scheduler in scheds._schedulers:
                self.recursive_undo(scheduler)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """Step the scheduler whose turn it is; at its milestone it restarts from epoch 0 (its closed form)."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_SchedulerOfSchedulers):
    """Step every scheduler in turn at each step, so the changes they make to the lrs compound."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        self._check_schedulers(schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)
